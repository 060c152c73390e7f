package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// The pipeline floor as "the commits the seed requires". Per `issues`
// delivery the seed requires one admission commit, a users commit and a labels commit on
// natural keys (the bench payload names one user and no label: no labels commit), one step
// commit under the event fence, and a share of a batched claim and a batched outcome. The
// floor runs exactly those commits, each in one round trip with the fewest statements that
// keep its rules: the fenced transactions open with inbox_fence_open (copy, workspace and
// event fences, step claim) and end with inbox_fence_recheck and COMMIT in the same batch; the
// step writes the repository and the issue with the mirror's version guard, publishes one
// change and writes the organization last. As the server does with rows every delivery
// shares, it first reads whether the user and the organization are stored at an equal or
// newer version, and then neither writes them nor opens a users commit with nothing to write.
// No handler, no JSON view, no reporting reads: a pipeline at this floor (ratio 1) is at the
// limit of the design, not of the code.

// seedFloorIssue is what the floor's writes need from a delivery's payload.
type seedFloorIssue struct {
	Issue struct {
		ID     int64  `json:"id"`
		Number int    `json:"number"`
		Title  string `json:"title"`
		State  string `json:"state"`
		User   struct {
			ID    int64  `json:"id"`
			Login string `json:"login"`
		} `json:"user"`
	} `json:"issue"`
	Repository struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		FullName string `json:"full_name"`
	} `json:"repository"`
	Organization struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
	} `json:"organization"`
}

const (
	seedFloorUser = `
INSERT INTO github_user AS t (workspace_id, id, login, source_updated_at, source_event_id)
VALUES ($1, $2, $3, '-infinity', $4)
ON CONFLICT (workspace_id, id) DO UPDATE SET login = excluded.login,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) > (t.source_updated_at, t.source_event_id)`
	seedFloorOrganization = `
INSERT INTO github_organization AS t (workspace_id, id, login, source_updated_at, source_event_id)
VALUES ($1, $2, $3, '-infinity', $4)
ON CONFLICT (workspace_id, id) DO UPDATE SET login = excluded.login,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) > (t.source_updated_at, t.source_event_id)`
	seedFloorRepository = `
INSERT INTO github_repository AS t (workspace_id, id, name, full_name, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, '-infinity', $5)
ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name, full_name = excluded.full_name,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) > (t.source_updated_at, t.source_event_id)`
	seedFloorIssueUpsert = `
INSERT INTO github_issue AS t (workspace_id, id, repository_id, number, title, state, author_id,
	source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, '2026-11-30T12:00:00Z', $8)
ON CONFLICT (workspace_id, id) DO UPDATE SET title = excluded.title, state = excluded.state,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) > (t.source_updated_at, t.source_event_id)`
	seedFloorChange = `
INSERT INTO workspace_change (workspace_id, type, subject, data) VALUES ($1, 'github.issue.upserted', $2, $3)`
	seedFloorStored = `
SELECT EXISTS (SELECT 1 FROM github_user WHERE workspace_id = $1 AND id = $2
	AND (source_updated_at, source_event_id) >= ('-infinity', $4)),
       EXISTS (SELECT 1 FROM github_organization WHERE workspace_id = $1 AND id = $3
	AND (source_updated_at, source_event_id) >= ('-infinity', $4))`
	seedFloorOpen    = `SELECT step_claimed FROM inbox_fence_open($1, $2, $3)`
	seedFloorRecheck = `SELECT inbox_fence_recheck($1, $2, false)`
)

// seedCommits runs the commits the seed requires for one claimed `issues` delivery: the users
// commit (when its user is not stored at an equal or newer version) and the step commit, one
// round trip each, after one read of the shared rows' versions.
func seedCommits(ctx context.Context, pool *pgxpool.Pool, c ports.Claimed) error {
	var p seedFloorIssue
	if err := json.Unmarshal(c.Payload, &p); err != nil {
		return err
	}
	ws, id, epoch := c.Delivery.WorkspaceID(), c.Delivery.ID(), int64(c.Delivery.Lease().Epoch())

	// Rows every delivery shares: a user or an organization stored at an equal or
	// newer version is not written, and a users commit with nothing to write is not opened.
	var userStored, organizationStored bool
	if err := pool.QueryRow(ctx, seedFloorStored, ws, p.Issue.User.ID, p.Organization.ID, id).
		Scan(&userStored, &organizationStored); err != nil {
		return err
	}
	users := func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(beginReadCommittedFloor)
		b.Queue(seedFloorOpen, id, epoch, nil)
		b.Queue(seedFloorUser, ws, p.Issue.User.ID, p.Issue.User.Login, id)
		b.Queue(seedFloorRecheck, id, epoch)
		b.Queue("COMMIT")
		return b
	}
	if !userStored {
		if err := sendFloorBatch(ctx, pool, users); err != nil {
			return fmt.Errorf("users commit: %w", err)
		}
	}

	data, err := json.Marshal(map[string]any{"id": p.Issue.ID, "number": p.Issue.Number, "title": p.Issue.Title,
		"state": p.Issue.State, "author": p.Issue.User.Login})
	if err != nil {
		return err
	}
	step := func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(beginReadCommittedFloor)
		b.Queue(seedFloorOpen, id, epoch, "issue.upsert")
		b.Queue(seedFloorRepository, ws, p.Repository.ID, p.Repository.Name, p.Repository.FullName, id)
		b.Queue(seedFloorIssueUpsert, ws, p.Issue.ID, p.Repository.ID, p.Issue.Number, p.Issue.Title, p.Issue.State,
			p.Issue.User.ID, id)
		b.Queue(seedFloorChange, ws, fmt.Sprintf("github:issue:%d", p.Issue.ID), data)
		// The organization row is every repository's: last, its lock lasts the COMMIT only.
		if !organizationStored {
			b.Queue(seedFloorOrganization, ws, p.Organization.ID, p.Organization.Login, id)
		}
		b.Queue(seedFloorRecheck, id, epoch)
		b.Queue("COMMIT")
		return b
	}
	if err := sendFloorBatch(ctx, pool, step); err != nil {
		return fmt.Errorf("step commit: %w", err)
	}
	return nil
}

const beginReadCommittedFloor = `BEGIN ISOLATION LEVEL READ COMMITTED`

// sendFloorBatch sends one fenced commit; a failure rolls its transaction back. A recheck that
// found the event row briefly held (another claimer's locking scan on it) is contention: the
// commit runs again at once, as the statement floor's handler does.
func sendFloorBatch(ctx context.Context, pool *pgxpool.Pool, batch func() *pgx.Batch) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for try := 0; ; try++ {
		err = conn.SendBatch(ctx, batch()).Close() // a batch is sent once: a new one each try
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		var pgErr *pgconn.PgError
		if try < 1000 && errors.As(err, &pgErr) && pgErr.Code == "HXF03" {
			continue
		}
		return err
	}
}
