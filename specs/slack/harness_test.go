package slack_test

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

	"github.com/hephaestus-dev/hephaestus/adapters/slack/handlers"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var instanceAdmin = ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}

var errInjected = errors.New("injected mirror failure")

// faultyStore is the real Slack store with failures injected once, after the real write, so a
// failure proves the rollback of what was written rather than a write that never happened.
type faultyStore struct {
	handlers.Store
	mu              sync.Mutex
	failEditText    error
	failSetState    error
	insertCalls     int
	editTextCalls   int
	editStampCalls  int
	eraseTeamCalls  int
	connectionCalls int
}

func (f *faultyStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failEditText, f.failSetState = nil, nil
	f.insertCalls, f.editTextCalls, f.editStampCalls, f.eraseTeamCalls, f.connectionCalls = 0, 0, 0, 0, 0
}

func (f *faultyStore) failNextEditText(err error) { f.mu.Lock(); f.failEditText = err; f.mu.Unlock() }
func (f *faultyStore) failNextSetState(err error) { f.mu.Lock(); f.failSetState = err; f.mu.Unlock() }

func (f *faultyStore) calls() (insert, text, stamp int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.insertCalls, f.editTextCalls, f.editStampCalls
}

func (f *faultyStore) InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m handlers.Message) (bool, error) {
	f.mu.Lock()
	f.insertCalls++
	f.mu.Unlock()
	return f.Store.InsertMessage(ctx, tx, ws, m)
}

func (f *faultyStore) EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e handlers.MessageEdit) error {
	f.mu.Lock()
	f.editTextCalls++
	fail := f.failEditText
	f.failEditText = nil
	f.mu.Unlock()
	if err := f.Store.EditMessageText(ctx, tx, ws, e); err != nil {
		return err
	}
	return fail
}

func (f *faultyStore) EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e handlers.MessageEdit) error {
	f.mu.Lock()
	f.editStampCalls++
	f.mu.Unlock()
	return f.Store.EditMessageTimestamp(ctx, tx, ws, e)
}

func (f *faultyStore) SetConnectionState(ctx context.Context, tx ports.Tx, ws, id int64, s connection.State) error {
	f.mu.Lock()
	fail := f.failSetState
	f.failSetState = nil
	f.mu.Unlock()
	if err := f.Store.SetConnectionState(ctx, tx, ws, id, s); err != nil {
		return err
	}
	return fail
}

// fakeNotifier records the Web API calls.
type fakeNotifier struct {
	mu         sync.Mutex
	ephemerals []string // "team channel user"
	homes      []json.RawMessage
}

func (n *fakeNotifier) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ephemerals, n.homes = nil, nil
}

func (n *fakeNotifier) PostEphemeral(_ context.Context, team, channel, user, _ string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ephemerals = append(n.ephemerals, team+" "+channel+" "+user)
	return nil
}

func (n *fakeNotifier) PublishHome(_ context.Context, _, _ string, view json.RawMessage) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.homes = append(n.homes, view)
	return nil
}

func (n *fakeNotifier) sent() ([]string, []json.RawMessage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.ephemerals...), append([]json.RawMessage(nil), n.homes...)
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

// slackConnection stores the workspace's SLACK connection of team in state and returns its id.
func slackConnection(ctx context.Context, ws int64, team, state string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
		VALUES ($1, 'SLACK', 'SLACK', $2, 'https://slack.com', jsonb_build_object('teamId', $3::text), $3)
		RETURNING id`, ws, state, team).Scan(&id)).To(Succeed())
	return id
}

func connectionState(ctx context.Context, id int64) string {
	GinkgoHelper()
	var s string
	Expect(pool.QueryRow(ctx, `SELECT state FROM connection WHERE id = $1`, id).Scan(&s)).To(Succeed())
	return s
}

// registeredChannel stores a channel registry row.
func registeredChannel(ctx context.Context, ws int64, team, id, name, consent string) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `
		INSERT INTO slack_channel (workspace_id, team_id, id, name, consent_state, source_event_id)
		VALUES ($1, $2, $3, $4, $5, 0)`, ws, team, id, name, consent)
	Expect(err).NotTo(HaveOccurred())
}

var deliveries atomic.Int64

type delivery struct {
	ID        int64
	Workspace int64
	EventType string
	Payload   string
}

// callback wraps event (a JSON object) in the Events API envelope of team; the app's bot user
// is UBOT.
func callback(team, event string) string {
	return fmt.Sprintf(`{"type":"event_callback","team_id":%q,"event_id":"Ev%d",
		"authorizations":[{"team_id":%q,"user_id":"UBOT","is_bot":true}],"event":%s}`,
		team, deliveries.Load()+1, team, event)
}

// leased stores a Slack row of ws, LEASED under epoch 1 as a claim leaves it.
func leased(ctx context.Context, ws int64, eventType, subject, payload string) delivery {
	GinkgoHelper()
	// Each row gets a scope of its own, so a spec can hold several LEASED rows of one subject at
	// once (the leased-scope index allows one per scope); the spec itself decides their order.
	key := fmt.Sprintf("d-%d", deliveries.Add(1))
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, state, attempt, lease_epoch, leased_until)
		VALUES ($1, 'SLACK', $2, $3, $4, $5, $6::jsonb, 'LEASED', 1, 1, now() + interval '2 min')
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
			ID: d.ID, WorkspaceID: d.Workspace, Provider: provider.MustNew("SLACK"), EventType: d.EventType,
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
