// Package syncjobs is the PostgreSQL store of sync jobs (migrations/00026_sync_job.sql): the
// claim, lease and page commit of application/backfill's runner, and the progress and restart
// of the sync API. A page commits in one transaction with its cursor and counters, after a
// fence on the job's row (the lease's owner and epoch), through the provider's mirror store,
// which receives the transaction as a ports.Tx (sqlkit.Adopt) exactly as it receives a
// handler step's.
package syncjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var (
	_ ports.SyncJobStore      = (*Store)(nil)
	_ ports.SyncProgressStore = (*Store)(nil)
)

// ReasonConnectionNotActive is the 409 of a restart of a connection that is not ACTIVE.
const ReasonConnectionNotActive = "connection-not-active"

// Config configures the store.
type Config struct {
	// Clock, when set, is the "now" of the lease statements (claim, renew, page commit, failure,
	// release); nil in production, so the database clock decides, as the inbox store's.
	Clock ports.Clock
}

// Store is the sync job store on the main pool.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
}

// New makes the store on pool.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("sync jobs: nil pool")
	}
	return &Store{pool: pool, cfg: cfg}, nil
}

// now is the "now" parameter: nil (SQL NULL, the database clock) unless a Clock is set.
func (s *Store) now() *time.Time { return sqlkit.NowParam(s.cfg.Clock) }

func micros(d time.Duration) int64 { return d.Microseconds() }

// ClaimSyncJob implements ports.SyncJobStore.
func (s *Store) ClaimSyncJob(ctx context.Context, providers []string, owner string, lease time.Duration) (ports.SyncJob, ports.SyncLease, bool, error) {
	var (
		j          ports.SyncJob
		prov, kind string
		epoch      int64
	)
	err := s.pool.QueryRow(ctx, claimDueSyncJob, providers, owner, micros(lease), s.now()).Scan(
		&j.ID, &j.WorkspaceID, &j.ConnectionID, &prov, &kind, &j.ResourceType, &j.ResourceID,
		&j.Cursor, &j.Attempt, &epoch, &j.ConnectionKind, &j.SourceKey, &j.ResourceName)
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.SyncJob{}, ports.SyncLease{}, false, nil
	}
	if err != nil {
		return ports.SyncJob{}, ports.SyncLease{}, false, sqlkit.Interpret("claim sync job", err)
	}
	j.Provider = provider.Restore(prov)
	if j.Kind, err = syncjob.ParseKind(kind); err != nil {
		return ports.SyncJob{}, ports.SyncLease{}, false, err
	}
	return j, ports.SyncLease{JobID: j.ID, Owner: owner, Epoch: epoch}, true, nil
}

// RenewSyncLease implements ports.SyncJobStore.
func (s *Store) RenewSyncLease(ctx context.Context, l ports.SyncLease, lease time.Duration) error {
	return held(s.pool.QueryRow(ctx, renewSyncLease, l.JobID, l.Owner, l.Epoch, micros(lease), s.now()), "renew sync lease")
}

// held reads the id a lease-fenced statement returned: no row is a lost lease.
func held(row pgx.Row, op string) error {
	var id int64
	err := row.Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, inbox.ErrLeaseLost)
	}
	return sqlkit.Interpret(op, err)
}

// CommitSyncPage implements ports.SyncJobStore. The fence comes first (after the source's own
// Lock, which takes the provider rows its writers lock before the job, so both lock in one
// order): the job's row lock, taken only under this lease, is held to the commit, so the page's
// writes, its cursor and its counters commit together exactly when the lease was still this
// server's at the commit.
func (s *Store) CommitSyncPage(ctx context.Context, l ports.SyncLease, p ports.SyncPage, lease time.Duration) error {
	var adopted ports.Tx
	err := sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if p.Lock != nil || p.Write != nil {
			adopted = sqlkit.Adopt(tx)
		}
		if p.Lock != nil {
			if err := p.Lock(ctx, adopted); err != nil {
				return fmt.Errorf("lock sync page: %w", sqlkit.Interpret("lock sync page", err))
			}
		}
		if err := held(tx.QueryRow(ctx, lockHeldSyncJob, l.JobID, l.Owner, l.Epoch), "fence sync page"); err != nil {
			return err
		}
		if err := copyFence(ctx, tx); err != nil {
			return err
		}
		if p.Write != nil {
			if err := p.Write(ctx, adopted); err != nil {
				return fmt.Errorf("write sync page: %w", sqlkit.Interpret("write sync page", err))
			}
		}
		_, err := tx.Exec(ctx, commitSyncPage, l.JobID, p.Next, p.Items, p.Done, micros(lease), s.now())
		return sqlkit.Interpret("commit sync page", err)
	})
	if err == nil && adopted != nil {
		sqlkit.Committed(adopted)
	}
	return err
}

// copyFence refuses a page while person erasure runs (inbox.ErrBusy: contention, the page is
// tried again shortly without using its budget), as the DeliveryInbox refuses a handler's write,
// so no page writes a person back into the mirror between erasure's mirror and inbox stores.
func copyFence(ctx context.Context, tx pgx.Tx) error {
	var inProgress bool
	err := tx.QueryRow(ctx, takeCopyFence).Scan(&inProgress)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && inProgress) {
		return fmt.Errorf("sync page during person erasure: %w", inbox.ErrBusy)
	}
	return sqlkit.Interpret("take erasure copy fence", err)
}

// FailSyncPage implements ports.SyncJobStore.
func (s *Store) FailSyncPage(ctx context.Context, l ports.SyncLease, d syncjob.Decision) error {
	var due *time.Time
	if !d.Final {
		due = &d.DueAt
	}
	return held(s.pool.QueryRow(ctx, failSyncPage, l.JobID, l.Owner, l.Epoch, d.Reason, due, d.Counts, d.Final, s.now()),
		"record failed sync page")
}

// ReleaseSyncLease implements ports.SyncJobStore.
func (s *Store) ReleaseSyncLease(ctx context.Context, l ports.SyncLease) error {
	_, err := s.pool.Exec(ctx, releaseSyncLease, l.JobID, l.Owner, l.Epoch, s.now())
	return sqlkit.Interpret("release sync lease", err)
}

// YieldSyncJob implements ports.SyncJobStore.
func (s *Store) YieldSyncJob(ctx context.Context, l ports.SyncLease) (bool, error) {
	tag, err := s.pool.Exec(ctx, yieldSyncJob, l.JobID, l.Owner, l.Epoch, s.now())
	if err != nil {
		return false, sqlkit.Interpret("yield sync job", err)
	}
	return tag.RowsAffected() == 1, nil
}

// RestartSync implements ports.SyncProgressStore.
func (s *Store) RestartSync(ctx context.Context, workspaceID, connectionID int64) error {
	return sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		var state string
		if err := tx.QueryRow(ctx, lockConnectionForRestart, connectionID, workspaceID).Scan(&state); err != nil {
			return sqlkit.Interpret("lock connection", err)
		}
		if state != connection.Active.String() {
			return ports.Reject(ports.ErrConflict, ReasonConnectionNotActive, state)
		}
		_, err := tx.Exec(ctx, restartSync, connectionID)
		return sqlkit.Interpret("restart sync", err)
	})
}

// SyncProgress implements ports.SyncProgressStore.
func (s *Store) SyncProgress(ctx context.Context, workspaceID, connectionID int64) ([]ports.SyncResourceProgress, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, connectionExists, connectionID, workspaceID).Scan(&exists); err != nil {
		return nil, sqlkit.Interpret("read connection", err)
	}
	if !exists {
		return nil, fmt.Errorf("connection %d: %w", connectionID, ports.ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, syncProgress, workspaceID, connectionID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.SyncResourceProgress, error) {
		var (
			r     ports.SyncResourceProgress
			state string
		)
		if err := row.Scan(&r.Type, &r.ID, &state, &r.Items, &r.Pages, &r.StartedAt, &r.FinishedAt, &r.LastError); err != nil {
			return r, err
		}
		var err error
		r.State, err = syncjob.ParseState(state)
		return r, err
	})
	if err != nil {
		return nil, sqlkit.Interpret("read sync progress", err)
	}
	if out == nil {
		out = []ports.SyncResourceProgress{}
	}
	return out, nil
}

// WorkspaceSyncs implements ports.SyncProgressStore.
func (s *Store) WorkspaceSyncs(ctx context.Context, workspaceID int64) ([]ports.ConnectionSyncs, error) {
	rows, _ := s.pool.Query(ctx, workspaceSyncs, workspaceID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.ConnectionSyncs, error) {
		var (
			c      ports.ConnectionSyncs
			states []string
		)
		if err := row.Scan(&c.ConnectionID, &c.Provider, &states); err != nil {
			return c, err
		}
		c.States = make([]syncjob.State, len(states))
		for i, st := range states {
			var err error
			if c.States[i], err = syncjob.ParseState(st); err != nil {
				return c, err
			}
		}
		return c, nil
	})
	if err != nil {
		return nil, sqlkit.Interpret("read workspace syncs", err)
	}
	return out, nil
}
