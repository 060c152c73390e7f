package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	gitlabhandlers "github.com/hephaestus-dev/hephaestus/adapters/gitlab/handlers"
	"github.com/hephaestus-dev/hephaestus/adapters/http/mirrorapi/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// gitlabSet is everything the GitLab adapter contributes: its webhook, its handlers (through the
// DeliveryInbox and the GitLab mirror store) and its read API.
var gitlabSet = wire.NewSet(
	provideGitLabWebhook,
	gitlabmirror.New,
	provideGitLabHandlers,
	provideGitLabRoutes,
)

func provideGitLabWebhook() (*gitlab.Webhook, error) { return gitlab.NewWebhook(gitlab.Config{}) }

// gitlabHandlers registers the GitLab handlers with the consumer's registry.
type gitlabHandlers handlerRegistration

func provideGitLabHandlers(inbox ports.DeliveryInbox, store *gitlabmirror.Store) gitlabHandlers {
	return func(reg handlerRegistry) error {
		return gitlabhandlers.Register(reg, gitlabhandlers.Deps{Inbox: inbox, Store: store})
	}
}

// gitlabRoutes mounts the GitLab read API.
type gitlabRoutes routeRegistration

func provideGitLabRoutes(manage *management.Service, members ports.WorkspaceStore, store *gitlabmirror.Store, log ports.Logger) gitlabRoutes {
	return func(r gin.IRouter) error {
		return gitlabread.Register(r, gitlabread.Config{Auth: manage, Members: members, Store: store, Log: log})
	}
}
