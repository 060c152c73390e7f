package gitlab_test

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The person, as GitLab's webhook documentation shapes a user: numeric id, username, name and
// e-mail address.
const (
	anaID       = "4815162"
	anaUsername = "ana.dev"
	anaName     = "Ana Devreux"
	anaEmail    = "ana.devreux@example.com"
)

const gitlabSource = "https://gitlab.example.com"

// anaUser is the user object GitLab puts in issue, merge request and note hooks.
var anaUser = fmt.Sprintf(`{"id":%s,"name":%q,"username":%q,"avatar_url":"https://gitlab.example.com/uploads/%s.png","email":%q}`,
	anaID, anaName, anaUsername, anaUsername, anaEmail)

const gitlabProject = `{"id":101,"name":"api","namespace_id":42,"path_with_namespace":"acme/api",
	"web_url":"https://gitlab.example.com/acme/api","default_branch":"main","visibility_level":0}`

// anaPayloads are the documented hook shapes of the person's activity in project 101: added to
// the group, an issue and a merge request they opened, a note they wrote, a push of their
// commit, and a merge request of someone else.
func anaPayloads() map[string]string {
	return map[string]string{
		"Member Hook": fmt.Sprintf(`{"event_name":"user_add_to_group","group_id":42,"group_name":"acme","group_path":"acme",
			"user_id":%s,"user_username":%q,"user_name":%q,"user_email":%q,"group_access":"Developer",
			"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}`, anaID, anaUsername, anaName, anaEmail),
		"Issue Hook": fmt.Sprintf(`{"object_kind":"issue","event_type":"issue","user":%s,"project":%s,
			"object_attributes":{"id":9001,"iid":1,"project_id":101,"title":"Crash on start","description":"It crashes",
			"state":"opened","author_id":%s,"url":"https://gitlab.example.com/acme/api/-/issues/1","action":"open",
			"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`, anaUser, gitlabProject, anaID),
		"Merge Request Hook": fmt.Sprintf(`{"object_kind":"merge_request","event_type":"merge_request","user":%s,"project":%s,
			"object_attributes":{"id":9101,"iid":7,"target_project_id":101,"title":"Fix the crash","description":"Fixes #1",
			"state":"opened","source_branch":"fix","target_branch":"main","merge_status":"can_be_merged","author_id":%s,
			"url":"https://gitlab.example.com/acme/api/-/merge_requests/7","action":"open","last_commit":{"id":%q},
			"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`, anaUser, gitlabProject, anaID, shaA),
		"Note Hook": fmt.Sprintf(`{"object_kind":"note","event_type":"note","user":%s,"project_id":101,"project":%s,
			"object_attributes":{"id":9201,"note":"Looks good to me","noteable_type":"MergeRequest","noteable_id":9101,
			"author_id":%s,"project_id":101,"system":false,"url":"https://gitlab.example.com/acme/api/-/merge_requests/7#note_9201",
			"action":"create","created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`, anaUser, gitlabProject, anaID),
		"Push Hook": fmt.Sprintf(`{"object_kind":"push","before":"0000000000000000000000000000000000000000","after":%q,
			"ref":"refs/heads/fix","user_id":%s,"user_name":%q,"user_username":%q,"user_email":%q,"project_id":101,"project":%s,
			"commits":[{"id":%q,"message":"Fix the crash\n\nbody","title":"Fix the crash","timestamp":"2024-05-01T10:00:00+02:00",
			"url":"https://gitlab.example.com/acme/api/-/commit/%s","author":{"name":%q,"email":%q}}],"total_commits_count":1}`,
			shaA, anaID, anaName, anaUsername, strings.ToUpper(anaEmail), gitlabProject, shaA, shaA, anaName, anaEmail),
	}
}

var _ = Describe("Person erasure of the GitLab mirror", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
		_, err := harness.Pool.Exec(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url) VALUES ($1, 'GITLAB', 'GITLAB', $2)`,
			ws, gitlabSource)
		Expect(err).NotTo(HaveOccurred())
		for event, payload := range anaPayloads() {
			d := harness.Leased(ctx, ws, event, "gitlab:project:101", payload)
			_, err := harness.Pool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', $2::text) WHERE id = $1`,
				d.ID, gitlabSource)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Attempt(ctx)).To(Succeed(), event)
		}
		// Someone else's merge request in the same project stays as it is.
		Expect(harness.Leased(ctx, ws, "Merge Request Hook", "gitlab:project:101", `{"object_kind":"merge_request","project":`+gitlabProject+`,
			"object_attributes":{"id":9102,"iid":8,"target_project_id":101,"title":"Docs","state":"opened","author_id":77,
			"created_at":"2024-05-01T10:00:00Z","updated_at":"2024-05-01T10:00:00Z"}}`).Attempt(ctx)).To(Succeed())
	})

	scope := func(identities ...erasure.Identity) erasure.Scope {
		GinkgoHelper()
		s, err := erasure.NewScope(gitlab.Provider, gitlabSource, identities)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	identity := func(id, login, email string) erasure.Identity {
		GinkgoHelper()
		i, err := erasure.NewIdentity(id, login, email)
		Expect(err).NotTo(HaveOccurred())
		return i
	}
	traces := []string{anaID, anaUsername, anaName, anaEmail}
	everywhere := []string{"gitlab_", "provider_event"}

	It("finds the person nowhere in the mirror, the inbox or the read API afterwards; shared items and commits stay", func(ctx SpecContext) {
		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, traces...)).To(ContainElements(
			support.Trace{Table: "gitlab_member", Column: "username", Value: anaUsername},
			support.Trace{Table: "gitlab_commit", Column: "author_email", Value: anaEmail},
			support.Trace{Table: "gitlab_merge_request", Column: "author_id", Value: anaID},
			support.Trace{Table: "provider_event", Column: "payload", Value: anaName}), "the search finds the person before")
		member := harness.NewAccount(ctx, "reader", "acme", "MEMBER")
		Expect(strings.ToLower(answerText(harness.Get("/api/workspaces/acme/gitlab/projects/101/merge-requests", member)))).To(ContainSubstring(anaID))

		// By a case variant of the username and the address: GitLab compares both without case.
		receipts := support.EraseNow(ctx, erasures, scope(identity("", strings.ToUpper(anaUsername), strings.ToUpper(anaEmail))))
		Expect(receipts).To(HaveLen(4))
		Expect(receipts[0].Store.String()).To(Equal("gitlab-mirror"))
		Expect(receipts[1].Store.String()).To(Equal("change-feed"))
		Expect(receipts[0].Deleted).To(BeNumerically(">=", 6))

		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, traces...)).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT title || ' ' || coalesce(author_id::text, 'none') FROM gitlab_merge_request WHERE workspace_id = $1 ORDER BY iid`, ws)).
			To(Equal([]string{"Fix the crash none", "Docs 77"}))
		Expect(harness.Column(ctx, `SELECT title FROM gitlab_issue WHERE workspace_id = $1`, ws)).To(Equal([]string{"Crash on start"}))
		Expect(harness.Column(ctx, `SELECT sha || ' ' || title || ' [' || author_name || author_email || ']' FROM gitlab_commit WHERE workspace_id = $1`, ws)).
			To(Equal([]string{shaA + " Fix the crash []"}))
		Expect(harness.Column(ctx, `SELECT commit_count::text FROM gitlab_push WHERE workspace_id = $1`, ws)).To(Equal([]string{"1"}), "counts stay")
		Expect(harness.Column(ctx, `SELECT id::text FROM gitlab_note WHERE workspace_id = $1`, ws)).To(BeEmpty())

		answer := strings.ToLower(answerText(harness.Get("/api/workspaces/acme/gitlab/projects/101/merge-requests", member)))
		Expect(answer).To(ContainSubstring("fix the crash"))
		for _, t := range traces {
			Expect(answer).NotTo(ContainSubstring(strings.ToLower(t)))
		}
	})

	It("counts every store in the preview, deleting nothing", func(ctx SpecContext) {
		m, err := erasures.Preview(ctx, scope(identity(anaID, "", "")))
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(HaveLen(4))
		Expect(m[0].Store.String()).To(Equal("gitlab-mirror"))
		Expect(m[0].Matches).To(BeNumerically(">=", 5))
		Expect(m[1].Store.String()).To(Equal("change-feed"))
		Expect(m[2].Matches).To(Equal(int64(5)), "the five deliveries naming the person")
		Expect(support.SearchTraces(ctx, harness.Pool, []string{"gitlab_member"}, anaUsername)).NotTo(BeEmpty())
	})
})

// answerText is a read API answer as JSON text, for searching.
func answerText(r support.Response) string {
	GinkgoHelper()
	Expect(r.Status).To(Equal(200))
	raw, err := json.Marshal(r.JSON)
	Expect(err).NotTo(HaveOccurred())
	return string(raw)
}
