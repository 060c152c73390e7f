package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinesync"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// fakeOutline serves POST /api/documents.list the way Outline does: {"ok":true,"data":[…],
// "pagination":{"offset","limit","nextPath"}} in offset pages of the asked limit, oldest
// created first, for the collection of the body; and POST /api/collections.info (404
// {"ok":false} for an unknown id). It checks Authorization: Bearer on every call
// (401 {"ok":false} otherwise), and can answer one offset 429 with Retry-After.
type fakeOutline struct {
	server *httptest.Server
	mu     sync.Mutex
	docs   map[string][]obj // by collection id, oldest created first
	calls  []string         // "<collection>@<offset>" in arrival order
	infos  []string         // collections.info ids in arrival order
	names  map[string]string
	badTok int
	bodies []map[string]any

	rateLimitOffset int    // -1: none; this offset is answered 429 once
	retryAfter      string // its Retry-After
}

const outlineToken = "ol_api_spec_key"

func newFakeOutline() *fakeOutline {
	f := &fakeOutline{docs: map[string][]obj{}, names: map[string]string{}, rateLimitOffset: -1}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Method != http.MethodPost || (r.URL.Path != "/api/documents.list" && r.URL.Path != "/api/collections.info") {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+outlineToken {
			f.badTok++
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, obj{"ok": false, "error": "authentication_required", "status": 401})
			return
		}
		if r.URL.Path == "/api/collections.info" {
			var info struct {
				ID string `json:"id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&info)
			f.infos = append(f.infos, info.ID)
			name, ok := f.names[info.ID]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				writeJSON(w, obj{"ok": false, "error": "not_found", "status": 404})
				return
			}
			writeJSON(w, obj{"ok": true, "status": 200, "data": obj{"id": info.ID, "name": name, "description": "About " + name,
				"urlId": "c-" + info.ID[:4], "createdAt": "2024-04-01T00:00:00.000Z", "updatedAt": "2024-04-02T00:00:00.000Z",
				"archivedAt": nil, "deletedAt": nil}})
			return
		}
		var body struct {
			CollectionID string `json:"collectionId"`
			Offset       int    `json:"offset"`
			Limit        int    `json:"limit"`
			Sort         string `json:"sort"`
			Direction    string `json:"direction"`
		}
		raw := map[string]any{}
		dec := json.NewDecoder(r.Body)
		if err := dec.Decode(&raw); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.bodies = append(f.bodies, raw)
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &body)
		f.calls = append(f.calls, fmt.Sprintf("%s@%d", body.CollectionID, body.Offset))
		if body.Offset == f.rateLimitOffset {
			f.rateLimitOffset = -1
			w.Header().Set("Retry-After", f.retryAfter)
			w.Header().Set("RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			writeJSON(w, obj{"ok": false, "error": "rate_limit_exceeded", "status": 429})
			return
		}
		list := f.docs[body.CollectionID]
		from := min(body.Offset, len(list))
		to := min(from+body.Limit, len(list))
		page := list[from:to]
		if page == nil {
			page = []obj{}
		}
		// Outline names a next path on every page; the client stops at a short page.
		next := fmt.Sprintf("/api/documents.list?limit=%d&offset=%d", body.Limit, body.Offset+body.Limit)
		writeJSON(w, obj{"ok": true, "status": 200, "data": page,
			"pagination": obj{"offset": body.Offset, "limit": body.Limit, "nextPath": next}})
	}))
	DeferCleanup(f.server.Close)
	return f
}

// collection adds n documents to collection, created in order, each updated at 2024-06-01.
func (f *fakeOutline) collection(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var docs []obj
	for i := 1; i <= n; i++ {
		docs = append(docs, obj{"id": outlineDocID(id, i), "collectionId": id, "title": fmt.Sprintf("Doc %d", i),
			"text": fmt.Sprintf("# Doc %d", i), "urlId": fmt.Sprintf("u%d", i), "revision": 2,
			"createdAt": "2024-05-01T00:00:00.000Z", "updatedAt": "2024-06-01T10:00:00.000Z",
			"publishedAt": "2024-05-01T00:00:00.000Z", "archivedAt": nil, "deletedAt": nil})
	}
	f.docs[id] = docs
	f.names[id] = "Collection " + id[:8]
}

func (f *fakeOutline) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// requests counts every authenticated call and every refused one.
func (f *fakeOutline) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls) + len(f.infos) + f.badTok
}

func outlineDocID(collection string, i int) string {
	return fmt.Sprintf("%s-doc-%03d", collection[:8], i)
}

// outlineConnection inserts an ACTIVE OUTLINE connection of ws at sourceServerURL with its
// webhook secret and, when apiToken is set, its API token, both sealed for it.
func outlineConnection(ctx context.Context, ws int64, sourceServerURL, apiToken string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config)
		VALUES ($1, 'OUTLINE', 'OUTLINE', 'ACTIVE', $2, '{}') RETURNING id`, ws, sourceServerURL).Scan(&id)).To(Succeed())
	secret, err := box.Seal(id, []byte("outline-signing-secret"))
	Expect(err).NotTo(HaveOccurred())
	var token []byte
	if apiToken != "" {
		token, err = box.Seal(id, []byte(apiToken))
		Expect(err).NotTo(HaveOccurred())
	}
	_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2, api_token_ciphertext = $3 WHERE id = $1`, id, secret, token)
	Expect(err).NotTo(HaveOccurred())
	return id
}

func subscribeCollection(ctx context.Context, ws, conn int64, collection string) {
	GinkgoHelper()
	subscribeResource(ctx, ws, conn, "OUTLINE", "collection", collection, "")
}

func collectionJob(ctx context.Context, conn int64, collection string) jobRow {
	GinkgoHelper()
	return resourceJob(ctx, conn, "collection", collection)
}

const (
	handbook = "11111111-aaaa-4000-8000-000000000001"
	runbooks = "22222222-bbbb-4000-8000-000000000002"
	shared   = "33333333-cccc-4000-8000-000000000003"
)

var _ = Describe("Backfill of an Outline collection", func() {
	var (
		ol       *fakeOutline
		acme     int64
		conn     int64
		store    *outlinemirror.Store
		metrics  *telemetry.Metrics
		runnerOf func(apiURL string) *backfill.Runner
		r        *backfill.Runner
		docsOf   func(ctx context.Context, collection string) int
	)

	BeforeEach(func(ctx SpecContext) {
		ol = newFakeOutline()
		ol.collection(handbook, 250)
		ol.collection(runbooks, 12)
		ol.collection(shared, 5)
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		conn = outlineConnection(ctx, acme, ol.server.URL, outlineToken)
		var err error
		store, err = outlinemirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		feed, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(feed, outlineread.Views{})).To(Succeed())
		tokens, err := managementstore.NewLiveSecrets(pool, box)
		Expect(err).NotTo(HaveOccurred())
		runnerOf = func(apiURL string) *backfill.Runner {
			GinkgoHelper()
			var reader outlinesync.Reader
			if apiURL != "" {
				client, err := outlineapi.New(outlineapi.Config{BaseURL: apiURL})
				Expect(err).NotTo(HaveOccurred())
				reader = client
			}
			src, err := outlinesync.New(reader, tokens, store)
			Expect(err).NotTo(HaveOccurred())
			metrics = declaredMetrics("github", "gitlab", "slack", "outline")
			runner := newRunner("server-a", jobs, metrics, src)
			return runner
		}
		// HEPHAESTUS_OUTLINE_API_URL is the fake's API root; the connection is on its host.
		r = runnerOf(ol.server.URL + "/api")
		docsOf = func(ctx context.Context, collection string) int {
			GinkgoHelper()
			return count(ctx, `SELECT count(*) FROM outline_document WHERE workspace_id = $1 AND collection_id = $2`, acme, collection)
		}
	})

	drain := func(ctx context.Context, cond func() bool) {
		GinkgoHelper()
		drainRunner(ctx, r, cond)
	}

	It("backfills a subscribed collection's documents over offset pages", func(ctx SpecContext) {
		subscribeCollection(ctx, acme, conn, handbook)
		drain(ctx, func() bool { return collectionJob(ctx, conn, handbook).State == "DONE" })

		j := collectionJob(ctx, conn, handbook)
		Expect(j.Items).To(BeEquivalentTo(250))
		Expect(j.Pages).To(BeEquivalentTo(3))
		Expect(j.LastError).To(BeNil())
		Expect(ol.seen()).To(Equal([]string{handbook + "@0", handbook + "@100", handbook + "@200"}))
		Expect(ol.infos).To(Equal([]string{handbook}), "the collection is read once, with the first page")
		Expect(ol.badTok).To(BeZero())
		Expect(support.Scalar[string](ctx, pool, `SELECT name || ' / ' || description || ' / ' || url_id FROM outline_collection
			WHERE workspace_id = $1 AND id = $2`, acme, handbook)).To(Equal("Collection 11111111 / About Collection 11111111 / c-1111"))
		Expect(ol.bodies[0]).To(Equal(map[string]any{"collectionId": handbook, "offset": 0.0, "limit": 100.0,
			"sort": "createdAt", "direction": "ASC"}))
		Expect(docsOf(ctx, handbook)).To(Equal(250))
		Expect(support.Scalar[string](ctx, pool, `SELECT title || ' ' || text || ' ' || revision || ' ' || url_id
			FROM outline_document WHERE workspace_id = $1 AND id = $2`, acme, outlineDocID(handbook, 7))).To(Equal("Doc 7 # Doc 7 2 u7"))
		Expect(counter(metrics, "sync_items_total", "outline")).To(BeEquivalentTo(250))
		Expect(counter(metrics, "sync_pages_total", "outline")).To(BeEquivalentTo(3))
		Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type = 'outline.document.updated'`, acme)).
			To(Equal(250), "each backfilled document is published as a webhook's would be")

		// The read API lists them, and the sync API shows the progress.
		srv, c := serve(
			func(e *gin.Engine) error {
				return outlineread.Register(e, outlineread.Config{Auth: manage, Members: members, Store: store, Log: support.Logger{}})
			},
		)
		status, body := (&httpClient{c}).call(http.MethodGet, srv.URL+"/api/workspaces/acme/outline/documents?size=5", adminToken)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body["total"]).To(BeEquivalentTo(250))
		Expect(body["items"]).To(HaveLen(5))
		base, client := api()
		status, progress := client.call(http.MethodGet, fmt.Sprintf("%s/api/workspaces/acme/connections/%d/sync", base, conn), adminToken)
		Expect(status).To(Equal(http.StatusOK))
		Expect(progress["state"]).To(Equal("DONE"))
		Expect(progress["resources"]).To(ConsistOf(And(HaveKeyWithValue("type", "collection"), HaveKeyWithValue("id", handbook),
			HaveKeyWithValue("items", BeEquivalentTo(250)), HaveKeyWithValue("pages", BeEquivalentTo(3)))))
	})

	It("lets a newer document webhook win over an older page, and a page win over an older webhook", func(ctx SpecContext) {
		reg := outlineHandlers(store)
		webhook := func(envelope, docID, title, updatedAt string, revision int) {
			GinkgoHelper()
			payload := fmt.Sprintf(`{"id":%q,"actorId":"u-1","createdAt":%q,"event":"documents.update",
				"payload":{"id":%q,"model":{"id":%q,"collectionId":%q,"title":%q,"text":"webhook","urlId":"w",
				"revision":%d,"updatedAt":%q}}}`, envelope, updatedAt, docID, docID, runbooks, title, revision, updatedAt)
			Expect(support.LeasedEvent(ctx, pool, acme, outline.Provider, "documents.update", "outline:document:"+docID, payload).
				Handle(ctx, reg)).To(Succeed())
		}
		newer, older := outlineDocID(runbooks, 3), outlineDocID(runbooks, 4)
		webhook("env-newer", newer, "Edited after the page", "2024-06-02T08:00:00.000Z", 3)
		webhook("env-older", older, "Before the page", "2024-05-20T08:00:00.000Z", 1)

		subscribeCollection(ctx, acme, conn, runbooks)
		drain(ctx, func() bool { return collectionJob(ctx, conn, runbooks).State == "DONE" })
		Expect(collectionJob(ctx, conn, runbooks).Items).To(BeEquivalentTo(12))
		Expect(docsOf(ctx, runbooks)).To(Equal(12))
		title := func(id string) string {
			return support.Scalar[string](ctx, pool, `SELECT title || ' ' || revision FROM outline_document
				WHERE workspace_id = $1 AND id = $2`, acme, id)
		}
		Expect(title(newer)).To(Equal("Edited after the page 3"), "the older page did not overwrite the newer webhook")
		Expect(title(older)).To(Equal("Doc 4 2"), "the newer page replaced the older webhook's version")
	})

	It("waits as long as Outline asked when documents.list is rate-limited, without counting it", func(ctx SpecContext) {
		ol.mu.Lock()
		ol.rateLimitOffset, ol.retryAfter = 100, "29.2" // Outline writes seconds with a fraction
		ol.mu.Unlock()
		subscribeCollection(ctx, acme, conn, handbook)
		Expect(r.Drain(ctx)).To(Succeed())

		j := collectionJob(ctx, conn, handbook)
		Expect(j.State).To(Equal("QUEUED"))
		Expect(j.Attempt).To(BeZero(), "a rate limit is not a counted failure")
		Expect(j.Pages).To(BeEquivalentTo(1))
		Expect(j.Cursor).To(HaveValue(Equal("documents:100")))
		Expect(j.LastError).To(HaveValue(Equal("provider-rate-limit")))
		wait := support.Scalar[float64](ctx, pool, `SELECT extract(epoch FROM due_at - now())::float8 FROM sync_job
			WHERE connection_id = $1 AND resource_id = $2`, conn, handbook)
		Expect(wait).To(BeNumerically(">", 28.0), "due no earlier than the 30 s Outline asked for (29.2 rounded up)")
		Expect(ol.seen()).To(Equal([]string{handbook + "@0", handbook + "@100"}))

		// Once the wait is over (moved in SQL), the job continues from its committed cursor.
		_, err := pool.Exec(ctx, `UPDATE sync_job SET due_at = now() WHERE connection_id = $1`, conn)
		Expect(err).NotTo(HaveOccurred())
		drain(ctx, func() bool { return collectionJob(ctx, conn, handbook).State == "DONE" })
		Expect(collectionJob(ctx, conn, handbook).Items).To(BeEquivalentTo(250))
		Expect(ol.seen()).To(Equal([]string{handbook + "@0", handbook + "@100", handbook + "@100", handbook + "@200"}))
	})

	It("fails the job with a cause label and never calls Outline without an API token", func(ctx SpecContext) {
		bare := outlineConnection(ctx, acme, ol.server.URL, "")
		subscribeCollection(ctx, acme, bare, handbook)
		drain(ctx, func() bool { return collectionJob(ctx, bare, handbook).State == "FAILED" })
		Expect(collectionJob(ctx, bare, handbook).LastError).To(HaveValue(Equal("provider-refused")))
		Expect(ol.requests()).To(BeZero())
		Expect(docsOf(ctx, handbook)).To(BeZero())
	})

	It("never calls a connection on another instance than HEPHAESTUS_OUTLINE_API_URL", func(ctx SpecContext) {
		// The token is valid for the fake, but the connection names another host: the token is
		// not sent anywhere, not even to the configured instance.
		elsewhere := outlineConnection(ctx, acme, "http://169.254.169.254", outlineToken)
		subscribeCollection(ctx, acme, elsewhere, handbook)
		drain(ctx, func() bool { return collectionJob(ctx, elsewhere, handbook).State == "FAILED" })
		Expect(collectionJob(ctx, elsewhere, handbook).LastError).To(HaveValue(Equal("provider-refused")))
		Expect(ol.requests()).To(BeZero())
	})

	It("runs no Outline backfill without HEPHAESTUS_OUTLINE_API_URL", func(ctx SpecContext) {
		r = runnerOf("")
		subscribeCollection(ctx, acme, conn, handbook)
		drain(ctx, func() bool { return collectionJob(ctx, conn, handbook).State == "FAILED" })
		Expect(collectionJob(ctx, conn, handbook).LastError).To(HaveValue(Equal("provider-refused")))
		Expect(ol.requests()).To(BeZero())
	})

	It("refuses a token Outline answers 401 for, with a cause label and no token in the row", func(ctx SpecContext) {
		revoked := outlineConnection(ctx, acme, ol.server.URL, "ol_api_revoked")
		subscribeCollection(ctx, acme, revoked, runbooks)
		drain(ctx, func() bool { return collectionJob(ctx, revoked, runbooks).State == "FAILED" })
		Expect(collectionJob(ctx, revoked, runbooks).LastError).To(HaveValue(Equal("provider-refused")))
		Expect(ol.badTok).To(Equal(testRetry.MaxAttempts))
		Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE last_error LIKE '%ol_api%'`)).To(BeZero())
	})

	It("refuses a collection Outline does not know (404) and writes nothing", func(ctx SpecContext) {
		const unknown = "44444444-dddd-4000-8000-000000000004"
		subscribeCollection(ctx, acme, conn, unknown)
		drain(ctx, func() bool { return collectionJob(ctx, conn, unknown).State == "FAILED" })
		Expect(collectionJob(ctx, conn, unknown).LastError).To(HaveValue(Equal("provider-refused")))
		Expect(ol.seen()).To(BeEmpty(), "no documents.list after the collection was refused")
		Expect(count(ctx, `SELECT count(*) FROM outline_collection WHERE workspace_id = $1`, acme)).To(BeZero())
	})

	Describe("teardown", func() {
		var other int64
		eventsOf := func(ctx context.Context, model string) int {
			GinkgoHelper()
			return count(ctx, `SELECT count(*) FROM outline_event WHERE workspace_id = $1 AND model_id = $2`, acme, model)
		}
		record := func(ctx context.Context, envelope, model string) {
			GinkgoHelper()
			_, err := pool.Exec(ctx, `INSERT INTO outline_event (workspace_id, delivery_id, event, model_id, source_event_id)
				VALUES ($1, $2, 'documents.update', $3, 1)`, acme, envelope, model)
			Expect(err).NotTo(HaveOccurred())
		}

		BeforeEach(func(ctx SpecContext) {
			other = outlineConnection(ctx, acme, ol.server.URL, outlineToken)
			subscribeCollection(ctx, acme, conn, handbook)
			subscribeCollection(ctx, acme, conn, shared)
			subscribeCollection(ctx, acme, other, shared)
			subscribeCollection(ctx, acme, other, runbooks)
			drain(ctx, func() bool {
				return collectionJob(ctx, conn, handbook).State == "DONE" && collectionJob(ctx, conn, shared).State == "DONE" &&
					collectionJob(ctx, other, shared).State == "DONE" && collectionJob(ctx, other, runbooks).State == "DONE"
			})
			Expect(count(ctx, `SELECT count(*) FROM outline_collection WHERE workspace_id = $1`, acme)).
				To(Equal(3), "each backfill wrote its collection")
			record(ctx, "env-h", outlineDocID(handbook, 1))
			record(ctx, "env-hc", handbook)
			record(ctx, "env-s", outlineDocID(shared, 1))
			record(ctx, "env-r", outlineDocID(runbooks, 1))
			record(ctx, "env-user", "user-1") // an event that names no collection
		})

		teardownDone := func(ctx context.Context, c int64) bool {
			return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, c) == 1
		}

		It("deletes only what that connection brought", func(ctx SpecContext) {
			setState(ctx, conn, "UNINSTALLED")
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN'`, conn)).
				To(Equal(1), "the uninstall queued an Outline teardown job")
			drain(ctx, func() bool { return teardownDone(ctx, conn) })

			Expect(docsOf(ctx, handbook)).To(BeZero())
			Expect(eventsOf(ctx, outlineDocID(handbook, 1)) + eventsOf(ctx, handbook)).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM outline_collection WHERE workspace_id = $1 AND id = $2`, acme, handbook)).To(BeZero())
			// The other live connection still subscribes to shared and runbooks.
			Expect(docsOf(ctx, shared)).To(Equal(5))
			Expect(docsOf(ctx, runbooks)).To(Equal(12))
			Expect(eventsOf(ctx, outlineDocID(shared, 1)) + eventsOf(ctx, outlineDocID(runbooks, 1)) + eventsOf(ctx, "user-1")).To(Equal(3))
			Expect(count(ctx, `SELECT count(*) FROM outline_collection WHERE workspace_id = $1`, acme)).To(Equal(2))

			By("removing the torn-down collection's changes from the feed and publishing what went")
			feedOf := func(collection string) (kept, removed int) {
				GinkgoHelper()
				kept = count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND data->>'collectionId' = $2`, acme, collection)
				removed = count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type = 'outline.document.updated'
					AND data = '{"removed":true}' AND subject LIKE 'outline:document:' || left($2, 8) || '-doc-%'`, acme, collection)
				return kept, removed
			}
			// 250 documents and the collection itself.
			kept, removed := feedOf(handbook)
			Expect(kept).To(BeZero())
			Expect(removed).To(Equal(250))
			kept, removed = feedOf(shared)
			Expect(kept).To(Equal(5), "the other connection's collections keep their changes")
			Expect(removed).To(BeZero())
			Expect(support.Column(ctx, pool, `SELECT (data - 'version')::text FROM workspace_change WHERE workspace_id = $1 AND type = 'connection.torn_down' AND data ? 'version'`, acme)).
				To(ConsistOf(MatchJSON(fmt.Sprintf(`{"connectionId":%d,"provider":"OUTLINE","resources":[{"type":"collection","id":%q}],"everything":false,"removedChanges":251}`,
					conn, handbook))))

			// With no live Outline connection left, every Outline row of the workspace goes.
			setState(ctx, other, "UNINSTALLED")
			drain(ctx, func() bool { return teardownDone(ctx, other) })
			Expect(count(ctx, `SELECT (SELECT count(*) FROM outline_document WHERE workspace_id = $1)
				+ (SELECT count(*) FROM outline_collection WHERE workspace_id = $1)
				+ (SELECT count(*) FROM outline_event WHERE workspace_id = $1)`, acme)).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type LIKE 'outline.%' AND data <> '{"removed":true}'`, acme)).
				To(BeZero(), "and every Outline change of the workspace loses its data")
			Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type = 'connection.torn_down'
				AND (data->>'everything')::boolean AND (data->>'connectionId')::bigint = $2`, acme, other)).To(Equal(1))
		})

		It("backfills again when the connection is reconnected", func(ctx SpecContext) {
			setState(ctx, conn, "UNINSTALLED")
			drain(ctx, func() bool { return teardownDone(ctx, conn) })
			Expect(docsOf(ctx, handbook)).To(BeZero())

			setState(ctx, conn, "ACTIVE")
			drain(ctx, func() bool {
				return collectionJob(ctx, conn, handbook).State == "DONE" && collectionJob(ctx, conn, shared).State == "DONE"
			})
			Expect(docsOf(ctx, handbook)).To(Equal(250))
			Expect(collectionJob(ctx, conn, handbook).Items).To(BeEquivalentTo(250))
			Expect(strings.Count(strings.Join(ol.seen(), " "), handbook+"@0")).To(Equal(2), "read from the first page again")
		})
	})
})
