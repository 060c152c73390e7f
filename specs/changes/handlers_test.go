package changes_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// handled is what the specs of a provider's handlers publishing to the feed start from, made
// afresh before each spec (withHandlers): the workspace acme, the feed on the writers' pool,
// the inbox and the registry of the handlers.
type handled struct {
	ws   int64
	feed *changefeed.Store
	box  *deliveryinbox.Inbox
	reg  *consumer.Registry
}

// registerer builds a provider's mirror store publishing through pub (the version-checked
// feed) and registers its handlers on box in reg, as bootstrap composes them.
type registerer func(pub ports.ChangePublisher, box *deliveryinbox.Inbox, reg *consumer.Registry) contract.PersonDataStore

// withHandlers declares the BeforeEach of a container whose specs deliver to a provider's
// handlers: connect (nil: none) stores the workspace's connection, then register builds the
// provider's publishing mirror and handlers (nil: none).
func withHandlers(connect func(ctx context.Context, ws int64), register registerer) *handled {
	h := &handled{}
	BeforeEach(func(ctx SpecContext) {
		*h = handled{ws: support.Workspace(ctx, writerPool, "acme"), reg: consumer.NewRegistry()}
		if connect != nil {
			connect(ctx, h.ws)
		}
		var err error
		h.feed, err = changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		h.box, err = deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		if register != nil {
			register(versionChecked(h.feed), h.box, h.reg)
		}
	})
	return h
}

// deliver leases payload as a row of the workspace and handles it, which must succeed.
func (h *handled) deliver(ctx context.Context, p provider.Provider, event, subject, payload string) support.Delivery {
	GinkgoHelper()
	d := support.LeasedEvent(ctx, writerPool, h.ws, p, event, subject, payload)
	Expect(d.Handle(ctx, h.reg)).To(Succeed())
	return d
}

// changes is the workspace's feed from the start.
func (h *handled) changes(ctx context.Context) []change.Stored {
	GinkgoHelper()
	page, err := h.feed.Changes(ctx, h.ws, change.Cursor{}, 1000)
	Expect(err).NotTo(HaveOccurred())
	return page
}

// published is the workspace's feed from the start, each change as its type, subject and
// entity (without its version).
func (h *handled) published(ctx context.Context) []string {
	GinkgoHelper()
	out := []string{}
	for _, c := range h.changes(ctx) {
		out = append(out, c.Type+" "+c.Subject+" "+string(entity(c.Data)))
	}
	return out
}

func githubPublishing(pub ports.ChangePublisher, box *deliveryinbox.Inbox, reg *consumer.Registry) contract.PersonDataStore {
	GinkgoHelper()
	store, err := githubmirror.New(writerPool)
	Expect(err).NotTo(HaveOccurred())
	if pub != nil {
		Expect(store.PublishChanges(pub, githubread.Views{})).To(Succeed())
	}
	Expect(githubhandlers.Register(reg, githubhandlers.Deps{Inbox: box, Store: store, Log: support.Logger{}})).To(Succeed())
	return store
}

func gitlabPublishing(pub ports.ChangePublisher, box *deliveryinbox.Inbox, reg *consumer.Registry) contract.PersonDataStore {
	GinkgoHelper()
	store, err := gitlabmirror.New(writerPool)
	Expect(err).NotTo(HaveOccurred())
	Expect(store.PublishChanges(pub, gitlabread.Views{})).To(Succeed())
	Expect(gitlabhandlers.Register(reg, gitlabhandlers.Deps{Inbox: box, Store: store})).To(Succeed())
	return store
}

func outlinePublishing(pub ports.ChangePublisher, box *deliveryinbox.Inbox, reg *consumer.Registry) contract.PersonDataStore {
	GinkgoHelper()
	store, err := outlinemirror.New(writerPool)
	Expect(err).NotTo(HaveOccurred())
	Expect(store.PublishChanges(pub, outlineread.Views{})).To(Succeed())
	Expect(outlinehandlers.Register(reg, outlinehandlers.Deps{Inbox: box, Store: store})).To(Succeed())
	return store
}

func slackPublishing(pub ports.ChangePublisher, box *deliveryinbox.Inbox, reg *consumer.Registry) contract.PersonDataStore {
	GinkgoHelper()
	mirror, err := slackmirror.New(writerPool)
	Expect(err).NotTo(HaveOccurred())
	Expect(mirror.PublishChanges(pub, slackread.Views{})).To(Succeed())
	Expect(slackhandlers.Register(reg, slackhandlers.Deps{Inbox: box, Store: mirror, Log: support.Logger{}})).To(Succeed())
	return mirror
}

// activeConnection returns a connect of an ACTIVE connection of the provider's kind with source,
// config (a JSON object) and routing key.
func activeConnection(kind, prov, source, config, sourceKey string) func(ctx context.Context, ws int64) {
	return func(ctx context.Context, ws int64) {
		GinkgoHelper()
		_, err := writerPool.Exec(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, $2, $3, 'ACTIVE', $4, $5::jsonb, $6)`, ws, kind, prov, source, config, sourceKey)
		Expect(err).NotTo(HaveOccurred())
	}
}
