package erasurestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
)

// cleanupTimeout bounds the lowering of the fence after a failed or cancelled pass.
const cleanupTimeout = 5 * time.Second

// Pass implements ports.ErasureStore.
func (s *Store) Pass(ctx context.Context, erasureID int64, store erasure.Store, pass int) (rc erasure.Receipt, err error) {
	if pass < 1 {
		return erasure.Receipt{}, fmt.Errorf("erasure pass: pass number %d", pass)
	}
	if store.IsZero() {
		return erasure.Receipt{}, errors.New("erasure pass: no store")
	}
	// The installation inbox is the last store of every pass: its transaction lowers the
	// fence that the pass's first store raised.
	last := store == erasure.InstallationInbox

	// The boundary comes first: every delivery stored before the pass began has an id at or
	// below it; one admitted while the pass waits for the fence gets a higher id and is left
	// for the next pass. (A mirror store records it too: the deliveries stored when it ran.)
	rc = erasure.Receipt{Store: store, Pass: pass}
	if err := s.pool.QueryRow(ctx, passBoundary).Scan(&rc.Boundary); err != nil {
		return erasure.Receipt{}, sqlkit.Interpret("read erasure boundary", err)
	}

	// (a) Raise the flag in a transaction of its own, so fenced writes see it at once. For a
	// later store of the pass it is raised already (a no-op write of the same values); after a
	// restart mid-pass this raises it again before the pass goes on.
	if _, err := s.pool.Exec(ctx, raiseFence, erasureID); err != nil {
		return erasure.Receipt{}, sqlkit.Interpret("raise erasure fence", err)
	}
	defer func() {
		if err != nil {
			// The erasure rolled back and with it any lowering: lower the flag on its own so
			// handlers are not held off until the next pass. This also runs when ctx was
			// cancelled (a stopping server), hence a context that survives it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			_, _ = s.pool.Exec(cctx, lowerFence, erasureID)
		}
	}()

	// (b) Wait for the steps that began before the flag, erase, record (and lower, at the
	// end of the pass): one commit.
	err = sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var inProgress bool
		if err := tx.QueryRow(ctx, lockFence).Scan(&inProgress); err != nil {
			return sqlkit.Interpret("lock erasure fence", err)
		}
		// From here on the pass waits only for short row locks (a claim, a renewal, an outcome);
		// a table lock queued in between (a migration's ALTER, a TRUNCATE) would otherwise wait
		// for this runner's held request while the pass waits for it, a cycle PostgreSQL cannot
		// see because it runs through this process. The pass fails instead and ends FAILED.
		if _, err := tx.Exec(ctx, setPassLockTimeout); err != nil {
			return sqlkit.Interpret("bound erasure lock waits", err)
		}
		n, failed, err := s.erase(ctx, tx, erasureID, store, rc.Boundary)
		if err != nil {
			return err
		}
		rc.Deleted, rc.FailedRows = n, failed
		if failed == nil {
			failed = []int64{}
		}
		if err := tx.QueryRow(ctx, insertReceipt, erasureID, store.String(), pass, rc.Deleted, rc.Boundary, failed).Scan(&rc.At); err != nil {
			return sqlkit.Interpret("record erasure receipt", err)
		}
		if !last {
			return nil
		}
		_, err = tx.Exec(ctx, lowerFence, erasureID)
		return sqlkit.Interpret("lower erasure fence", err)
	})
	if err != nil {
		return erasure.Receipt{}, err
	}
	return rc, nil
}

// erase runs one store's erasure inside the pass transaction tx, which holds the fence: the
// rows it deleted or rewrote, and the inbox rows it could not rewrite.
func (s *Store) erase(ctx context.Context, tx pgx.Tx, erasureID int64, store erasure.Store, boundary int64) (int64, []int64, error) {
	scope, err := scanScope(tx.QueryRow(ctx, selectScope, erasureID))
	if err != nil {
		return 0, nil, sqlkit.Interpret(fmt.Sprintf("read scope of erasure %d", erasureID), err)
	}
	if store.IsInbox() {
		m, err := s.matcherOf(scope.Provider())
		if err != nil {
			return 0, nil, err
		}
		deleteSQL := m.deleteWorkspace
		if store == erasure.InstallationInbox {
			deleteSQL = m.deleteInstallation
		}
		tag, err := tx.Exec(ctx, deleteSQL, erasureID, boundary)
		if err != nil {
			return 0, nil, sqlkit.Interpret("delete matching deliveries", err)
		}
		rw, err := newPayloadRewrite(s.fields[scope.Provider().String()].Text, scope)
		if err != nil {
			return 0, nil, err
		}
		n, failed, err := rewrite(ctx, tx, rw, erasureID, store, boundary)
		if err != nil {
			return 0, nil, err
		}
		return tag.RowsAffected() + n, failed, nil
	}
	if store != erasure.MirrorStore(scope.Provider()) && store != erasure.ChangeFeed {
		return 0, nil, fmt.Errorf("erasure pass: store %q is not a store of a %s erasure", store, scope.Provider())
	}
	ws, err := workspacesOf(ctx, tx, scope)
	if err != nil {
		return 0, nil, err
	}
	if store == erasure.ChangeFeed {
		m, err := s.matcherOf(scope.Provider())
		if err != nil {
			return 0, nil, err
		}
		tag, err := tx.Exec(ctx, m.scrubFeed, erasureID, ws, feedTypePrefix(scope.Provider()))
		if err != nil {
			return 0, nil, sqlkit.Interpret("scrub the change feed", err)
		}
		return tag.RowsAffected(), nil, nil
	}
	var n int64
	for _, mirror := range s.mirrors[scope.Provider().String()] {
		c, err := mirror.ErasePerson(ctx, sqlkit.Adopt(tx), ws, scope)
		if err != nil {
			return 0, nil, fmt.Errorf("erase %s: %w", store, err)
		}
		n += c
	}
	return n, nil, nil
}

// LowerStaleFence implements ports.ErasureStore.
func (s *Store) LowerStaleFence(ctx context.Context) (bool, error) {
	tag, err := s.pool.Exec(ctx, lowerStaleFence)
	if err != nil {
		return false, sqlkit.Interpret("lower stale erasure fence", err)
	}
	return tag.RowsAffected() > 0, nil
}
