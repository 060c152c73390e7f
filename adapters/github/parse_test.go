package github_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

const (
	installationBody       = `{"action":"created","installation":{"id":1001,"app_id":42,"account":{"id":9,"login":"octo-org"}},"repositories":[{"id":1,"name":"hello"}],"sender":{"id":3}}`
	installationReposBody  = `{"action":"added","installation":{"id":1001,"app_id":42,"account":{"id":9}},"repository_selection":"selected","repositories_added":[{"id":1}],"repositories_removed":[],"sender":{"id":3}}`
	installationTargetBody = `{"action":"renamed","account":{"id":9,"login":"octo-org"},"changes":{"login":{"from":"old"}},"installation":{"id":1001,"node_id":"x"},"target_type":"Organization","sender":{"id":3}}`
	issueBody              = `{"action":"opened","issue":{"id":55,"number":2},"repository":{"id":1296269,"name":"hello","full_name":"octo-org/hello"},"organization":{"id":9,"login":"octo-org"},"installation":{"id":1001,"node_id":"x"},"sender":{"id":3}}`
)

var _ = Describe("Parsing a GitHub delivery", func() {
	var hook *github.Webhook

	BeforeEach(func() {
		var err error
		hook, err = github.NewWebhook(github.Config{WebhookSecret: []byte(appSecret), AppID: 42})
		Expect(err).NotTo(HaveOccurred())
	})

	parse := func(event, body string, extra ...string) (contract.Envelope, error) {
		return hook.Parse(delivery(event, "72d3162e-cc78-11e3-81ab-4c9367dc0958", body, extra...), nil)
	}

	Describe("a ping", func() {
		It("answers pong at once and stores nothing", func() {
			env, err := hook.Parse(delivery("ping", "", `{"zen":"Keep it logically awesome.","hook_id":1}`), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Immediate).NotTo(BeNil())
			Expect(env.Immediate.Status).To(Equal(200))
			Expect(env.Immediate.ContentType).To(Equal("application/json"))
			Expect(env.Immediate.Body).To(MatchJSON(`{"status":"pong"}`))
		})
	})

	Describe("a work event", func() {
		It("routes by the repository and its organization from the signed installation", func() {
			env, err := parse("issues", issueBody)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Immediate).To(BeNil())
			Expect(env.DropReason).To(BeEmpty())
			Expect(env.Control).To(BeFalse())
			Expect(env.EventType).To(Equal("issues"))
			Expect(env.Action).To(Equal("opened"))
			Expect(env.DeliveryKey).To(Equal("72d3162e-cc78-11e3-81ab-4c9367dc0958"))
			Expect(env.Subject.String()).To(Equal("github:repository:1296269"))
			Expect(env.Route).To(Equal(ports.RouteSpec{
				SourceKind: "GITHUB_APP", SourceKey: "1001",
				Resources: []ports.Resource{
					{Type: "repository", ID: "1296269"},
					{Type: "organization", ID: "9"},
				},
				RecipientsAnyConnection: true,
			}))
		})

		It("lets PAT workspaces receive only event types any reader of the repository sees; grants, installation, keys and alerts stay with the App", func() {
			body := `{"action":"added","repository":{"id":1296269},"organization":{"id":9},"installation":{"id":1001},"member":{"id":5,"login":"eve"}}`
			for _, event := range []string{"member", "team_add", "membership", "team", "repository", "organization", "deploy_key",
				"security_advisory", "repository_vulnerability_alert", "secret_scanning_alert", "code_scanning_alert",
				"dependabot_alert", "branch_protection_rule", "some_future_event"} {
				env, err := parse(event, body)
				Expect(err).NotTo(HaveOccurred(), event)
				Expect(env.DropReason).To(BeEmpty(), event)
				Expect(env.Route.SourceKey).To(Equal("1001"), event)
				Expect(env.Route.RecipientsAnyConnection).To(BeFalse(), event)
				Expect(github.ReaderVisible(event)).To(BeFalse(), event)
			}
			for _, event := range []string{"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
				"push", "create", "delete", "label", "milestone", "release", "status", "check_run", "check_suite"} {
				env, err := parse(event, body)
				Expect(err).NotTo(HaveOccurred(), event)
				Expect(env.Route.RecipientsAnyConnection).To(BeTrue(), event)
			}
		})

		It("keeps the repository's subject across a rename", func() {
			renamed := `{"action":"renamed","changes":{"repository":{"name":{"from":"hello"}}},"repository":{"id":1296269,"name":"world","full_name":"octo-org/world"},"installation":{"id":1001}}`
			before, err := parse("issues", issueBody)
			Expect(err).NotTo(HaveOccurred())
			after, err := parse("repository", renamed)
			Expect(err).NotTo(HaveOccurred())
			Expect(after.Subject).To(Equal(before.Subject))

			other := `{"action":"opened","repository":{"id":1296270,"name":"hello","full_name":"octo-org/hello"},"installation":{"id":1001}}`
			env, err := parse("issues", other)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject).NotTo(Equal(before.Subject), "a different repository with the same name has its own subject")
		})

		It("never puts the event type, action or delivery id into the subject", func() {
			env, err := parse("issues", issueBody)
			Expect(err).NotTo(HaveOccurred())
			for _, token := range []string{"issues", "opened", "72d3162e"} {
				Expect(env.Subject.String()).NotTo(ContainSubstring(token))
			}
			again, err := hook.Parse(delivery("issue_comment", "other-delivery", issueBody), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Subject).To(Equal(env.Subject))
		})

		DescribeTable("names an organization-level event by the organization",
			func(event, body string) {
				env, err := parse(event, body)
				Expect(err).NotTo(HaveOccurred())
				Expect(env.DropReason).To(BeEmpty())
				Expect(env.Subject.String()).To(Equal("github:organization:38302899"))
				Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "organization", ID: "38302899"}}))
			},
			Entry("organization", "organization", `{"action":"member_added","membership":{"user":{"id":5}},"organization":{"id":38302899},"installation":{"id":1001}}`),
			Entry("membership", "membership", `{"action":"added","scope":"team","team":{"id":1},"organization":{"id":38302899},"installation":{"id":1001}}`),
			Entry("team without repository", "team", `{"action":"created","team":{"id":1},"organization":{"id":38302899},"installation":{"id":1001}}`),
		)

		It("names a team event with a repository by the repository", func() {
			env, err := parse("team", `{"action":"added_to_repository","team":{"id":1},"repository":{"id":186853261},"organization":{"id":38302899},"installation":{"id":1001}}`)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject.String()).To(Equal("github:repository:186853261"))
		})

		DescribeTable("reads ids written as strings or integral floats",
			func(id string) {
				env, err := parse("issues", `{"action":"opened","repository":{"id":`+id+`},"installation":{"id":"1001"}}`)
				Expect(err).NotTo(HaveOccurred())
				Expect(env.Subject.String()).To(Equal("github:repository:1296269"))
				Expect(env.Route.SourceKey).To(Equal("1001"))
			},
			Entry("a string", `"1296269"`),
			Entry("a float", `1296269.0`),
			Entry("an exponent", `1.296269e6`),
		)

		DescribeTable("refuses an id it cannot use",
			func(body string) {
				_, err := parse("issues", body)
				Expect(err).To(beRejected(ports.ErrMalformed, "invalid-payload"))
			},
			Entry("a fractional repository id", `{"repository":{"id":1.5},"installation":{"id":1}}`),
			Entry("a negative organization id", `{"organization":{"id":-3},"installation":{"id":1}}`),
			Entry("a repository that is not an object", `{"repository":"octo/hello","installation":{"id":1}}`),
			Entry("an installation id that is an object", `{"repository":{"id":1},"installation":{"id":{}}}`),
		)

		It("drops a work event without a signed installation id, whatever the headers say", func() {
			env, err := parse("issues", `{"action":"opened","repository":{"id":1296269}}`,
				"X-GitHub-Hook-Installation-Target-ID", "1001", "X-GitHub-Hook-Installation-Target-Type", "integration")
			Expect(err).NotTo(HaveOccurred())
			Expect(env.DropReason).To(Equal("work-event-without-source"))
			Expect(env.Route.SourceKey).To(BeEmpty())
		})

		It("drops a work event with neither repository nor organization instead of using the system scope", func() {
			env, err := parse("security_advisory", `{"action":"published","security_advisory":{"ghsa_id":"GHSA-1"},"installation":{"id":1001}}`)
			Expect(err).NotTo(HaveOccurred())
			Expect(env.DropReason).To(Equal("no-repository-or-organization"))
			Expect(env.Control).To(BeFalse())
			Expect(env.Subject.IsZero()).To(BeTrue())
		})

		It("keeps the event headers and never a signature or credential", func() {
			env, err := parse("issues", issueBody,
				"X-GitHub-Hook-ID", "292430182",
				"X-GitHub-Hook-Installation-Target-ID", "42",
				"X-GitHub-Hook-Installation-Target-Type", "integration",
				"User-Agent", "GitHub-Hookshot/044aadd",
				"X-Hub-Signature-256", "sha256=abc",
				"X-Hub-Signature", "sha1=abc",
				"Authorization", "Bearer x",
				"Cookie", "a=b")
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Headers).To(Equal(map[string]string{
				"X-GitHub-Event":                         "issues",
				"X-GitHub-Delivery":                      "72d3162e-cc78-11e3-81ab-4c9367dc0958",
				"X-GitHub-Hook-ID":                       "292430182",
				"X-GitHub-Hook-Installation-Target-ID":   "42",
				"X-GitHub-Hook-Installation-Target-Type": "integration",
				"User-Agent":                             "GitHub-Hookshot/044aadd",
			}))
		})
	})

	Describe("an installation control event", func() {
		DescribeTable("goes to the system scope with its installation as the only route",
			func(event, body string) {
				env, err := parse(event, body, "X-GitHub-Hook-Installation-Target-ID", "999")
				Expect(err).NotTo(HaveOccurred())
				Expect(env.Control).To(BeTrue())
				Expect(env.DropReason).To(BeEmpty())
				Expect(env.Subject.String()).To(Equal("github:installation:1001"))
				Expect(env.Route).To(Equal(ports.RouteSpec{SourceKind: "GITHUB_APP", SourceKey: "1001"}))
			},
			Entry("installation", "installation", installationBody),
			Entry("installation_repositories", "installation_repositories", installationReposBody),
			Entry("installation_target", "installation_target", installationTargetBody),
		)

		DescribeTable("refuses a signed work payload relabeled as a control event",
			func(event, body string) {
				_, err := parse(event, body)
				Expect(err).To(beRejected(ports.ErrMalformed, "invalid-event-route"))
			},
			Entry("an issue as installation", "installation", issueBody),
			Entry("an issue as installation_repositories", "installation_repositories", issueBody),
			Entry("an issue as installation_target", "installation_target", issueBody),
			Entry("an installation event as installation_repositories", "installation_repositories", installationBody),
			Entry("a repository event with a full installation as installation", "installation",
				`{"action":"created","installation":{"id":1001,"account":{"id":9}},"repository":{"id":1}}`),
			Entry("a body without installation id", "installation", `{"action":"created","installation":{"account":{"id":9}}}`),
			Entry("a body without action", "installation", `{"installation":{"id":1001,"account":{"id":9}}}`),
			Entry("a target event without target_type", "installation_target",
				`{"action":"renamed","account":{"id":9},"installation":{"id":1001}}`),
		)

		It("refuses an installation of another App", func() {
			_, err := parse("installation", `{"action":"created","installation":{"id":1001,"app_id":7,"account":{"id":9}}}`)
			Expect(err).To(beRejected(ports.ErrUnauthenticated, "wrong-app"))
		})
	})

	DescribeTable("refuses a delivery it cannot key or read",
		func(event, deliveryID, body, reason string) {
			_, err := hook.Parse(delivery(event, deliveryID, body), nil)
			Expect(err).To(beRejected(ports.ErrMalformed, reason))
		},
		Entry("no delivery id", "issues", "", issueBody, "missing-delivery-id"),
		Entry("no event type", "", "d-1", issueBody, "missing-event-type"),
		Entry("an event type with control characters", "iss\tues", "d-1", issueBody, "invalid-event-type"),
		Entry("a JSON array", "issues", "d-1", `[1,2]`, "invalid-payload"),
		Entry("a JSON string", "issues", "d-1", `"issues"`, "invalid-payload"),
	)
})

var _ = Describe("Deriving GitHub keys", func() {
	It("takes the delivery key from X-GitHub-Delivery and the subject from stable ids", func() {
		var body map[string]any
		Expect(json.Unmarshal([]byte(issueBody), &body)).To(Succeed())
		keys := github.SubjectKeyDeriver{}
		key, err := keys.DeliveryKey(delivery("issues", "abc-1", issueBody), body)
		Expect(err).NotTo(HaveOccurred())
		Expect(key).To(Equal("abc-1"))
		s, err := keys.Subject("issues", body)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("github:repository:1296269"))
	})
})
