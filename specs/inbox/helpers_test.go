package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var github = provider.MustNew("GITHUB")

// newWorkspace creates a workspace in state ("ACTIVE" or "SUSPENDED") and returns its id.
func newWorkspace(ctx context.Context, p *pgxpool.Pool, slug, state string) int64 {
	var id int64
	Expect(p.QueryRow(ctx, `INSERT INTO workspace (slug, name, state) VALUES ($1, $1, $2) RETURNING id`,
		slug, state).Scan(&id)).To(Succeed())
	return id
}

// subject is the repository subject of the spec's rows.
func subject(repo string) inbox.Subject {
	s, err := inbox.NewSubject("github", "repository", repo)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// row describes a delivery to store. Workspace 0 with Control is an installation row.
type row struct {
	Workspace   int64
	Repo        string
	Control     bool
	EventType   string
	DeliveryKey string
	Payload     string
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// storeRow stores a delivery the way admission does (INSERT … ON CONFLICT DO NOTHING on
// uq_provider_event_delivery), its scope derived by the domain's NewDelivery. It returns the new
// id, or 0 for a duplicate.
func storeRow(ctx context.Context, p querier, r row) int64 {
	if r.EventType == "" {
		r.EventType = "issues"
	}
	if r.DeliveryKey == "" {
		r.DeliveryKey = fmt.Sprintf("d-%d", nextKey())
	}
	if r.Payload == "" {
		r.Payload = `{"action":"opened"}`
	}
	if r.Repo == "" {
		r.Repo = "1"
	}
	d, err := inbox.NewDelivery(inbox.Admission{
		WorkspaceID: r.Workspace, Provider: github, EventType: r.EventType, DeliveryKey: r.DeliveryKey,
		Subject: subject(r.Repo), Control: r.Control,
	}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	var ws *int64
	if d.WorkspaceID() != 0 {
		w := d.WorkspaceID()
		ws = &w
	}
	var id int64
	err = p.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, due_at, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $9)
		ON CONFLICT (workspace_id, provider, delivery_key) DO NOTHING
		RETURNING id`,
		ws, d.Provider().String(), d.EventType(), d.DeliveryKey(), d.Scope().String(), d.Subject().String(),
		r.Payload, map[string]string{"X-GitHub-Event": d.EventType()}, d.ReceivedAt()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0 // a duplicate: ON CONFLICT DO NOTHING returned no row
	}
	Expect(err).NotTo(HaveOccurred())
	return id
}

var (
	keyMu sync.Mutex
	key   int
)

func nextKey() int {
	keyMu.Lock()
	defer keyMu.Unlock()
	key++
	return key
}

// stored is a row as a spec reads it back.
type stored struct {
	State           string
	Attempt         int
	UnknownFailures int
	Epoch           int64
	Leased          bool
	Ended           bool
	ErrorClass      string
	Payload         string
	ReplayedBy      int64
}

func readRow(ctx context.Context, p *pgxpool.Pool, id int64) stored {
	var s stored
	Expect(p.QueryRow(ctx, `
		SELECT state, attempt, unknown_failures, lease_epoch, leased_until IS NOT NULL, ended_at IS NOT NULL,
		       coalesce(error_class, ''), payload::text, coalesce(replayed_by, 0)
		FROM provider_event WHERE id = $1`, id).Scan(&s.State, &s.Attempt, &s.UnknownFailures, &s.Epoch,
		&s.Leased, &s.Ended, &s.ErrorClass, &s.Payload, &s.ReplayedBy)).To(Succeed())
	return s
}

func stateOf(ctx context.Context, p *pgxpool.Pool, id int64) string {
	var s string
	if err := p.QueryRow(ctx, `SELECT state FROM provider_event WHERE id = $1`, id).Scan(&s); err != nil {
		return "missing"
	}
	return s
}

func countRows(ctx context.Context, p *pgxpool.Pool, where string, args ...any) int {
	return support.Count(ctx, p, `SELECT count(*) FROM provider_event WHERE `+where, args...)
}

func ids(claimed []ports.Claimed) []int64 {
	out := make([]int64, len(claimed))
	for i, c := range claimed {
		out[i] = c.Delivery.ID()
	}
	return out
}

func ackOf(c ports.Claimed) ports.Ack {
	return ports.Ack{ID: c.Delivery.ID(), Epoch: c.Delivery.Lease().Epoch()}
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// noopMetrics discards every metric.
type noopMetrics struct{}

func (noopMetrics) Handled(string, string)                                 {}
func (noopMetrics) Retried(string, string)                                 {}
func (noopMetrics) Dropped(string, string)                                 {}
func (noopMetrics) RetentionFailed()                                       {}
func (noopMetrics) HandlerDuration(context.Context, string, time.Duration) {}
func (noopMetrics) InboxRows(string, int64)                                {}
func (noopMetrics) OldestQueuedAge(time.Duration)                          {}

var _ ports.ConsumerMetrics = noopMetrics{}

// recordingMetrics counts what the consumer reports, by metric and labels.
type recordingMetrics struct {
	mu           sync.Mutex
	counts       map[string]int
	durations    int
	rows         map[string]int64
	oldestQueued time.Duration
}

var _ ports.ConsumerMetrics = (*recordingMetrics)(nil)

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{counts: map[string]int{}, rows: map[string]int64{}}
}

func (m *recordingMetrics) add(name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[name+"{"+strings.Join(labels, ",")+"}"]++
}

func (m *recordingMetrics) Handled(p, outcome string) { m.add("handled", p, outcome) }
func (m *recordingMetrics) Retried(p, cause string)   { m.add("retry", p, cause) }
func (m *recordingMetrics) Dropped(p, reason string)  { m.add("dropped", p, reason) }
func (m *recordingMetrics) RetentionFailed()          { m.add("retention_failures") }
func (m *recordingMetrics) HandlerDuration(context.Context, string, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.durations++
}
func (m *recordingMetrics) InboxRows(state string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[state] = n
}
func (m *recordingMetrics) OldestQueuedAge(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oldestQueued = d
}

// OldestQueued is the last oldest-queued-age the consumer reported.
func (m *recordingMetrics) OldestQueued() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.oldestQueued
}

// Count returns a counter, e.g. Count("handled", "github", "done").
func (m *recordingMetrics) Count(name string, labels ...string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name+"{"+strings.Join(labels, ",")+"}"]
}

func (m *recordingMetrics) Rows(state string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rows[state]
}

// logEntry is one structured log line.
type logEntry struct {
	Level string
	Msg   string
	KV    []any
}

func (e logEntry) String() string { return fmt.Sprintf("%s %s %v", e.Level, e.Msg, e.KV) }

// Value returns the value logged under key.
func (e logEntry) Value(key string) any {
	for i := 0; i+1 < len(e.KV); i += 2 {
		if e.KV[i] == key {
			return e.KV[i+1]
		}
	}
	return nil
}

// recordingLogger keeps every line for the spec to read.
type recordingLogger struct {
	mu      sync.Mutex
	entries []logEntry
}

var _ ports.Logger = (*recordingLogger)(nil)

func (l *recordingLogger) log(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, logEntry{Level: level, Msg: msg, KV: kv})
}

func (l *recordingLogger) Debugw(msg string, kv ...any) { l.log("debug", msg, kv) }
func (l *recordingLogger) Infow(msg string, kv ...any)  { l.log("info", msg, kv) }
func (l *recordingLogger) Warnw(msg string, kv ...any)  { l.log("warn", msg, kv) }
func (l *recordingLogger) Errorw(msg string, kv ...any) { l.log("error", msg, kv) }

func (l *recordingLogger) Entries() []logEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]logEntry(nil), l.entries...)
}

// Find returns the entries whose message contains msg.
func (l *recordingLogger) Find(msg string) []logEntry {
	var out []logEntry
	for _, e := range l.Entries() {
		if strings.Contains(e.Msg, msg) {
			out = append(out, e)
		}
	}
	return out
}

// Text is every line, for specs that prove something was never logged.
func (l *recordingLogger) Text() string {
	var b strings.Builder
	for _, e := range l.Entries() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// specConfig is a consumer configuration with short periods, so specs finish in seconds.
func specConfig(owner string) consumer.Config {
	return consumer.Config{
		Owner:             owner,
		Claimers:          4,
		LeaseDuration:     30 * time.Second,
		RenewInterval:     5 * time.Second,
		ReaperInterval:    time.Second,
		PollInterval:      50 * time.Millisecond,
		RetryBaseDelay:    10 * time.Millisecond,
		RetryMaxDelay:     40 * time.Millisecond,
		ShutdownGrace:     2 * time.Second,
		ShutdownTimeout:   5 * time.Second,
		BackoffMin:        20 * time.Millisecond,
		BackoffMax:        300 * time.Millisecond,
		GaugeInterval:     100 * time.Millisecond,
		RetentionInterval: time.Hour,
	}
}

// server is one running consumer of a spec.
type server struct {
	consumer *consumer.Consumer
	wake     *consumer.Signal
	log      *recordingLogger
	metrics  *recordingMetrics
	stop     func() error
}

// startServer runs a consumer until the spec ends (or stop is called) and fails the spec if Run
// does not return in time after its context is cancelled. Its ports.Clock is the spec's clock,
// the one the suite's store reads, so retry due times move with it.
func startServer(cfg consumer.Config, st ports.InboxStore, reg ports.HandlerRegistry) *server {
	s := &server{log: &recordingLogger{}, metrics: newRecordingMetrics(), wake: consumer.NewSignal()}
	c, err := consumer.New(cfg, st, reg, s.wake, clock, s.log, s.metrics)
	Expect(err).NotTo(HaveOccurred())
	s.consumer = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(60 * time.Second):
				Fail("consumer Run did not return after its context was cancelled")
			}
		})
		return runErr
	}
	DeferCleanup(func() { Expect(s.stop()).To(Succeed()) })
	return s
}

// registry registers one handler for the spec's GitHub "issues" rows.
func registry(h ports.HandlerFunc) *consumer.Registry {
	reg := consumer.NewRegistry()
	Expect(reg.Register(github, "issues", h)).To(Succeed())
	return reg
}

// idList collects ids from handler goroutines.
type idList struct {
	mu  sync.Mutex
	ids []int64
}

func (l *idList) add(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
}

func (l *idList) get() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.ids...)
}

// storeRows stores many work rows of workspace ws in one statement, in the order given (row
// ids follow it); repos[i] is the subject of row i. It returns the ids in that order.
func storeRows(ctx context.Context, p *pgxpool.Pool, ws int64, repos []string, payload string) []int64 {
	var (
		keys   = make([]string, len(repos))
		scopes = make([]string, len(repos))
		subjs  = make([]string, len(repos))
	)
	for i, repo := range repos {
		d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: ws, Provider: github, EventType: "issues",
			DeliveryKey: fmt.Sprintf("bulk-%d", nextKey()), Subject: subject(repo)}, time.Now())
		Expect(err).NotTo(HaveOccurred())
		keys[i], scopes[i], subjs[i] = d.DeliveryKey(), d.Scope().String(), d.Subject().String()
	}
	rows, err := p.Query(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload)
		SELECT $1, 'GITHUB', 'issues', k, s, sub, $5::jsonb
		FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(k, s, sub, n)
		ORDER BY n
		RETURNING id`, ws, keys, scopes, subjs, payload)
	Expect(err).NotTo(HaveOccurred())
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	Expect(err).NotTo(HaveOccurred())
	Expect(out).To(HaveLen(len(repos)))
	slices.Sort(out)
	return out
}

// scopeLog records, per scope, the rows a handler finished successfully, and every time two
// rows of one scope were in a handler at once (across all servers of a spec).
type scopeLog struct {
	mu         sync.Mutex
	inFlight   map[string]int64
	done       map[string][]int64
	violations []string
}

func newScopeLog() *scopeLog {
	return &scopeLog{inFlight: map[string]int64{}, done: map[string][]int64{}}
}

func (l *scopeLog) enter(d ports.Dispatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	scope := d.Delivery.Scope().String()
	if other, busy := l.inFlight[scope]; busy {
		l.violations = append(l.violations, fmt.Sprintf("%s: %d entered while %d ran", scope, d.Delivery.ID(), other))
	}
	l.inFlight[scope] = d.Delivery.ID()
}

func (l *scopeLog) exit(d ports.Dispatch, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	scope := d.Delivery.Scope().String()
	delete(l.inFlight, scope)
	if ok {
		l.done[scope] = append(l.done[scope], d.Delivery.ID())
	}
}

func (l *scopeLog) Violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.violations...)
}

// Done returns the successfully handled ids of each scope, in handling order.
func (l *scopeLog) Done() map[string][]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]int64, len(l.done))
	for k, v := range l.done {
		out[k] = append([]int64(nil), v...)
	}
	return out
}

// expectScopeOrder checks that each scope's rows were handled once each, in id order.
func expectScopeOrder(ctx context.Context, p *pgxpool.Pool, l *scopeLog) {
	GinkgoHelper()
	rows, err := p.Query(ctx, `SELECT scope_key, array_agg(id ORDER BY id) FROM provider_event GROUP BY scope_key`)
	Expect(err).NotTo(HaveOccurred())
	want := map[string][]int64{}
	for rows.Next() {
		var scope string
		var ids []int64
		Expect(rows.Scan(&scope, &ids)).To(Succeed())
		want[scope] = ids
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	Expect(l.Done()).To(Equal(want))
	Expect(l.Violations()).To(BeEmpty())
}

// overScopes is the repositories of rows rows spread over scopes scopes: row i is in scope
// i % scopes.
func overScopes(rows, scopes int) []string {
	repos := make([]string, rows)
	for i := range repos {
		repos[i] = fmt.Sprintf("%d", i%scopes)
	}
	return repos
}

// failingAtRandom is a handler that records each dispatch in l and fails as fail says for a
// random number in [0, 1) (nil: the attempt succeeds).
func (l *scopeLog) failingAtRandom(fail func(p float64) error) ports.HandlerFunc {
	return func(_ context.Context, d ports.Dispatch) error {
		l.enter(d)
		err := fail(rand.Float64())
		l.exit(d, err == nil)
		return err
	}
}

// contendingConfig is server i of several contending for the same rows: claimers claimers each,
// fast retries, and poison only after 1,000 attempts.
func contendingConfig(i, claimers int) consumer.Config {
	cfg := specConfig(fmt.Sprintf("server-%d", i))
	cfg.Claimers = claimers
	cfg.PoisonMaxAttempts = 1000
	cfg.RetryBaseDelay = time.Millisecond
	cfg.RetryMaxDelay = 5 * time.Millisecond
	cfg.PollInterval = 20 * time.Millisecond
	return cfg
}
