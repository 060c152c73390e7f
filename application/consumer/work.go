package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// workLoop runs handlers for claimed rows until the claim loop closes r.work. Once ctx ended no
// new handler starts: the row stays held and is released.
func (r *run) workLoop(ctx context.Context) {
	for c := range r.work {
		if ctx.Err() == nil {
			r.handle(c)
		}
		r.mu.Lock()
		r.busy--
		r.mu.Unlock()
		signal(r.slotFreed)
	}
}

func (r *run) handle(cr claimedRow) {
	c := cr.Claimed
	d := c.Delivery
	ack := ports.Ack{ID: d.ID(), Epoch: d.Lease().Epoch()}
	label := d.Provider().Label()
	attempt := d.Attempt()
	// The attempt's span: a child of the trace stored with the row; the handler runs in it.
	sctx, span := r.cfg.Tracer.StartAttempt(r.handlerCtx, c, cr.claimStart, cr.claimEnd)

	var (
		err        error
		deletedOwn bool
	)
	if h, ok := r.handlers.Lookup(d.Provider(), d.EventType()); ok {
		deletedOwn, err = r.dispatch(sctx, h, c, ack, label)
	} // else: nothing to do for this event type; completed and counted as done
	r.held.handlerReturned(ack.ID)

	if err != nil && r.handlerCtx.Err() != nil {
		// The stopping server cancelled this handler: its lease is released without counting the
		// attempt, like a row whose handler never started.
		span.Decided("released", "")
		span.End()
		return
	}
	now := r.clock.Now()
	if err == nil {
		r.contention.ended(ack.ID)
		if cerr := d.Complete(ack.Epoch, now); cerr != nil {
			span.End()
			r.dropInvalid(ports.LoggerIn(sctx, r.log), d, cerr)
			return
		}
		span.Decided(inbox.OutcomeDone.String(), "")
		r.outcomes <- outcome{ack: ack, provider: label, decision: inbox.Completed(), deletedOwn: deletedOwn, span: span}
		return
	}
	dec, ferr := d.FailAfter(ack.Epoch, err, r.policy, r.contention.streak(ack.ID, now), now)
	if ferr != nil {
		span.End()
		r.dropInvalid(ports.LoggerIn(sctx, r.log), d, ferr)
		return
	}
	span.Decided(dec.Outcome().String(), dec.Class().String())
	if dec.Class() == inbox.Contention {
		r.contention.contended(ack.ID, now)
	} else {
		r.contention.ended(ack.ID)
	}
	r.logFailure(ports.LoggerIn(sctx, r.log), d, attempt, err, dec)
	if dec.Outcome() == inbox.OutcomeDropped {
		span.End()
		r.held.drop(ack.ID) // nothing is written: the row is another lease's, or gone
		r.metrics.Dropped(label, dec.DropReason())
		r.metrics.Handled(label, inbox.OutcomeDropped.String())
		return
	}
	r.outcomes <- outcome{ack: ack, provider: label, decision: dec, span: span}
}

// dispatch runs the handler with its own context: the handler timeout, and whatever
// DispatchContext binds (the step runner's dispatch identity). The context ends when handling
// returns, so no asynchronous work can carry it further. deletedOwn reports whether a committed
// step deleted the delivery's own row on purpose.
func (r *run) dispatch(ctx context.Context, h ports.Handler, c ports.Claimed, ack ports.Ack, label string) (deletedOwn bool, err error) {
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, r.timing.HandlerTimeout())
	defer cancel()
	if r.cfg.DispatchContext != nil {
		hctx = r.cfg.DispatchContext(hctx, c)
	}
	r.held.started(ack.ID, start.Add(r.timing.HandlerTimeout()))
	err = callHandler(hctx, h, ports.Dispatch{
		Delivery: c.Delivery, WorkspaceID: c.Delivery.WorkspaceID(), Payload: c.Payload, Headers: c.Headers,
	})
	r.metrics.HandlerDuration(hctx, label, time.Since(start))
	// A fence rejection the handler caught still reaches the outcome: a nil after a rejected
	// write is judged as that rejection (retried, or dropped as erased or lease-lost), never DONE
	// with a step unfinished.
	memory := dispatch.FenceRejectionsFrom(hctx)
	return memory.DeletedOwnEvent(), memory.Verdict(err)
}

// dropInvalid handles a domain refusal on the claimer's own copy, which holds the lease it was
// claimed with; it means a bug, so the row is left to its lease and the reaper.
func (r *run) dropInvalid(log ports.Logger, d inbox.Delivery, err error) {
	r.held.drop(d.ID())
	log.Errorw("claimed delivery refused its own outcome", "owner", r.cfg.Owner, "id", d.ID(),
		"causeTypes", inbox.CauseTypes(err))
}

// logFailure logs a failed attempt without its message (which can carry payload fragments or
// credentials): sanitized cause types and frames on the first attempt and when the row dies,
// contention at DEBUG.
func (r *run) logFailure(log ports.Logger, d inbox.Delivery, attempt int, err error, dec inbox.Decision) {
	kv := []any{"owner", r.cfg.Owner, "id", d.ID(), "provider", d.Provider().Label(),
		"eventType", d.EventType(), "attempt", attempt, "class", dec.Class().String()}
	detail := func() []any {
		out := append(kv, "causeTypes", inbox.CauseTypes(err))
		var p *inbox.PanicError
		if errors.As(err, &p) {
			out = append(out, "frames", p.Frames)
		}
		return out
	}
	switch {
	case dec.Class() == inbox.Contention:
		log.Debugw("delivery busy; retried shortly in order", append(kv, "dueAt", dec.DueAt())...)
	case dec.Outcome() == inbox.OutcomeDead:
		log.Errorw("delivery dead", append(detail(), "errorClass", dec.ErrorClass())...)
	case dec.Outcome() == inbox.OutcomeDropped:
		log.Infow("delivery dropped", append(kv, "reason", dec.DropReason())...)
	case attempt <= 1:
		log.Warnw("delivery failed on its first attempt; retried", append(detail(), "dueAt", dec.DueAt())...)
	default:
		log.Infow("delivery failed; retried", append(kv, "dueAt", dec.DueAt())...)
	}
}
