package outline_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The person, by the Outline user id (a UUID) its webhooks name the actor with.
const (
	outlinePerson     = "7c1d9e2a-0000-4000-8000-0000000a11ce"
	outlinePersonName = "Alice Lindqvist"
)

const outlineSource = "https://outline.example.com"

// personPayload is a documents.update of the document titled title, as Outline documents it:
// the envelope's actorId, and the model's createdBy/updatedBy users, all the person.
func personPayload(title string) string {
	return fmt.Sprintf(`{"id":"env-1","actorId":%q,"webhookSubscriptionId":"s-1","createdAt":"2024-05-01T10:00:00.000Z",
		"event":"documents.update","payload":{"id":%q,"model":{"id":%q,"collectionId":%q,"title":%q,"text":"# Runbook",
		"urlId":"abc123","revision":3,"updatedAt":"2024-05-01T10:00:00.000Z","publishedAt":"2024-05-01T09:00:00.000Z",
		"createdBy":{"id":%q,"name":%q,"avatarUrl":"https://outline.example.com/avatar/a.png"},
		"updatedBy":{"id":%q,"name":%q,"avatarUrl":"https://outline.example.com/avatar/a.png"}}}}`,
		outlinePerson, docID, docID, collectionID, title, outlinePerson, outlinePersonName, outlinePerson, outlinePersonName)
}

var _ = Describe("Person erasure of the Outline mirror", func() {
	It("removes the person from the event records and the inbox, and keeps the shared document", func(ctx SpecContext) {
		ws := harness.NewWorkspace(ctx, "acme")
		_, err := harness.Pool.Exec(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url) VALUES ($1, 'OUTLINE', 'OUTLINE', $2)`,
			ws, outlineSource)
		Expect(err).NotTo(HaveOccurred())
		payload := personPayload("Runbook")
		d := harness.Leased(ctx, ws, "documents.update", "outline:document:"+docID, payload)
		_, err = harness.Pool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', $2::text) WHERE id = $1`,
			d.ID, outlineSource)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Attempt(ctx)).To(Succeed())

		everywhere := []string{"outline_", "provider_event"}
		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, outlinePerson, outlinePersonName)).To(ContainElements(
			support.Trace{Table: "outline_event", Column: "actor_id", Value: outlinePerson},
			support.Trace{Table: "provider_event", Column: "payload", Value: outlinePersonName}), "the search finds the person before")

		id, err := erasure.NewIdentity(outlinePerson, "", "")
		Expect(err).NotTo(HaveOccurred())
		scope, err := erasure.NewScope(outline.Provider, outlineSource, []erasure.Identity{id})
		Expect(err).NotTo(HaveOccurred())
		receipts := support.EraseNow(ctx, support.ErasureStore(harness.Pool), scope)
		Expect(receipts).To(HaveLen(4))
		Expect(receipts[0].Store.String()).To(Equal("outline-mirror"))
		Expect(receipts[0].Deleted).To(Equal(int64(1)))
		Expect(receipts[1].Store.String()).To(Equal("change-feed"))
		Expect(receipts[2].Deleted).To(Equal(int64(1)))

		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, outlinePerson, outlinePersonName)).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT title FROM outline_document WHERE workspace_id = $1`, ws)).To(Equal([]string{"Runbook"}))
		Expect(harness.Column(ctx, `SELECT event || ' ' || coalesce(actor_id, 'none') FROM outline_event WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"documents.update none"}), "the record and its time stay; who acted goes")
	})
})
