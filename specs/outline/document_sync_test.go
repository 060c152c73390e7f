package outline_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const (
	docID        = "5e1b4a2c-0000-4000-8000-00000000d0c1"
	collectionID = "9a7f1e3b-0000-4000-8000-0000000c0111"
)

func documentEvent(envelopeID, event, title, updatedAt string, revision int) string {
	return fmt.Sprintf(`{"id":%q,"actorId":"u-1","webhookSubscriptionId":"s-1","createdAt":%q,"event":%q,
		"payload":{"id":%q,"model":{"id":%q,"collectionId":%q,"title":%q,"text":"# %s","urlId":"abc123",
		"revision":%d,"updatedAt":%q,"publishedAt":"2024-05-01T09:00:00.000Z"}}}`,
		envelopeID, updatedAt, event, docID, docID, collectionID, title, title, revision, updatedAt)
}

var _ = Describe("Outline document sync", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
	})

	// xmin changes with every write of the row, so an unchanged xmin proves no second write.
	xmin := func(ctx SpecContext) string {
		return harness.Column(ctx, `SELECT xmin::text FROM outline_document WHERE workspace_id = $1 AND id = $2`, ws, docID)[0]
	}

	When("stopped between the mirror commit and the event record", func() {
		It("records the event on retry without another mirror write", func(ctx SpecContext) {
			d := harness.Leased(ctx, ws, "documents.update", "outline:document:"+docID,
				documentEvent("env-1", "documents.update", "Runbook", "2024-05-01T10:00:00.000Z", 3))
			faulty.failNextRecord(errInjected)

			Expect(d.Attempt(ctx)).To(MatchError(errInjected))
			Expect(d.Steps(ctx)).To(Equal([]string{"outline.document.mirror"}))
			Expect(harness.Column(ctx, `SELECT title FROM outline_document WHERE workspace_id = $1`, ws)).To(Equal([]string{"Runbook"}))
			Expect(harness.Column(ctx, `SELECT delivery_id FROM outline_event WHERE workspace_id = $1`, ws)).To(BeEmpty())
			written := xmin(ctx)

			d.ReleaseForRetry(ctx)
			Expect(d.Attempt(ctx)).To(Succeed())
			Expect(d.Steps(ctx)).To(Equal([]string{"outline.document.mirror", "outline.event.record"}))
			Expect(harness.Column(ctx, `SELECT delivery_id || ' ' || event || ' ' || model_id FROM outline_event WHERE workspace_id = $1`, ws)).
				To(Equal([]string{"env-1 documents.update " + docID}))
			Expect(xmin(ctx)).To(Equal(written), "the document row was not written again")
			Expect(faulty.writes()).To(Equal(1))
		})
	})

	It("takes the equal-version fast path without a mirror write and still records the event", func(ctx SpecContext) {
		first := harness.Leased(ctx, ws, "documents.update", "outline:document:"+docID,
			documentEvent("env-1", "documents.update", "Runbook", "2024-05-01T10:00:00.000Z", 3))
		Expect(first.Attempt(ctx)).To(Succeed())
		written := xmin(ctx)

		same := harness.Leased(ctx, ws, "documents.publish", "outline:document:"+docID,
			documentEvent("env-2", "documents.publish", "Runbook", "2024-05-01T10:00:00.000Z", 3))
		Expect(same.Attempt(ctx)).To(Succeed())
		Expect(same.Steps(ctx)).To(Equal([]string{"outline.event.record"}))
		Expect(xmin(ctx)).To(Equal(written))
		Expect(harness.Column(ctx, `SELECT delivery_id FROM outline_event WHERE workspace_id = $1 ORDER BY delivery_id`, ws)).
			To(Equal([]string{"env-1", "env-2"}))
	})

	It("never lets an older version overwrite a newer document", func(ctx SpecContext) {
		newer := harness.Leased(ctx, ws, "documents.update", "outline:document:"+docID,
			documentEvent("env-1", "documents.update", "Newer", "2024-05-01T11:00:00.000Z", 4))
		older := harness.Leased(ctx, ws, "documents.update", "outline:document:"+docID,
			documentEvent("env-2", "documents.update", "Older", "2024-05-01T10:00:00.000Z", 3))
		Expect(newer.Attempt(ctx)).To(Succeed())
		Expect(older.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT title || ' ' || revision FROM outline_document WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"Newer 4"}))
	})

	It("writes a collection in a step named by its purpose and stable id", func(ctx SpecContext) {
		d := harness.Leased(ctx, ws, "collections.create", "outline:collection:"+collectionID, fmt.Sprintf(
			`{"id":"env-9","actorId":"u-1","createdAt":"2024-05-01T09:00:00.000Z","event":"collections.create",
			"payload":{"id":%q,"model":{"id":%q,"name":"Engineering","urlId":"eng","updatedAt":"2024-05-01T09:00:00.000Z"}}}`,
			collectionID, collectionID))
		Expect(d.Attempt(ctx)).To(Succeed())
		Expect(d.Steps(ctx)).To(Equal([]string{"outline.collection.upsert/" + collectionID, "outline.event.record"}))
		Expect(harness.Column(ctx, `SELECT name FROM outline_collection WHERE workspace_id = $1`, ws)).To(Equal([]string{"Engineering"}))
	})
})

var _ = Describe("Outline read API", func() {
	var member string

	BeforeEach(func(ctx SpecContext) {
		acme := harness.NewWorkspace(ctx, "acme")
		other := harness.NewWorkspace(ctx, "other")
		member = harness.NewAccount(ctx, "mia", "acme", "MEMBER")
		_, err := harness.Pool.Exec(ctx, `
			INSERT INTO outline_document (workspace_id, id, collection_id, title, url_id, revision, deleted, source_updated_at, source_event_id)
			VALUES ($1, 'd1', 'c1', 'Oldest', 'u1', 1, false, '2024-05-01T08:00:00Z', 1),
			       ($1, 'd2', 'c1', 'Middle', 'u2', 2, false, '2024-05-01T09:00:00Z', 1),
			       ($1, 'd3', NULL, 'Newest', 'u3', 5, false, '2024-05-01T10:00:00Z', 1),
			       ($1, 'd4', 'c1', 'Deleted', 'u4', 1, true, '2024-05-01T11:00:00Z', 1),
			       ($2, 'd9', 'c9', 'Theirs', 'u9', 1, false, '2024-05-01T12:00:00Z', 1)`, acme, other)
		Expect(err).NotTo(HaveOccurred())
	})

	It("pages the workspace's documents, most recently updated first, without deleted ones", func() {
		r := harness.Get("/api/workspaces/acme/outline/documents?size=2", member)
		Expect(r.Status).To(Equal(200))
		Expect(r.JSON).To(HaveKeyWithValue("total", BeEquivalentTo(3)))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("title", "Newest"), HaveKeyWithValue("collectionId", BeNil()),
			HaveKeyWithValue("updatedAt", "2024-05-01T10:00:00Z"), HaveKeyWithValue("revision", BeEquivalentTo(5))))
		Expect(items[1]).To(HaveKeyWithValue("title", "Middle"))
		last := harness.Get("/api/workspaces/acme/outline/documents?page=1&size=2", member)
		Expect(last.JSON["items"]).To(ConsistOf(HaveKeyWithValue("title", "Oldest")))
	})

	It("shows no other workspace's documents", func(ctx SpecContext) {
		other := harness.Get("/api/workspaces/other/outline/documents", support.AdminToken)
		Expect(other.JSON["items"]).To(ConsistOf(HaveKeyWithValue("title", "Theirs")))
	})
})
