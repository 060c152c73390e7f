package changes_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Outline collections through the real handlers.
var _ = Describe("Outline collections in the change feed", func() {
	const collection = "col-spec-1"
	var (
		ws   int64
		feed *changefeed.Store
		reg  *consumer.Registry
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		var err error
		feed, err = changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		store, err := outlinemirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), outlineread.Views{})).To(Succeed())
		box, err := deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		reg = consumer.NewRegistry()
		Expect(outlinehandlers.Register(reg, outlinehandlers.Deps{Inbox: box, Store: store})).To(Succeed())
	})

	envelopes := 0
	deliver := func(ctx context.Context, event, name, updatedAt string) support.Delivery {
		GinkgoHelper()
		envelopes++
		deleted := ""
		if event == "collections.delete" {
			deleted = fmt.Sprintf(`,"deletedAt":%q`, updatedAt)
		}
		d := support.LeasedEvent(ctx, writerPool, ws, outline.Provider, event, "outline:collection:"+collection, fmt.Sprintf(
			`{"id":"env-c%d","actorId":"u-1","createdAt":%q,"event":%q,
			"payload":{"id":%q,"model":{"id":%q,"name":%q,"urlId":"eng","updatedAt":%q%s}}}`,
			envelopes, updatedAt, event, collection, collection, name, updatedAt, deleted))
		Expect(d.Handle(ctx, reg)).To(Succeed())
		return d
	}
	published := func(ctx context.Context) []string {
		GinkgoHelper()
		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Type+" "+c.Subject+" "+string(entity(c.Data)))
		}
		return out
	}
	updated := func(name string, archived bool, at string) string {
		return fmt.Sprintf(`outline.collection.updated outline:collection:%s {"id": %q, "name": %q, "urlId": "eng", "archived": %t, "updatedAt": %q, "description": null}`,
			collection, collection, name, archived, at)
	}

	It("publishes a collection's creation, update, archive and deletion once each, nothing for a redelivery, the same state or an older one", func(ctx SpecContext) {
		d := deliver(ctx, "collections.create", "Engineering", "2024-05-01T09:00:00.000Z")
		Expect(published(ctx)).To(Equal([]string{updated("Engineering", false, "2024-05-01T09:00:00Z")}))
		d.NextLease(ctx)
		Expect(d.Handle(ctx, reg)).To(Succeed())
		deliver(ctx, "collections.update", "Engineering", "2024-05-01T09:00:00.000Z") // the same state
		Expect(published(ctx)).To(HaveLen(1))

		deliver(ctx, "collections.update", "Platform", "2024-05-02T09:00:00.000Z")
		deliver(ctx, "collections.update", "Old name", "2024-05-01T10:00:00.000Z") // older: refused
		deliver(ctx, "collections.archive", "Platform", "2024-05-03T09:00:00.000Z")
		deliver(ctx, "collections.delete", "Platform", "2024-05-04T09:00:00.000Z")
		Expect(published(ctx)).To(Equal([]string{
			updated("Engineering", false, "2024-05-01T09:00:00Z"),
			updated("Platform", false, "2024-05-02T09:00:00Z"),
			updated("Platform", true, "2024-05-03T09:00:00Z"),
			`outline.collection.deleted outline:collection:` + collection + ` {"id": "` + collection + `"}`,
		}))
	})
})
