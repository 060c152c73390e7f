package admissionstore

// Why this file: on remembered routes a delivery's transaction is one write, one insert and
// one commit, and most of what PostgreSQL spends on it is per transaction and per statement
// (the commit record and its flush, the snapshot, each statement's executor start-up and
// locks), not per row. Deliveries on remembered routes that arrive while earlier ones are
// committing therefore share one transaction: one NOWAIT lock statement over all their
// connections, one insert of all their rows, each row guarded by its own delivery's route
// epoch, and one Sync. Nothing waits to fill a group: a delivery that finds a group
// transaction free starts one at once, so a quiet server commits each delivery alone.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const (
	// maxGroupRows bounds the rows of one group transaction (13 parameters a row, prepared
	// once per size and connection); a delivery with more rows than this commits alone.
	maxGroupRows = 32
	// maxGroupBytes bounds the payload bytes of one group transaction beyond its first
	// delivery, so a group's insert stays a few write buffers long.
	maxGroupBytes = 256 << 10
	// groupTimeout ends a group transaction that does not finish: it runs on behalf of
	// several requests, so no one request's cancellation ends it, and its statements wait
	// only for the unique index and the workspace's key lock (its connection locks are NOWAIT,
	// and the session's lock_timeout bounds every wait).
	groupTimeout = 30 * time.Second
)

// groupCommit forms and commits the group transactions of one store. At most limit group
// transactions are in flight, one per CPU the process may use (a group's work in PostgreSQL
// is CPU, and deliveries that arrive meanwhile make the next group larger:
// docs/operations/performance.md has the measurement behind one per CPU); a delivery that arrives while all of them are busy waits in
// pending, and the next group to finish hands everything pending (up to maxGroupRows rows)
// to the goroutine of its oldest delivery, which commits it as one transaction. Invariant:
// pending is empty whenever running < limit.
type groupCommit struct {
	acquire func(ctx context.Context) (*admissionTx, func(), error) // a prepared transaction on a pooled connection
	limit   int

	mu      sync.Mutex
	pending []*groupMember // oldest first
	running int

	groups, members atomic.Uint64 // group transactions committed or failed, and their deliveries

	// fault, when set, runs inside every group transaction after its lock statement was
	// queued: a spec makes it panic (Store.InjectGroupFault).
	fault atomic.Pointer[func()]
}

// errGroupPanicked answers the deliveries of a group transaction that panicked: a bug, not a
// decision about the deliveries, so they are not admitted alone either (which could panic
// again on the same rows) but answered 503 retry, and the provider delivers them again.
var errGroupPanicked = errors.New("admissionstore: the group transaction panicked")

// groupMember is one delivery's insert in a group transaction.
type groupMember struct {
	rows  []groupRow
	conns []int64 // the connections of its remembered routes
	bytes int     // payload bytes

	stored []bool // per row, set before done is closed
	err    error  // errRecallMissed unless a row was stored
	done   chan struct{}
	lead   chan []*groupMember // the group this member's goroutine is to commit

	// The member's admission span (invalid when not traced), linked from the group
	// transaction's span; group is that span, and size the group's member count.
	span  trace.SpanContext
	group trace.SpanContext
	size  int
}

// groupRow is one row of a member, encoded with its delivery's remembered route epoch.
type groupRow struct {
	workspaceID           int64
	provider, deliveryKey string
	params                rowParams
	member                *groupMember
	index                 int // in member.rows
}

// insert stores rows on the remembered routes r in a group transaction and answers which
// rows were stored, or errRecallMissed when none was (a lock held, the epoch moved, a
// duplicate, any failure of the group transaction): Admit then reads the routes, which
// decides. It returns once the group transaction has ended; a request cancelled while its
// delivery still waits for a group withdraws it and stores nothing.
func (g *groupCommit) insert(ctx context.Context, rows []ports.NewRow, r *remembered) ([]bool, error) {
	m := &groupMember{rows: make([]groupRow, len(rows)), done: make(chan struct{}), lead: make(chan []*groupMember, 1),
		span: trace.SpanContextFromContext(ctx)}
	for i, row := range rows {
		d := row.Delivery
		gr := &m.rows[i]
		gr.workspaceID, gr.provider, gr.deliveryKey = d.WorkspaceID(), d.Provider().String(), d.DeliveryKey()
		gr.member, gr.index = m, i
		gr.params.encode(row, &r.epoch, false)
		m.bytes += len(row.Payload)
	}
	m.conns = make([]int64, len(r.routes))
	for i, route := range r.routes {
		m.conns[i] = route.ConnectionID
	}

	g.mu.Lock()
	g.pending = append(g.pending, m)
	var group []*groupMember
	if g.running < g.limit {
		g.running++
		group = g.takeLocked() // only m: pending was empty
	}
	g.mu.Unlock()
	if group != nil {
		g.lead(ctx, group)
	}
	for {
		select {
		case <-m.done:
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				// The group transaction this delivery's rows shared: its span (in the trace of the
				// delivery that led it) is linked, and the group's size recorded.
				span.SetAttributes(attribute.Int("hephaestus.admission.group_size", m.size))
				if m.group.IsValid() && m.group.TraceID() != m.span.TraceID() {
					span.AddLink(trace.Link{SpanContext: m.group})
				}
			}
			return m.stored, m.err
		case group := <-m.lead:
			g.lead(ctx, group) // m is its first member: done is closed when it returns
		case <-ctx.Done():
			if g.withdraw(m) {
				return nil, ctx.Err()
			}
			ctx = context.WithoutCancel(ctx) // in a group already: wait for its end
		}
	}
}

// takeLocked removes the next group from pending: the oldest members up to maxGroupRows rows
// and maxGroupBytes payload bytes, and always the oldest one. g.mu must be held.
func (g *groupCommit) takeLocked() []*groupMember {
	if len(g.pending) == 0 {
		return nil
	}
	n, rows, bytes := 1, len(g.pending[0].rows), 0
	for ; n < len(g.pending); n++ {
		m := g.pending[n]
		if rows+len(m.rows) > maxGroupRows || bytes+m.bytes > maxGroupBytes {
			break
		}
		rows, bytes = rows+len(m.rows), bytes+m.bytes
	}
	group := slices.Clone(g.pending[:n])
	g.pending = slices.Delete(g.pending, 0, n)
	return group
}

// withdraw removes m from pending, reporting whether it was still there.
func (g *groupCommit) withdraw(m *groupMember) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.pending, m)
	if i < 0 {
		return false
	}
	g.pending = slices.Delete(g.pending, i, i+1)
	return true
}

// lead commits group, then hands the next pending group to its oldest member's goroutine,
// or ends this group transaction's turn when nothing is pending. The hand-over is deferred:
// whatever commit does, the slot passes on or is freed.
func (g *groupCommit) lead(ctx context.Context, group []*groupMember) {
	defer g.handOver()
	g.commit(ctx, group)
}

// handOver gives the slot of a group transaction that ended to the next pending group.
func (g *groupCommit) handOver() {
	g.mu.Lock()
	next := g.takeLocked()
	if next == nil {
		g.running--
	}
	g.mu.Unlock()
	if next != nil {
		next[0].lead <- next
	}
}

// commit runs group as one transaction and ends every member, also when something in it
// panics: the members are then answered errGroupPanicked, and the panic goes no further (it
// runs on one request's goroutine on behalf of all of them; the connection it held is
// destroyed by the pool, which never reuses a connection left busy).
func (g *groupCommit) commit(ctx context.Context, group []*groupMember) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		_ = recover()
		for _, m := range group {
			select {
			case <-m.done:
			default:
				m.stored, m.err = nil, errGroupPanicked
				close(m.done)
			}
		}
		g.groups.Add(1)
		g.members.Add(uint64(len(group)))
	}()
	var rows []*groupRow
	var conns []int64
	for _, m := range group {
		for i := range m.rows {
			rows = append(rows, &m.rows[i])
		}
		conns = append(conns, m.conns...)
		m.stored = make([]bool, len(m.rows))
	}
	// One order for every group's rows, the unique index's: two groups holding the same
	// delivery meet its key in the same order and cannot deadlock on it.
	slices.SortFunc(rows, func(a, b *groupRow) int {
		return cmp.Or(cmp.Compare(a.workspaceID, b.workspaceID), cmp.Compare(a.provider, b.provider),
			cmp.Compare(a.deliveryKey, b.deliveryKey))
	})
	slices.Sort(conns)
	conns = slices.Compact(conns)

	ctx, span := telemetry.Tracer().Start(ctx, "admission.group_transaction", trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(append(telemetry.DBAttributes("INSERT", "provider_event"),
			attribute.Int("hephaestus.admission.group_size", len(group)), attribute.Int("db.operation.batch.size", len(rows)))...)
		for _, m := range group[1:] {
			if m.span.IsValid() {
				span.AddLink(trace.Link{SpanContext: m.span})
			}
		}
	}
	err := g.run(ctx, rows, conns)
	if err != nil {
		span.SetStatus(codes.Error, "group transaction failed")
	}
	span.End()
	for _, m := range group {
		m.group, m.size = span.SpanContext(), len(group)
		if err != nil || !slices.Contains(m.stored, true) {
			m.stored, m.err = nil, errRecallMissed // Admit reads the routes, which decides
		}
		close(m.done)
	}
	panicked = false
	g.groups.Add(1)
	g.members.Add(uint64(len(group)))
}

// run sends, in one write, lockRemembered over conns, the guarded insert of rows and the Sync
// that commits, and marks each stored row in its member. Any error means nothing was
// committed.
func (g *groupCommit) run(ctx context.Context, rows []*groupRow, conns []int64) error {
	t, release, err := g.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	sd, err := t.conn.Prepare(ctx, groupStatementName(len(rows)), insertGroupSQL(len(rows)))
	if err != nil {
		return err
	}
	if err := t.queue(ctx, t.stmt.lockRemembered, []any{conns}); err != nil {
		return err
	}
	if f := g.fault.Load(); f != nil {
		(*f)()
	}
	values := make([][]byte, 0, len(rows)*groupRowParams)
	for _, r := range rows {
		values = append(values, r.params.values[:groupRowParams]...)
	}
	t.queueEncoded(ctx, sd, values, nil, nil)
	if err := t.pipe.Sync(); err != nil {
		return t.close(err)
	}
	inserted := insertedKeys{}
	rr, err := t.result() // the locks, or the error that skipped the insert
	if err == nil {
		_, err = rr.Close()
	}
	if err == nil {
		rr, err = t.result()
	}
	if err == nil {
		err = inserted.read(t.conn.TypeMap(), rr)
	}
	if err == nil {
		_, err = t.pipe.GetResults() // the Sync's answer: the commit, or its error
	}
	if err = t.close(err); err != nil {
		return err
	}
	for _, r := range rows {
		r.member.stored[r.index] = inserted.take(r.workspaceID, r.provider, r.deliveryKey)
	}
	return nil
}

// close closes the transaction's pipeline, which the Sync ended whatever err says, and
// answers err, or the pipeline's own error when err is nil.
func (t *admissionTx) close(err error) error {
	t.ended = true
	if cerr := t.pipe.Close(); err == nil {
		err = cerr
	}
	return err
}

// InjectGroupFault makes every later group transaction of s call f in the middle of its
// pipeline (nil: none). Specs only: a fault that panics proves a group's deliveries are
// answered and its slot freed.
func (s *Store) InjectGroupFault(f func()) {
	if f == nil {
		s.group.fault.Store(nil)
		return
	}
	s.group.fault.Store(&f)
}

// Waiting reports how many deliveries on remembered routes wait for a group transaction.
func (s *Store) Waiting() int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return len(s.group.pending)
}

// Groups reports how many group transactions this store ran on remembered routes, and how
// many deliveries they carried.
func (s *Store) Groups() (transactions, deliveries uint64) {
	return s.group.groups.Load(), s.group.members.Load()
}
