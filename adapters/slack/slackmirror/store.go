// Package slackmirror is the PostgreSQL store of the Slack mirror (migration 00006): the channel
// registry and its audit, channel messages, mentor turns, and the team's connection transition
// and erasure. Writes run on the transaction of the DeliveryInbox step that claims them
// (sqlkit.PgxTx); reads of App Home and the read API use the store's pool. Every
// statement binds the workspace.
package slackmirror

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ slackmodel.Store = (*Store)(nil)

// Store is the Slack mirror store.
type Store struct {
	// PersonData is the personal-data map erasure runs (persondata.go).
	mirrorkit.PersonData
	pool *pgxpool.Pool
	feed mirrorkit.Feed[Views] // the change feed's publisher (changes.go); zero: no publishing
	// connections publishes connection.state_changed; zero: no publishing.
	connections mirrorkit.ConnectionStates
}

// New makes the store; pool serves the reads.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("slack mirror store needs a database pool")
	}
	return &Store{PersonData: mirrorkit.NewPersonData(slack.Provider, slackPersonData, personArgs), pool: pool}, nil
}

func txOf(tx ports.Tx) (pgx.Tx, error) { return sqlkit.PgxTx(tx) }

// exec runs one statement in the step's transaction and returns how many rows it affected.
var exec = mirrorkit.Exec

// queryRow is a querier's QueryRow: a transaction's or the pool's.
type queryRow interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanChannel(ctx context.Context, q queryRow, op, sql string, ws int64, id string) (slackmodel.Channel, bool, error) {
	var (
		c     slackmodel.Channel
		state string
	)
	err := q.QueryRow(ctx, sql, ws, id).Scan(&c.TeamID, &c.ID, &c.Name, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return slackmodel.Channel{}, false, nil
	}
	if err != nil {
		return slackmodel.Channel{}, false, sqlkit.Interpret(op, err)
	}
	if c.Consent, err = slackmodel.ParseConsentState(state); err != nil {
		return slackmodel.Channel{}, false, err
	}
	return c, true, nil
}

func (s *Store) ChannelConsent(ctx context.Context, tx ports.Tx, ws int64, channelID string) (slackmodel.Channel, bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return slackmodel.Channel{}, false, err
	}
	return scanChannel(ctx, ptx, "read slack channel consent", channelConsent, ws, channelID)
}

func (s *Store) LockChannel(ctx context.Context, tx ports.Tx, ws int64, channelID string) (slackmodel.Channel, bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return slackmodel.Channel{}, false, err
	}
	return scanChannel(ctx, ptx, "lock slack channel", lockChannel, ws, channelID)
}

func (s *Store) SaveChannel(ctx context.Context, tx ports.Tx, ws int64, c slackmodel.Channel, eventID int64) error {
	if s.feed.On() {
		return s.saveChannelPublishing(ctx, tx, ws, c, eventID)
	}
	_, err := exec(ctx, tx, "save slack channel", saveChannel, ws, c.TeamID, c.ID, c.Name, c.Consent.String(), eventID)
	return err
}

func (s *Store) AppendAudit(ctx context.Context, tx ports.Tx, ws int64, a slackmodel.ChannelAudit) error {
	_, err := exec(ctx, tx, "append slack channel audit", appendAudit,
		ws, a.TeamID, a.ChannelID, string(a.Action), a.Consent.String(), a.EventID)
	return err
}

func (s *Store) InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m slackmodel.Message) (bool, error) {
	n, err := exec(ctx, tx, "insert slack message", insertMessage,
		ws, m.TeamID, m.ChannelID, m.TS, m.ThreadTS, m.UserID, m.Text, m.PostedAt, m.EventID)
	if err == nil && n == 1 && s.feed.On() {
		err = s.publishMessage(ctx, tx, ws, MessagePosted, m.ChannelID, m.TS)
	}
	return n == 1, err
}

func (s *Store) EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error {
	_, err := exec(ctx, tx, "edit slack message text", editMessageText, ws, e.ChannelID, e.TS, e.Text, e.EditedTS, e.EventID)
	return err
}

func (s *Store) EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error {
	n, err := exec(ctx, tx, "edit slack message timestamp", editMessageTimestamp, ws, e.ChannelID, e.TS, e.EditedTS, e.EventID)
	if err == nil && n == 1 && s.feed.On() {
		err = s.publishMessage(ctx, tx, ws, MessageEdited, e.ChannelID, e.TS)
	}
	return err
}

func (s *Store) DeleteMessage(ctx context.Context, tx ports.Tx, ws int64, channelID, ts string, eventID int64) error {
	if s.feed.On() {
		return s.deleteMessagePublishing(ctx, tx, ws, channelID, ts, eventID)
	}
	_, err := exec(ctx, tx, "delete slack message", deleteMessage, ws, channelID, ts, eventID)
	return err
}

func (s *Store) TombstoneMessage(ctx context.Context, tx ports.Tx, ws int64, d slackmodel.MessageDelete) error {
	args := []any{ws, d.TeamID, d.ChannelID, d.TS, d.PostedAt, d.EventID}
	if s.feed.On() {
		return s.tombstoneMessagePublishing(ctx, tx, ws, d, args)
	}
	_, err := exec(ctx, tx, "tombstone slack message", tombstoneMessage, args...)
	return err
}

func (s *Store) EraseChannelMessages(ctx context.Context, tx ports.Tx, ws int64, channelID string) (int64, error) {
	if s.feed.On() {
		return s.eraseChannelMessagesPublishing(ctx, tx, ws, channelID)
	}
	return exec(ctx, tx, "erase slack channel messages", eraseChannelMessages, ws, channelID)
}

func (s *Store) LockTeamConnections(ctx context.Context, tx ports.Tx, ws int64, teamID string) ([]slackmodel.TeamConnection, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return nil, err
	}
	rows, err := ptx.Query(ctx, lockTeamConnections, ws, teamID)
	if err != nil {
		return nil, sqlkit.Interpret("lock slack connections", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slackmodel.TeamConnection, error) {
		var (
			c     slackmodel.TeamConnection
			state string
		)
		if err := r.Scan(&c.ID, &state); err != nil {
			return c, err
		}
		c.State, err = connection.ParseState(state)
		return c, err
	})
	if err != nil {
		return nil, sqlkit.Interpret("lock slack connections", err)
	}
	return out, nil
}

func (s *Store) TeamConnectionActive(ctx context.Context, tx ports.Tx, ws int64, teamID string) (bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return false, err
	}
	rows, err := ptx.Query(ctx, teamConnectionStates, ws, teamID)
	if err != nil {
		return false, sqlkit.Interpret("read slack connection state", err)
	}
	states, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, sqlkit.Interpret("read slack connection state", err)
	}
	for _, st := range states {
		if st == connection.Active.String() {
			return true, nil
		}
	}
	return false, nil
}

func (s *Store) SetConnectionState(ctx context.Context, tx ports.Tx, ws, connectionID int64, st connection.State) error {
	n, err := exec(ctx, tx, "set slack connection state", setConnectionState, ws, connectionID, st.String())
	if err == nil && n == 0 {
		return ports.ErrNotFound
	}
	if err != nil {
		return err
	}
	return s.connections.Changed(ctx, tx, ws, connectionID)
}

// PublishConnectionStates makes SetConnectionState publish through p.
func (s *Store) PublishConnectionStates(p mirrorkit.ConnectionStatePublisher) error {
	return s.connections.Set(p)
}

func (s *Store) EraseTeam(ctx context.Context, tx ports.Tx, ws int64, teamID string) error {
	// The registry rows first: a message step and a backfill page lock the channel's row before
	// its messages (and a page before its job), so erasing in that order cannot deadlock them.
	if s.feed.On() {
		if err := s.eraseTeamChannelsPublishing(ctx, tx, ws, teamID); err != nil {
			return err
		}
		// The feed's copies of the team's messages go with them.
		ptx, err := txOf(tx)
		if err != nil {
			return err
		}
		rows, _ := ptx.Query(ctx, teamMessageChannels, ws, teamID)
		channels, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return sqlkit.Interpret("read slack team channels", err)
		}
		if err := s.removeMessageChanges(ctx, tx, ws, channels); err != nil {
			return err
		}
	} else if _, err := exec(ctx, tx, "erase slack team data", eraseTeamChannels, ws, teamID); err != nil {
		return err
	}
	for _, q := range []string{eraseTeamMessages, eraseTeamTurns} {
		if _, err := exec(ctx, tx, "erase slack team data", q, ws, teamID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) SubmitTurn(ctx context.Context, tx ports.Tx, ws int64, t slackmodel.Turn) (bool, error) {
	n, err := exec(ctx, tx, "submit slack mentor turn", submitTurn,
		ws, t.TeamID, t.RequestID, t.ChannelID, t.UserID, t.TS, t.ThreadTS, t.Text, t.EventID)
	return n == 1, err
}

func (s *Store) EditTurn(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.TurnEdit) error {
	_, err := exec(ctx, tx, "edit slack mentor turn", editTurn, ws, e.TeamID, e.RequestID, e.Text, e.EditedTS, e.EventID)
	return err
}

func (s *Store) DeleteTurn(ctx context.Context, tx ports.Tx, ws int64, teamID, requestID string, eventID int64) error {
	_, err := exec(ctx, tx, "delete slack mentor turn", deleteTurn, ws, teamID, requestID, eventID)
	return err
}

func (s *Store) StopSession(ctx context.Context, tx ports.Tx, ws int64, st slackmodel.SessionStop) (int64, error) {
	return exec(ctx, tx, "stop slack mentor session", stopSession, ws, st.TeamID, st.ChannelID, st.ThreadTS, st.EventID)
}

// Channel reads a registry row without a lock. Errors: database failures.
func (s *Store) Channel(ctx context.Context, ws int64, channelID string) (slackmodel.Channel, bool, error) {
	return scanChannel(ctx, s.pool, "read slack channel", readChannel, ws, channelID)
}

// Home summarises the team's mirror for one user. Errors: database failures.
func (s *Store) Home(ctx context.Context, ws int64, teamID, userID string) (slackmodel.HomeSummary, error) {
	var h slackmodel.HomeSummary
	if err := s.pool.QueryRow(ctx, homeSummary, ws, teamID, userID).Scan(&h.MirroredChannels, &h.OpenTurns); err != nil {
		return h, sqlkit.Interpret("read slack home", err)
	}
	return h, nil
}

// ListChannels pages the workspace's channel registry by name. Errors: database failures.
func (s *Store) ListChannels(ctx context.Context, ws int64, page ports.PageRequest) ([]slackmodel.Channel, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, countChannels, ws).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count slack channels", err)
	}
	rows, err := s.pool.Query(ctx, listChannels, ws, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list slack channels", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slackmodel.Channel, error) {
		var (
			c     slackmodel.Channel
			state string
		)
		if err := r.Scan(&c.TeamID, &c.ID, &c.Name, &state); err != nil {
			return c, err
		}
		c.Consent, err = slackmodel.ParseConsentState(state)
		return c, err
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list slack channels", err)
	}
	return out, total, nil
}

// ListMessages pages a registered channel's messages, newest first, without tombstones.
// Errors: ports.ErrNotFound when the workspace has no such channel; database failures.
func (s *Store) ListMessages(ctx context.Context, ws int64, channelID string, page ports.PageRequest) ([]slackmodel.MessageView, int, error) {
	if _, found, err := s.Channel(ctx, ws, channelID); err != nil {
		return nil, 0, err
	} else if !found {
		return nil, 0, ports.ErrNotFound
	}
	var total int
	if err := s.pool.QueryRow(ctx, countMessages, ws, channelID).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count slack messages", err)
	}
	rows, err := s.pool.Query(ctx, listMessages, ws, channelID, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list slack messages", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slackmodel.MessageView, error) {
		var m slackmodel.MessageView
		err := r.Scan(&m.TeamID, &m.ChannelID, &m.TS, &m.ThreadTS, &m.UserID, &m.Text, &m.PostedAt, &m.EditedTS, &m.EventID)
		return m, err
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list slack messages", err)
	}
	return out, total, nil
}
