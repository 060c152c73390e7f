package outline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/handlers"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var instanceAdmin = ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}

var errInjected = errors.New("injected mirror failure")

// faultyStore is the real Outline store counting document writes, with an event-record failure
// injected once after the real write.
type faultyStore struct {
	handlers.Store
	mu             sync.Mutex
	failRecord     error
	documentWrites int
}

func (f *faultyStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRecord, f.documentWrites = nil, 0
}

func (f *faultyStore) failNextRecord(err error) { f.mu.Lock(); f.failRecord = err; f.mu.Unlock() }

func (f *faultyStore) writes() int { f.mu.Lock(); defer f.mu.Unlock(); return f.documentWrites }

func (f *faultyStore) UpsertDocument(ctx context.Context, tx ports.Tx, ws int64, d handlers.Document) error {
	f.mu.Lock()
	f.documentWrites++
	f.mu.Unlock()
	return f.Store.UpsertDocument(ctx, tx, ws, d)
}

func (f *faultyStore) RecordEvent(ctx context.Context, tx ports.Tx, ws int64, e handlers.Event) error {
	f.mu.Lock()
	fail := f.failRecord
	f.failRecord = nil
	f.mu.Unlock()
	if err := f.Store.RecordEvent(ctx, tx, ws, e); err != nil {
		return err
	}
	return fail
}

func newWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	ws, err := svc.CreateWorkspace(ctx, instanceAdmin, slug, slug)
	Expect(err).NotTo(HaveOccurred())
	return ws.ID
}

func newAccount(ctx context.Context, login, slug, role string) string {
	GinkgoHelper()
	acc, err := svc.CreateAccount(ctx, instanceAdmin, login, false)
	Expect(err).NotTo(HaveOccurred())
	if role != "" {
		m, err := svc.Manage(ctx, instanceAdmin, slug)
		Expect(err).NotTo(HaveOccurred())
		_, err = svc.SetMemberRole(ctx, m, acc.ID, role)
		Expect(err).NotTo(HaveOccurred())
	}
	return acc.Token
}

var deliveries atomic.Int64

type delivery struct {
	ID        int64
	Workspace int64
	EventType string
	Payload   string
}

// leased stores an Outline row of ws, LEASED under epoch 1 as a claim leaves it, in a scope of
// its own so a spec can hold several at once.
func leased(ctx context.Context, ws int64, eventType, subject, payload string) delivery {
	GinkgoHelper()
	key := fmt.Sprintf("d-%d", deliveries.Add(1))
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, state, attempt, lease_epoch, leased_until)
		VALUES ($1, 'OUTLINE', $2, $3, $4, $5, $6::jsonb, 'LEASED', 1, 1, now() + interval '2 min')
		RETURNING id`,
		ws, eventType, key, fmt.Sprintf("%d:%s:%s", ws, subject, key), subject, payload).Scan(&id)).To(Succeed())
	return delivery{ID: id, Workspace: ws, EventType: eventType, Payload: payload}
}

func (d delivery) attempt(ctx context.Context) error {
	GinkgoHelper()
	var epoch int64
	Expect(pool.QueryRow(ctx, `SELECT lease_epoch FROM provider_event WHERE id = $1`, d.ID).Scan(&epoch)).To(Succeed())
	fence, err := erasure.NewFence(d.ID, inbox.Epoch(epoch))
	Expect(err).NotTo(HaveOccurred())
	h, ok := registry[d.EventType]
	Expect(ok).To(BeTrue(), "no handler for %q", d.EventType)
	return h.Handle(ports.WithDispatch(ctx, fence), ports.Dispatch{
		Delivery: inbox.RestoreDelivery(inbox.Stored{
			ID: d.ID, WorkspaceID: d.Workspace, Provider: provider.MustNew("OUTLINE"), EventType: d.EventType,
			State: inbox.Leased, LeaseEpoch: inbox.Epoch(epoch), LeasedUntil: time.Now().Add(2 * time.Minute),
		}),
		WorkspaceID: d.Workspace,
		Payload:     json.RawMessage(d.Payload),
	})
}

func (d delivery) releaseForRetry(ctx context.Context) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `UPDATE provider_event SET lease_epoch = lease_epoch + 1, attempt = attempt + 1 WHERE id = $1`, d.ID)
	Expect(err).NotTo(HaveOccurred())
}

func (d delivery) steps(ctx context.Context) []string {
	GinkgoHelper()
	return column(ctx, `SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, d.ID)
}

func column(ctx context.Context, sql string, args ...any) []string {
	GinkgoHelper()
	rows, err := pool.Query(ctx, sql, args...)
	Expect(err).NotTo(HaveOccurred())
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	Expect(err).NotTo(HaveOccurred())
	if out == nil {
		out = []string{}
	}
	return out
}

type response struct {
	Status int
	JSON   map[string]any
}

func get(path, token string) response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, server.URL+path, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	r := response{Status: res.StatusCode}
	Expect(json.Unmarshal(raw, &r.JSON)).To(Succeed(), string(raw))
	return r
}
