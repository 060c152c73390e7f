package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slacksync"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const (
	slackTeam     = "T0SPEC"
	slackBotToken = "xoxb-spec-bot-token"
)

// slackMessage is a message as conversations.history lists it.
func slackMessage(ts, text string, edited string) obj {
	m := obj{"type": "message", "user": "U1", "text": text, "ts": ts}
	if edited != "" {
		m["edited"] = obj{"user": "U1", "ts": edited}
	}
	return m
}

// fakeSlack serves conversations.history of its channels, newest first, in pages of the
// request's limit with an opaque next_cursor, and conversations.replies of their threads (the
// parent first on every page, then up to limit-1 replies, oldest first), and checks the bot
// token of every call.
type fakeSlack struct {
	server   *httptest.Server
	mu       sync.Mutex
	channels map[string][]obj
	threads  map[string][]obj // "<channel>/<parent ts>": the parent, then its replies
	calls    []string         // "<channel> <cursor>", "<channel>/<parent ts> <cursor>" for replies
	fail500  string           // a call ("<channel>/<parent ts> <cursor>") answered 500 once
	badAuth  int
	limit429 string // a cursor ("" the first page) answered 429 limits times
	limits   int
	broken   string // a channel whose history is answered in a shape Slack does not have
	hold     string // a cursor whose answer waits for release
	held     chan struct{}
	release  chan struct{}
}

func newFakeSlack() *fakeSlack {
	f := &fakeSlack{channels: map[string][]obj{}, limit429: "-", hold: "-", held: make(chan struct{}), release: make(chan struct{})}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != "/conversations.history" && r.URL.Path != "/conversations.replies") || r.ParseForm() != nil {
			http.NotFound(w, r)
			return
		}
		channel, cursor := r.PostForm.Get("channel"), r.PostForm.Get("cursor")
		f.mu.Lock()
		if r.URL.Path == "/conversations.replies" {
			f.replies(w, channel+"/"+r.PostForm.Get("ts"), cursor, r)
			return
		}
		f.calls = append(f.calls, channel+" "+cursor)
		if r.Header.Get("Authorization") != "Bearer "+slackBotToken {
			f.badAuth++
			f.mu.Unlock()
			writeJSON(w, obj{"ok": false, "error": "invalid_auth"})
			return
		}
		if cursor == f.limit429 && f.limits > 0 {
			f.limits--
			f.mu.Unlock()
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		var held, release chan struct{}
		if cursor == f.hold {
			f.hold, held, release = "-", f.held, f.release
		}
		list, ok := f.channels[channel]
		broken := channel == f.broken
		f.mu.Unlock()
		if held != nil {
			close(held)
			<-release
		}
		if broken {
			writeJSON(w, obj{"ok": true, "messages": []obj{{"type": "message", "text": "no ts"}}})
			return
		}
		if !ok {
			writeJSON(w, obj{"ok": false, "error": "channel_not_found"})
			return
		}
		limit, _ := strconv.Atoi(r.PostForm.Get("limit"))
		from := 0
		if cursor != "" {
			from, _ = strconv.Atoi(strings.TrimPrefix(cursor, "bmV4dF90czo"))
		}
		to := min(from+limit, len(list))
		next := ""
		if to < len(list) {
			next = "bmV4dF90czo" + strconv.Itoa(to)
		}
		writeJSON(w, obj{"ok": true, "messages": list[from:to], "has_more": next != "",
			"response_metadata": obj{"next_cursor": next}})
	}))
	DeferCleanup(f.server.Close)
	return f
}

// replies answers conversations.replies of thread (called with f.mu held; it unlocks it).
func (f *fakeSlack) replies(w http.ResponseWriter, thread, cursor string, r *http.Request) {
	call := thread + " " + cursor
	f.calls = append(f.calls, call)
	if r.Header.Get("Authorization") != "Bearer "+slackBotToken {
		f.badAuth++
		f.mu.Unlock()
		writeJSON(w, obj{"ok": false, "error": "invalid_auth"})
		return
	}
	if call == f.fail500 {
		f.fail500 = "-"
		f.mu.Unlock()
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	list, ok := f.threads[thread]
	f.mu.Unlock()
	if !ok {
		writeJSON(w, obj{"ok": false, "error": "thread_not_found"})
		return
	}
	limit, _ := strconv.Atoi(r.PostForm.Get("limit"))
	parent, replies := list[0], list[1:]
	from := 0
	if cursor != "" {
		from, _ = strconv.Atoi(strings.TrimPrefix(cursor, "cmVwbGllczo"))
	}
	to := min(from+limit-1, len(replies))
	next := ""
	if to < len(replies) {
		next = "cmVwbGllczo" + strconv.Itoa(to)
	}
	writeJSON(w, obj{"ok": true, "messages": append([]obj{parent}, replies[from:to]...), "has_more": next != "",
		"response_metadata": obj{"next_cursor": next}})
}

// holdFirstPage makes the answer to a history's first page (no cursor) wait for release.
func (f *fakeSlack) holdFirstPage() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = ""
}

// thread makes the channel's message parent a thread parent with n replies (the first reply
// edited when edited is not "").
func (f *fakeSlack) thread(channel, parent string, n int, edited string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.threads == nil {
		f.threads = map[string][]obj{}
	}
	var p obj
	for _, m := range f.channels[channel] {
		if m["ts"] == parent {
			p = m
		}
	}
	Expect(p).NotTo(BeNil(), "the parent is a message of the channel")
	replies := []obj{p}
	for i := 1; i <= n; i++ {
		secs, _, _ := strings.Cut(parent, ".")
		ts := fmt.Sprintf("%s.1%05d", secs, i)
		reply := slackMessage(ts, fmt.Sprintf("reply %d to %s", i, parent), "")
		if i == 1 && edited != "" {
			reply = slackMessage(ts, "page text", edited)
		}
		reply["thread_ts"] = parent
		reply["parent_user_id"] = "U1"
		replies = append(replies, reply)
	}
	p["thread_ts"], p["reply_count"], p["latest_reply"] = parent, n, replies[len(replies)-1]["ts"]
	f.threads[channel+"/"+parent] = replies
}

// channel gives the fake a channel of n messages, newest first, plus a join notice (not
// mirrored).
func (f *fakeSlack) channel(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var list []obj
	for i := n; i >= 1; i-- {
		list = append(list, slackMessage(fmt.Sprintf("1700000%03d.000100", i), fmt.Sprintf("message %d", i), ""))
		if i == n/2 {
			list = append(list, obj{"type": "message", "subtype": "channel_join", "user": "U9", "text": "joined", "ts": "1700000000.000001"})
		}
	}
	f.channels[id] = list
}

func (f *fakeSlack) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// slackConnection inserts an ACTIVE SLACK connection of the team whose sealed secret is the bot
// token, as the install flow stores it.
func slackConnection(ctx context.Context, ws int64) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
		VALUES ($1, 'SLACK', 'SLACK', 'ACTIVE', 'https://slack.com', jsonb_build_object('teamId', $2::text), $2) RETURNING id`,
		ws, slackTeam).Scan(&id)).To(Succeed())
	sealed, err := box.Seal(id, []byte(slackBotToken))
	Expect(err).NotTo(HaveOccurred())
	_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, sealed)
	Expect(err).NotTo(HaveOccurred())
	return id
}

func registerChannel(ctx context.Context, ws int64, id, consent string) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `INSERT INTO slack_channel (workspace_id, team_id, id, name, consent_state, source_event_id)
		VALUES ($1, $2, $3, $3, $4, 0)`, ws, slackTeam, id, consent)
	Expect(err).NotTo(HaveOccurred())
}

func subscribeChannel(ctx context.Context, ws, conn int64, id string) {
	GinkgoHelper()
	subscribeResource(ctx, ws, conn, "SLACK", "channel", id, "")
}

func channelJob(ctx context.Context, conn int64, id string) jobRow {
	GinkgoHelper()
	return resourceJob(ctx, conn, "channel", id)
}

var _ = Describe("Backfill of a Slack channel", func() {
	var (
		sl       *fakeSlack
		acme     int64
		conn     int64
		store    *slackmirror.Store
		r        *backfill.Runner
		metrics  *telemetry.Metrics
		messages func(ctx context.Context, channel string) int
	)

	BeforeEach(func(ctx SpecContext) {
		sl = newFakeSlack()
		sl.channel("C0GENERAL", 250)
		sl.channel("C0PRIVATE", 20)
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		conn = slackConnection(ctx, acme)
		var err error
		store, err = slackmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		src, err := slacksync.New(slackClient(ctx, sl, pool), store)
		Expect(err).NotTo(HaveOccurred())
		metrics = declaredMetrics("github", "gitlab", "slack")
		r = newRunner("server-a", jobs, metrics, src)
		messages = func(ctx context.Context, channel string) int {
			GinkgoHelper()
			return count(ctx, `SELECT count(*) FROM slack_message WHERE workspace_id = $1 AND channel_id = $2`, acme, channel)
		}
	})

	drain := func(ctx context.Context, cond func() bool) {
		GinkgoHelper()
		drainRunner(ctx, r, cond)
	}

	It("pages a consented channel's history by cursor with the bot token, into the mirror and the read API, with progress", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "GRANTED")
		subscribeChannel(ctx, acme, conn, "C0GENERAL")

		srv, c := serve(
			syncRoutes(),
			func(e *gin.Engine) error {
				return slackread.Register(e, slackread.Config{Auth: manage, Members: members, Store: store, Log: support.Logger{}})
			},
		)
		client := &httpClient{c}
		memberTok := support.NewAccount(ctx, manage, "mo", false, "acme", "MEMBER").Token
		progress := fmt.Sprintf("%s/api/workspaces/acme/connections/%d/sync", srv.URL, conn)

		// The third page waits while the progress is read: two pages of 100 are committed.
		sl.mu.Lock()
		sl.hold = "bmV4dF90czo200"
		sl.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for range 3 {
				_, err := r.RunOne(ctx)
				Expect(err).NotTo(HaveOccurred())
			}
		}()
		Eventually(sl.held).WithContext(ctx).Should(BeClosed())
		status, body := client.call(http.MethodGet, progress, memberTok)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body["resources"]).To(ConsistOf(And(HaveKeyWithValue("type", "channel"), HaveKeyWithValue("id", "C0GENERAL"),
			HaveKeyWithValue("state", "RUNNING"), HaveKeyWithValue("pages", BeEquivalentTo(2)),
			HaveKeyWithValue("items", BeEquivalentTo(199))))) // the join notice on page 2 is not a message
		close(sl.release)
		Eventually(done).WithContext(ctx).Should(BeClosed())
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0GENERAL").State == "DONE" })

		j := channelJob(ctx, conn, "C0GENERAL")
		Expect(j.Items).To(BeEquivalentTo(250))
		Expect(j.Pages).To(BeEquivalentTo(3))
		Expect(messages(ctx, "C0GENERAL")).To(Equal(250))
		Expect(sl.callLog()).To(Equal([]string{"C0GENERAL ", "C0GENERAL bmV4dF90czo100", "C0GENERAL bmV4dF90czo200"}))
		Expect(sl.badAuth).To(BeZero())
		Expect(counter(metrics, "sync_items_total", "slack")).To(BeEquivalentTo(250))
		Expect(counter(metrics, "sync_pages_total", "slack")).To(BeEquivalentTo(3))

		status, body = client.call(http.MethodGet, srv.URL+"/api/workspaces/acme/slack/channels/C0GENERAL/messages?size=1", memberTok)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).To(HaveKeyWithValue("total", BeEquivalentTo(250)))
		Expect(body["items"]).To(ConsistOf(And(HaveKeyWithValue("ts", "1700000250.000100"), HaveKeyWithValue("text", "message 250"))))
		status, body = client.call(http.MethodGet, progress, memberTok)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).To(HaveKeyWithValue("state", "DONE"))
	})

	It("mirrors nothing of a channel without consent and reads nothing from Slack for it", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0PRIVATE", "PENDING")
		subscribeChannel(ctx, acme, conn, "C0PRIVATE")
		subscribeChannel(ctx, acme, conn, "C0GENERAL") // not even registered
		drain(ctx, func() bool {
			return channelJob(ctx, conn, "C0PRIVATE").State == "DONE" && channelJob(ctx, conn, "C0GENERAL").State == "DONE"
		})
		Expect(channelJob(ctx, conn, "C0PRIVATE").Items).To(BeZero())
		Expect(messages(ctx, "C0PRIVATE")).To(BeZero())
		Expect(messages(ctx, "C0GENERAL")).To(BeZero())
		Expect(sl.callLog()).To(BeEmpty())
	})

	It("backfills a channel again from its first page when the app is added to it later", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "PENDING")
		subscribeChannel(ctx, acme, conn, "C0GENERAL")
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0GENERAL").State == "DONE" })
		Expect(messages(ctx, "C0GENERAL")).To(BeZero())
		Expect(sl.callLog()).To(BeEmpty())

		// The app's bot joins the channel: the grant step's consent change restarts the job.
		reg := slackHandlers(store)
		payload := `{"type":"event_callback","team_id":"` + slackTeam + `","authorizations":[{"team_id":"` + slackTeam +
			`","user_id":"UBOT","is_bot":true}],"event":{"type":"member_joined_channel","channel":"C0GENERAL","channel_type":"C","user":"UBOT","team":"` +
			slackTeam + `"}}`
		Expect(support.LeasedEvent(ctx, pool, acme, slack.Provider, "member_joined_channel", "slack:channel:C0GENERAL", payload).Handle(ctx, reg)).To(Succeed())
		Expect(channelJob(ctx, conn, "C0GENERAL").State).To(Equal("QUEUED"))

		drain(ctx, func() bool { return channelJob(ctx, conn, "C0GENERAL").State == "DONE" })
		Expect(channelJob(ctx, conn, "C0GENERAL").Items).To(BeEquivalentTo(250))
		Expect(messages(ctx, "C0GENERAL")).To(Equal(250))

		// A rename of the consented channel restarts nothing.
		_, err := pool.Exec(ctx, `UPDATE slack_channel SET name = 'general-2', consent_state = 'GRANTED' WHERE workspace_id = $1 AND id = 'C0GENERAL'`, acme)
		Expect(err).NotTo(HaveOccurred())
		Expect(channelJob(ctx, conn, "C0GENERAL").State).To(Equal("DONE"))
	})

	It("writes nothing when the consent is revoked while the page is read", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0PRIVATE", "GRANTED")
		sl.holdFirstPage()
		subscribeChannel(ctx, acme, conn, "C0PRIVATE")
		done := runUntilHeld(ctx, sl.held, r.RunOne)
		_, err := pool.Exec(ctx, `UPDATE slack_channel SET consent_state = 'REVOKED' WHERE workspace_id = $1 AND id = 'C0PRIVATE'`, acme)
		Expect(err).NotTo(HaveOccurred())
		close(sl.release)
		Eventually(done).WithContext(ctx).Should(BeClosed())
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0PRIVATE").State == "DONE" })
		Expect(messages(ctx, "C0PRIVATE")).To(BeZero())
	})

	It("keeps the newer text of an edit webhook that races an older page", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0PRIVATE", "GRANTED")
		// The page lists message 5 as edited at 1700000500 with its old text.
		sl.mu.Lock()
		for i, m := range sl.channels["C0PRIVATE"] {
			if m["ts"] == "1700000005.000100" {
				sl.channels["C0PRIVATE"][i] = slackMessage("1700000005.000100", "page text", "1700000500.000000")
			}
		}
		sl.hold = ""
		sl.mu.Unlock()
		subscribeChannel(ctx, acme, conn, "C0PRIVATE")
		done := runUntilHeld(ctx, sl.held, r.RunOne)

		// While the page is on its way, a newer edit of message 5 is handled.
		reg := slackHandlers(store)
		payload := `{"type":"event_callback","team_id":"` + slackTeam + `","event":{"type":"message","subtype":"message_changed",
			"channel":"C0PRIVATE","channel_type":"channel","ts":"1700000900.000000","event_ts":"1700000900.000000",
			"message":{"type":"message","user":"U1","text":"webhook text","ts":"1700000005.000100","edited":{"user":"U1","ts":"1700000900.000000"}},
			"previous_message":{"type":"message","user":"U1","text":"message 5","ts":"1700000005.000100"}}}`
		Expect(support.LeasedEvent(ctx, pool, acme, slack.Provider, "message", "slack:team:"+slackTeam, payload).Handle(ctx, reg)).To(Succeed())

		close(sl.release)
		Eventually(done).WithContext(ctx).Should(BeClosed())
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0PRIVATE").State == "DONE" })
		Expect(messages(ctx, "C0PRIVATE")).To(Equal(20))
		Expect(support.Scalar[string](ctx, pool, `SELECT text || '@' || edited_ts FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0PRIVATE' AND ts = '1700000005.000100'`, acme)).
			To(Equal("webhook text@1700000900.000000"))
		Expect(support.Scalar[string](ctx, pool, `SELECT text FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0PRIVATE' AND ts = '1700000006.000100'`, acme)).To(Equal("message 6"))
	})

	It("retries a page Slack answered 429 with Retry-After without counting it against the page's budget", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "GRANTED")
		// More 429s than the budget's three attempts: counted, they would fail the job.
		sl.mu.Lock()
		sl.limit429, sl.limits = "bmV4dF90czo100", testRetry.MaxAttempts+1
		sl.mu.Unlock()
		subscribeChannel(ctx, acme, conn, "C0GENERAL")
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0GENERAL").State == "DONE" })
		j := channelJob(ctx, conn, "C0GENERAL")
		Expect(j.Attempt).To(BeZero())
		Expect(j.LastError).To(BeNil())
		Expect(j.Pages).To(BeEquivalentTo(3))
		Expect(messages(ctx, "C0GENERAL")).To(Equal(250))
		calls := []string{"C0GENERAL "}
		for range testRetry.MaxAttempts + 2 {
			calls = append(calls, "C0GENERAL bmV4dF90czo100")
		}
		Expect(sl.callLog()).To(Equal(append(calls, "C0GENERAL bmV4dF90czo200")))
		// Each wait is a failed page on sync_failures_total, as for GitHub's rate limits.
		Expect(counter(metrics, "sync_failures_total", "slack")).To(BeEquivalentTo(testRetry.MaxAttempts + 1))
	})

	It("fails only the job of a page that does not parse, after its budget, with provider-unreadable", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "GRANTED")
		registerChannel(ctx, acme, "C0PRIVATE", "GRANTED")
		sl.mu.Lock()
		sl.broken = "C0GENERAL"
		sl.mu.Unlock()
		subscribeChannel(ctx, acme, conn, "C0GENERAL")
		subscribeChannel(ctx, acme, conn, "C0PRIVATE")
		drain(ctx, func() bool {
			return channelJob(ctx, conn, "C0GENERAL").State == "FAILED" && channelJob(ctx, conn, "C0PRIVATE").State == "DONE"
		})
		j := channelJob(ctx, conn, "C0GENERAL")
		Expect(*j.LastError).To(Equal("provider-unreadable"))
		Expect(j.Pages).To(BeZero())
		Expect(messages(ctx, "C0GENERAL")).To(BeZero())
		Expect(messages(ctx, "C0PRIVATE")).To(Equal(20))
		Expect(counter(metrics, "sync_failures_total", "slack")).To(BeEquivalentTo(testRetry.MaxAttempts))
	})

	It("refuses the job when Slack refuses the bot token, with the reason and never the token", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "GRANTED")
		sealed, err := box.Seal(conn, []byte("xoxb-revoked"))
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, conn, sealed)
		Expect(err).NotTo(HaveOccurred())
		subscribeChannel(ctx, acme, conn, "C0GENERAL")
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0GENERAL").State == "FAILED" })
		j := channelJob(ctx, conn, "C0GENERAL")
		Expect(j.LastError).NotTo(BeNil())
		Expect(*j.LastError).To(Equal("provider-refused"))
		Expect(messages(ctx, "C0GENERAL")).To(BeZero())
		Expect(sl.badAuth).To(BeNumerically(">", 0))
	})

	// handle runs one Slack event through the message and lifecycle handlers, as the consumer
	// would under the row's lease.
	handle := func(ctx context.Context, eventType, subject, event string) error {
		reg := slackHandlers(store)
		payload := `{"type":"event_callback","team_id":"` + slackTeam + `","authorizations":[{"team_id":"` + slackTeam +
			`","user_id":"UBOT","is_bot":true}],"event":` + event + `}`
		return support.LeasedEvent(ctx, pool, acme, slack.Provider, eventType, subject, payload).Handle(ctx, reg)
	}
	replyCount := func(ctx context.Context, parent string) int {
		GinkgoHelper()
		return count(ctx, `SELECT count(*) FROM slack_message WHERE workspace_id = $1 AND channel_id = 'C0THREADS'
			AND thread_ts = $2 AND ts <> thread_ts`, acme, parent)
	}

	It("backfills each thread's replies over reply pages", func(ctx SpecContext) {
		// Two history pages; the first lists a parent with 150 replies (two replies pages), the
		// second a parent with 3, a deleted parent (a tombstone) whose 2 replies remain, and a
		// parent deleted between its history page and its replies (thread_not_found: skipped).
		sl.channel("C0THREADS", 150)
		sl.thread("C0THREADS", "1700000140.000100", 150, "1700000500.000000")
		sl.thread("C0THREADS", "1700000020.000100", 2, "")
		sl.thread("C0THREADS", "1700000010.000100", 3, "")
		sl.mu.Lock()
		for _, m := range sl.channels["C0THREADS"] {
			if m["ts"] == "1700000020.000100" {
				m["subtype"], m["text"], m["user"] = "tombstone", "This message was deleted.", "USLACKBOT"
			}
			if m["ts"] == "1700000005.000100" {
				// History lists its replies, but the parent is gone when they are read.
				m["thread_ts"], m["reply_count"] = "1700000005.000100", 4
			}
		}
		sl.mu.Unlock()
		registerChannel(ctx, acme, "C0THREADS", "GRANTED")

		// A newer edit of the first reply arrived by webhook before the backfill: it stays.
		Expect(handle(ctx, "message", "slack:team:"+slackTeam, `{"type":"message","subtype":"message_changed",
			"channel":"C0THREADS","channel_type":"channel","ts":"1700000900.000000","event_ts":"1700000900.000000",
			"message":{"type":"message","user":"U1","text":"webhook text","ts":"1700000140.100001","thread_ts":"1700000140.000100",
				"edited":{"user":"U1","ts":"1700000900.000000"}},
			"previous_message":{"type":"message","user":"U1","text":"first","ts":"1700000140.100001","thread_ts":"1700000140.000100"}}`)).
			To(Succeed())

		subscribeChannel(ctx, acme, conn, "C0THREADS")
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0THREADS").State == "DONE" })

		Expect(sl.callLog()).To(Equal([]string{
			"C0THREADS ",
			"C0THREADS/1700000140.000100 ", "C0THREADS/1700000140.000100 cmVwbGllczo99",
			"C0THREADS bmV4dF90czo100",
			"C0THREADS/1700000020.000100 ", "C0THREADS/1700000010.000100 ", "C0THREADS/1700000005.000100 ",
		}))
		Expect(sl.badAuth).To(BeZero())
		Expect(replyCount(ctx, "1700000140.000100")).To(Equal(150))
		Expect(replyCount(ctx, "1700000020.000100")).To(Equal(2))
		Expect(replyCount(ctx, "1700000010.000100")).To(Equal(3))
		// 149 top-level messages (the deleted parent is not a message) and 155 replies, each once.
		Expect(messages(ctx, "C0THREADS")).To(Equal(149 + 155))
		j := channelJob(ctx, conn, "C0THREADS")
		Expect(j.Items).To(BeEquivalentTo(149 + 155))
		Expect(j.Pages).To(BeEquivalentTo(7)) // 2 history pages, 4 replies pages, the thread Slack no longer had
		Expect(*j.Cursor).To(Equal("history:done"))
		Expect(counter(metrics, "sync_items_total", "slack")).To(BeEquivalentTo(149 + 155))
		Expect(support.Scalar[string](ctx, pool, `SELECT text || '@' || edited_ts || '@' || thread_ts FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0THREADS' AND ts = '1700000140.100001'`, acme)).
			To(Equal("webhook text@1700000900.000000@1700000140.000100"))
		Expect(support.Scalar[string](ctx, pool, `SELECT text || '@' || thread_ts FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0THREADS' AND ts = '1700000010.100003'`, acme)).
			To(Equal("reply 3 to 1700000010.000100@1700000010.000100"))
	})

	It("resumes inside a thread's replies from the committed cursor", func(ctx SpecContext) {
		sl.channel("C0THREADS", 30)
		sl.thread("C0THREADS", "1700000025.000100", 250, "") // replies pages of 99, 99 and 52
		sl.mu.Lock()
		sl.fail500 = "C0THREADS/1700000025.000100 cmVwbGllczo99"
		sl.mu.Unlock()
		registerChannel(ctx, acme, "C0THREADS", "GRANTED")
		subscribeChannel(ctx, acme, conn, "C0THREADS")

		// Server A commits the history page and the first replies page, then Slack fails.
		claimed, err := r.RunOne(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(BeTrue())
		j := channelJob(ctx, conn, "C0THREADS")
		Expect(j.State).To(Equal("QUEUED"))
		Expect(*j.Cursor).To(Equal("replies:1700000025.000100|cmVwbGllczo99|history:done"))
		Expect(j.Pages).To(BeEquivalentTo(2))
		Expect(j.Items).To(BeEquivalentTo(30 + 99))
		Expect(replyCount(ctx, "1700000025.000100")).To(Equal(99))

		// Server B takes the job over and goes on inside the thread.
		src, err := slacksync.New(slackClient(ctx, sl, poolB), store)
		Expect(err).NotTo(HaveOccurred())
		b := newRunner("server-b", jobsB, metrics, src)
		Eventually(func(g Gomega) string {
			g.Expect(b.Drain(ctx)).To(Succeed())
			return channelJob(ctx, conn, "C0THREADS").State
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(Equal("DONE"))

		Expect(sl.callLog()).To(Equal([]string{
			"C0THREADS ",
			"C0THREADS/1700000025.000100 ", "C0THREADS/1700000025.000100 cmVwbGllczo99",
			"C0THREADS/1700000025.000100 cmVwbGllczo99", "C0THREADS/1700000025.000100 cmVwbGllczo198",
		}))
		j = channelJob(ctx, conn, "C0THREADS")
		Expect(j.Items).To(BeEquivalentTo(30 + 250))
		Expect(j.Pages).To(BeEquivalentTo(4))
		Expect(replyCount(ctx, "1700000025.000100")).To(Equal(250))
		Expect(messages(ctx, "C0THREADS")).To(Equal(30 + 250))
	})

	It("a message deleted before it was mirrored is not restored by an older page", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0PRIVATE", "GRANTED")
		sl.holdFirstPage()
		subscribeChannel(ctx, acme, conn, "C0PRIVATE")
		done := runUntilHeld(ctx, sl.held, r.RunOne)

		// The page listing message 5 was read; message 5 is deleted before the page commits.
		Expect(handle(ctx, "message", "slack:team:"+slackTeam, `{"type":"message","subtype":"message_deleted",
			"channel":"C0PRIVATE","channel_type":"channel","ts":"1700000900.000000","deleted_ts":"1700000005.000100",
			"previous_message":{"type":"message","user":"U1","text":"message 5","ts":"1700000005.000100"}}`)).To(Succeed())
		Expect(support.Scalar[string](ctx, pool, `SELECT deleted || '|' || text || '|' || coalesce(user_id, '') FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0PRIVATE' AND ts = '1700000005.000100'`, acme)).To(Equal("true||"))

		close(sl.release)
		Eventually(done).WithContext(ctx).Should(BeClosed())
		drain(ctx, func() bool { return channelJob(ctx, conn, "C0PRIVATE").State == "DONE" })
		Expect(support.Scalar[string](ctx, pool, `SELECT deleted || '|' || text || '|' || coalesce(user_id, '') FROM slack_message
			WHERE workspace_id = $1 AND channel_id = 'C0PRIVATE' AND ts = '1700000005.000100'`, acme)).To(Equal("true||"))
		listed, total, err := store.ListMessages(ctx, acme, "C0PRIVATE", ports.PageRequest{Size: 100})
		Expect(err).NotTo(HaveOccurred())
		Expect(total).To(Equal(19))
		Expect(listed).To(HaveLen(19))
		for _, m := range listed {
			Expect(m.TS).NotTo(Equal("1700000005.000100"))
		}
	})

	It("locks the channel row before the job row in every page commit, so consent changes racing pages never deadlock", func(ctx SpecContext) {
		registerChannel(ctx, acme, "C0GENERAL", "GRANTED")
		subscribeChannel(ctx, acme, conn, "C0GENERAL")
		src, err := slacksync.New(slackClient(ctx, sl, pool), store)
		Expect(err).NotTo(HaveOccurred())
		// Every page write opens a window of 50 ms inside its transaction, after the job's fence,
		// and says so; a revoke and a grant of the channel are handled inside each window. In the
		// old order (the job row, then the channel row) the grant locked the channel and waited
		// for the job in its trigger while the page held the job and waited for the channel.
		slow := slowPages{SyncSource: src, window: make(chan struct{}, 1)}
		pages := &deadlockCounting{SyncJobStore: jobs}
		racer := newRunner("server-a", pages, metrics, slow)
		reg := slackHandlers(store)
		event := func(eventType, event string) support.Delivery {
			return support.LeasedEvent(ctx, pool, acme, slack.Provider, eventType, "slack:channel:C0GENERAL",
				`{"type":"event_callback","team_id":"`+slackTeam+`","authorizations":[{"team_id":"`+slackTeam+
					`","user_id":"UBOT","is_bot":true}],"event":`+event+`}`)
		}

		stop := make(chan struct{})
		paging := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(paging)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if claimed, err := racer.RunOne(ctx); err == nil && !claimed {
					time.Sleep(time.Millisecond) // nothing due yet: the grant queues the job again
				}
			}
		}()
		changes := []struct{ eventType, event string }{
			{"channel_left", `{"type":"channel_left","channel":"C0GENERAL"}`},
			{"member_joined_channel", `{"type":"member_joined_channel","channel":"C0GENERAL","channel_type":"C","user":"UBOT","team":"` +
				slackTeam + `"}`},
		}
		const rounds = 12
		var changed, changeDeadlocks int
		for range rounds {
			Eventually(slow.window).WithContext(ctx).WithTimeout(20 * time.Second).Should(Receive())
			for _, c := range changes {
				// A change broken as a deadlock is retried, as the inbox retries it.
				for attempt := 0; attempt < 5; attempt++ {
					err := event(c.eventType, c.event).Handle(ctx, reg)
					if !isDeadlock(err) {
						Expect(err).NotTo(HaveOccurred())
						changed++
						break
					}
					changeDeadlocks++
				}
			}
		}
		close(stop)
		Eventually(paging).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeClosed())

		commits, deadlocks := pages.counts()
		Expect(deadlocks).To(BeZero(), "page commits broken as deadlocks")
		Expect(changeDeadlocks).To(BeZero(), "consent changes broken as deadlocks")
		Expect(changed).To(Equal(2*rounds), "every revoke and grant committed")
		Expect(commits).To(BeNumerically(">=", rounds), "pages committed while the consent changed")
	})
})

// slackClient is the Web API client of the fake Slack, with the tokens p's connections store.
func slackClient(ctx context.Context, sl *fakeSlack, p *pgxpool.Pool) *webapi.Client {
	GinkgoHelper()
	secretsStore, err := managementstore.NewLiveSecrets(p, box)
	Expect(err).NotTo(HaveOccurred())
	stored := func(ctx context.Context, ws int64, team string) (string, bool, error) {
		token, found, err := secretsStore.LiveSecret(ctx, ws, slack.Kind, team)
		return string(token), found, err
	}
	client, err := webapi.New(webapi.Config{BaseURL: sl.server.URL, Token: webapi.StoredTokens(stored, "")})
	Expect(err).NotTo(HaveOccurred())
	return client
}

// slowPages is a sync source whose page writes first report on window and wait 50 ms inside
// the page's transaction, after the job's fence: the job row is held while the page has not
// reached its writes yet.
type slowPages struct {
	contract.SyncSource
	window chan struct{}
}

func (s slowPages) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	p, err := s.SyncSource.NextPage(ctx, job, cursor)
	if write := p.Write; write != nil {
		p.Write = func(ctx context.Context, tx ports.Tx) error {
			ptx, err := sqlkit.PgxTx(tx)
			if err != nil {
				return err
			}
			select {
			case s.window <- struct{}{}:
			default:
			}
			if _, err := ptx.Exec(ctx, `SELECT pg_sleep(0.05)`); err != nil {
				return err
			}
			return write(ctx, tx)
		}
	}
	return p, err
}

// deadlockCounting is the job store counting page commits and the ones PostgreSQL broke as a
// deadlock (40P01).
type deadlockCounting struct {
	ports.SyncJobStore
	mu                 sync.Mutex
	commits, deadlocks int
}

func (d *deadlockCounting) CommitSyncPage(ctx context.Context, l ports.SyncLease, p ports.SyncPage, lease time.Duration) error {
	err := d.SyncJobStore.CommitSyncPage(ctx, l, p, lease)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.commits++
	}
	if isDeadlock(err) {
		d.deadlocks++
	}
	return err
}

func (d *deadlockCounting) counts() (commits, deadlocks int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.commits, d.deadlocks
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
