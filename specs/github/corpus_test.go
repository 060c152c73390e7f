package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// stubChecks answers every check-run read of a commit with one successful run of that commit,
// and has nothing else to say.
type stubChecks struct{}

func (stubChecks) CompareCommits(context.Context, githubmodel.Access, string, string, string) ([]githubmodel.Commit, error) {
	return nil, nil
}

func (stubChecks) CheckRunsForRef(_ context.Context, _ githubmodel.Access, _, ref string) ([]githubmodel.CheckRun, error) {
	done := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := "success"
	return []githubmodel.CheckRun{{ID: 1, HeadSHA: ref, Name: "build", Status: "completed", Conclusion: &ok, CompletedAt: &done}}, nil
}

func (stubChecks) CheckRunsForSuite(context.Context, githubmodel.Access, string, int64) ([]githubmodel.CheckRun, error) {
	return nil, nil
}

// payload is a decoded corpus payload with numbers kept exact.
type payload map[string]any

func (p payload) get(path ...string) any {
	var v any = map[string]any(p)
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (p payload) str(path ...string) string {
	s, _ := p.get(path...).(string)
	return s
}

func (p payload) id(path ...string) int64 {
	n, ok := p.get(path...).(json.Number)
	if !ok {
		return 0
	}
	i, err := n.Int64()
	Expect(err).NotTo(HaveOccurred())
	return i
}

func (p payload) list(path ...string) []any {
	l, _ := p.get(path...).([]any)
	return l
}

func (p payload) flag(path ...string) bool {
	b, _ := p.get(path...).(bool)
	return b
}

var _ = Describe("GitHub's documented example payloads", func() {
	It("are all handled, and the mirror holds what each says", func(ctx SpecContext) {
		dir := support.GitHubCorpus()
		reg := registry(githubhandlers.Deps{Reader: stubChecks{}})
		controlWS := newWorkspace(ctx, "control")
		handled := map[string]int{}
		n := 0
		for _, event := range githubhandlers.EventTypes() {
			files, err := filepath.Glob(filepath.Join(dir, event, "*.json"))
			Expect(err).NotTo(HaveOccurred())
			slices.Sort(files)
			for _, file := range files {
				n++
				raw, err := os.ReadFile(file)
				Expect(err).NotTo(HaveOccurred())
				var p payload
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				Expect(dec.Decode(&p)).To(Succeed(), file)
				By(file)

				if strings.HasPrefix(event, "installation") {
					// Each control file meets one ACTIVE App connection of its installation and
					// no earlier record of it, so its own effect is what the checks see.
					for _, sql := range []string{`DELETE FROM connection`, `DELETE FROM github_installation`, `DELETE FROM github_installation_repository`} {
						_, err := pool.Exec(ctx, sql)
						Expect(err).NotTo(HaveOccurred())
					}
					conn := appConnection(ctx, controlWS, p.id("installation", "id"), "ACTIVE")
					Expect(leased(ctx, 0, event, raw).handle(ctx, reg)).To(Succeed(), file)
					expectControl(ctx, event, p, controlWS, conn)
				} else {
					// Each work file gets its own workspace: the mirror is per workspace, so no
					// other file's versions can hide this one's writes.
					ws := newWorkspace(ctx, fmt.Sprintf("c%d", n))
					Expect(leased(ctx, ws, event, raw).handle(ctx, reg)).To(Succeed(), file)
					expectMirrored(ctx, event, p, ws)
				}
				handled[event]++
			}
		}
		Expect(handled).NotTo(BeEmpty())
		GinkgoWriter.Printf("handled corpus payloads per event: %v\n", handled)
	})
})

// row reads one value of the mirror; the row must exist.
func row[T any](ctx context.Context, sql string, args ...any) T {
	GinkgoHelper()
	return scalar[T](ctx, sql, args...)
}

func expectControl(ctx context.Context, event string, p payload, ws, conn int64) {
	GinkgoHelper()
	inst := p.id("installation", "id")
	switch event {
	case "installation":
		Expect(row[int64](ctx, `SELECT connection_id FROM github_installation WHERE installation_id = $1`, inst)).To(Equal(conn))
		want := map[string]string{"created": "ACTIVE", "unsuspend": "ACTIVE", "suspend": "SUSPENDED", "deleted": "UNINSTALLED"}[p.str("action")]
		if want == "" {
			want = "ACTIVE"
		}
		Expect(connectionState(ctx, conn)).To(Equal(want))
	case "installation_repositories":
		Expect(row[int](ctx, `SELECT count(*) FROM github_installation_repository
			WHERE workspace_id = $1 AND installation_id = $2 AND NOT deleted`, ws, inst)).To(Equal(len(p.list("repositories_added"))))
		Expect(row[int](ctx, `SELECT count(*) FROM github_installation_repository
			WHERE workspace_id = $1 AND installation_id = $2 AND deleted`, ws, inst)).To(Equal(len(p.list("repositories_removed"))))
	case "installation_target":
		Expect(row[string](ctx, `SELECT account_login FROM github_installation WHERE installation_id = $1`, inst)).
			To(Equal(p.str("account", "login")))
	}
}

func expectMirrored(ctx context.Context, event string, p payload, ws int64) {
	GinkgoHelper()
	action := p.str("action")
	repoID := p.id("repository", "id")
	switch event {
	case "organization":
		Expect(row[string](ctx, `SELECT login FROM github_organization WHERE workspace_id = $1 AND id = $2 AND deleted = $3`,
			ws, p.id("organization", "id"), action == "deleted")).To(Equal(p.str("organization", "login")))
		if action == "member_added" || action == "member_removed" {
			Expect(row[bool](ctx, `SELECT deleted FROM github_organization_member WHERE workspace_id = $1 AND organization_id = $2 AND user_id = $3`,
				ws, p.id("organization", "id"), p.id("membership", "user", "id"))).To(Equal(action == "member_removed"))
		}
	case "repository":
		Expect(row[string](ctx, `SELECT full_name FROM github_repository WHERE workspace_id = $1 AND id = $2 AND deleted = $3`,
			ws, repoID, action == "deleted")).To(Equal(p.str("repository", "full_name")))
	case "member":
		Expect(row[bool](ctx, `SELECT deleted FROM github_repository_collaborator WHERE workspace_id = $1 AND repository_id = $2 AND user_id = $3`,
			ws, repoID, p.id("member", "id"))).To(Equal(action == "removed"))
	case "issues":
		Expect(row[string](ctx, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2 AND repository_id = $3 AND deleted = $4`,
			ws, p.id("issue", "id"), repoID, action == "deleted" || action == "transferred")).To(Equal(p.str("issue", "title")))
		Expect(row[int](ctx, `SELECT count(*) FROM github_label WHERE workspace_id = $1`, ws)).To(BeNumerically(">=", len(p.list("issue", "labels"))))
	case "issue_comment":
		Expect(row[bool](ctx, `SELECT deleted FROM github_issue_comment WHERE workspace_id = $1 AND id = $2 AND issue_id = $3`,
			ws, p.id("comment", "id"), p.id("issue", "id"))).To(Equal(action == "deleted"))
		mirrored := 0
		if p.get("issue", "pull_request") == nil {
			mirrored = 1
		}
		Expect(row[int](ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND id = $2`, ws, p.id("issue", "id"))).To(Equal(mirrored))
	case "pull_request_review":
		Expect(row[string](ctx, `SELECT state FROM github_review WHERE workspace_id = $1 AND id = $2 AND pull_request_id = $3`,
			ws, p.id("review", "id"), p.id("pull_request", "id"))).To(Equal(p.str("review", "state")))
	case "pull_request_review_comment":
		Expect(row[bool](ctx, `SELECT deleted FROM github_review_comment WHERE workspace_id = $1 AND id = $2 AND pull_request_id = $3`,
			ws, p.id("comment", "id"), p.id("pull_request", "id"))).To(Equal(action == "deleted"))
	case "pull_request_review_thread":
		Expect(row[bool](ctx, `SELECT resolved FROM github_review_thread WHERE workspace_id = $1 AND node_id = $2`,
			ws, p.str("thread", "node_id"))).To(Equal(action == "resolved"))
		Expect(row[int](ctx, `SELECT count(*) FROM github_review_comment WHERE workspace_id = $1`, ws)).To(Equal(len(p.list("thread", "comments"))))
	case "milestone":
		Expect(row[string](ctx, `SELECT title FROM github_milestone WHERE workspace_id = $1 AND id = $2 AND deleted = $3`,
			ws, p.id("milestone", "id"), action == "deleted")).To(Equal(p.str("milestone", "title")))
	case "label":
		Expect(row[string](ctx, `SELECT name FROM github_label WHERE workspace_id = $1 AND id = $2 AND deleted = $3`,
			ws, p.id("label", "id"), action == "deleted")).To(Equal(p.str("label", "name")))
	case "membership":
		Expect(row[bool](ctx, `SELECT deleted FROM github_team_member WHERE workspace_id = $1 AND team_id = $2 AND user_id = $3`,
			ws, p.id("team", "id"), p.id("member", "id"))).To(Equal(action == "removed"))
	case "team_add":
		Expect(row[int](ctx, `SELECT count(*) FROM github_team_repository WHERE workspace_id = $1 AND team_id = $2 AND repository_id = $3 AND NOT deleted`,
			ws, p.id("team", "id"), repoID)).To(Equal(1))
	case "team":
		Expect(row[bool](ctx, `SELECT deleted FROM github_team WHERE workspace_id = $1 AND id = $2`, ws, p.id("team", "id"))).
			To(Equal(action == "deleted" || p.flag("team", "deleted")))
		if repoID != 0 {
			Expect(row[bool](ctx, `SELECT deleted FROM github_team_repository WHERE workspace_id = $1 AND team_id = $2 AND repository_id = $3`,
				ws, p.id("team", "id"), repoID)).To(Equal(action == "removed_from_repository"))
		}
	case "pull_request":
		prID := p.id("pull_request", "id")
		Expect(row[string](ctx, `SELECT head_sha FROM github_pull_request WHERE workspace_id = $1 AND id = $2 AND repository_id = $3`,
			ws, prID, repoID)).To(Equal(p.str("pull_request", "head", "sha")))
		Expect(row[string](ctx, `SELECT state FROM github_pull_request_checks WHERE workspace_id = $1 AND pull_request_id = $2`,
			ws, prID)).To(Equal("success"))
	case "status":
		Expect(row[string](ctx, `SELECT state FROM github_commit_status WHERE workspace_id = $1 AND id = $2 AND sha = $3`,
			ws, p.id("id"), p.str("sha"))).To(Equal(p.str("state")))
	case "check_suite":
		Expect(row[string](ctx, `SELECT status FROM github_check_suite WHERE workspace_id = $1 AND id = $2 AND head_sha = $3`,
			ws, p.id("check_suite", "id"), p.str("check_suite", "head_sha"))).To(Equal(p.str("check_suite", "status")))
	case "push":
		deleted := p.str("after") == strings.Repeat("0", 40)
		Expect(row[bool](ctx, `SELECT deleted FROM github_ref WHERE workspace_id = $1 AND repository_id = $2 AND ref = $3`,
			ws, repoID, p.str("ref"))).To(Equal(deleted))
		Expect(row[int](ctx, `SELECT count(*) FROM github_commit WHERE workspace_id = $1 AND repository_id = $2`, ws, repoID)).
			To(Equal(len(p.list("commits"))))
	default:
		Fail("no expectation for event " + event)
	}
}
