package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// testDatabase is the cluster `make test` (pgcluster) names: a failure under CI without it, a
// skip elsewhere.
func testDatabase(t *testing.T) string {
	admin := os.Getenv("HEPHAESTUS_TEST_DATABASE_URL")
	if admin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("HEPHAESTUS_TEST_DATABASE_URL is not set")
		}
		t.Skip("HEPHAESTUS_TEST_DATABASE_URL is not set (run under go run ./cmd/pgcluster run)")
	}
	return admin
}

// The count phase and the statement floors (pipeline and pipeline mix) run the handlers as the
// server builds them: a handled issues delivery publishes its change, and the count sees one
// round trip, statement and commit per admission insert and one round trip per claim and
// outcome batch.
func TestTheCountedHandlersAreTheServersAndPublishTheirChanges(t *testing.T) {
	admin := testDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, drop, err := createDatabase(ctx, admin, "hx_bench_count_test")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	if err := seedBenchRoute(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	r, closeRig, err := newCountRig(ctx, dbURL, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRig()
	if err := seedPipelineRepos(ctx, r.side); err != nil {
		t.Fatal(err)
	}
	const n = 3
	rows := make([]countRow, n)
	for i := range rows {
		subject := fmt.Sprintf("github:repository:%d", repositoryID+i)
		rows[i] = countRow{provider: "GITHUB", eventType: "issues", subject: subject,
			scopeKey: fmt.Sprintf("ws:%d:%s", r.workspaceID, subject), payload: repoPayload(i+1, i), headers: []byte("{}")}
	}
	parts, err := r.cycle("test", rows, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(countPartsOfCycle) {
		t.Fatalf("%d parts, want %d", len(parts), len(countPartsOfCycle))
	}
	admit, claim, handle, outcome := parts[0].PerItem, parts[1].PerItem, parts[2].PerItem, parts[3].PerItem
	if admit.RoundTrips != n || admit.Statements != n || admit.Commits != n || admit.RowsWritten < n {
		t.Errorf("admission of %d: %+v, want a round trip, a statement, a commit and a row each", n, admit)
	}
	if claim.RoundTrips != 1 || claim.Commits != 1 || outcome.RoundTrips != 1 || outcome.Commits != 1 {
		t.Errorf("claim %+v, outcome %+v: want one round trip and one commit per batch", claim, outcome)
	}
	if handle.Commits < n || handle.RoundTrips <= handle.Commits {
		t.Errorf("handler %+v: want at least a fenced commit per delivery", handle)
	}
	var changes, done int
	if err := r.side.QueryRow(ctx, `SELECT count(*) FROM workspace_change WHERE type = 'github.issue.upserted'`).Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if err := r.side.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'DONE'`).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if changes != n || done != n {
		t.Errorf("%d issue changes published and %d deliveries done, want %d each", changes, done, n)
	}
}
