package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var errInjected = errors.New("injected mirror failure")

// faultyStore is the real Slack store with failures injected once, after the real write, so a
// failure proves the rollback of what was written rather than a write that never happened.
type faultyStore struct {
	slackmodel.Store
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

func (f *faultyStore) InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m slackmodel.Message) (bool, error) {
	f.mu.Lock()
	f.insertCalls++
	f.mu.Unlock()
	return f.Store.InsertMessage(ctx, tx, ws, m)
}

func (f *faultyStore) EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error {
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

func (f *faultyStore) EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error {
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

func (n *fakeNotifier) PostEphemeral(_ context.Context, _ int64, team, channel, user, _ string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ephemerals = append(n.ephemerals, team+" "+channel+" "+user)
	return nil
}

func (n *fakeNotifier) PublishHome(_ context.Context, _ int64, _, _ string, view json.RawMessage) error {
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

// slackConnection stores the workspace's SLACK connection of team in state and returns its id.
func slackConnection(ctx context.Context, ws int64, team, state string) int64 {
	GinkgoHelper()
	var id int64
	Expect(harness.Pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
		VALUES ($1, 'SLACK', 'SLACK', $2, 'https://slack.com', jsonb_build_object('teamId', $3::text), $3)
		RETURNING id`, ws, state, team).Scan(&id)).To(Succeed())
	return id
}

func connectionState(ctx context.Context, id int64) string {
	GinkgoHelper()
	var s string
	Expect(harness.Pool.QueryRow(ctx, `SELECT state FROM connection WHERE id = $1`, id).Scan(&s)).To(Succeed())
	return s
}

// registeredChannel stores a channel harness.Registry row.
func registeredChannel(ctx context.Context, ws int64, team, id, name, consent string) {
	GinkgoHelper()
	_, err := harness.Pool.Exec(ctx, `
		INSERT INTO slack_channel (workspace_id, team_id, id, name, consent_state, source_event_id)
		VALUES ($1, $2, $3, $4, $5, 0)`, ws, team, id, name, consent)
	Expect(err).NotTo(HaveOccurred())
}

// envelopes numbers the Events API envelopes' event ids.
var envelopes atomic.Int64

// callback wraps event (a JSON object) in the Events API envelope of team; the app's bot user
// is UBOT.
func callback(team, event string) string {
	return fmt.Sprintf(`{"type":"event_callback","team_id":%q,"event_id":"Ev%d",
		"authorizations":[{"team_id":%q,"user_id":"UBOT","is_bot":true}],"event":%s}`,
		team, envelopes.Add(1), team, event)
}
