// Package changefeed is the PostgreSQL change feed (migrations/00019_change_feed.sql): the
// publisher the mirror stores call inside their write transaction, the feed read with its
// commit-ordered visibility, and retention.
//
// Order. Each change carries the id of the transaction that wrote it (xid8, assigned at that
// transaction's first write) and its own identity id; the feed is ordered by (xid, id) and a
// read hands out only changes whose xid is below its watermark: the oldest transaction of this
// database still in flight when the read began (readSettledWatermark). So:
//
//   - a change is handed out only after its transaction committed, and all changes of one
//     transaction are handed out together and in the order it published them;
//   - no gaps: once a cursor is handed out, every change that commits afterwards sorts after
//     it (its transaction was still in flight, so its xid is at or above the watermark the cursor
//     came from, or it had not written yet and gets a larger xid);
//   - commit order in the sense a consumer needs: when a transaction committed before another
//     one made its first write, all of its changes come first. Two transactions that overlap
//     come in the order of their first writes, not of their COMMITs (a delivery's step
//     transaction writes its step row first).
//
// The price: while a transaction of this database that has an xid stays open, the feed hands
// out nothing newer than it (it waits, it never skips). Long write transactions delay the feed;
// transactions of other databases of the cluster do not (a cluster-wide xmin would let any
// open transaction anywhere stall every workspace's feed). The watermark reads other sessions'
// backend_xid from pg_stat_activity, which PostgreSQL shows for sessions of the same role (or to
// a role with pg_read_all_stats): every writer of workspace_change is this service's role.
package changefeed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var (
	_ ports.ChangePublisher      = (*Store)(nil)
	_ ports.ChangeFeed           = (*Store)(nil)
	_ ports.ChangeRetentionStore = (*Store)(nil)
)

// Store is the feed on a pool shared with the other adapters.
type Store struct {
	pool      *pgxpool.Pool
	committed func()
}

// New makes the store. committed (may be nil) is called after every transaction that
// published a change commits, on the committing goroutine: the in-process wake of this
// server's waiting readers.
func New(pool *pgxpool.Pool, committed func()) (*Store, error) {
	if pool == nil {
		return nil, errors.New("change feed: nil pool")
	}
	return &Store{pool: pool, committed: committed}, nil
}

// Publish implements ports.ChangePublisher. Errors: sqlkit.ErrForeignTx.
func (s *Store) Publish(ctx context.Context, tx ports.Tx, workspaceID int64, c change.Change) error {
	if c.Type().IsZero() {
		return fmt.Errorf("publish change: %w", change.ErrInvalidChange)
	}
	// In a fenced transaction of the inbox the insert travels with the COMMIT: a
	// step's publications cost no round trip of their own. Nothing in the transaction reads
	// workspace_change after publishing.
	if !sqlkit.ExecAtCommit(tx, "publish change", publishChange, workspaceID, c.Type().String(), c.Subject(), c.Data()) {
		ptx, err := sqlkit.PgxTx(tx)
		if err != nil {
			return err
		}
		if err := s.PublishInTx(ctx, ptx, workspaceID, c); err != nil {
			return err
		}
	}
	if s.committed != nil {
		return sqlkit.AfterCommit(tx, s.committed)
	}
	return nil
}

// PublishInTx publishes c in a plain pgx transaction of another adapter (the same statement as
// Publish). The caller owns the transaction, so it calls Committed after it commits.
func (s *Store) PublishInTx(ctx context.Context, tx pgx.Tx, workspaceID int64, c change.Change) error {
	if c.Type().IsZero() {
		return fmt.Errorf("publish change: %w", change.ErrInvalidChange)
	}
	if _, err := tx.Exec(ctx, publishChange, workspaceID, c.Type().String(), c.Subject(), c.Data()); err != nil {
		return sqlkit.Interpret("publish change", err)
	}
	return nil
}

// Committed is the in-process wake after a transaction that published through PublishInTx
// committed.
func (s *Store) Committed() {
	if s.committed != nil {
		s.committed()
	}
}

// readOnlySnapshot reads the horizon and the page in one snapshot, so retention cannot delete
// between the expiry check and the rows.
var readOnlySnapshot = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// Changes implements ports.ChangeFeed.
func (s *Store) Changes(ctx context.Context, workspaceID int64, after change.Cursor, limit int) ([]change.Stored, error) {
	out, _, err := s.changes(ctx, workspaceID, nil, after, limit)
	return out, err
}

// ChangesFor implements ports.ChangeFeed.
func (s *Store) ChangesFor(ctx context.Context, r ports.FeedReader, after change.Cursor, limit int) ([]change.Stored, ports.FeedReaderState, error) {
	return s.changes(ctx, r.WorkspaceID, &r, after, limit)
}

// changes reads a page, and with r its reader's state in the page's snapshot.
//
// Why the reader's state is read in the page's snapshot, and not before it or from a cache:
// a revocation (a token deleted, an account disabled, a member row deleted) commits at some
// moment R. If R is visible in this snapshot, the state shows it and the caller hands out
// nothing. If it is not, R committed after the snapshot was taken, and every change of the
// page, which the same snapshot shows, committed before it. Either way nothing committed after
// R is handed out. A state read before the page (or cached) leaves a window: the revocation and
// a change can both commit between the state's read and the page's, and the change would go
// to a caller who no longer has access. Expiry is a time, not a commit: the state compares it
// with the database's clock when it is read, after the snapshot was taken, so every change of
// the page committed before that clock.
func (s *Store) changes(ctx context.Context, workspaceID int64, r *ports.FeedReader, after change.Cursor, limit int) ([]change.Stored, ports.FeedReaderState, error) {
	return s.readSettled(ctx, r, func(ctx context.Context, tx pgx.Tx, watermark string) ([]change.Stored, error) {
		var (
			hx  string
			hid int64
		)
		err := tx.QueryRow(ctx, readFeedHorizon, workspaceID).Scan(&hx, &hid)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, sqlkit.Interpret("read change horizon", err)
		default:
			hxid, perr := strconv.ParseUint(hx, 10, 64)
			if perr != nil {
				return nil, fmt.Errorf("read change horizon: %w", perr)
			}
			// The zero cursor asks for the oldest change kept, whatever retention deleted.
			if !after.IsZero() && after.Before(change.RestoreCursor(hxid, hid)) {
				return nil, change.ErrCursorExpired
			}
		}
		rows, _ := tx.Query(ctx, readSettledChangesAfter, workspaceID, strconv.FormatUint(after.Xid(), 10), after.ID(), limit, watermark)
		out, err := pgx.CollectRows(rows, scanChange)
		return out, sqlkit.Interpret("read changes", err)
	})
}

// readSettled runs read in one read-only snapshot taken after the settled watermark was read,
// in a statement of its own (readSettledWatermark says why the snapshot must come after it),
// and with r reads its reader's state first in that same snapshot (Store.changes says why the
// same).
func (s *Store) readSettled(ctx context.Context, r *ports.FeedReader,
	read func(ctx context.Context, tx pgx.Tx, watermark string) ([]change.Stored, error),
) ([]change.Stored, ports.FeedReaderState, error) {
	var watermark string
	if err := s.pool.QueryRow(ctx, readSettledWatermark).Scan(&watermark); err != nil {
		return nil, ports.FeedReaderState{}, sqlkit.Interpret("read change watermark", err)
	}
	var (
		out   []change.Stored
		state ports.FeedReaderState
	)
	err := sqlkit.WithTx(ctx, s.pool, readOnlySnapshot, func(ctx context.Context, tx pgx.Tx) error {
		if r != nil {
			var err error
			if state, err = readReader(ctx, tx, *r); err != nil {
				return err
			}
		}
		var err error
		out, err = read(ctx, tx, watermark)
		return err
	})
	return out, state, err
}

// readReader reads r's state in tx (readFeedReader).
func readReader(ctx context.Context, tx pgx.Tx, r ports.FeedReader) (ports.FeedReaderState, error) {
	var (
		st   ports.FeedReaderState
		role string
	)
	p := r.Principal
	err := tx.QueryRow(ctx, readFeedReader, r.WorkspaceID, p.AccountID, p.TokenID, p.IsAdminToken(), p.InstanceAdmin).
		Scan(&st.Authenticated, &st.WorkspaceExists, &role)
	if err != nil {
		return st, sqlkit.Interpret("read change feed reader", err)
	}
	if role != "" {
		if st.Role, err = workspace.ParseRole(role); err != nil {
			return st, fmt.Errorf("read change feed reader: %w", err)
		}
	}
	return st, nil
}

// DeleteChangesBefore implements ports.ChangeRetentionStore.
func (s *Store) DeleteChangesBefore(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, deleteChangesBefore, cutoff, batch).Scan(&n)
	return n, sqlkit.Interpret("delete expired changes", err)
}

// CountChanges implements ports.ChangeRetentionStore.
func (s *Store) CountChanges(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, countChanges).Scan(&n)
	return n, sqlkit.Interpret("count changes", err)
}

// scanChange reads one change row as the feed's reads select it: id, transaction id (as
// text), type, subject, occurred at and data.
func scanChange(r pgx.CollectableRow) (change.Stored, error) {
	var (
		c   change.Stored
		xid string
	)
	if err := r.Scan(&c.ID, &xid, &c.Type, &c.Subject, &c.OccurredAt, &c.Data); err != nil {
		return c, err
	}
	x, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return c, err
	}
	c.Cursor = change.RestoreCursor(x, c.ID)
	c.OccurredAt = c.OccurredAt.UTC()
	return c, nil
}
