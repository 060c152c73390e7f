package deadletterstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.DeliveryReader = (*Reader)(nil)

// The deliveries browser. Its statements are built from the filter: every one binds
// the workspace first ("workspace_id = $1", or "workspace_id IS NULL" for the installation rows,
// never a NULL parameter), then adds one condition per filter field, each a parameter.
//
// The cost of a page does not grow with the retained rows (migration 00071): the list walks one
// index in list order (received_at DESC, id DESC) and stops after the page; the count stops
// after ports.DeliveryListCap + 1 rows; the page window ends at the cap. Each filter field has an
// index that starts at its first match, so a value that matches nothing costs a descent, not a
// walk of the workspace (migration 00135). The index that serves a filter:
//   - none, state DONE, the received-at range alone:
//     ix_provider_event_workspace_received (workspace_id, received_at DESC, id DESC), the range
//     as index bounds (DONE rows are nearly every retained row, so a page of them is at hand);
//   - provider: ix_provider_event_workspace_provider_received (workspace_id, provider,
//     received_at DESC, id DESC);
//   - eventType, with or without provider (the planner takes whichever of the two is rarer):
//     ix_provider_event_workspace_event_received (workspace_id, event_type, received_at DESC,
//     id DESC);
//   - state QUEUED or LEASED: ix_provider_event_backlog_received (workspace_id, state,
//     received_at DESC, id DESC) WHERE state IN ('QUEUED', 'LEASED');
//   - the received-at range with any of these: the range as that index's bounds;
//   - scopeKey, and subject of a workspace (its scope is "ws:<id>:<subject>"):
//     ix_provider_event_workspace_scope_received (workspace_id, scope_key, received_at DESC,
//     id DESC) (migration 00111: led by the workspace, so the claimers' scope lookups, which
//     name none, cannot take it for their partial indexes);
//   - deliveryKey: uq_provider_event_delivery (workspace_id, provider, delivery_key), the
//     providers of the workspace found with one index descent each (deliveryProviders) when the
//     filter names none;
//   - errorClass, state DEAD: ix_provider_event_dead_received (workspace_id, received_at DESC,
//     id DESC) WHERE state = 'DEAD' (migration 00110; a DEAD row is the only one with an error
//     class; the set dead retention bounds).
//
// The snapshot runs with sequential and bitmap scans off (pinBrowserPlan), so statistics that
// make a sequential scan look cheaper on a small or unanalysed table cannot pick one, and with
// sorts off too unless the filter selects a small set that is cheaper sorted than walked in
// order (pinSortedBrowserPlan: a delivery key, at most one row per provider): with sorts off the
// planner would walk the whole workspace in list order instead. DEAD rows and error classes
// have their own index in list order (ix_provider_event_dead_received) and need no sort.
// specs/inbox/counts_test.go asserts the plans on two million rows.
const (
	pinBrowserPlan = `
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)`
	pinSortedBrowserPlan = `
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)`
)

// browserPlan is the plan settings of filter f.
func browserPlan(f ports.DeliveryFilter) string {
	if f.DeliveryKey != "" {
		return pinSortedBrowserPlan
	}
	return pinBrowserPlan
}

// browserColumns is what a browser item is restored from.
const browserColumns = `e.id, e.workspace_id, e.provider, e.event_type, e.delivery_key, e.subject, e.scope_key,
	e.state, e.attempt, e.unknown_failures, e.lease_epoch, e.leased_until, e.due_at, e.received_at,
	e.ended_at, e.error_class, e.replayed_by, e.replayed_at, e.leased_at`

// deliveryProviders is a loose index scan of the workspace's providers along
// uq_provider_event_delivery: one descent per provider, however many rows each has. %s is the
// workspace condition.
const deliveryProviders = `ARRAY(
	WITH RECURSIVE p(provider) AS (
		(SELECT x.provider FROM provider_event x WHERE x.%[1]s ORDER BY x.provider LIMIT 1)
		UNION ALL
		SELECT (SELECT x.provider FROM provider_event x WHERE x.%[1]s AND x.provider > p.provider
		        ORDER BY x.provider LIMIT 1)
		FROM p WHERE p.provider IS NOT NULL)
	SELECT provider FROM p WHERE provider IS NOT NULL)`

// browserQuery is the WHERE clause of a filter and its parameters.
type browserQuery struct {
	where []string
	args  []any
}

func (q *browserQuery) param(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *browserQuery) add(cond string) { q.where = append(q.where, cond) }

func (q *browserQuery) sql() string { return strings.Join(q.where, " AND ") }

// browserFilter builds the conditions of f for workspaceID (0: the installation rows).
func browserFilter(workspaceID int64, f ports.DeliveryFilter) *browserQuery {
	q := &browserQuery{}
	wsCond := "workspace_id IS NULL"
	if workspaceID != 0 {
		wsCond = "workspace_id = " + q.param(workspaceID)
	}
	q.add("e." + wsCond)
	if !f.State.IsZero() {
		// A literal, not a parameter: the state is one of the domain's four (inbox.State), and
		// only a literal proves the partial indexes' predicates (state = 'DEAD', state IN
		// ('QUEUED', 'LEASED')) in a cached generic plan as well as in a custom one.
		q.add("e.state = '" + f.State.String() + "'")
	}
	if f.ErrorClass != "" {
		q.add("e.state = 'DEAD' AND e.error_class = " + q.param(f.ErrorClass))
	}
	if f.Provider != "" {
		q.add("e.provider = " + q.param(f.Provider))
	}
	if f.EventType != "" {
		q.add("e.event_type = " + q.param(f.EventType))
	}
	if f.Subject != "" {
		if workspaceID != 0 {
			// The subject's scope: the scope index serves it.
			if scope, err := inbox.WorkspaceScope(workspaceID, inbox.RestoreSubject(f.Subject)); err == nil {
				q.add("e.scope_key = " + q.param(scope.String()))
			}
		}
		q.add("e.subject = " + q.param(f.Subject))
	}
	if f.ScopeKey != "" {
		q.add("e.scope_key = " + q.param(f.ScopeKey))
	}
	if f.DeliveryKey != "" {
		q.add("e.delivery_key = " + q.param(f.DeliveryKey))
		if f.Provider == "" {
			q.add("e.provider = ANY(" + fmt.Sprintf(deliveryProviders, wsCond) + ")")
		}
	}
	if !f.ReceivedAfter.IsZero() {
		q.add("e.received_at >= " + q.param(f.ReceivedAfter))
	}
	if !f.ReceivedBefore.IsZero() {
		q.add("e.received_at < " + q.param(f.ReceivedBefore))
	}
	return q
}

// listDeliveriesSQL and countDeliveriesSQL are the page and the capped count of a filter.
func listDeliveriesSQL(q *browserQuery, page ports.PageRequest) string {
	limit, offset := q.param(page.Size), q.param(page.Offset())
	return `SELECT ` + browserColumns + ` FROM provider_event e WHERE ` + q.sql() +
		` ORDER BY e.received_at DESC, e.id DESC LIMIT ` + limit + ` OFFSET ` + offset
}

func countDeliveriesSQL(q *browserQuery) string {
	limit := q.param(ports.DeliveryListCap + 1)
	return `SELECT count(*) FROM (SELECT 1 FROM provider_event e WHERE ` + q.sql() + ` LIMIT ` + limit + `) c`
}

// ExplainDeliveries returns the plans of a page and of its count, as the browser runs them
// (EXPLAIN, FORMAT TEXT, with ANALYZE when analyze is set), so specs and operators see which
// index a filter uses.
func (r *Reader) ExplainDeliveries(ctx context.Context, workspaceID int64, filter ports.DeliveryFilter, page ports.PageRequest, analyze bool) (list, count string, err error) {
	options := "COSTS, FORMAT TEXT"
	if analyze {
		options = "ANALYZE, BUFFERS, " + options
	}
	err = sqlkit.WithTx(ctx, r.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, browserPlan(filter)); err != nil {
			return sqlkit.Interpret("explain deliveries", err)
		}
		explain := func(sql string, args []any) (string, error) {
			rows, err := tx.Query(ctx, "EXPLAIN ("+options+") "+sql, args...)
			if err != nil {
				return "", sqlkit.Interpret("explain deliveries", err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			return strings.Join(lines, "\n"), sqlkit.Interpret("explain deliveries", err)
		}
		lq := browserFilter(workspaceID, filter)
		if list, err = explain(listDeliveriesSQL(lq, page), lq.args); err != nil {
			return err
		}
		cq := browserFilter(workspaceID, filter)
		count, err = explain(countDeliveriesSQL(cq), cq.args)
		return err
	})
	return list, count, err
}

// ListDeliveries implements ports.DeliveryReader.
func (r *Reader) ListDeliveries(ctx context.Context, workspaceID int64, filter ports.DeliveryFilter, page ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
	if workspaceID < 0 || page.Page < 0 || page.Size < 1 {
		return nil, 0, false, fmt.Errorf("list deliveries: %w", ports.ErrMalformed)
	}
	if page.Offset()+page.Size > ports.DeliveryListCap {
		return nil, 0, false, ports.Reject(ports.ErrMalformed, "invalid-paging", "page")
	}
	var (
		items []ports.DeliveryItem
		total int
	)
	err := sqlkit.WithTx(ctx, r.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, browserPlan(filter)); err != nil {
			return sqlkit.Interpret("list deliveries", err)
		}
		cq := browserFilter(workspaceID, filter)
		if err := tx.QueryRow(ctx, countDeliveriesSQL(cq), cq.args...).Scan(&total); err != nil {
			return sqlkit.Interpret("count deliveries", err)
		}
		lq := browserFilter(workspaceID, filter)
		rows, err := tx.Query(ctx, listDeliveriesSQL(lq, page), lq.args...)
		if err != nil {
			return sqlkit.Interpret("list deliveries", err)
		}
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.DeliveryItem, error) {
			var b browserRow
			if err := row.Scan(b.targets()...); err != nil {
				return ports.DeliveryItem{}, err
			}
			return b.item()
		})
		return sqlkit.Interpret("list deliveries", err)
	})
	if err != nil {
		return nil, 0, false, err
	}
	if total > ports.DeliveryListCap {
		return items, ports.DeliveryListCap, true, nil
	}
	return items, total, false, nil
}

const (
	deliveryOfWorkspace = `SELECT ` + browserColumns + `, e.payload, e.headers, e.trace_parent
FROM provider_event e WHERE e.id = $1 AND e.workspace_id = $2`
	deliveryOfInstallation = `SELECT ` + browserColumns + `, e.payload, e.headers, e.trace_parent
FROM provider_event e WHERE e.id = $1 AND e.workspace_id IS NULL`
	stepsOfDelivery = `SELECT step_name, committed_at FROM provider_event_step WHERE event_id = $1
ORDER BY committed_at, step_name`
	attemptsOfDelivery = `SELECT attempt, started_at, ended_at, server, outcome, cause
FROM provider_event_attempt WHERE event_id = $1 ORDER BY lease_epoch`
)

// Delivery implements ports.DeliveryReader: the row, its steps and its attempts from one
// snapshot. The steps and attempts are read only once the row was found bound to the workspace.
func (r *Reader) Delivery(ctx context.Context, workspaceID, id int64) (ports.Delivery, error) {
	if workspaceID < 0 || id <= 0 {
		return ports.Delivery{}, fmt.Errorf("delivery: %w", ports.ErrNotFound)
	}
	var out ports.Delivery
	err := sqlkit.WithTx(ctx, r.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		var (
			b       browserRow
			payload []byte
			headers map[string]string
			parent  *string
			row     pgx.Row
		)
		if workspaceID == 0 {
			row = tx.QueryRow(ctx, deliveryOfInstallation, id)
		} else {
			row = tx.QueryRow(ctx, deliveryOfWorkspace, id, workspaceID)
		}
		if err := row.Scan(append(b.targets(), &payload, &headers, &parent)...); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("delivery %d", id), err)
		}
		item, err := b.item()
		if err != nil {
			return err
		}
		if headers == nil {
			headers = map[string]string{}
		}
		out = ports.Delivery{DeliveryItem: item, Payload: json.RawMessage(payload), Headers: headers,
			Steps: []ports.DeliveryStep{}, Attempts: []ports.DeliveryAttempt{}}
		if parent != nil {
			out.TraceID = traceIDOf(*parent)
		}
		rows, err := tx.Query(ctx, stepsOfDelivery, id)
		if err != nil {
			return sqlkit.Interpret("delivery steps", err)
		}
		steps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.DeliveryStep, error) {
			var s ports.DeliveryStep
			err := row.Scan(&s.Name, &s.CommittedAt)
			return s, err
		})
		if err != nil {
			return sqlkit.Interpret("delivery steps", err)
		}
		out.Steps = append(out.Steps, steps...)
		rows, err = tx.Query(ctx, attemptsOfDelivery, id)
		if err != nil {
			return sqlkit.Interpret("delivery attempts", err)
		}
		attempts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.DeliveryAttempt, error) {
			var (
				a       ports.DeliveryAttempt
				n       int32
				started *time.Time
				server  *string
				cause   *string
			)
			if err := row.Scan(&n, &started, &a.EndedAt, &server, &a.Outcome, &cause); err != nil {
				return a, err
			}
			a.Attempt = int(n)
			if started != nil {
				a.StartedAt = *started
			}
			if server != nil {
				a.Server = *server
			}
			if cause != nil {
				a.Cause, _ = inbox.CauseNamed(*cause)
			}
			return a, nil
		})
		if err != nil {
			return sqlkit.Interpret("delivery attempts", err)
		}
		out.Attempts = append(out.Attempts, attempts...)
		return nil
	})
	if err != nil {
		return ports.Delivery{}, err
	}
	return out, nil
}

// browserRow holds browserColumns as scanned.
type browserRow struct {
	id              int64
	workspaceID     *int64
	provider        string
	eventType       string
	deliveryKey     string
	subject         string
	scopeKey        string
	state           string
	attempt         int32
	unknownFailures int32
	leaseEpoch      int64
	leasedUntil     *time.Time
	dueAt           time.Time
	receivedAt      time.Time
	endedAt         *time.Time
	errorClass      *string
	replayedBy      *int64
	replayedAt      *time.Time
	leasedAt        *time.Time
}

func (b *browserRow) targets() []any {
	return []any{&b.id, &b.workspaceID, &b.provider, &b.eventType, &b.deliveryKey, &b.subject, &b.scopeKey,
		&b.state, &b.attempt, &b.unknownFailures, &b.leaseEpoch, &b.leasedUntil, &b.dueAt, &b.receivedAt,
		&b.endedAt, &b.errorClass, &b.replayedBy, &b.replayedAt, &b.leasedAt}
}

func (b *browserRow) item() (ports.DeliveryItem, error) {
	state, err := inbox.ParseState(b.state)
	if err != nil {
		return ports.DeliveryItem{}, fmt.Errorf("delivery %d: %w", b.id, err)
	}
	s := inbox.Stored{
		ID: b.id, Provider: provider.Restore(b.provider), EventType: b.eventType, DeliveryKey: b.deliveryKey,
		Subject: b.subject, ScopeKey: b.scopeKey, State: state, Attempt: int(b.attempt),
		UnknownFailures: int(b.unknownFailures), LeaseEpoch: inbox.Epoch(b.leaseEpoch),
		DueAt: b.dueAt, ReceivedAt: b.receivedAt,
	}
	if b.workspaceID != nil {
		s.WorkspaceID = *b.workspaceID
	}
	if b.leasedUntil != nil {
		s.LeasedUntil = *b.leasedUntil
	}
	if b.endedAt != nil {
		s.EndedAt = *b.endedAt
	}
	if b.errorClass != nil {
		s.ErrorClass = *b.errorClass
	}
	if b.replayedBy != nil {
		s.ReplayedBy = *b.replayedBy
	}
	if b.replayedAt != nil {
		s.ReplayedAt = *b.replayedAt
	}
	item := ports.DeliveryItem{Delivery: inbox.RestoreDelivery(s)}
	if b.leasedAt != nil {
		item.LastAttemptAt = *b.leasedAt
	}
	return item, nil
}

// traceIDOf is the trace id of a stored W3C traceparent ("00-<32 hex>-<16 hex>-<2 hex>"), or
// "" for a value of another shape or an all-zero (invalid) trace id.
func traceIDOf(traceparent string) string {
	parts := strings.Split(traceparent, "-")
	if len(parts) < 4 || len(parts[1]) != 32 || strings.Trim(parts[1], "0") == "" {
		return ""
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return ""
	}
	return strings.ToLower(parts[1])
}
