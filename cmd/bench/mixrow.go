package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type pipelineMixResult struct {
	Seconds          int     `json:"seconds"`
	HandledPerSecond float64 `json:"handledPerSecond"`
	P99Ms            float64 `json:"p99Ms"`
	PeakRssBytes     int64   `json:"peakRssBytes"`
	// backlogAtEnd and senders are printed, not part of the contract's JSON.
	backlogAtEnd, senders int
}

type pipelineMixFloorResult struct {
	PerSecond float64 `json:"perSecond"`
}

// storedMixRows reads the rows a pipeline mix round stored, as admission stored them (without
// the Slack joins of its preparation): the pipeline mix floor inserts exactly these.
func storedMixRows(ctx context.Context, pool *pgxpool.Pool) ([]floorRow, error) {
	rows, err := pool.Query(ctx, `
SELECT provider, event_type, subject, payload, headers FROM provider_event
WHERE event_type <> 'member_joined_channel' ORDER BY id LIMIT $1`, mixTemplates)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []floorRow
	for rows.Next() {
		var r floorRow
		if err := rows.Scan(&r.provider, &r.eventType, &r.subject, &r.payload, &r.headers); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// benchPipelineMixAndFloor alternates pipeline rounds fed with the mix and pipeline floor
// rounds inserting the rows the first mix round stored, seconds each.
func benchPipelineMixAndFloor(ctx context.Context, dbURL string, senders, seconds, rounds int, mix []mixDelivery) (pipelineMixResult, pipelineMixFloorResult, error) {
	pool, err := openPool(ctx, dbURL, int32(senders+pipelineClaimers+4))
	if err != nil {
		return pipelineMixResult{}, pipelineMixFloorResult{}, err
	}
	defer pool.Close()
	if err := seedPipelineRepos(ctx, pool); err != nil {
		return pipelineMixResult{}, pipelineMixFloorResult{}, fmt.Errorf("seed repositories: %w", err)
	}
	var (
		res         = pipelineMixResult{Seconds: seconds, senders: senders}
		latencies   []time.Duration
		floorRows   []floorRow
		floorDone   int
		floorTime   time.Duration
		handledRate float64
		feed        = mixFeed(mix)
	)
	for round := 1; round <= rounds; round++ {
		p, _, l, err := pipelineRound(ctx, dbURL, pool, senders, seconds, feed)
		if err != nil {
			return pipelineMixResult{}, pipelineMixFloorResult{}, fmt.Errorf("pipeline mix round %d: %w", round, err)
		}
		if floorRows == nil {
			if floorRows, err = storedMixRows(ctx, pool); err != nil {
				return pipelineMixResult{}, pipelineMixFloorResult{}, err
			}
			if len(floorRows) == 0 {
				return pipelineMixResult{}, pipelineMixFloorResult{}, fmt.Errorf("pipeline mix round %d stored nothing", round)
			}
		}
		n, d, err := pipelineFloorRound(ctx, dbURL, pool, senders, pipelineClaimers, seconds, floorRows, false)
		if err != nil {
			return pipelineMixResult{}, pipelineMixFloorResult{}, fmt.Errorf("pipeline mix floor round %d: %w", round, err)
		}
		floorRate := float64(n) / d.Seconds()
		fmt.Fprintf(os.Stderr, "  round %d: pipeline mix %.0f handled/s, backlog at end %d, peak RSS %.0f MiB; floor %.0f/s; ratio %.2f\n",
			round, p.HandledPerSecond, p.BacklogAtEnd, float64(p.PeakRssBytes)/(1<<20), floorRate, ratioOf(p.HandledPerSecond, floorRate))
		handledRate += p.HandledPerSecond / float64(rounds)
		latencies = append(latencies, l...)
		floorDone += n
		floorTime += d
		res.backlogAtEnd = p.BacklogAtEnd
		res.PeakRssBytes = max(res.PeakRssBytes, p.PeakRssBytes)
	}
	slices.Sort(latencies)
	res.HandledPerSecond = handledRate
	if len(latencies) > 0 {
		res.P99Ms = ms(latencies[len(latencies)*99/100])
	}
	return res, pipelineMixFloorResult{PerSecond: float64(floorDone) / floorTime.Seconds()}, nil
}

// mixShares describes the mix for the log: the share of each provider among its deliveries.
func mixShares(mix []mixDelivery) string {
	count := map[string]int{}
	for _, d := range mix {
		count[d.provider]++
	}
	out := ""
	for _, p := range []string{"GITHUB", "GITLAB", "SLACK", "OUTLINE"} {
		out += fmt.Sprintf(" %s %.0f %%", p, 100*float64(count[p])/float64(len(mix)))
	}
	return out
}

// mixSettings are the knobs of the mix (flags of main).
var mixSettings struct {
	corpus string
	seed   uint64
	rounds int
}

func printMixRows(r results) {
	fmt.Printf("| pipeline mix | %d s, %d senders, all four providers | %8.0f handled/s, p99 %.1f ms, backlog at end %d, peak RSS %.0f MiB |\n",
		r.PipelineMix.Seconds, r.PipelineMix.senders, r.PipelineMix.HandledPerSecond, r.PipelineMix.P99Ms,
		r.PipelineMix.backlogAtEnd, float64(r.PipelineMix.PeakRssBytes)/(1<<20))
	fmt.Printf("| pipeline mix floor | same statements, same rows | %8.0f deliveries/s; pipeline mix / floor %.2f |\n",
		r.PipelineMixFloor.PerSecond, ratioOf(r.PipelineMix.HandledPerSecond, r.PipelineMixFloor.PerSecond))
}
