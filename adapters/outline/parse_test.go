package outline_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

const (
	documentID   = "2c7b4a1e-6a3c-4a43-9b8e-0d5a3f1c2b11"
	collectionID = "8d1f0b2a-3c4e-4f5a-9b6c-7d8e9f0a1b2c"
)

// envelope is Outline's delivery envelope around payload.
func envelope(id, event, payload string) string {
	return `{"id":"` + id + `","actorId":"u-1","webhookSubscriptionId":"ws-1","createdAt":"2026-11-30T08:00:00.000Z","event":"` + event + `","payload":` + payload + `}`
}

var _ = Describe("Parsing an Outline delivery", func() {
	var hook *outline.Webhook

	BeforeEach(func() {
		var err error
		hook, err = outline.NewWebhook(outline.Config{Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
	})

	parse := func(body string, extra ...string) (contract.Envelope, error) {
		return hook.Parse(request(body, extra...), conn(secret))
	}

	It("routes a document event by its collection and scopes it by the document", func() {
		env, err := parse(envelope("del-1", "documents.update",
			`{"id":"`+documentID+`","model":{"id":"`+documentID+`","title":"Handbook","collectionId":"`+collectionID+`"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.EventType).To(Equal("documents.update"))
		Expect(env.Action).To(Equal("update"))
		Expect(env.DeliveryKey).To(Equal("del-1"))
		Expect(env.Subject.String()).To(Equal("outline:document:" + documentID))
		Expect(env.Route).To(Equal(ports.RouteSpec{Resources: []ports.Resource{{Type: "collection", ID: collectionID}}}))
	})

	It("reads the collection of a document from a nested collection object too", func() {
		env, err := parse(envelope("del-2", "documents.publish",
			`{"id":"`+documentID+`","model":{"id":"`+documentID+`","collection":{"id":"`+collectionID+`"}}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "collection", ID: collectionID}}))
	})

	It("keeps the document's subject when its title changes", func() {
		before, err := parse(envelope("del-3", "documents.update", `{"id":"`+documentID+`","model":{"id":"`+documentID+`","title":"A","collectionId":"`+collectionID+`"}}`))
		Expect(err).NotTo(HaveOccurred())
		after, err := parse(envelope("del-4", "documents.title_change", `{"id":"`+documentID+`","model":{"id":"`+documentID+`","title":"B","collectionId":"`+collectionID+`"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Subject).To(Equal(before.Subject))
		Expect(after.Subject.String()).NotTo(ContainSubstring("title_change"))
		Expect(after.Subject.String()).NotTo(ContainSubstring("del-4"))
	})

	It("sends a document without a collection to the connection", func() {
		env, err := parse(envelope("del-5", "documents.create", `{"id":"`+documentID+`","model":{"id":"`+documentID+`","collectionId":null}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("outline:document:" + documentID))
		Expect(env.Route).To(Equal(ports.RouteSpec{ConnectionWide: true}))
	})

	It("scopes a collection event by the collection", func() {
		env, err := parse(envelope("del-6", "collections.update", `{"id":"`+collectionID+`","model":{"id":"`+collectionID+`","name":"Eng"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("outline:collection:" + collectionID))
		Expect(env.Route).To(Equal(ports.RouteSpec{Resources: []ports.Resource{{Type: "collection", ID: collectionID}}}))
	})

	It("orders a comment with its document", func() {
		env, err := parse(envelope("del-7", "comments.create", `{"id":"c-1","model":{"id":"c-1","documentId":"`+documentID+`"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("outline:document:" + documentID))
		Expect(env.Route.ConnectionWide).To(BeTrue())
	})

	It("scopes an event about no document or collection by the connection", func() {
		env, err := parse(envelope("del-8", "users.create", `{"id":"u-2","model":{"id":"u-2","name":"Ana"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("outline:connection:3"))
		Expect(env.Route).To(Equal(ports.RouteSpec{ConnectionWide: true}))
	})

	It("keeps the User-Agent and never the signature", func() {
		env, err := parse(envelope("del-9", "users.create", `{"id":"u-2"}`),
			"User-Agent", "Outline-Webhooks", "Outline-Signature", "t=1,s=00", "Cookie", "a=b")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Headers).To(Equal(map[string]string{"User-Agent": "Outline-Webhooks"}))
	})

	DescribeTable("refuses a delivery it cannot key or route",
		func(body, reason string) {
			_, err := parse(body)
			Expect(err).To(beRejected(ports.ErrMalformed, reason))
		},
		Entry("no id", `{"event":"documents.update","payload":{}}`, "missing-delivery-id"),
		Entry("a numeric id", `{"id":1,"event":"documents.update","payload":{}}`, "missing-delivery-id"),
		Entry("no event", `{"id":"d","payload":{}}`, "missing-event-type"),
		Entry("a collection id that is a number", envelope("d", "documents.update", `{"model":{"id":"x","collectionId":5}}`), "invalid-payload"),
		Entry("a document id with a separator", envelope("d", "documents.update", `{"model":{"id":"a:b"}}`), "invalid-payload"),
		Entry("a JSON array", `[]`, "invalid-payload"),
	)

	It("refuses a connection-wide event without its connection", func() {
		_, err := hook.Parse(request(envelope("d", "users.create", `{}`)), nil)
		Expect(err).To(beRejected(ports.ErrMalformed, "missing-connection"))
	})
})
