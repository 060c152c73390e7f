package deliveryinbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// claimSteps records several named steps in the business transaction in one statement, as
// claimStep records one: a step committed by an earlier attempt returns no row. The rows are
// inserted in name order, so two claimers of overlapping steps take the primary key's locks in
// the same order: one waits for the other, never both for each other. A concurrent claimer of a
// single step holds one step row and waits for none of ours.
const claimSteps = `
INSERT INTO provider_event_step (event_id, step_name)
SELECT $1, s FROM unnest($2::text[]) AS u(s) ORDER BY s
ON CONFLICT DO NOTHING
RETURNING step_name`

// Steps runs fn with the claims of steps in one fenced transaction (see ports.DeliveryInbox):
// BEGIN and the fences (one round trip), the claims (one), fn's statements, and the recheck
// with COMMIT (one). Outside dispatch it runs fn in a plain transaction with every distinct
// step claimed and records no step row.
func (in *Inbox) Steps(ctx context.Context, steps []inbox.Step, fn func(ctx context.Context, tx ports.Tx, claimed []bool) error) (ran int, err error) {
	var first inbox.Step
	if len(steps) > 0 {
		first = steps[0]
	}
	ctx, span := startStep(ctx, "inbox.steps", first)
	defer func() { endStep(span, ran > 0, err) }()
	if len(steps) == 0 {
		return 0, nil
	}
	names := make([]string, 0, len(steps))
	seen := make(map[string]bool, len(steps))
	for _, s := range steps {
		if s.IsZero() {
			return 0, fmt.Errorf("inbox steps: %w: empty name", inbox.ErrInvalidStepName)
		}
		if !seen[s.String()] {
			seen[s.String()] = true
			names = append(names, s.String())
		}
	}
	// claimedOf marks each step whose name got is true for, a repeated name only once.
	claimedOf := func(got map[string]bool) ([]bool, int) {
		claimed, n := make([]bool, len(steps)), 0
		for i, s := range steps {
			if got[s.String()] {
				claimed[i], got[s.String()] = true, false
				n++
			}
		}
		return claimed, n
	}
	f, fenced := dispatch.DispatchFrom(ctx)
	if !fenced {
		claimed, n := claimedOf(seen)
		if err := in.plain(ctx, func(ctx context.Context, tx ports.Tx) error { return fn(ctx, tx, claimed) }); err != nil {
			return 0, err
		}
		return n, nil
	}
	err = in.fenced(ctx, f, inbox.Step{}, func(ctx context.Context, tx ports.Tx) error {
		ptx, err := sqlkit.PgxTx(tx)
		if err != nil {
			return err
		}
		rows, err := ptx.Query(ctx, claimSteps, f.EventID(), names)
		if err != nil {
			return sqlkit.Interpret("claim steps", err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return sqlkit.Interpret("claim steps", err)
		}
		set := make(map[string]bool, len(got))
		for _, g := range got {
			set[g] = true
		}
		var claimed []bool
		claimed, ran = claimedOf(set)
		if ran == 0 {
			return errStepCommitted
		}
		return fn(ctx, tx, claimed)
	})
	if errors.Is(err, errStepCommitted) {
		return 0, nil
	}
	if err != nil {
		dispatch.RecordFenceRejection(ctx, err)
		return 0, err
	}
	return ran, nil
}
