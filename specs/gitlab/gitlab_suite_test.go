package gitlab_test

import (
	"context"
	"testing"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestGitLab(t *testing.T) {
	support.RunSpecs(t, "GitLab handlers, mirror and read API")
}

var (
	store    *gitlabmirror.Store
	faulty   *faultyStore
	tried    *countingInbox
	reader   *fakeReader
	erasures *erasurestore.Store
)

// harness runs the GitLab handlers on the real inbox (counted by tried) and mirror store (with
// faults injected by faulty), and the GitLab read API.
var harness = support.NewHarness(support.HarnessConfig{
	Provider: gitlab.Provider,
	Setup: func(ctx context.Context, h *support.Harness) {
		var err error
		store, err = gitlabmirror.New(h.Pool)
		Expect(err).NotTo(HaveOccurred())
		faulty = &faultyStore{Store: store}
		tried = &countingInbox{DeliveryInbox: h.Inbox}
		reader = &fakeReader{}
		Expect(gitlabhandlers.Register(h.Registry, gitlabhandlers.Deps{Inbox: tried, Store: faulty, Reader: reader})).To(Succeed())
		erasures = support.ErasureStore(h.Pool)
		h.ServeRead(func(engine *gin.Engine) error {
			return gitlabread.Register(engine, gitlabread.Config{Auth: h.Management, Members: h.Workspaces, Store: store, Log: support.Logger{}})
		})
	},
	Reset: func() {
		faulty.reset()
		tried.reset()
		reader.reset()
	},
})
