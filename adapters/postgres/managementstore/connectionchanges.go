package managementstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// connectionFeed publishes connection.state_changed: the feed and the management API's own
// shaping of a connection (wired by bootstrap). Zero: no publishing.
type connectionFeed struct {
	pub  *changefeed.Store
	view func(ports.StoredConnection) any
}

// PublishChanges makes every committed state change of a connection publish
// connection.state_changed in the transaction that writes it, its data shaped by view (the
// connection as the management API shows it).
func (s *Connections) PublishChanges(pub *changefeed.Store, view func(ports.StoredConnection) any) error {
	if pub == nil || view == nil {
		return errors.New("postgres management: connection changes need the feed and a view")
	}
	s.feed = connectionFeed{pub: pub, view: view}
	return nil
}

// stateChanged is the change of c's new state.
func (s *Connections) stateChanged(c ports.StoredConnection) (change.Change, error) {
	return change.New(change.ConnectionStateChanged, "connection:"+strconv.FormatInt(c.ID, 10), s.feed.view(c))
}

// publishState publishes c's state in tx (the caller calls s.feed.pub.Committed after commit).
func (s *Connections) publishState(ctx context.Context, tx pgx.Tx, c ports.StoredConnection) error {
	ch, err := s.stateChanged(c)
	if err != nil {
		return err
	}
	return s.feed.pub.PublishInTx(ctx, tx, c.WorkspaceID, ch)
}

// PublishConnectionState publishes connection.state_changed for the workspace's connection
// as it stands in tx, an inbox step transaction that has just changed its state (the GitHub
// and Slack lifecycle handlers). No feed wired: nothing. Errors: sqlkit.ErrForeignTx.
func (s *Connections) PublishConnectionState(ctx context.Context, tx ports.Tx, workspaceID, id int64) error {
	if s.feed.pub == nil {
		return nil
	}
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	rows, _ := ptx.Query(ctx, connectionOfWorkspace, workspaceID, id)
	c, err := pgx.CollectExactlyOneRow(rows, s.scan)
	if err != nil {
		return sqlkit.Interpret("read changed connection", err)
	}
	ch, err := s.stateChanged(c)
	if err != nil {
		return err
	}
	return s.feed.pub.Publish(ctx, tx, workspaceID, ch)
}

// createPublishing inserts a connection and publishes its first state (connection.state_changed,
// the connection as the management API answers its creation) in the same transaction, then
// wakes the feed's readers. Every creation publishes: the management API's and the install
// flows' (CreateVerifiedInstallConnection goes through the same CreateConnection).
func (s *Connections) createPublishing(ctx context.Context, args []any) (c ports.StoredConnection, err error) {
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, createConnection, args...)
		if c, err = pgx.CollectExactlyOneRow(rows, s.scan); err != nil {
			return err
		}
		return s.publishState(ctx, tx, c)
	})
	if err != nil {
		return ports.StoredConnection{}, err
	}
	s.feed.pub.Committed()
	return c, nil
}
