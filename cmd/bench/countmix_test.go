package main

import (
	"math"
	"testing"
)

// cycleParts is one counted cycle of batch deliveries: admission one round trip each, one claim
// and one outcome for the batch, and handler round trips and WAL bytes per delivery.
func cycleParts(batch, handlerTrips int, handlerWAL int64) []countPart {
	return []countPart{
		{Name: "admission insert", Batch: batch, PerItem: tally{RoundTrips: batch, Statements: batch, Commits: batch, RowsWritten: 2 * batch, WALBytes: 1000 * int64(batch)}},
		{Name: "claim (one batch)", Batch: batch, PerItem: tally{RoundTrips: 1, Statements: 2, Commits: 1, RowsWritten: batch}},
		{Name: "handler (fenced transactions)", Batch: batch, PerItem: tally{RoundTrips: handlerTrips * batch, Statements: handlerTrips * batch, WALBytes: handlerWAL * int64(batch)}},
		{Name: "outcome (one batch)", Batch: batch, PerItem: tally{RoundTrips: 1, Statements: 1, Commits: 1, RowsWritten: 3 * batch}},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestTheMixCountHasOneRowPerEventTypeOfTheMixWithItsWeightAndTheWeightedMeanLast(t *testing.T) {
	var counts []mixCount
	for i, w := range mixWeights {
		counts = append(counts, mixCount{Kind: w.kind, Weight: w.weight, Parts: cycleParts(32, i+1, 100*int64(i+1))})
	}
	table := mixTable(counts)
	if len(table) != len(mixWeights)+1 {
		t.Fatalf("%d rows for %d event types, want one each and the mean", len(table), len(mixWeights))
	}
	total := 0
	for _, w := range mixWeights {
		total += w.weight
	}
	var shares, meanTrips, meanWAL float64
	for i, w := range mixWeights {
		row := table[i]
		if row.Kind != w.kind || row.Weight != w.weight {
			t.Fatalf("row %d is %s weight %d, want %s weight %d", i, row.Kind, row.Weight, w.kind, w.weight)
		}
		if !near(row.Share, float64(w.weight)/float64(total)) {
			t.Errorf("%s: share %v, want %d/%d", w.kind, row.Share, w.weight, total)
		}
		// Per delivery: admission 1, claim 1/32, handler i+1, outcome 1/32.
		trips := 1 + 2.0/32 + float64(i+1)
		if !near(row.Path.RoundTrips, trips) || !near(row.Handler.RoundTrips, float64(i+1)) {
			t.Errorf("%s: %v round trips (handler %v), want %v (handler %d)", w.kind, row.Path.RoundTrips, row.Handler.RoundTrips, trips, i+1)
		}
		if !near(row.Path.RowsWritten, 2+1+3) || !near(row.Path.Commits, 1+2.0/32) {
			t.Errorf("%s: %v rows written, %v commits, want 6 and %v", w.kind, row.Path.RowsWritten, row.Path.Commits, 1+2.0/32)
		}
		if !near(row.Path.WALBytes, 1000+100*float64(i+1)) || row.Batch != 32 {
			t.Errorf("%s: %v WAL bytes, %v rows per claim", w.kind, row.Path.WALBytes, row.Batch)
		}
		if !near(row.Weighted.RoundTrips, row.Share*trips) {
			t.Errorf("%s: weighted %v round trips, want %v", w.kind, row.Weighted.RoundTrips, row.Share*trips)
		}
		shares += row.Share
		meanTrips += row.Share * trips
		meanWAL += row.Share * (1000 + 100*float64(i+1))
	}
	mean := table[len(table)-1]
	if !near(shares, 1) || mean.Weight != total || !near(mean.Share, 1) {
		t.Errorf("shares sum to %v, mean row weight %d share %v", shares, mean.Weight, mean.Share)
	}
	if !near(mean.Path.RoundTrips, meanTrips) || !near(mean.Path.WALBytes, meanWAL) || !near(mean.Weighted.RoundTrips, meanTrips) {
		t.Errorf("mean %v round trips, %v WAL bytes, want %v and %v", mean.Path.RoundTrips, mean.Path.WALBytes, meanTrips, meanWAL)
	}
}

func TestAnEventTypeSeenInSmallerBatchesPaysItsClaimOverFewerDeliveries(t *testing.T) {
	table := mixTable([]mixCount{{Kind: "slack/message", Weight: 1, Parts: cycleParts(10, 5, 0)}})
	if table[0].Batch != 10 || !near(table[0].Path.RoundTrips, 1+2.0/10+5) {
		t.Fatalf("batch %v, %v round trips, want 10 and %v", table[0].Batch, table[0].Path.RoundTrips, 1+2.0/10+5)
	}
}

func TestABatchTakesOneRowPerScopeAndTheNextBatchGoesOnFromThere(t *testing.T) {
	rows := []countRow{{scopeKey: "a", subject: "1"}, {scopeKey: "a", subject: "2"}, {scopeKey: "b", subject: "3"},
		{scopeKey: "c", subject: "4"}, {scopeKey: "b", subject: "5"}}
	cursor := 0
	subjects := func(rs []countRow) (out string) {
		for _, r := range rs {
			out += r.subject
		}
		return out
	}
	if got := subjects(distinctScopes(rows, &cursor, 2)); got != "13" {
		t.Fatalf("first batch %q, want rows 1 and 3 (scopes a, b)", got)
	}
	if got := subjects(distinctScopes(rows, &cursor, 32)); got != "451" {
		t.Fatalf("second batch %q, want rows 4, 5 and 1 (scopes c, b, a: once round, one row per scope)", got)
	}
}
