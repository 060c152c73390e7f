package changes_test

import (
	"bytes"
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const glProject = `"project":{"id":101,"name":"api","namespace_id":42,"path_with_namespace":"acme/api",
	"web_url":"https://gitlab.example/acme/api","default_branch":"main"}`

// The GitLab entities beside merge requests, through the real handlers with the documented
// hook shapes.
var _ = Describe("GitLab handlers publishing the other mirrored entities", func() {
	h := withHandlers(nil, gitlabPublishing)

	deliver := func(ctx context.Context, event, payload string) support.Delivery {
		GinkgoHelper()
		return h.deliver(ctx, gitlab.Provider, event, "gitlab:project:101", payload)
	}
	ofType := func(cs []change.Stored, t string) []change.Stored {
		out := []change.Stored{}
		for _, c := range cs {
			if c.Type == t {
				out = append(out, c)
			}
		}
		return out
	}

	DescribeTable("a delivery publishes its entity's change once; a redelivery and a same-state event publish nothing",
		func(ctx SpecContext, event, payload, typ, subject string, data obj) {
			d := deliver(ctx, event, payload)
			first := h.changes(ctx)
			mine := []change.Stored{}
			for _, c := range ofType(first, typ) {
				if c.Subject == subject {
					mine = append(mine, c)
				}
			}
			Expect(mine).To(HaveLen(1), "one %s of %s among %v", typ, subject, first)
			var got obj
			dec := json.NewDecoder(bytes.NewReader(mine[0].Data))
			dec.UseNumber()
			Expect(dec.Decode(&got)).To(Succeed())
			for k, v := range data {
				Expect(got).To(HaveKeyWithValue(k, v), "data member %s of %s", k, mine[0].Data)
			}

			By("the same delivery handled again: nothing new")
			d.NextLease(ctx)
			Expect(d.Handle(ctx, h.reg)).To(Succeed())
			Expect(h.changes(ctx)).To(HaveLen(len(first)))

			By("another delivery of the same state: nothing new")
			deliver(ctx, event, payload)
			Expect(h.changes(ctx)).To(HaveLen(len(first)))
		},
		Entry("an issue opened", "Issue Hook", `{"object_kind":"issue",`+glProject+`,
			"object_attributes":{"id":555,"iid":7,"project_id":101,"title":"Crash on start","state":"opened",
			"author_id":9,"url":"https://gitlab.example/acme/api/-/issues/7","action":"open",
			"created_at":"2024-05-01 10:00:00 UTC","updated_at":"2024-05-01 10:05:00 UTC"},"labels":[{"title":"bug"}]}`,
			"gitlab.issue.upserted", "gitlab:issue:555",
			obj{"id": json.Number("555"), "iid": json.Number("7"), "title": "Crash on start", "labels": []any{"bug"}, "authorId": json.Number("9")}),
		Entry("a note written", "Note Hook", `{"object_kind":"note",`+glProject+`,
			"object_attributes":{"id":77,"note":"LGTM","noteable_type":"MergeRequest","noteable_id":9001,
			"author_id":9,"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`,
			"gitlab.note.upserted", "gitlab:note:77",
			obj{"id": json.Number("77"), "body": "LGTM", "noteableType": "MergeRequest", "noteableId": json.Number("9001")}),
		Entry("the project it names discovered", "Note Hook", `{"object_kind":"note",`+glProject+`,
			"object_attributes":{"id":78,"note":"+1","noteable_type":"Issue","noteable_id":555,
			"author_id":9,"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`,
			"gitlab.project.upserted", "gitlab:project:101",
			obj{"id": json.Number("101"), "pathWithNamespace": "acme/api", "monitored": true}),
		Entry("a project destroyed", "Project Hook", `{"event_name":"project_destroy","project_id":101,"name":"api",
			"path_with_namespace":"acme/api","created_at":"2024-05-01T09:00:00Z","updated_at":"2024-05-02T09:00:00Z"}`,
			"gitlab.project.deleted", "gitlab:project:101", obj{"id": json.Number("101")}),
		Entry("a member added to a group", "Member Hook", `{"event_name":"user_add_to_group","group_id":42,
			"group_name":"Acme","group_path":"acme","user_id":9,"user_username":"ana","group_access":"Developer",
			"created_at":"2024-05-01T09:00:00Z","updated_at":"2024-05-02T09:00:00Z"}`,
			"gitlab.member.upserted", "gitlab:group:42",
			obj{"sourceType": "group", "sourceId": json.Number("42"), "userId": json.Number("9"), "username": "ana", "accessLevel": "Developer"}),
		Entry("a member removed from a group", "Member Hook", `{"event_name":"user_remove_from_group","group_id":42,
			"group_name":"Acme","group_path":"acme","user_id":9,"user_username":"ana","group_access":"Developer",
			"created_at":"2024-05-01T09:00:00Z","updated_at":"2024-05-03T09:00:00Z"}`,
			"gitlab.member.deleted", "gitlab:group:42", obj{"userId": json.Number("9"), "username": "ana"}),
		Entry("a milestone created", "Milestone Hook", `{"object_kind":"milestone",`+glProject+`,
			"action":"create","object_attributes":{"id":31,"iid":2,"project_id":101,"title":"v1.0","state":"active",
			"due_date":"2024-06-30","created_at":"2024-05-01 10:00:00 UTC","updated_at":"2024-05-01 10:00:00 UTC"}}`,
			"gitlab.milestone.upserted", "gitlab:milestone:31",
			obj{"id": json.Number("31"), "title": "v1.0", "state": "active", "dueDate": "2024-06-30"}),
		Entry("a subgroup created", "Subgroup Hook", `{"event_name":"subgroup_create","group_id":43,
			"name":"Platform","path":"platform","full_path":"acme/platform","parent_group_id":42,"parent_name":"Acme",
			"parent_path":"acme","parent_full_path":"acme","created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}`,
			"gitlab.group.upserted", "gitlab:group:43",
			obj{"id": json.Number("43"), "fullPath": "acme/platform", "parentId": json.Number("42")}),
		Entry("a pipeline finished", "Pipeline Hook", `{"object_kind":"pipeline",`+glProject+`,
			"object_attributes":{"id":8001,"ref":"main","sha":"`+sha(5)+`","status":"success","source":"push",
			"created_at":"2024-05-01 10:00:00 UTC","finished_at":"2024-05-01 10:07:00 UTC"},"merge_request":{"id":9001}}`,
			"gitlab.pipeline.upserted", "gitlab:pipeline:8001",
			obj{"id": json.Number("8001"), "status": "success", "sha": sha(5), "mergeRequestId": json.Number("9001")}),
		Entry("a pushed commit", "Push Hook", `{"object_kind":"push","before":"`+sha(0)+`","after":"`+sha(6)+`",
			"ref":"refs/heads/fix","user_id":9,"user_username":"ana","project_id":101,`+glProject+`,
			"commits":[{"id":"`+sha(6)+`","message":"Fix the crash\n\nbody","title":"Fix the crash","timestamp":"2024-05-01T10:00:00+02:00",
			"url":"https://gitlab.example/acme/api/-/commit/`+sha(6)+`","author":{"name":"Ana","email":"ana@example.com"}}],"total_commits_count":1}`,
			"gitlab.commit.upserted", "gitlab:commit:101:"+sha(6),
			obj{"sha": sha(6), "title": "Fix the crash", "authorName": "Ana", "authoredAt": "2024-05-01T08:00:00Z"}),
	)

	It("publishes an issue's newer state and its deletion, and nothing for an older state", func(ctx SpecContext) {
		issue := func(title, action, updated string) string {
			return `{"object_kind":"issue",` + glProject + `,"object_attributes":{"id":556,"iid":8,"project_id":101,
				"title":"` + title + `","state":"opened","author_id":9,"action":"` + action + `",
				"created_at":"2024-05-01 10:00:00 UTC","updated_at":"` + updated + `"}}`
		}
		deliver(ctx, "Issue Hook", issue("First", "open", "2024-05-01 10:00:00 UTC"))
		deliver(ctx, "Issue Hook", issue("Second", "update", "2024-05-01 11:00:00 UTC"))
		deliver(ctx, "Issue Hook", issue("Stale", "update", "2024-05-01 10:30:00 UTC"))
		issues := ofType(h.changes(ctx), "gitlab.issue.upserted")
		Expect(issues).To(HaveLen(2))
		Expect(string(issues[0].Data)).To(ContainSubstring(`"title": "First"`))
		Expect(string(issues[1].Data)).To(ContainSubstring(`"title": "Second"`))
	})
})
