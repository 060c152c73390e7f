package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The person of GitHub's documented example payloads: Codertocat opens, edits, comments,
// reviews, pushes and is the sender throughout the corpus.
const (
	personID    = "21031067"
	personLogin = "Codertocat"
	personEmail = "21031067+Codertocat@users.noreply.github.com"
)

// personTraces are what must not be found anywhere after the erasure: the id, the login (also
// the person's display name in the corpus) and the e-mail address, compared case-insensitively.
var personTraces = []string{personID, personLogin, personEmail}

// hit is one place a trace of the person was found.
type hit = support.Trace

// searchMirror looks for every trace in every text, jsonb and array column of every table whose
// name starts with one of prefixes (through information_schema, so a table or column added
// later is searched too), and for the id in every bigint column that can name a person.
func searchMirror(ctx context.Context, prefixes ...string) []hit {
	GinkgoHelper()
	return support.SearchTraces(ctx, pool, prefixes, personTraces...)
}

// corpusWork lists the corpus work payloads the handlers take, read in place, as GitHub sent
// them: most are about the person's own repository Codertocat/Hello-World, which stays with
// the ghost as its owner (ghost/Hello-World).
func corpusWork() map[string][]byte {
	GinkgoHelper()
	dir := support.GitHubCorpus()
	out := map[string][]byte{}
	for _, event := range githubhandlers.EventTypes() {
		if strings.HasPrefix(event, "installation") {
			continue // instance-wide control events, not about a workspace's mirror
		}
		files, err := filepath.Glob(filepath.Join(dir, event, "*.json"))
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			raw, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			out[event+"/"+filepath.Base(f)] = raw
		}
	}
	Expect(out).NotTo(BeEmpty())
	return out
}

var _ = Describe("Person erasure of the GitHub mirror", func() {
	var (
		erasures *erasurestore.Store
		runner   *personerasure.Runner
		reg      *consumer.Registry
	)

	BeforeEach(func() {
		erasures = support.ErasureStore(pool)
		var err error
		runner, err = personerasure.NewRunner(personerasure.RunnerConfig{}, erasures, support.Logger{})
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = runner.Run(runCtx)
		}()
		DeferCleanup(func() { cancel(); <-done })
		// The mirror publishes to the change feed, as the service wires it, so the searches
		// below prove the feed's erasure too.
		published, err := githubmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		feed, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(published.PublishChanges(feed, githubread.Views{})).To(Succeed())
		reg = registry(githubhandlers.Deps{Reader: stubChecks{}, Store: published})
	})

	// namespaced gives the row the source header admission sets from the connection.
	namespaced := func(ctx context.Context, d *delivery) *delivery {
		GinkgoHelper()
		_, err := pool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', 'https://github.com') WHERE id = $1`, d.ID)
		Expect(err).NotTo(HaveOccurred())
		return d
	}
	scopeOf := func(identities ...erasure.Identity) erasure.Scope {
		GinkgoHelper()
		s, err := erasure.NewScope(github.Provider, "https://github.com", identities)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	identity := func(id, login, email string) erasure.Identity {
		GinkgoHelper()
		i, err := erasure.NewIdentity(id, login, email)
		Expect(err).NotTo(HaveOccurred())
		return i
	}
	erase := func(ctx context.Context, scope erasure.Scope) []erasure.Receipt {
		GinkgoHelper()
		req, err := erasures.Start(ctx, scope, 0)
		Expect(err).NotTo(HaveOccurred())
		runner.Notify()
		var receipts []erasure.Receipt
		Eventually(func(ctx context.Context) string {
			r, rc, err := erasures.Erasure(ctx, req.ID())
			Expect(err).NotTo(HaveOccurred())
			receipts = rc
			return r.State().String()
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("DONE"))
		return receipts
	}

	When("the corpus payloads of a person are mirrored", func() {
		var workspaces []int64

		BeforeEach(func(ctx SpecContext) {
			workspaces = nil
			payloads := corpusWork()
			names := make([]string, 0, len(payloads))
			for n := range payloads {
				names = append(names, n)
			}
			slices.Sort(names)
			for i, name := range names {
				// One workspace per file, as in the corpus spec, each with its App connection
				// in the github.com namespace.
				ws := newWorkspace(ctx, fmt.Sprintf("e%d", i))
				appConnection(ctx, ws, int64(9000+i), "ACTIVE")
				workspaces = append(workspaces, ws)
				event := strings.SplitN(name, "/", 2)[0]
				Expect(namespaced(ctx, leased(ctx, ws, event, payloads[name])).handle(ctx, reg)).To(Succeed(), name)
			}
		})

		It("finds the person nowhere in the mirror or the inbox afterwards, with tombstones where shared items stay", func(ctx SpecContext) {
			before := searchMirror(ctx, "github_", "provider_event")
			Expect(before).To(ContainElements(
				hit{Table: "github_user", Column: "login", Value: personLogin}, hit{Table: "github_commit", Column: "author_email", Value: personEmail},
				hit{Table: "github_issue", Column: "author_id", Value: personID}, hit{Table: "provider_event", Column: "payload", Value: personLogin},
				hit{Table: "workspace_change", Column: "data", Value: personLogin}),
				"the search finds the person before the erasure")
			authoredIssues := scalar[int](ctx, `SELECT count(*) FROM github_issue WHERE author_id = $1::bigint`, personID)
			Expect(authoredIssues).To(BeNumerically(">", 0))
			commits := scalar[int](ctx, `SELECT count(*) FROM github_commit`)
			Expect(commits).To(BeNumerically(">", 0))
			comments := scalar[int](ctx, `SELECT count(*) FROM github_issue_comment WHERE author_id <> $1::bigint`, personID)

			// A case variant of the login and the id: GitHub logins are case-insensitive.
			receipts := erase(ctx, scopeOf(identity(personID, strings.ToLower(personLogin), "")))
			Expect(receipts).To(HaveLen(4))
			Expect([]string{receipts[0].Store.String(), receipts[1].Store.String(), receipts[2].Store.String(), receipts[3].Store.String()}).
				To(Equal([]string{"github-mirror", "change-feed", "workspace-inbox", "installation-inbox"}))
			Expect(receipts[0].Deleted).To(BeNumerically(">", 0))
			Expect(receipts[1].Deleted).To(BeNumerically(">", 0))
			Expect(receipts[2].Deleted).To(BeNumerically(">", 0))

			Expect(searchMirror(ctx, "github_", "provider_event")).To(BeEmpty())
			By("nothing of the person in any table the service owns but the request's frozen identities")
			Expect(support.SearchEverywhere(ctx, pool, personTraces...)).To(ConsistOf(
				hit{Table: "inbox_erasure", Column: "identities", Value: personID},
				hit{Table: "inbox_erasure", Column: "identities", Value: personLogin}))

			By("shared items staying, with the ghost where the person was")
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue WHERE author_id = $1`, 10137)).To(Equal(authoredIssues))
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_commit`)).To(Equal(commits), "commits stay")
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_commit WHERE sha <> '' AND message <> '' AND author_login = 'ghost'
				AND author_name = '' AND author_email = '' AND committer_email = ''`)).To(Equal(commits))
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue_comment`)).To(Equal(comments), "only the person's comments went")

			By("a repeated pass finding nothing more")
			again := erase(ctx, scopeOf(identity(personID, "", "")))
			for _, rc := range again {
				Expect(rc.Deleted).To(BeZero(), rc.Store.String())
			}
		})

		It("shows no trace of the person in any read API answer, and the ghost as author", func(ctx SpecContext) {
			members, err := managementstore.NewWorkspaces(pool)
			Expect(err).NotTo(HaveOccurred())
			gin.SetMode(gin.TestMode)
			engine := gin.New()
			Expect(githubread.Register(engine, githubread.Config{
				Auth:    tokens{"root": {AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}},
				Members: members, Reader: store,
			})).To(Succeed())
			answers := func() string {
				GinkgoHelper()
				var all strings.Builder
				for _, ws := range workspaces {
					slug := scalar[string](ctx, `SELECT slug FROM workspace WHERE id = $1`, ws)
					get := func(path string) []map[string]any {
						req := httptest.NewRequest(http.MethodGet, path, nil)
						req.Header.Set("Authorization", "Bearer root")
						rec := httptest.NewRecorder()
						engine.ServeHTTP(rec, req)
						Expect(rec.Code).To(Equal(http.StatusOK), path+" "+rec.Body.String())
						all.WriteString(rec.Body.String())
						var p page
						Expect(json.Unmarshal(rec.Body.Bytes(), &p)).To(Succeed())
						return p.Items
					}
					for _, repo := range get("/api/workspaces/" + slug + "/repositories?size=100") {
						id := fmt.Sprintf("%.0f", repo["id"])
						for _, what := range []string{"issues", "pulls", "commits"} {
							get("/api/workspaces/" + slug + "/repositories/" + id + "/" + what + "?size=100")
						}
					}
				}
				return strings.ToLower(all.String())
			}
			Expect(answers()).To(ContainSubstring(strings.ToLower(personLogin)), "the read API shows the person before")

			erase(ctx, scopeOf(identity(personID, personLogin, personEmail)))
			after := answers()
			for _, t := range personTraces {
				Expect(after).NotTo(ContainSubstring(strings.ToLower(t)))
			}
			Expect(after).To(ContainSubstring(`"author":"ghost"`))
			By("the repository the person owns keeping its id and name, with the ghost as owner in its full name and URL")
			Expect(after).To(ContainSubstring(`"owner":"ghost","name":"hello-world","fullname":"ghost/hello-world"`))
			Expect(after).To(ContainSubstring(`"htmlurl":"https://github.com/ghost/hello-world"`))
		})
	})

	When("someone else's comment holds a backslash before text shaped like a trailer naming the person", func() {
		It("reaches DONE, deletes the person's deliveries and leaves the address in no payload, every payload still JSON", func(ctx SpecContext) {
			const victim = "victim@example.com"
			ws := newWorkspace(ctx, "acme")
			appConnection(ctx, ws, 1, "ACTIVE")
			repo := repository(4242, "acme/app", 77)
			hubot := obj{"login": "hubot", "id": 1, "type": "User"}
			comment := func(id int64, text string) []byte {
				return body(obj{"action": "created", "repository": repo, "sender": hubot,
					"issue":   obj{"id": 3001, "number": 1, "title": "t", "state": "open", "user": hubot, "updated_at": "2024-02-02T00:00:00Z"},
					"comment": obj{"id": id, "body": text, "user": hubot, "created_at": "2024-02-02T00:00:00Z", "updated_at": "2024-02-02T00:00:00Z"}})
			}
			// The crafted body: a literal backslash, then "nSigned-off-by: …", so the stored
			// JSON text holds \\n where a trailer would follow a line break.
			crafted := namespaced(ctx, leased(ctx, ws, "issue_comment", comment(11, `see C:\`+`nSigned-off-by: Victim <`+victim+`>`)))
			Expect(crafted.handle(ctx, reg)).To(Succeed(), "stored and handled")
			Expect(scalar[string](ctx, `SELECT payload::text FROM provider_event WHERE id = $1`, crafted.ID)).To(ContainSubstring(`C:\\nSigned-off-by`))
			// A real trailer, and the address in quotes and in another case, after escapes.
			trailer := namespaced(ctx, leased(ctx, ws, "issue_comment", comment(12, "Fix\n\nSigned-off-by: Victim <"+victim+">\nReviewed-by: Bo <bo@example.org>")))
			quoted := namespaced(ctx, leased(ctx, ws, "issue_comment", comment(13, `"\\" \u00e9 "VICTIM@example.com"`)))
			// The person's own delivery: a commit author naming them by address, still LEASED.
			own := namespaced(ctx, leased(ctx, ws, "push", body(obj{"ref": "refs/heads/main", "repository": repo, "sender": hubot,
				"commits": []obj{{"id": sha(1), "message": "m", "author": obj{"name": "Victim", "email": victim}}}})))

			receipts := erase(ctx, scopeOf(identity("", "", victim)))
			Expect(receipts).To(HaveLen(4))
			for _, rc := range receipts {
				Expect(rc.FailedRows).To(BeEmpty(), rc.Store.String())
			}
			Expect(scalar[int](ctx, `SELECT count(*) FROM provider_event WHERE id = $1`, own.ID)).To(BeZero(), "the person's own delivery is deleted")
			Expect(scalar[int](ctx, `SELECT count(*) FROM provider_event WHERE id = ANY($1)`, []int64{crafted.ID, trailer.ID, quoted.ID})).
				To(Equal(3), "the others' deliveries stay")
			Expect(scalar[int](ctx, `SELECT count(*) FROM provider_event WHERE strpos(lower(payload::text), $1) > 0`, victim)).
				To(BeZero(), "no payload names the person")
			commentBody := func(id int64) string {
				return scalar[string](ctx, `SELECT payload->'comment'->>'body' FROM provider_event WHERE id = $1`, id)
			}
			Expect(commentBody(crafted.ID)).To(Equal(`see C:\nSigned-off-by: Victim <erased@erased.invalid>`), "no line break: the address goes, the text stays")
			Expect(commentBody(trailer.ID)).To(Equal("Fix\n\nReviewed-by: Bo <bo@example.org>"), "the trailer line naming the person goes")
			Expect(commentBody(quoted.ID)).To(Equal(`"\\" \u00e9 "erased@erased.invalid"`))
			Expect(scalar[string](ctx, `SELECT payload->'repository'->>'full_name' FROM provider_event WHERE id = $1`, crafted.ID)).
				To(Equal("acme/app"), "the rest of the payload is as it was")
			Expect(scalar[string](ctx, `SELECT body FROM github_issue_comment WHERE id = 11`)).
				To(Equal(`see C:\nSigned-off-by: Victim <erased@erased.invalid>`), "the mirrored comment likewise")
			Expect(support.SearchEverywhere(ctx, pool, victim)).To(ConsistOf(hit{Table: "inbox_erasure", Column: "identities", Value: victim}),
				"nothing names the person but the request's frozen identities")
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_user WHERE workspace_id = $1 AND id = $2 AND login = 'ghost'`, ws, githubmirror.GhostID)).
				To(Equal(1), "an erasure that rewrote rows gives the ghost its user row, which the read API shows")
		})
	})

	When("a handler of a delivery about the person runs while the erasure is between the mirror and the inbox", func() {
		It("cannot write the person back into the mirror", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			appConnection(ctx, ws, 1, "ACTIVE")
			repo := repository(4242, "acme/app", 77)
			person := obj{"login": personLogin, "id": 21031067, "type": "User"}
			comment := func(id int64) []byte {
				return body(obj{"action": "created", "repository": repo, "sender": person,
					"issue":   obj{"id": 3001, "number": 1, "title": "t", "state": "open", "user": obj{"login": "hubot", "id": 1}, "updated_at": "2024-02-02T00:00:00Z"},
					"comment": obj{"id": id, "body": "mine", "user": person, "created_at": "2024-02-02T00:00:00Z", "updated_at": "2024-02-02T00:00:00Z"}})
			}
			// Mirrored before the erasure: the mirror pass erases it.
			Expect(namespaced(ctx, leased(ctx, ws, "issue_comment", comment(1))).handle(ctx, reg)).To(Succeed())
			// Stored before the erasure and not handled yet: its handler races the erasure.
			racing := namespaced(ctx, leased(ctx, ws, "issue_comment", comment(2)))

			req, err := erasures.Start(ctx, scopeOf(identity(personID, personLogin, "")), 0)
			Expect(err).NotTo(HaveOccurred())
			// This spec is the runner for the first store, so it can act at the moment after the
			// mirror store committed and before the inbox store began.
			errBetweenStores := errors.New("stopping between the stores")
			held, err := erasures.Hold(ctx, func(ctx context.Context, r erasure.Request, _ []erasure.Receipt) (erasure.Request, error) {
				Expect(r.ID()).To(Equal(req.ID()))
				rc, err := erasures.Pass(ctx, r.ID(), erasure.MirrorStore(github.Provider), 1)
				Expect(err).NotTo(HaveOccurred())
				Expect(rc.Deleted).To(BeNumerically(">", 0))
				Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue_comment WHERE author_id = 21031067`)).To(BeZero())

				// The handler runs now, between the mirror erasure and the inbox deletion.
				err = racing.handle(ctx, reg)
				Expect(err).To(MatchError(inbox.ErrBusy), "the copy fence stays raised: the write rolls back and retries")
				Expect(scalar[int](ctx, `SELECT count(*) FROM github_user WHERE id = 21031067`)).To(BeZero())
				Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue_comment WHERE author_id = 21031067`)).To(BeZero())
				return erasure.Request{}, errBetweenStores
			})
			Expect(held).To(BeTrue())
			Expect(err).To(MatchError(errBetweenStores))

			runner.Notify() // a runner goes on with the inbox stores
			Eventually(func(ctx context.Context) string {
				r, _, err := erasures.Erasure(ctx, req.ID())
				Expect(err).NotTo(HaveOccurred())
				return r.State().String()
			}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Equal("DONE"))
			Expect(scalar[int](ctx, `SELECT count(*) FROM provider_event WHERE id = $1`, racing.ID)).
				To(BeZero(), "the racing delivery is erased: its retry stops with erased-during-processing")
			Expect(searchMirror(ctx, "github_", "provider_event")).To(BeEmpty())
		})
	})
})
