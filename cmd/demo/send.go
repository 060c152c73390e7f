package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// sendResult is what a delivery got; the table and the checks read it.
type sendResult struct {
	delivery
	sent
}

// send posts every delivery, signed as its provider signs it, and checks each answer.
func (d *demo) send(ctx context.Context, ds []delivery) {
	d.printf("\nDeliveries sent (signed as each provider signs them):\n")
	tw := d.table()
	fmt.Fprintln(tw, "  #\tPROVIDER\tEVENT\tDELIVERY KEY\tHTTP\tANSWER\tEXPECTED OUTCOME")
	first := map[string]int{} // delivery key → number of its first sending
	hinted := map[string]bool{}
	for i, dl := range ds {
		if _, ok := first[dl.key]; !ok {
			first[dl.key] = i + 1
		}
		r := sendResult{delivery: dl, sent: d.api.post(ctx, dl.path, dl.body, dl.headers(dl.body))}
		answer := ""
		switch {
		case r.Err != nil:
			answer = r.Err.Error()
		case r.Answer.Error != "":
			answer = "error " + r.Answer.Error
		case r.Answer.Status == "dropped":
			answer = "dropped: " + r.Answer.Reason
		default:
			answer = fmt.Sprintf("%s stored=%d duplicates=%d", r.Answer.Status, r.Answer.Stored, r.Answer.Duplicates)
		}
		wantStored, wantDup, want := 1, 0, "stored once, then DONE"
		switch {
		case dl.bad:
			want = "stored once, then DEAD"
		case dl.duplicate:
			wantStored, wantDup, want = 0, 1, fmt.Sprintf("nothing stored: duplicate of #%d", first[dl.key])
		}
		ok := r.Err == nil && r.HTTPStatus == http.StatusAccepted && r.Answer.Status == "accepted" &&
			r.Answer.Stored == wantStored && r.Answer.Duplicates == wantDup
		mark := want
		if !ok {
			mark = "NO, wanted " + want
			h := ""
			if !hinted[dl.provider] {
				h, hinted[dl.provider] = hint(dl.provider, r.HTTPStatus), true
			}
			d.expect(false, "%s %s: answered %d %s, wanted 202 accepted stored=%d duplicates=%d%s",
				dl.provider, dl.event, r.HTTPStatus, answer, wantStored, wantDup, h)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d\t%s\t%s\n", i+1, dl.provider, dl.event, short(dl.key), r.HTTPStatus, answer, mark)
	}
	_ = tw.Flush()
}

// hint says what a refusal of the demo's delivery most likely means.
func hint(provider string, status int) string {
	if status != http.StatusUnauthorized {
		return ""
	}
	switch provider {
	case "GITHUB":
		return " (the server's " + envGitHubWebhookSecret + " is not the demo's: run both through make, or export the same value)"
	case "SLACK":
		return " (the server's " + envSlackSigningSecret + " is not the demo's: run both through make, or export the same value)"
	}
	return ""
}

// waitDrained polls the workspace's inbox counts until nothing is QUEUED or LEASED, at most
// cfg.Wait.
func (d *demo) waitDrained(ctx context.Context) (hxapi.Inbox, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d.cfg.Wait)
	for {
		r, err := d.api.hx.GetInboxCountsWithResponse(ctx, d.s.slug)
		if err := outcome("getInboxCounts", r, err, http.StatusOK); err != nil {
			return hxapi.Inbox{}, time.Since(start), fmt.Errorf("read the inbox: %w", err)
		}
		if r.JSON200 == nil {
			return hxapi.Inbox{}, time.Since(start), errNoAnswer("getInboxCounts")
		}
		in := *r.JSON200
		if in.Counts.QUEUED == 0 && in.Counts.LEASED == 0 {
			return in, time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return in, time.Since(start), fmt.Errorf("the claimers did not finish within %s: still %d QUEUED and %d LEASED "+
				"(oldest queued %ds; is the server's consumer running?)", d.cfg.Wait, in.Counts.QUEUED, in.Counts.LEASED, in.OldestQueuedAgeSeconds)
		}
		select {
		case <-ctx.Done():
			return in, time.Since(start), ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
}

// printInbox prints the inbox counts beside the expected ones and checks them.
func (d *demo) printInbox(in hxapi.Inbox) {
	bad := len(d.badKeys)
	d.printf("Inbox of %s (GET …/integration/inbox), rows by state:\n", d.s.slug)
	tw := d.table()
	fmt.Fprintln(tw, "  \tQUEUED\tLEASED\tDONE\tDEAD\t")
	fmt.Fprintf(tw, "  now\t%d\t%d\t%d\t%d\t\n", in.Counts.QUEUED, in.Counts.LEASED, in.Counts.DONE, in.Counts.DEAD)
	fmt.Fprintf(tw, "  expected\t0\t0\t%d\t%d\t(one row per stored delivery; the redelivery added none)\n", d.good, bad)
	_ = tw.Flush()
	d.expect(in.Counts.DONE == d.good, "inbox: %d rows DONE, want %d (one per good delivery)", in.Counts.DONE, d.good)
	d.expect(in.Counts.DEAD == bad, "inbox: %d rows DEAD, want %d (the broken delivery)", in.Counts.DEAD, bad)
}
