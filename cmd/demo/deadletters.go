package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// deadLetters prints the workspace's dead letters, finds the broken delivery's row by its
// delivery key through the deliveries browser, and returns its dead letter.
func (d *demo) deadLetters(ctx context.Context) (*hxapi.DeadLetter, error) {
	r, err := d.api.hx.ListDeadLettersWithResponse(ctx, d.s.slug, nil)
	if err := outcome("listDeadLetters", r, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	if r.JSON200 == nil {
		return nil, errNoAnswer("listDeadLetters")
	}
	list := r.JSON200.Items
	d.printf("\nDead letters of %s:\n", d.s.slug)
	d.printDead(list)
	badKey := ""
	if len(d.badKeys) > 0 {
		badKey = d.badKeys[len(d.badKeys)-1]
	}
	var bad *hxapi.DeadLetter
	for i, dl := range list {
		if dl.DeliveryKey == badKey {
			bad = &list[i]
		}
	}
	d.expect(len(list) == 1, "dead letters: %d, want exactly 1 (the broken delivery)", len(list))
	d.expect(bad != nil, "dead letters: the broken GitHub issues delivery %s is not among them", short(badKey))
	if bad == nil {
		return nil, nil
	}
	d.expect(bad.Attempts == 1, "dead letter %d: %d attempts, want 1 (a payload that cannot be decoded is not retried)", bad.Id, bad.Attempts)

	// What an operator does with the provider's delivery id: find the row, then its trace.
	found, err := d.api.hx.ListDeliveriesWithResponse(ctx, d.s.slug, &hxapi.ListDeliveriesParams{DeliveryKey: &badKey})
	if err := outcome("listDeliveries", found, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("find delivery %s: %w", short(badKey), err)
	}
	if found.JSON200 == nil {
		return nil, errNoAnswer("listDeliveries")
	}
	rows := found.JSON200.Items
	if !d.expect(len(rows) == 1 && rows[0].Id == bad.Id, "deliveries with deliveryKey %s: %d rows, want only row %d", short(badKey), len(rows), bad.Id) {
		return bad, nil
	}
	detail, err := d.api.hx.GetDeliveryWithResponse(ctx, d.s.slug, strconv.Itoa(bad.Id))
	if err := outcome("getDelivery", detail, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("read delivery %d: %w", bad.Id, err)
	}
	if detail.JSON200 == nil {
		return nil, errNoAnswer("getDelivery")
	}
	trace := "none (this server traces nothing)"
	if detail.JSON200.TraceId != nil {
		trace = *detail.JSON200.TraceId
	}
	d.printf("Found by its provider delivery id (GET …/deliveries?deliveryKey=%s): row %d, %s, %d attempt(s), trace id %s\n",
		short(badKey), detail.JSON200.Id, detail.JSON200.State, len(detail.JSON200.Attempts), trace)
	return bad, nil
}

// printDead prints the dead letters as a table.
func (d *demo) printDead(items []hxapi.DeadLetter) {
	tw := d.table()
	fmt.Fprintln(tw, "  ID\tPROVIDER\tEVENT\tDELIVERY KEY\tERROR CLASS\tATTEMPTS\tDEAD AT")
	for _, dl := range items {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", dl.Id, dl.Provider, dl.EventType, short(dl.DeliveryKey),
			dl.ErrorClass, dl.Attempts, timestamp(dl.DeadAt))
	}
	if len(items) == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	_ = tw.Flush()
}

// replay sends the dead letter back to QUEUED, waits for the claimers and shows its new end.
func (d *demo) replay(ctx context.Context, dead hxapi.DeadLetter) error {
	id := strconv.Itoa(dead.Id)
	d.printf("\nReplaying dead letter %d: ", dead.Id)
	replayed, err := d.api.hx.ReplayDeadLetterWithResponse(ctx, d.s.slug, id)
	if err := outcome("replayDeadLetter", replayed, err, http.StatusOK); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", dead.Id, err)
	}
	if replayed.JSON200 == nil {
		return errNoAnswer("replayDeadLetter")
	}
	r := *replayed.JSON200
	by := "the instance administrator's token"
	if r.ReplayedByPrincipal != nil && *r.ReplayedByPrincipal == hxapi.ReplayedReplayedByPrincipalACCOUNT && r.ReplayedBy != nil {
		by = fmt.Sprintf("account %d", *r.ReplayedBy)
	}
	d.printf("answered %s (replayed by %s at %s)\n", r.State, by, r.ReplayedAt.Format(time.RFC3339))
	d.expect(r.State == hxapi.ReplayedStateQUEUED, "replay of %d answered state %s, want QUEUED", dead.Id, r.State)

	d.printf("Waiting for the claimers (at most %s) ... ", d.cfg.Wait)
	in, took, err := d.waitDrained(ctx)
	if err != nil {
		d.printf("\n")
		return err
	}
	d.printf("nothing QUEUED or LEASED after %s\n", took.Round(10*time.Millisecond))

	read, err := d.api.hx.GetDeadLetterWithResponse(ctx, d.s.slug, id)
	err = outcome("getDeadLetter", read, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) {
		d.expect(false, "dead letter %d is no longer DEAD after its replay, but its payload cannot be handled", dead.Id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read dead letter %d: %w", dead.Id, err)
	}
	if read.JSON200 == nil {
		return errNoAnswer("getDeadLetter")
	}
	again := *read.JSON200
	d.printf("Its new outcome: DEAD again after %d attempt(s), error class %s, dead at %s (first time: %s).\n",
		again.Attempts, again.ErrorClass, timestamp(again.DeadAt), timestamp(dead.DeadAt))
	d.printf("Inbox now:  QUEUED %d  LEASED %d  DONE %d  DEAD %d\n",
		in.Counts.QUEUED, in.Counts.LEASED, in.Counts.DONE, in.Counts.DEAD)
	d.printf("This is the expected end. The cause of this dead letter is in its payload (its \"issue\" is a string,\n" +
		"not an object), and a replay hands the same payload to the same handler, so it dies again. A replay\n" +
		"helps after fixing a cause outside the payload (a handler bug, a missing connection); this one can\n" +
		"only be fixed by the sender.\n")
	// The replay answered QUEUED, the claimers then left nothing QUEUED or LEASED, and the
	// dead-letter read finds only DEAD rows: so the row was handled again and died again.
	d.expect(again.Attempts == 1, "dead letter %d after replay: %d attempts, want 1 (replay restarts at attempt 0)", dead.Id, again.Attempts)
	d.expect(in.Counts.DEAD == 1 && in.Counts.DONE == d.good,
		"inbox after replay: %d DONE and %d DEAD, want %d and 1", in.Counts.DONE, in.Counts.DEAD, d.good)
	return nil
}

// timestamp prints a nullable timestamp of an answer.
func timestamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
