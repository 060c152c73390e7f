package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// maxBytes is the receiver's body limit in these specs.
const maxBytes = 4096

// receiver is one receiving server over real HTTP with its observers.
type receiver struct {
	url      string
	client   *http.Client
	metrics  *metricsRecorder
	logs     *logRecorder
	notified *atomic.Int64
	store    *admissionstore.Store // the real store, beneath any wrapStore
}

// receiverOptions change the server's collaborators for one spec.
type receiverOptions struct {
	pool      *pgxpool.Pool                                   // the admission store's; default: the suite's admissionPool
	wrapStore func(ports.AdmissionStore) ports.AdmissionStore // decorate the real store
	directory ports.ConnectionDirectory                       // default: tableDirectory on the pool
	hooks     webhookapi.Hooks                                // default: the fake TESTHUB and TESTLAB
	rejected  ports.RejectionCounter                          // the rejection log; default: none
}

func newReceiver(opts receiverOptions) *receiver {
	GinkgoHelper()
	if opts.pool == nil {
		opts.pool = admissionPool
	}
	real, err := admissionstore.New(opts.pool)
	Expect(err).NotTo(HaveOccurred())
	var store ports.AdmissionStore = real
	if opts.wrapStore != nil {
		store = opts.wrapStore(store)
	}
	if opts.directory == nil {
		opts.directory = tableDirectory{pool: pool}
	}
	r := &receiver{metrics: newMetricsRecorder(), logs: &logRecorder{}, notified: &atomic.Int64{}, store: real}
	svc, err := admission.New(admission.Config{DefaultSourceServerURL: "https://github.com", Rejections: opts.rejected}, store, opts.directory, notifierFunc(func() { r.notified.Add(1) }),
		r.metrics, r.logs, systemClock{})
	Expect(err).NotTo(HaveOccurred())
	if opts.hooks == nil {
		opts.hooks = webhookapi.Hooks{&fakeWebhook{p: testHub}, &fakeWebhook{p: testLab, perConnection: true}}
	}
	engine := gin.New()
	Expect(webhookapi.Register(engine, svc, opts.hooks, webhookapi.Config{MaxBytes: maxBytes})).To(Succeed())
	server := httptest.NewServer(engine)
	r.url, r.client = server.URL, &http.Client{Timeout: 30 * time.Second}
	DeferCleanup(func() {
		r.client.CloseIdleConnections()
		server.Close()
	})
	return r
}

// response is an answer as the provider sees it.
type response struct {
	status     int
	body       map[string]any
	raw        string
	retryAfter string
}

// post sends body to path; headers are added as given (a signature is not added for you).
func (r *receiver) post(path string, body io.Reader, headers map[string]string) response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodPost, r.url+path, body)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := r.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	out := response{status: res.StatusCode, raw: string(raw), retryAfter: res.Header.Get("Retry-After")}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// deliver signs b with the app secret and posts it to TESTHUB under deliveryKey.
func (r *receiver) deliver(deliveryKey string, b hubBody, extra ...map[string]string) response {
	GinkgoHelper()
	body := mustJSON(b)
	return r.post("/webhooks/testhub", bytes.NewReader(body), withHeaders(map[string]string{
		headerSignature: sign(appSecret, body), headerDelivery: deliveryKey, "Content-Type": "application/json",
	}, extra...))
}

// deliverTo signs b with a TESTLAB connection's secret and posts it to that connection's URL.
func (r *receiver) deliverTo(connectionID int64, secret, deliveryKey string, b hubBody) response {
	GinkgoHelper()
	body := mustJSON(b)
	return r.post(fmt.Sprintf("/webhooks/testlab/%d", connectionID), bytes.NewReader(body), map[string]string{
		headerSignature: sign(secret, body), headerDelivery: deliveryKey,
	})
}

func withHeaders(base map[string]string, extra ...map[string]string) map[string]string {
	for _, e := range extra {
		for k, v := range e {
			base[k] = v
		}
	}
	return base
}

func mustJSON(v any) []byte {
	GinkgoHelper()
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func accepted(stored, duplicates int) map[string]any {
	return map[string]any{"status": "accepted", "stored": float64(stored), "duplicates": float64(duplicates)}
}

func dropped(reason string) map[string]any {
	return map[string]any{"status": "dropped", "reason": reason}
}

func errorBody(code string) map[string]any { return map[string]any{"error": code} }

// --- Database fixtures, written straight into the tables the management API would fill ---

// openTx begins a transaction on the suite's pool, runs sql in it and leaves it open, so its
// row locks and uncommitted changes hold until the spec commits or rolls it back (the spec's
// end rolls it back).
func openTx(ctx context.Context, sql string, args ...any) pgx.Tx {
	GinkgoHelper()
	tx, err := pool.Begin(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, sql, args...)
	Expect(err).NotTo(HaveOccurred())
	return tx
}

func createWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `INSERT INTO workspace (slug, name) VALUES ($1, $1) RETURNING id`, slug).Scan(&id)).To(Succeed())
	return id
}

// conn is a connection to create; Secret is stored as is (the fake directory reads it back).
type conn struct {
	Workspace int64
	Kind      connection.Kind
	State     connection.State
	SourceKey string
	URL       string
	Secret    string
}

func createConnection(ctx context.Context, c conn) int64 {
	GinkgoHelper()
	if c.State.IsZero() {
		c.State = connection.Active
	}
	if c.URL == "" {
		c.URL = "https://source.example"
	}
	var sourceKey, secret any
	if c.SourceKey != "" {
		sourceKey = c.SourceKey
	}
	if c.Secret != "" {
		secret = []byte(c.Secret)
	}
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, source_key, secret_ciphertext)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		c.Workspace, c.Kind.String(), c.Kind.Provider().String(), c.State.String(), c.URL, sourceKey, secret).Scan(&id)).To(Succeed())
	return id
}

// subscribe adds a subscription as the management API does: under the connection's lifecycle
// lock, bumping its config_version in the same transaction.
func subscribe(ctx context.Context, connectionID int64, resourceType, resourceID string) {
	GinkgoHelper()
	Expect(pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var ws int64
		var p string
		if err := tx.QueryRow(ctx, `SELECT workspace_id, provider FROM connection WHERE id = $1 FOR UPDATE`, connectionID).Scan(&ws, &p); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id)
			VALUES ($1, $2, $3, $4, $5)`, connectionID, ws, p, resourceType, resourceID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE connection SET config_version = config_version + 1 WHERE id = $1`, connectionID)
		return err
	})).To(Succeed())
}

// setState changes a connection's lifecycle state under its lifecycle lock.
func setState(ctx context.Context, connectionID int64, s connection.State) {
	GinkgoHelper()
	Expect(pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, connectionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE connection SET state = $2, updated_at = now() WHERE id = $1`, connectionID, s.String())
		return err
	})).To(Succeed())
}

// storedRow is an inbox row as another connection sees it.
type storedRow struct {
	WorkspaceID  *int64
	ConnectionID *int64
	Provider     string
	DeliveryKey  string
	ScopeKey     string
	Subject      string
	Payload      string
	Headers      map[string]string
	State        string
}

// rowsOf reads, through the observer pool, the rows stored for deliveryKey (all when empty).
func rowsOf(ctx context.Context, deliveryKey string) []storedRow {
	GinkgoHelper()
	rows, err := observer.Query(ctx, `
		SELECT workspace_id, connection_id, provider, delivery_key, scope_key, subject, payload::text, headers, state
		FROM provider_event WHERE $1 = '' OR delivery_key = $1 ORDER BY workspace_id NULLS FIRST, id`, deliveryKey)
	Expect(err).NotTo(HaveOccurred())
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storedRow, error) {
		var r storedRow
		err := row.Scan(&r.WorkspaceID, &r.ConnectionID, &r.Provider, &r.DeliveryKey, &r.ScopeKey, &r.Subject, &r.Payload, &r.Headers, &r.State)
		return r, err
	})
	Expect(err).NotTo(HaveOccurred())
	return out
}

func workspacesOf(rows []storedRow) []int64 {
	out := make([]int64, 0, len(rows))
	for _, r := range rows {
		if r.WorkspaceID == nil {
			out = append(out, 0)
		} else {
			out = append(out, *r.WorkspaceID)
		}
	}
	return out
}

// --- Fakes of the ports admission needs besides the store ---

// tableDirectory reads per-connection sources straight from the connection table (the real
// directory decrypts the secret; the specs store it in clear).
type tableDirectory struct{ pool *pgxpool.Pool }

func (d tableDirectory) SourceConnection(ctx context.Context, id int64) (*ports.SourceConnection, error) {
	var kind, state string
	c := &ports.SourceConnection{ID: id}
	err := d.pool.QueryRow(ctx, `
		SELECT workspace_id, kind, state, source_server_url, coalesce(secret_ciphertext, ''), config_version
		FROM connection WHERE id = $1`, id).Scan(&c.WorkspaceID, &kind, &state, &c.SourceServerURL, &c.Secret, &c.ConfigVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ports.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	c.Kind = kinds[kind]
	if c.State, err = connection.ParseState(state); err != nil {
		return nil, err
	}
	return c, nil
}

type metricsRecorder struct {
	mu       sync.Mutex
	received map[string]int
	rejected map[string]int // "provider/reason"
}

func newMetricsRecorder() *metricsRecorder {
	return &metricsRecorder{received: map[string]int{}, rejected: map[string]int{}}
}

func (m *metricsRecorder) Received(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.received[p]++
}

func (m *metricsRecorder) Rejected(p, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rejected[p+"/"+reason]++
}

func (m *metricsRecorder) Rejections(p, reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rejected[p+"/"+reason]
}

func (m *metricsRecorder) AllRejections() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.rejected))
	for k, v := range m.rejected {
		out[k] = v
	}
	return out
}

func (m *metricsRecorder) ReceivedCount(p string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.received[p]
}

// logRecorder keeps every line the core wrote, rendered as text.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) write(level, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", level, msg, kv))
}

func (l *logRecorder) Debugw(msg string, kv ...any) { l.write("DEBUG", msg, kv...) }
func (l *logRecorder) Infow(msg string, kv ...any)  { l.write("INFO", msg, kv...) }
func (l *logRecorder) Warnw(msg string, kv ...any)  { l.write("WARN", msg, kv...) }
func (l *logRecorder) Errorw(msg string, kv ...any) { l.write("ERROR", msg, kv...) }

func (l *logRecorder) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

type notifierFunc func()

func (f notifierFunc) Notify() { f() }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
