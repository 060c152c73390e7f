package gitlab_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const projectJSON = `"project":{"id":101,"name":"api","namespace_id":42,"path_with_namespace":"acme/api",
	"web_url":"https://gitlab.example/acme/api","default_branch":"main"}`

var _ = Describe("GitLab default-boundary handlers", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
	})

	It("claims project discovery and the issue write as two fixed steps", func(ctx SpecContext) {
		issue := harness.Leased(ctx, ws, "Issue Hook", "gitlab:project:101", `{"object_kind":"issue",`+projectJSON+`,
			"object_attributes":{"id":555,"iid":7,"project_id":101,"title":"Crash on start","state":"opened",
			"author_id":9,"url":"https://gitlab.example/acme/api/-/issues/7","action":"open",
			"created_at":"2024-05-01 10:00:00 UTC","updated_at":"2024-05-01 10:05:00 UTC"},
			"labels":[{"title":"bug"}]}`)
		Expect(issue.Attempt(ctx)).To(Succeed())
		Expect(issue.Steps(ctx)).To(Equal([]string{"gitlab.issue.upsert", "gitlab.project.discover"}))
		Expect(harness.Column(ctx, `SELECT title || ' ' || array_to_string(labels, ',') FROM gitlab_issue WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"Crash on start bug"}))
		Expect(harness.Column(ctx, `SELECT path_with_namespace FROM gitlab_project WHERE workspace_id = $1`, ws)).To(Equal([]string{"acme/api"}))
	})

	It("records a destroyed project as a monitor change in its own step", func(ctx SpecContext) {
		note := harness.Leased(ctx, ws, "Note Hook", "gitlab:project:101", `{"object_kind":"note",`+projectJSON+`,
			"object_attributes":{"id":77,"note":"LGTM","noteable_type":"MergeRequest","noteable_id":9001,
			"author_id":9,"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`)
		Expect(note.Attempt(ctx)).To(Succeed())
		destroyed := harness.Leased(ctx, ws, "Project Hook", "gitlab:project:101", `{"event_name":"project_destroy",
			"project_id":101,"name":"api","path_with_namespace":"acme/api",
			"created_at":"2024-05-01T09:00:00Z","updated_at":"2024-05-02T09:00:00Z"}`)
		Expect(destroyed.Attempt(ctx)).To(Succeed())
		Expect(destroyed.Steps(ctx)).To(Equal([]string{"gitlab.project.monitor"}))
		Expect(harness.Column(ctx, `SELECT monitored::text || ' ' || deleted::text FROM gitlab_project WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"false true"}))
	})

	It("keeps a member removal as a tombstone that an older add cannot undo", func(ctx SpecContext) {
		member := func(event, at string) support.Leased {
			return harness.Leased(ctx, ws, "Member Hook", "gitlab:group:42", `{"event_name":"`+event+`","group_id":42,
				"group_name":"Acme","group_path":"acme","user_id":9,"user_username":"ana","group_access":"Developer",
				"created_at":"2024-05-01T09:00:00Z","updated_at":"`+at+`"}`)
		}
		removed := member("user_remove_from_group", "2024-05-03T09:00:00Z")
		Expect(removed.Attempt(ctx)).To(Succeed())
		Expect(member("user_add_to_group", "2024-05-02T09:00:00Z").Attempt(ctx)).To(Succeed())
		Expect(removed.Steps(ctx)).To(Equal([]string{"gitlab.member.upsert"}))
		Expect(harness.Column(ctx, `SELECT username || ' ' || deleted::text FROM gitlab_member WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"ana true"}))
	})

	It("mirrors milestone, subgroup and pipeline events, each in its fixed step", func(ctx SpecContext) {
		milestone := harness.Leased(ctx, ws, "Milestone Hook", "gitlab:project:101", `{"object_kind":"milestone",`+projectJSON+`,
			"action":"create","object_attributes":{"id":31,"iid":2,"project_id":101,"title":"v1.0","state":"active",
			"due_date":"2024-06-30","created_at":"2024-05-01 10:00:00 UTC","updated_at":"2024-05-01 10:00:00 UTC"}}`)
		subgroup := harness.Leased(ctx, ws, "Subgroup Hook", "gitlab:group:43", `{"event_name":"subgroup_create","group_id":43,
			"name":"Platform","path":"platform","full_path":"acme/platform","parent_group_id":42,"parent_name":"Acme",
			"parent_path":"acme","parent_full_path":"acme","created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}`)
		pipeline := harness.Leased(ctx, ws, "Pipeline Hook", "gitlab:project:101", `{"object_kind":"pipeline",`+projectJSON+`,
			"object_attributes":{"id":8001,"ref":"main","sha":"`+shaA+`","status":"success","source":"push",
			"created_at":"2024-05-01 10:00:00 UTC","finished_at":"2024-05-01 10:07:00 UTC"},"merge_request":{"id":9001}}`)
		for _, d := range []support.Leased{milestone, subgroup, pipeline} {
			Expect(d.Attempt(ctx)).To(Succeed())
		}
		Expect(milestone.Steps(ctx)).To(Equal([]string{"gitlab.milestone.upsert", "gitlab.project.discover"}))
		Expect(subgroup.Steps(ctx)).To(Equal([]string{"gitlab.subgroup.upsert"}))
		Expect(pipeline.Steps(ctx)).To(Equal([]string{"gitlab.pipeline.upsert", "gitlab.project.discover"}))
		Expect(harness.Column(ctx, `SELECT title || ' ' || due_date FROM gitlab_milestone WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"v1.0 2024-06-30"}))
		Expect(harness.Column(ctx, `SELECT full_path || ' ' || coalesce(parent_id::text, '-') FROM gitlab_group WHERE workspace_id = $1 ORDER BY id`, ws)).
			To(Equal([]string{"acme -", "acme/platform 42"}))
		Expect(harness.Column(ctx, `SELECT status || ' ' || merge_request_id FROM gitlab_pipeline WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"success 9001"}))
	})

	It("makes a payload without the fields it needs a permanent failure", func(ctx SpecContext) {
		broken := harness.Leased(ctx, ws, "Issue Hook", "gitlab:project:101", `{"object_kind":"issue",`+projectJSON+`}`)
		Expect(inbox.Classify(broken.Attempt(ctx))).To(Equal(inbox.Permanent))
		Expect(broken.Steps(ctx)).To(BeEmpty())
	})
})
