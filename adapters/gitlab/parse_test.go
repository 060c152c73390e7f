package gitlab_test

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

const (
	mergeRequestBody = `{"object_kind":"merge_request","event_type":"merge_request","project":{"id":15,"name":"Gitlab Test","path_with_namespace":"acme/sub/gitlab-test","namespace_id":77},"object_attributes":{"id":99,"iid":1,"action":"open","target_project_id":15}}`
	pushBody         = `{"object_kind":"push","before":"95790bf8","after":"da156088","ref":"refs/heads/main","project_id":15,"project":{"id":15,"path_with_namespace":"acme/gitlab-test"}}`
	memberBody       = `{"event_name":"user_add_to_group","group_id":78,"group_name":"Sub","group_path":"acme/sub","user_id":5}`
	subgroupBody     = `{"event_name":"subgroup_create","group_id":79,"parent_group_id":42,"full_path":"acme/new"}`
	milestoneBody    = `{"object_kind":"milestone","group":{"group_id":80,"group_path":"acme/m"},"object_attributes":{"id":3,"action":"create"}}`
)

var _ = Describe("Parsing a GitLab delivery", func() {
	var (
		hook       *gitlab.Webhook
		connection *ports.SourceConnection
	)

	BeforeEach(func() {
		var err error
		hook, err = gitlab.NewWebhook(gitlab.Config{Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
		connection = conn(plainToken, map[string]any{"groupId": float64(42)})
	})

	parse := func(event, body string, headers ...string) (contract.Envelope, error) {
		return hook.Parse(request(body, append([]string{"X-Gitlab-Event", event}, headers...)...), connection)
	}

	It("routes a project event by the project, its namespace and the connection's group", func() {
		env, err := parse("Merge Request Hook", mergeRequestBody)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.DropReason).To(BeEmpty())
		Expect(env.Control).To(BeFalse())
		Expect(env.EventType).To(Equal("Merge Request Hook"))
		Expect(env.Action).To(Equal("open"))
		Expect(env.Subject.String()).To(Equal("gitlab:project:15"))
		Expect(env.Route).To(Equal(ports.RouteSpec{Resources: []ports.Resource{
			{Type: "project", ID: "15"},
			{Type: "group", ID: "77"},
			{Type: "group", ID: "42"},
		}}))
	})

	It("reads the project id of a push from project_id as well", func() {
		env, err := parse("Push Hook", `{"object_kind":"push","project_id":15}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("gitlab:project:15"))
		Expect(env.Route.Resources).To(ContainElement(ports.Resource{Type: "project", ID: "15"}))
	})

	DescribeTable("names a group-level event by its group",
		func(event, body, group string) {
			env, err := parse(event, body)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject.String()).To(Equal("gitlab:group:" + group))
			Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "group", ID: group}, {Type: "group", ID: "42"}}))
		},
		Entry("a group member", "Member Hook", memberBody, "78"),
		Entry("a subgroup", "Subgroup Hook", subgroupBody, "79"),
		Entry("a group milestone", "Milestone Hook", milestoneBody, "80"),
	)

	It("lists the connection's group once when the payload names it too", func() {
		env, err := parse("Member Hook", `{"event_name":"user_add_to_group","group_id":42}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "group", ID: "42"}}))
	})

	It("keeps the project's subject across a rename or transfer", func() {
		moved := `{"object_kind":"merge_request","project":{"id":15,"name":"Renamed","path_with_namespace":"other/renamed","namespace_id":90}}`
		before, err := parse("Merge Request Hook", mergeRequestBody)
		Expect(err).NotTo(HaveOccurred())
		after, err := parse("Merge Request Hook", moved)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Subject).To(Equal(before.Subject))
		other, err := parse("Merge Request Hook", `{"project":{"id":16,"path_with_namespace":"acme/sub/gitlab-test"}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(other.Subject).NotTo(Equal(before.Subject))
	})

	It("puts no event token into the subject", func() {
		env, err := parse("Merge Request Hook", mergeRequestBody, "Idempotency-Key", "key-1")
		Expect(err).NotTo(HaveOccurred())
		note, err := parse("Note Hook", `{"object_kind":"note","project_id":15}`, "Idempotency-Key", "key-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(note.Subject).To(Equal(env.Subject))
	})

	It("drops a delivery that names neither project nor group, even on a group connection", func() {
		env, err := parse("Emoji Hook", `{"object_kind":"emoji","user":{"id":1}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.DropReason).To(Equal("no-project-or-group"))
		Expect(env.Subject.IsZero()).To(BeTrue())
	})

	It("reads ids written as strings and skips ids it cannot use", func() {
		env, err := parse("Issue Hook", `{"project":{"id":"15","namespace_id":"not-a-number"},"group_id":1.5}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Subject.String()).To(Equal("gitlab:project:15"))
		Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "project", ID: "15"}, {Type: "group", ID: "42"}}))
	})

	Describe("the delivery key", func() {
		It("prefers Idempotency-Key", func() {
			env, err := parse("Push Hook", pushBody, "Idempotency-Key", "idem-1", "X-Gitlab-Event-UUID", "uuid-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(env.DeliveryKey).To(Equal("idem-1"))
		})

		It("falls back to X-Gitlab-Event-UUID", func() {
			env, err := parse("Push Hook", pushBody, "X-Gitlab-Event-UUID", "uuid-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(env.DeliveryKey).To(Equal("uuid-1"))
		})

		It("otherwise hashes the event type and the body, so a redelivery has the same key", func() {
			sum := sha256.Sum256([]byte("Push Hook\n" + pushBody))
			env, err := parse("Push Hook", pushBody)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.DeliveryKey).To(Equal(hex.EncodeToString(sum[:])))
			again, err := parse("Push Hook", pushBody)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.DeliveryKey).To(Equal(env.DeliveryKey))
			other, err := parse("Tag Push Hook", pushBody)
			Expect(err).NotTo(HaveOccurred())
			Expect(other.DeliveryKey).NotTo(Equal(env.DeliveryKey))
		})

		It("refuses a key header that cannot be stored", func() {
			_, err := parse("Push Hook", pushBody, "Idempotency-Key", string(make([]byte, 201)))
			Expect(err).To(beRejected(ports.ErrMalformed, "invalid-delivery-id"))
		})
	})

	It("keeps the event headers and never the token or signature", func() {
		env, err := parse("Push Hook", pushBody,
			"X-Gitlab-Event-UUID", "uuid-1", "Idempotency-Key", "idem-1", "X-Gitlab-Instance", instance,
			"X-Gitlab-Webhook-UUID", "hook-1", "webhook-id", "msg_1", "webhook-timestamp", "1700000000",
			"User-Agent", "GitLab/17.5.0", "X-Gitlab-Token", plainToken, "webhook-signature", "v1,abc", "Cookie", "a=b")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Headers).To(Equal(map[string]string{
			"X-Gitlab-Event": "Push Hook", "X-Gitlab-Event-UUID": "uuid-1", "Idempotency-Key": "idem-1",
			"X-Gitlab-Instance": instance, "X-Gitlab-Webhook-UUID": "hook-1", "webhook-id": "msg_1",
			"webhook-timestamp": "1700000000", "User-Agent": "GitLab/17.5.0",
		}))
	})

	DescribeTable("refuses a delivery it cannot read",
		func(event, body, reason string) {
			_, err := hook.Parse(request(body, "X-Gitlab-Event", event), connection)
			Expect(err).To(beRejected(ports.ErrMalformed, reason))
		},
		Entry("no event type", "", pushBody, "missing-event-type"),
		Entry("a JSON array", "Push Hook", `[]`, "invalid-payload"),
		Entry("a JSON number", "Push Hook", `15`, "invalid-payload"),
	)
})
