package operators_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const githubNamespace = "https://github.com"

var githubProvider = provider.MustNew("GITHUB")

type workspaceFixture struct {
	ID   int64
	Slug string
}

func newWorkspace(ctx context.Context, slug string) workspaceFixture {
	GinkgoHelper()
	ws := support.NewWorkspace(ctx, svc, slug)
	return workspaceFixture{ID: ws.ID, Slug: ws.Slug}
}

type accountFixture struct {
	ID    int64
	Token string
}

// newAccount creates an account; role ("ADMIN", "MEMBER" or "") makes it a member of ws.
func newAccount(ctx context.Context, login string, instanceAdminFlag bool, ws workspaceFixture, role string) accountFixture {
	GinkgoHelper()
	acc := support.NewAccount(ctx, svc, login, instanceAdminFlag, ws.Slug, role)
	return accountFixture{ID: acc.ID, Token: acc.Token}
}

// row describes a stored delivery. Workspace 0 is an installation row (system scope).
type row struct {
	Workspace   int64
	Provider    string // default GITHUB
	Namespace   string // Hephaestus-Source-Server-Url, default https://github.com
	Repo        string // the subject's id, default "1"
	DeliveryKey string // default unique
	State       string // default QUEUED
	Payload     string // default {"action":"opened"}
	EndedAgo    time.Duration
	ReceivedAgo time.Duration
	Attempt     int
	Epoch       int64 // LEASED rows: the lease epoch (default 1)
}

var deliveryKeys atomic.Int64

// insertRow stores r the way admission and the claimers leave such a row and returns its id.
func insertRow(ctx context.Context, db querier, r row) int64 {
	GinkgoHelper()
	if r.Provider == "" {
		r.Provider = "GITHUB"
	}
	if r.Namespace == "" {
		r.Namespace = githubNamespace
	}
	if r.Repo == "" {
		r.Repo = "1"
	}
	if r.DeliveryKey == "" {
		r.DeliveryKey = fmt.Sprintf("delivery-%d", deliveryKeys.Add(1))
	}
	if r.State == "" {
		r.State = "QUEUED"
	}
	if r.Payload == "" {
		r.Payload = `{"action":"opened"}`
	}
	p := provider.MustNew(r.Provider)
	subject, err := inbox.NewSubject(p.Label(), "repository", r.Repo)
	Expect(err).NotTo(HaveOccurred())
	d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: r.Workspace, Provider: p, EventType: "issues",
		DeliveryKey: r.DeliveryKey, Subject: subject, Control: r.Workspace == 0}, time.Now())
	Expect(err).NotTo(HaveOccurred())

	var (
		ws          *int64
		leasedUntil *time.Time
		endedAt     *time.Time
		errorClass  *string
	)
	if r.Workspace != 0 {
		ws = &r.Workspace
	}
	received := time.Now().Add(-r.ReceivedAgo)
	switch r.State {
	case "LEASED":
		until := time.Now().Add(2 * time.Minute)
		leasedUntil = &until
		if r.Epoch == 0 {
			r.Epoch = 1
		}
		if r.Attempt == 0 {
			r.Attempt = 1
		}
	case "DONE", "DEAD":
		ended := time.Now().Add(-r.EndedAgo)
		endedAt = &ended
		if r.State == "DEAD" {
			class := "PERMANENT:*json.SyntaxError"
			errorClass = &class
			if r.Attempt == 0 {
				r.Attempt = 3
			}
		}
	}
	var id int64
	Expect(db.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, state, attempt, lease_epoch, leased_until, due_at,
		                            received_at, ended_at, error_class)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $13, $14, $15)
		RETURNING id`,
		ws, p.String(), d.EventType(), d.DeliveryKey(), d.Scope().String(), d.Subject().String(), r.Payload,
		map[string]string{"X-GitHub-Event": "issues", "Hephaestus-Source-Server-Url": r.Namespace},
		r.State, r.Attempt, r.Epoch, leasedUntil, received, endedAt, errorClass).Scan(&id)).To(Succeed())
	return id
}

// querier is a pool or a transaction of the spec.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// addStep records a committed handler step of event id.
func addStep(ctx context.Context, id int64, name string) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, $2)`, id, name)
	Expect(err).NotTo(HaveOccurred())
}

func stepCount(ctx context.Context, ids ...int64) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM provider_event_step WHERE event_id = ANY ($1)`, ids)
}

// existing returns which of ids are still stored.
func existing(ctx context.Context, ids ...int64) []int64 {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `SELECT id FROM provider_event WHERE id = ANY ($1) ORDER BY id`, ids)
	Expect(err).NotTo(HaveOccurred())
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	Expect(err).NotTo(HaveOccurred())
	if got == nil {
		got = []int64{}
	}
	return got
}

type storedRow struct {
	State      string
	Attempt    int
	ReplayedBy *int64
}

func readRow(ctx context.Context, id int64) storedRow {
	GinkgoHelper()
	var s storedRow
	Expect(pool.QueryRow(ctx, `SELECT state, attempt, replayed_by FROM provider_event WHERE id = $1`, id).
		Scan(&s.State, &s.Attempt, &s.ReplayedBy)).To(Succeed())
	return s
}

// fenced is what a fenced write on the dispatch goroutine does first (the DeliveryInbox's copy
// admission): FOR KEY SHARE SKIP LOCKED on the fence row, then the flag. It reports whether the
// write may go on; a statement timeout proves it never waits.
func fenced(ctx context.Context, tx pgx.Tx) bool {
	GinkgoHelper()
	_, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '1s'`)
	Expect(err).NotTo(HaveOccurred())
	var inProgress bool
	err = tx.QueryRow(ctx, `SELECT in_progress FROM inbox_erasure_fence WHERE name = 'inbox' FOR KEY SHARE SKIP LOCKED`).
		Scan(&inProgress)
	if errors.Is(err, pgx.ErrNoRows) {
		return false // erasure holds the fence
	}
	Expect(err).NotTo(HaveOccurred(), "a fenced write must not wait for erasure")
	return !inProgress
}

func fenceRaised(ctx context.Context) bool {
	GinkgoHelper()
	var raised bool
	Expect(pool.QueryRow(ctx, `SELECT in_progress FROM inbox_erasure_fence WHERE name = 'inbox'`).Scan(&raised)).To(Succeed())
	return raised
}
