package gitlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/specs/support"
	"github.com/hephaestus-dev/hephaestus/specs/support/appserver"
)

// The seed's GitLabWorkspaceEventRoutingIntegrationTest: the real server (bootstrap, its router
// and its running claimers, on a database of its own) receives GitLab deliveries over HTTP, each
// hook's secret token checked, and mirrors them for both workspaces that subscribe to the
// project. Nothing here calls a handler or claims a row itself.
var _ = Describe("GitLab deliveries through the running server", Ordered, func() {
	const (
		adminToken = "gitlab-e2e-admin-token-0123456789"
		gitlabURL  = "https://gitlab.example.com"
		projectID  = 4711
	)
	var (
		base  *appserver.Server
		srvDB *pgxpool.Pool
		hc    = &http.Client{Timeout: 10 * time.Second}
	)

	BeforeAll(func(ctx SpecContext) {
		db := support.Database(ctx)
		base = appserver.Start(appserver.Options{Env: map[string]string{
			bootstrap.EnvDatabaseURL:     db.URL,
			bootstrap.EnvAdminToken:      adminToken,
			bootstrap.EnvPollInterval:    "200ms",
			bootstrap.EnvPoisonBaseDelay: "100ms",
		}})
		srvDB = support.Pool(ctx, db, 4)
	})

	// call is one management API request with the administrator token.
	call := func(ctx context.Context, method, path string, body any, want int) map[string]any {
		GinkgoHelper()
		return base.Call(ctx, hc, method, path, adminToken, body, want)
	}

	// subscribe writes a VERIFIED project subscription straight into the database, as the
	// management API stores one whose access GitLab vouched for.
	subscribe := func(ctx context.Context, connectionID, workspaceID int64) {
		GinkgoHelper()
		support.VerifiedSubscription(ctx, srvDB, connectionID, workspaceID, "GITLAB", "project", strconv.Itoa(projectID), "acme/api")
	}

	issue := func(iid int, title string) []byte {
		now := time.Now().UTC().Format(time.RFC3339)
		body, err := json.Marshal(map[string]any{
			"object_kind": "issue", "event_type": "issue",
			"user": map[string]any{"id": 7, "name": "Ana", "username": "ana"},
			"project": map[string]any{"id": projectID, "name": "api", "path_with_namespace": "acme/api",
				"web_url": gitlabURL + "/acme/api", "default_branch": "main", "visibility_level": 0},
			"object_attributes": map[string]any{
				"id": 90000 + iid, "iid": iid, "project_id": projectID, "title": title, "description": "",
				"state": "opened", "author_id": 7, "created_at": now, "updated_at": now, "action": "open",
				"url": fmt.Sprintf("%s/acme/api/-/issues/%d", gitlabURL, iid),
			},
			"labels": []any{}, "changes": map[string]any{},
		})
		Expect(err).NotTo(HaveOccurred())
		return body
	}

	// deliver posts body to a connection's hook as GitLab does, with the hook's secret token.
	deliver := func(ctx context.Context, hook, token, key string, body []byte) (int, string) {
		GinkgoHelper()
		req := support.GitLabHook(ctx, base.Base+hook, "Issue Hook", key, gitlabURL, token, body)
		req.Header.Set("User-Agent", "GitLab/17.8.1")
		resp, err := hc.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(answer)
	}

	It("mirrors each delivery for both subscribing workspaces once the running claimers handled their rows", func(ctx SpecContext) {
		type tenant struct {
			slug       string
			workspace  int64
			connection int64
			hook       string
			token      string
		}
		tenants := []*tenant{{slug: "acme", token: "acme-hook-secret-0123456789"}, {slug: "globex", token: "globex-hook-secret-0123456789"}}
		for _, t := range tenants {
			ws := call(ctx, http.MethodPost, "/api/admin/workspaces", map[string]string{"slug": t.slug, "name": t.slug}, http.StatusCreated)
			t.workspace = int64(ws["id"].(float64))
			c := call(ctx, http.MethodPost, "/api/workspaces/"+t.slug+"/connections", map[string]any{
				"kind": "GITLAB", "sourceServerUrl": gitlabURL, "config": map[string]any{}, "secret": t.token,
			}, http.StatusCreated)
			t.connection = int64(c["id"].(float64))
			t.hook = c["webhookUrl"].(string)
			Expect(t.hook).To(Equal("/webhooks/gitlab/" + strconv.FormatInt(t.connection, 10)))
			subscribe(ctx, t.connection, t.workspace)
		}

		// GitLab sends each event to every hook of the project, each with its own token; the
		// second issue comes twice to acme's hook (a retry), which stores nothing new.
		for i, title := range []string{"First issue", "Second issue"} {
			key := fmt.Sprintf("5b6a2e55-3b1f-4a4c-9d1e-%012d", i+1)
			for _, t := range tenants {
				status, answer := deliver(ctx, t.hook, t.token, key, issue(i+1, title))
				Expect(status).To(Equal(http.StatusAccepted), answer)
			}
		}
		status, _ := deliver(ctx, tenants[0].hook, tenants[0].token, "5b6a2e55-3b1f-4a4c-9d1e-000000000002", issue(2, "Second issue"))
		Expect(status).To(Equal(http.StatusAccepted))
		// A delivery with another hook's token is refused and stores nothing.
		status, _ = deliver(ctx, tenants[0].hook, tenants[1].token, "5b6a2e55-3b1f-4a4c-9d1e-000000000009", issue(9, "Forged"))
		Expect(status).To(Equal(http.StatusUnauthorized))

		for _, t := range tenants {
			Eventually(func(ctx context.Context) ([]string, error) {
				rows, err := srvDB.Query(ctx, `SELECT iid || ' ' || title FROM gitlab_issue
					WHERE workspace_id = $1 AND project_id = $2 ORDER BY iid`, t.workspace, projectID)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[string])
			}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
				Should(Equal([]string{"1 First issue", "2 Second issue"}), "workspace %s", t.slug)
		}
		// The mirror write commits in the handler's step; the outcome is written after it, in the
		// claimers' batched completion, so the rows reach DONE a moment later.
		Eventually(func(ctx context.Context) ([]int, error) {
			var done, other int
			err := srvDB.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'DONE'), count(*) FILTER (WHERE state <> 'DONE')
				FROM provider_event WHERE provider = 'GITLAB'`).Scan(&done, &other)
			return []int{done, other}, err
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
			Should(Equal([]int{4, 0}), "one DONE row per delivery and subscribing workspace, the retry deduplicated")
	})

	// The seed: the commit wakes the receiving server's claimers in process; other servers find
	// the row at their next poll. The running server (which has just admitted and handled the
	// deliveries above) has sessions on its database, and none of them ever ran LISTEN.
	It("opens no LISTEN connection", func(ctx SpecContext) {
		var sessions, listening int
		Expect(srvDB.QueryRow(ctx, `
			SELECT count(*), count(*) FILTER (WHERE query ~* '^\s*LISTEN\M')
			FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&sessions, &listening)).To(Succeed())
		Expect(sessions).To(BeNumerically(">", 0), "the server's pools hold sessions")
		Expect(listening).To(BeZero())
	})
})
