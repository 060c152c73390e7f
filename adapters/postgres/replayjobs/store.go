// Package replayjobs is the PostgreSQL store of bulk replay jobs (migrations/00080_replay_job.sql):
// the dry-run count, the start that fixes a job's rows, the progress and cancel of the operator
// API, and the claim and batches of application/replays' runner. A batch replays its rows
// through the inbox store's own replay step (inboxstore.ReplayDeadRows) inside the batch's
// transaction, after a fence on the job's row, and commits them with the job's counts and
// keyset position.
package replayjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.ReplayJobStore = (*Store)(nil)

// ReasonNotRunning is the 409 of a cancel of a job that already ended.
const ReasonNotRunning = "not-running"

// Config configures the store.
type Config struct {
	// Clock, when set, is the "now" of every statement (start, lease, batch, cancel); nil in
	// production, so the database clock decides, as the inbox store's.
	Clock ports.Clock
}

// Store is the replay job store on the main pool. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
}

// New makes the store on pool.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("replay jobs: nil pool")
	}
	return &Store{pool: pool, cfg: cfg}, nil
}

func (s *Store) now() *time.Time { return sqlkit.NowParam(s.cfg.Clock) }

var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// filterArgs are matchDeadRows' $2..$8.
func filterArgs(f replayjob.Filter) []any {
	v := f.Fields()
	return []any{v.Provider, v.EventType, v.ErrorClass, optional(v.DeadAfter), optional(v.DeadBefore),
		optional(v.ReceivedAfter), optional(v.ReceivedBefore)}
}

func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// storedFilter is the filter column: the contract's names, absent fields omitted.
type storedFilter struct {
	Provider       string     `json:"provider,omitempty"`
	EventType      string     `json:"eventType,omitempty"`
	ErrorClass     string     `json:"errorClass,omitempty"`
	DeadAfter      *time.Time `json:"deadAfter,omitempty"`
	DeadBefore     *time.Time `json:"deadBefore,omitempty"`
	ReceivedAfter  *time.Time `json:"receivedAfter,omitempty"`
	ReceivedBefore *time.Time `json:"receivedBefore,omitempty"`
}

func toStored(f replayjob.Filter) storedFilter {
	v := f.Fields()
	return storedFilter{Provider: v.Provider, EventType: v.EventType, ErrorClass: v.ErrorClass,
		DeadAfter: optional(v.DeadAfter), DeadBefore: optional(v.DeadBefore),
		ReceivedAfter: optional(v.ReceivedAfter), ReceivedBefore: optional(v.ReceivedBefore)}
}

func (f storedFilter) filter() replayjob.Filter {
	return replayjob.RestoreFilter(replayjob.FilterFields{Provider: f.Provider, EventType: f.EventType, ErrorClass: f.ErrorClass,
		DeadAfter: deref(f.DeadAfter), DeadBefore: deref(f.DeadBefore), ReceivedAfter: deref(f.ReceivedAfter),
		ReceivedBefore: deref(f.ReceivedBefore)})
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// CountReplayable implements ports.ReplayJobStore.
func (s *Store) CountReplayable(ctx context.Context, workspaceID int64, filter replayjob.Filter) (int64, error) {
	if workspaceID <= 0 {
		return 0, fmt.Errorf("count replayable rows: %w", ports.ErrNotFound)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, countMatchingDeadRows, append([]any{workspaceID}, filterArgs(filter)...)...).Scan(&n); err != nil {
		return 0, sqlkit.Interpret("count replayable rows", err)
	}
	return n, nil
}

// StartReplay implements ports.ReplayJobStore: one READ COMMITTED transaction that takes the
// workspace's start lock (lockReplayStarts), checks the running jobs and the matched rows
// against limits, and only then writes the job and its rows. A refused start writes nothing.
func (s *Store) StartReplay(ctx context.Context, workspaceID int64, filter replayjob.Filter, accountID int64, limits replayjob.Limits) (ports.ReplayJob, error) {
	if workspaceID <= 0 || accountID < 0 || limits.IsZero() {
		return ports.ReplayJob{}, fmt.Errorf("start replay: %w", ports.ErrMalformed)
	}
	stored, err := json.Marshal(toStored(filter))
	if err != nil {
		return ports.ReplayJob{}, fmt.Errorf("start replay: %w", err)
	}
	// matchDeadRows' $1..$8; clipped, so each statement's further arguments append to a copy.
	match := slices.Clip(append([]any{workspaceID}, filterArgs(filter)...))
	var job ports.ReplayJob
	err = sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockReplayStarts, workspaceID); err != nil {
			return sqlkit.Interpret("lock replay starts", err)
		}
		var running, matched int64
		if err := tx.QueryRow(ctx, countRunningReplayJobs, workspaceID).Scan(&running); err != nil {
			return sqlkit.Interpret("count running replay jobs", err)
		}
		if err := limits.AdmitRunning(running); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, countMatchingDeadRowsUpTo, append(match, limits.MaxRows()+1)...).Scan(&matched); err != nil {
			return sqlkit.Interpret("count replayable rows", err)
		}
		if err := limits.AdmitRows(matched); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, insertReplayJob, workspaceID, stored, accountID, s.now()).Scan(&id); err != nil {
			return sqlkit.Interpret("start replay", err)
		}
		tag, err := tx.Exec(ctx, insertReplayJobRows, append(match, id, limits.MaxRows()+1)...)
		if err != nil {
			return sqlkit.Interpret("fix the rows of replay", err)
		}
		if err := limits.AdmitRows(tag.RowsAffected()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setReplayJobMatched, id, tag.RowsAffected()); err != nil {
			return sqlkit.Interpret("start replay", err)
		}
		job, err = readJob(tx.QueryRow(ctx, replayJobOfWorkspace, id, workspaceID))
		return err
	})
	if err != nil {
		return ports.ReplayJob{}, err
	}
	return job, nil
}

// readJob scans jobColumns.
func readJob(row pgx.Row) (ports.ReplayJob, error) {
	var (
		j        ports.ReplayJob
		state    string
		filter   storedFilter
		finished *time.Time
	)
	if err := row.Scan(&j.ID, &j.WorkspaceID, &state, &filter, &j.Progress.Matched, &j.Progress.Replayed, &j.Progress.Skipped,
		&j.RequestedBy, &j.StartedAt, &finished); err != nil {
		return ports.ReplayJob{}, sqlkit.Interpret("read replay job", err)
	}
	st, err := replayjob.ParseState(state)
	if err != nil {
		return ports.ReplayJob{}, err
	}
	j.State, j.Filter, j.FinishedAt = st, filter.filter(), deref(finished)
	return j, nil
}

// ReplayJob implements ports.ReplayJobStore.
func (s *Store) ReplayJob(ctx context.Context, workspaceID, id int64) (ports.ReplayJob, error) {
	j, err := readJob(s.pool.QueryRow(ctx, replayJobOfWorkspace, id, workspaceID))
	if err != nil {
		return ports.ReplayJob{}, fmt.Errorf("replay job %d: %w", id, err)
	}
	return j, nil
}

// ListReplayJobs implements ports.ReplayJobStore. The count and the page read one snapshot.
func (s *Store) ListReplayJobs(ctx context.Context, workspaceID int64, page ports.PageRequest) ([]ports.ReplayJob, int, error) {
	if page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("list replay jobs: %w", ports.ErrMalformed)
	}
	var (
		jobs  []ports.ReplayJob
		total int
	)
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := sqlkit.WithTx(ctx, s.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, countReplayJobsOfWorkspace, workspaceID).Scan(&total); err != nil {
			return sqlkit.Interpret("count replay jobs", err)
		}
		rows, err := tx.Query(ctx, listReplayJobsOfWorkspace, workspaceID, page.Size, page.Offset())
		if err != nil {
			return sqlkit.Interpret("list replay jobs", err)
		}
		defer rows.Close()
		for rows.Next() {
			j, err := readJob(rows)
			if err != nil {
				return err
			}
			jobs = append(jobs, j)
		}
		return sqlkit.Interpret("list replay jobs", rows.Err())
	})
	if err != nil {
		return nil, 0, err
	}
	return jobs, total, nil
}

// CancelReplay implements ports.ReplayJobStore.
func (s *Store) CancelReplay(ctx context.Context, workspaceID, id int64) (ports.ReplayJob, error) {
	var job ports.ReplayJob
	err := sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var cancelled int64
		err := tx.QueryRow(ctx, cancelReplayJob, id, workspaceID, s.now()).Scan(&cancelled)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := readJob(tx.QueryRow(ctx, replayJobOfWorkspace, id, workspaceID)); err != nil {
				return err
			}
			return ports.Reject(ports.ErrConflict, ReasonNotRunning, "")
		case err != nil:
			return sqlkit.Interpret("cancel replay", err)
		}
		if _, err := tx.Exec(ctx, deleteReplayJobRows, id); err != nil {
			return sqlkit.Interpret("cancel replay", err)
		}
		job, err = readJob(tx.QueryRow(ctx, replayJobOfWorkspace, id, workspaceID))
		return err
	})
	if err != nil {
		return ports.ReplayJob{}, fmt.Errorf("cancel replay job %d: %w", id, err)
	}
	return job, nil
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// ClaimReplayJob implements ports.ReplayJobStore.
func (s *Store) ClaimReplayJob(ctx context.Context, owner string, lease time.Duration) (ports.ReplayLease, bool, error) {
	if owner == "" || lease <= 0 {
		return ports.ReplayLease{}, false, fmt.Errorf("claim replay job: %w", ports.ErrMalformed)
	}
	l := ports.ReplayLease{Owner: owner}
	err := s.pool.QueryRow(ctx, claimReplayJob, owner, micros(lease), s.now()).Scan(&l.JobID, &l.Epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.ReplayLease{}, false, nil
	}
	if err != nil {
		return ports.ReplayLease{}, false, sqlkit.Interpret("claim replay job", err)
	}
	return l, true, nil
}

// ReplayBatch implements ports.ReplayJobStore: one READ COMMITTED transaction of a fence, a
// keyset step, the inbox's replay of the step's rows and the job's counts.
func (s *Store) ReplayBatch(ctx context.Context, l ports.ReplayLease, size int, lease time.Duration) (int, bool, error) {
	if size < 1 {
		return 0, false, fmt.Errorf("replay batch: %w", ports.ErrMalformed)
	}
	var (
		replayed int
		more     bool
	)
	err := sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var (
			workspaceID, cursor, accountID int64
			p                              replayjob.Progress
		)
		err := tx.QueryRow(ctx, lockHeldReplayJob, l.JobID, l.Owner, l.Epoch).
			Scan(&workspaceID, &cursor, &p.Matched, &p.Replayed, &p.Skipped, &accountID)
		if errors.Is(err, pgx.ErrNoRows) {
			return inbox.ErrLeaseLost
		}
		if err != nil {
			return sqlkit.Interpret("fence replay batch", err)
		}
		rows, err := tx.Query(ctx, nextReplayJobRows, l.JobID, cursor, size+1)
		if err != nil {
			return sqlkit.Interpret("next replay rows", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return sqlkit.Interpret("next replay rows", err)
		}
		if more = len(ids) > size; more {
			ids = ids[:size]
		}
		if replayed, err = inboxstore.ReplayDeadRows(ctx, tx, workspaceID, ids, accountID, s.now()); err != nil {
			return err
		}
		if p, err = p.Add(int64(len(ids)), int64(replayed)); err != nil {
			return err
		}
		if len(ids) > 0 {
			cursor = ids[len(ids)-1]
		}
		if _, err := tx.Exec(ctx, commitReplayBatch, l.JobID, cursor, p.Replayed, p.Skipped, !more, micros(lease), s.now()); err != nil {
			return sqlkit.Interpret("commit replay batch", err)
		}
		if !more {
			if _, err := tx.Exec(ctx, deleteReplayJobRows, l.JobID); err != nil {
				return sqlkit.Interpret("end replay job", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("replay job %d: %w", l.JobID, err)
	}
	return replayed, more, nil
}

// YieldReplayJob implements ports.ReplayJobStore.
func (s *Store) YieldReplayJob(ctx context.Context, l ports.ReplayLease) (bool, error) {
	var id int64
	err := s.pool.QueryRow(ctx, yieldReplayJob, l.JobID, l.Owner, l.Epoch, s.now()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, sqlkit.Interpret("yield replay job", err)
	}
	return true, nil
}

// FailReplay implements ports.ReplayJobStore.
func (s *Store) FailReplay(ctx context.Context, l ports.ReplayLease) error {
	return sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, failReplayJob, l.JobID, l.Owner, l.Epoch, s.now()).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return inbox.ErrLeaseLost
		}
		if err != nil {
			return sqlkit.Interpret("fail replay job", err)
		}
		_, err = tx.Exec(ctx, deleteReplayJobRows, l.JobID)
		return sqlkit.Interpret("fail replay job", err)
	})
}

// ReleaseReplay implements ports.ReplayJobStore.
func (s *Store) ReleaseReplay(ctx context.Context, l ports.ReplayLease) error {
	_, err := s.pool.Exec(ctx, releaseReplayJob, l.JobID, l.Owner, l.Epoch)
	return sqlkit.Interpret("release replay job", err)
}
