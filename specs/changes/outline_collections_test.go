package changes_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Outline collections through the real handlers.
var _ = Describe("Outline collections in the change feed", func() {
	const collection = "col-spec-1"
	h := withHandlers(nil, outlinePublishing)

	envelopes := 0
	deliver := func(ctx context.Context, event, name, updatedAt string) support.Delivery {
		GinkgoHelper()
		envelopes++
		deleted := ""
		if event == "collections.delete" {
			deleted = fmt.Sprintf(`,"deletedAt":%q`, updatedAt)
		}
		d := support.LeasedEvent(ctx, writerPool, h.ws, outline.Provider, event, "outline:collection:"+collection, fmt.Sprintf(
			`{"id":"env-c%d","actorId":"u-1","createdAt":%q,"event":%q,
			"payload":{"id":%q,"model":{"id":%q,"name":%q,"urlId":"eng","updatedAt":%q%s}}}`,
			envelopes, updatedAt, event, collection, collection, name, updatedAt, deleted))
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		return d
	}
	updated := func(name string, archived bool, at string) string {
		return fmt.Sprintf(`outline.collection.updated outline:collection:%s {"id": %q, "name": %q, "urlId": "eng", "archived": %t, "updatedAt": %q, "description": null}`,
			collection, collection, name, archived, at)
	}

	It("publishes a collection's creation, update, archive and deletion once each, nothing for a redelivery, the same state or an older one", func(ctx SpecContext) {
		d := deliver(ctx, "collections.create", "Engineering", "2024-05-01T09:00:00.000Z")
		Expect(h.published(ctx)).To(Equal([]string{updated("Engineering", false, "2024-05-01T09:00:00Z")}))
		d.NextLease(ctx)
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		deliver(ctx, "collections.update", "Engineering", "2024-05-01T09:00:00.000Z") // the same state
		Expect(h.published(ctx)).To(HaveLen(1))

		deliver(ctx, "collections.update", "Platform", "2024-05-02T09:00:00.000Z")
		deliver(ctx, "collections.update", "Old name", "2024-05-01T10:00:00.000Z") // older: refused
		deliver(ctx, "collections.archive", "Platform", "2024-05-03T09:00:00.000Z")
		deliver(ctx, "collections.delete", "Platform", "2024-05-04T09:00:00.000Z")
		Expect(h.published(ctx)).To(Equal([]string{
			updated("Engineering", false, "2024-05-01T09:00:00Z"),
			updated("Platform", false, "2024-05-02T09:00:00Z"),
			updated("Platform", true, "2024-05-03T09:00:00Z"),
			`outline.collection.deleted outline:collection:` + collection + ` {"id": "` + collection + `"}`,
		}))
	})
})
