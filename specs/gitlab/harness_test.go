package gitlab_test

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

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/handlers"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var instanceAdmin = ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}

// faultyStore is the real mirror store with injectable failures, and a count of commit writes
// per SHA so a spec sees a commit written twice even where the table would hide it.
type faultyStore struct {
	handlers.Store
	mu             sync.Mutex
	failCommit     map[string]error
	commitCalls    map[string]int
	failReadiness  error
	readinessCalls int
}

func (f *faultyStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCommit, f.commitCalls = map[string]error{}, map[string]int{}
	f.failReadiness, f.readinessCalls = nil, 0
}

func (f *faultyStore) failReadinessOnce(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failReadiness = err
}

func (f *faultyStore) SetReadiness(ctx context.Context, tx ports.Tx, ws int64, r handlers.Readiness) error {
	f.mu.Lock()
	f.readinessCalls++
	err := f.failReadiness
	f.failReadiness = nil
	f.mu.Unlock()
	if werr := f.Store.SetReadiness(ctx, tx, ws, r); werr != nil {
		return werr
	}
	return err
}

func (f *faultyStore) failCommitOnce(sha string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCommit[sha] = err
}

func (f *faultyStore) InsertCommit(ctx context.Context, tx ports.Tx, ws int64, c handlers.Commit) error {
	f.mu.Lock()
	f.commitCalls[c.SHA]++
	err, fail := f.failCommit[c.SHA]
	delete(f.failCommit, c.SHA)
	f.mu.Unlock()
	// The write happens first, so a failure proves the step's rollback, not a skipped write.
	if werr := f.Store.InsertCommit(ctx, tx, ws, c); werr != nil {
		return werr
	}
	if fail {
		return err
	}
	return nil
}

func (f *faultyStore) commitWrites() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.commitCalls {
		out[k] = v
	}
	return out
}

// fakeReader answers the merge request approvals read and counts the reads.
type fakeReader struct {
	reads     atomic.Int64
	approvals atomic.Int64 // approvals left
}

func (r *fakeReader) reset() { r.reads.Store(0); r.approvals.Store(0) }

func (r *fakeReader) MergeRequestApprovals(context.Context, int64, int) (handlers.Approvals, error) {
	r.reads.Add(1)
	left := int(r.approvals.Load())
	return handlers.Approvals{Approved: left == 0, ApprovalsLeft: left}, nil
}

func newWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	ws, err := svc.CreateWorkspace(ctx, instanceAdmin, slug, slug)
	Expect(err).NotTo(HaveOccurred())
	return ws.ID
}

// newAccount creates an account; role ("ADMIN", "MEMBER" or "") makes it a member of slug.
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

// delivery is one GitLab row of workspace ws, LEASED under epoch 1 as a claim leaves it.
type delivery struct {
	ID        int64
	Workspace int64
	EventType string
	Payload   string
}

func leased(ctx context.Context, ws int64, eventType, subject, payload string) delivery {
	GinkgoHelper()
	// Each row gets a scope of its own, so a spec can hold several LEASED rows of one subject at
	// once (the leased-scope index allows one per scope); the spec itself decides their order.
	key := fmt.Sprintf("d-%d", deliveries.Add(1))
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, state, attempt, lease_epoch, leased_until)
		VALUES ($1, 'GITLAB', $2, $3, $4, $5, $6::jsonb, 'LEASED', 1, 1, now() + interval '2 min')
		RETURNING id`,
		ws, eventType, key, fmt.Sprintf("%d:%s:%s", ws, subject, key), subject, payload).Scan(&id)).To(Succeed())
	return delivery{ID: id, Workspace: ws, EventType: eventType, Payload: payload}
}

// attempt runs the row's handler as the consumer does under the row's current lease epoch.
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
			ID: d.ID, WorkspaceID: d.Workspace, Provider: provider.MustNew("GITLAB"), EventType: d.EventType,
			State: inbox.Leased, LeaseEpoch: inbox.Epoch(epoch), LeasedUntil: time.Now().Add(2 * time.Minute),
		}),
		WorkspaceID: d.Workspace,
		Payload:     json.RawMessage(d.Payload),
	})
}

// releaseForRetry does what a failed attempt and the next claim do to the row: a new lease
// epoch, so the retry's writes are fenced by it.
func (d delivery) releaseForRetry(ctx context.Context) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `UPDATE provider_event SET lease_epoch = lease_epoch + 1, attempt = attempt + 1 WHERE id = $1`, d.ID)
	Expect(err).NotTo(HaveOccurred())
}

func (d delivery) steps(ctx context.Context) []string {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, d.ID)
	Expect(err).NotTo(HaveOccurred())
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	Expect(err).NotTo(HaveOccurred())
	if names == nil {
		names = []string{}
	}
	return names
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

var errInjected = errors.New("injected mirror failure")

// response is one answer of the read API.
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
