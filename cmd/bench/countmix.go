package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The count phase over the pipeline mix (`bench -phase count -count-mix`): the same per-part
// counts as for `issues` (count.go), for every event type of the mix. A serve child first
// creates the mix's connections (prepareMix, as the pipeline mix row does) and handles each of
// the mix's deliveries once, so the mirrors hold the mix's objects as in a running mix, whose
// deliveries cycle through its templates. The rows admission stored for them are then admitted
// again under new keys on the traced connection, one event type at a time, and claimed,
// handled by the handlers as bootstrap wires them (servedRegistry) and completed, in batches
// of rows of distinct scopes as admission scoped them (at most countBatch: a Slack channel, a
// GitLab project or a GitHub repository holds one leased row at a time).

// mixCountKey prefixes the delivery keys of the mix's first handling.
const mixCountKey = "countmix-"

// mixCount is the counts of one event type of the mix.
type mixCount struct {
	Kind   string      `json:"kind"`
	Weight int         `json:"weight"`
	Parts  []countPart `json:"parts"`
}

// perDelivery is a count per delivery.
type perDelivery struct {
	RoundTrips  float64 `json:"roundTrips"`
	Statements  float64 `json:"statements"`
	Commits     float64 `json:"commits"`
	RowsWritten float64 `json:"rowsWritten"`
	WALBytes    float64 `json:"walBytes"`
}

func perDeliveryOf(p countPart) perDelivery {
	n := float64(max(p.Batch, 1))
	t := p.PerItem
	return perDelivery{RoundTrips: float64(t.RoundTrips) / n, Statements: float64(t.Statements) / n,
		Commits: float64(t.Commits) / n, RowsWritten: float64(t.RowsWritten) / n, WALBytes: float64(t.WALBytes) / n}
}

func (a perDelivery) plus(b perDelivery) perDelivery {
	return perDelivery{RoundTrips: a.RoundTrips + b.RoundTrips, Statements: a.Statements + b.Statements,
		Commits: a.Commits + b.Commits, RowsWritten: a.RowsWritten + b.RowsWritten, WALBytes: a.WALBytes + b.WALBytes}
}

func (a perDelivery) times(f float64) perDelivery {
	return perDelivery{RoundTrips: a.RoundTrips * f, Statements: a.Statements * f, Commits: a.Commits * f,
		RowsWritten: a.RowsWritten * f, WALBytes: a.WALBytes * f}
}

// mixTableRow is one line of the mix's count table: an event type's whole path and handler
// per delivery, and its weighted contribution to the mix's mean delivery.
type mixTableRow struct {
	Kind    string      `json:"kind"`
	Weight  int         `json:"weight"`
	Share   float64     `json:"share"` // of the mix's deliveries
	Batch   float64     `json:"batch"` // mean rows per claim
	Path    perDelivery `json:"path"`  // admission, claim, handler and outcome
	Handler perDelivery `json:"handler"`
	// Weighted is Share × Path: the event type's part of the mix's mean delivery.
	Weighted perDelivery `json:"weighted"`
}

// mixTable makes the table of counts: one row per event type in the mix's order, and last the
// mix's mean delivery (the sum of the weighted rows; Kind "mix (weighted mean)").
func mixTable(counts []mixCount) []mixTableRow {
	total := 0
	for _, c := range counts {
		total += c.Weight
	}
	rows := make([]mixTableRow, 0, len(counts)+1)
	mean := mixTableRow{Kind: "mix (weighted mean)", Weight: total, Share: 1}
	for _, c := range counts {
		row := mixTableRow{Kind: c.Kind, Weight: c.Weight, Share: float64(c.Weight) / float64(max(total, 1))}
		for i, p := range c.Parts {
			d := perDeliveryOf(p)
			row.Path = row.Path.plus(d)
			if i == 2 { // countPartsOfCycle: the handler
				row.Handler = d
			}
			if i == 1 && p.PerItem.RoundTrips > 0 {
				row.Batch = float64(p.Batch) / float64(p.PerItem.RoundTrips) // one round trip per claim
			}
		}
		row.Weighted = row.Path.times(row.Share)
		mean.Path = mean.Path.plus(row.Weighted)
		mean.Handler = mean.Handler.plus(row.Handler.times(row.Share))
		mean.Batch += row.Batch * row.Share
		rows = append(rows, row)
	}
	mean.Weighted = mean.Path
	return append(rows, mean)
}

// distinctScopes picks the batch of cycle c from rows: rows of distinct scope keys, at most
// limit, starting where the previous cycle stopped (cursor) and going round the rows once.
func distinctScopes(rows []countRow, cursor *int, limit int) []countRow {
	seen := map[string]bool{}
	var out []countRow
	for range rows {
		row := rows[*cursor%len(rows)]
		*cursor++
		if seen[row.scopeKey] {
			continue
		}
		seen[row.scopeKey] = true
		out = append(out, row)
		if len(out) == limit {
			break
		}
	}
	return out
}

// prepareCountMix builds the mix, has a serve child on dbURL create its connections and handle
// each of its deliveries once, and returns the rows admission stored for them by kind.
func prepareCountMix(ctx context.Context, dbURL string) (map[string][]countRow, error) {
	mix, err := buildMix(mixCorpusDir(mixSettings.corpus), mixSettings.seed)
	if err != nil {
		return nil, err
	}
	pool, err := openPool(ctx, dbURL, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := seedPipelineRepos(ctx, pool); err != nil {
		return nil, err
	}
	server, err := startServeChild(ctx, dbURL, nil, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = server.stop() }()
	if err := prepareMix(ctx, pool, server.addr, mix); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "count mix: %d deliveries of%s, each handled once by a server first…\n", len(mix), mixShares(mix))
	s := &mixSender{rawConn: rawConn{addr: server.addr}}
	for i, d := range mix {
		if err := s.deliver(d, mixCountKey+strconv.Itoa(i)); err != nil {
			s.close()
			return nil, err
		}
	}
	s.close()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		n, err := backlogOf(ctx, pool)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the server left %d of the mix's deliveries unhandled in 5 minutes", n)
		}
	}
	if _, err := server.stop(); err != nil {
		return nil, fmt.Errorf("serve child: %w", err)
	}
	rows, err := pool.Query(ctx, `
SELECT delivery_key, state, provider, event_type, subject, scope_key, payload, headers
FROM provider_event WHERE delivery_key LIKE '%' || $1 || '%' ORDER BY id`, mixCountKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]countRow{}
	stored := 0
	for rows.Next() {
		var key, state string
		var r countRow
		if err := rows.Scan(&key, &state, &r.provider, &r.eventType, &r.subject, &r.scopeKey, &r.payload, &r.headers); err != nil {
			return nil, err
		}
		if state != "DONE" {
			return nil, fmt.Errorf("the server ended %s %s (%s), not DONE", r.provider, r.eventType, state)
		}
		_, n, _ := strings.Cut(key, mixCountKey)
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= len(mix) {
			return nil, fmt.Errorf("stored delivery key %q is not one of the mix's", key)
		}
		out[mix[i].kind] = append(out[mix[i].kind], r)
		stored++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if stored != len(mix) {
		return nil, fmt.Errorf("stored %d of the mix's %d deliveries", stored, len(mix))
	}
	return out, nil
}

// countMix measures every event type of the mix over its stored rows (prepareCountMix): one
// uncounted warm-up cycle, then cycles counted ones each.
func (r *countRig) countMix(stored map[string][]countRow, cycles int) error {
	var counts []mixCount
	for _, w := range mixWeights {
		rows := stored[w.kind]
		if len(rows) == 0 {
			return fmt.Errorf("the mix stored no %s delivery", w.kind)
		}
		cursor := 0
		parts, err := r.cycles(w.kind, 1, cycles, func(int) []countRow {
			return distinctScopes(rows, &cursor, countBatch)
		}, true)
		if err != nil {
			return err
		}
		counts = append(counts, mixCount{Kind: w.kind, Weight: w.weight, Parts: parts})
	}
	table := mixTable(counts)
	printMixCount(table)
	if r.verbose {
		for _, c := range counts {
			fmt.Fprintf(os.Stderr, "\n%s (statements of one delivery and of its claim and outcome batches, numbered by round trip)\n", c.Kind)
			printCount(c.Parts, true, 200)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(struct {
		Table  []mixTableRow `json:"mixTable"`
		Counts []mixCount    `json:"mixCounts"`
	}{table, counts})
}

func printMixCount(table []mixTableRow) {
	fmt.Fprintln(os.Stderr, "\nper delivery (whole path: admission, claim, handler, outcome; handler alone) | weight | share | rows per claim | round trips | statements | commits | rows written | WAL bytes | handler round trips | handler statements | handler commits | handler rows | handler WAL bytes | weighted round trips | weighted WAL bytes")
	fmt.Fprintln(os.Stderr, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range table {
		fmt.Fprintf(os.Stderr, "| %s | %d | %.1f %% | %.1f | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f | %.0f |\n",
			t.Kind, t.Weight, 100*t.Share, t.Batch, t.Path.RoundTrips, t.Path.Statements, t.Path.Commits, t.Path.RowsWritten,
			t.Path.WALBytes, t.Handler.RoundTrips, t.Handler.Statements, t.Handler.Commits, t.Handler.RowsWritten,
			t.Handler.WALBytes, t.Weighted.RoundTrips, t.Weighted.WALBytes)
	}
}
