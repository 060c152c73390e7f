package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

func printSoak(minutes []soakMinute) {
	fmt.Println()
	fmt.Println("| min | handled/s | late | p50 ms | p99 ms | backlog | retention rows | retention ms | longest batch ms | inbox MiB | mirror MiB | dead tuples | RSS MiB | goroutines | checkpoints | autovacuums |")
	fmt.Println("|----:|----------:|-----:|-------:|-------:|--------:|---------------:|-------------:|-----------------:|----------:|-----------:|------------:|--------:|-----------:|------------:|------------:|")
	for i, m := range minutes {
		fmt.Printf("| %3d | %9.0f | %4d | %6.1f | %6.1f | %7d | %14d | %12d | %16d | %9.1f | %10.1f | %11d | %7.1f | %10d | %11d | %11d |\n",
			i+1, m.HandledPerSecond, m.late, m.P50Ms, m.P99Ms, m.Backlog, m.RetentionDeleted, m.RetentionMs, m.longestBatchMs,
			float64(m.InboxBytes)/(1<<20), float64(m.MirrorBytes)/(1<<20), m.DeadTuples, float64(m.RssBytes)/(1<<20), m.Goroutines,
			m.checkpoints, m.autovacuums)
	}
}

// verdict is one flatness criterion judged on the soak's minutes.
type verdict struct {
	name, detail string
	holds        bool
}

// judgeFlatness judges the flatness criteria after the first (warm-up) minute: the
// handled rate and p99 admission latency of the last k minutes against the first k (k a third
// of the minutes after the warm-up, at least one), the inbox's growth over the last third, RSS
// growth per minute (least-squares slope after the warm-up) and goroutines (the last minute's
// against the first's after the warm-up, with a margin of 10 % and 5).
func judgeFlatness(minutes []soakMinute) []verdict {
	after := minutes[1:]
	k := max(1, len(after)/3)
	first, last := after[:k], after[len(after)-k:]
	mean := func(ms []soakMinute, f func(soakMinute) float64) float64 {
		s := 0.0
		for _, m := range ms {
			s += f(m)
		}
		return s / float64(len(ms))
	}
	handled := func(m soakMinute) float64 { return m.HandledPerSecond }
	p99 := func(m soakMinute) float64 { return m.P99Ms }
	rateRatio := mean(last, handled) / mean(first, handled)
	p99Ratio := mean(last, p99) / mean(first, p99)
	third := minutes[len(minutes)-1-max(2, len(minutes)/3):]
	inboxGrowth := float64(third[len(third)-1].InboxBytes)/float64(third[0].InboxBytes) - 1
	rssSlope := slope(after, func(m soakMinute) float64 { return float64(m.RssBytes) })
	g0, g1 := after[0].Goroutines, after[len(after)-1].Goroutines
	return []verdict{
		{"handled rate of the last minutes ≥ 0.9 × the first", fmt.Sprintf("%.2f (%.0f → %.0f /s)", rateRatio, mean(first, handled), mean(last, handled)), rateRatio >= 0.9},
		{"p99 admission of the last minutes ≤ 1.5 × the first", fmt.Sprintf("%.2f (%.1f → %.1f ms)", p99Ratio, mean(first, p99), mean(last, p99)), p99Ratio <= 1.5},
		{"inbox (provider_event and kin) growth over the last third < 10 %", fmt.Sprintf("%+.1f %% (%.1f → %.1f MiB)", 100*inboxGrowth,
			float64(third[0].InboxBytes)/(1<<20), float64(third[len(third)-1].InboxBytes)/(1<<20)), inboxGrowth < 0.10},
		{"RSS grows less than 1 MiB a minute", fmt.Sprintf("%+.2f MiB/min", rssSlope/(1<<20)), rssSlope < 1<<20},
		{"goroutines stay flat", fmt.Sprintf("%d → %d", g0, g1), g0 >= 0 && float64(g1) <= 1.1*float64(g0)+5},
	}
}

// slope is the least-squares slope of f over the minutes, per minute.
func slope(ms []soakMinute, f func(soakMinute) float64) float64 {
	n := float64(len(ms))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, m := range ms {
		x, y := float64(i), f(m)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// soakChart draws the minutes as four small panels (handled/s, p99 admission, inbox MiB, server
// RSS MiB) in one SVG.
func soakChart(minutes []soakMinute, rate float64) []byte {
	const (
		pw, ph       = 300.0, 150.0 // panel plot area
		left, top    = 56.0, 40.0
		gapX, gapY   = 90.0, 80.0
		width, total = left + 2*pw + gapX + 20, top + 2*ph + gapY + 50
	)
	panels := []struct {
		title string
		f     func(soakMinute) float64
		unit  string
	}{
		{"handled per second", func(m soakMinute) float64 { return m.HandledPerSecond }, "/s"},
		{"p99 admission latency", func(m soakMinute) float64 { return m.P99Ms }, "ms"},
		{"inbox bytes (provider_event, steps, attempts)", func(m soakMinute) float64 { return float64(m.InboxBytes) / (1 << 20) }, "MiB"},
		{"server RSS", func(m soakMinute) float64 { return float64(m.RssBytes) / (1 << 20) }, "MiB"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, total)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">make soak: %d minutes at %.0f deliveries/s of the four-provider mix</text>`+"\n", left, len(minutes), rate)
	for i, p := range panels {
		x0 := left + float64(i%2)*(pw+gapX)
		y0 := top + float64(i/2)*(ph+gapY) + 14
		hi := 0.0
		for _, m := range minutes {
			hi = max(hi, p.f(m))
		}
		hi = niceCeil(hi)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0, y0-8, p.title)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
		for _, frac := range []float64{0, 0.5, 1} {
			y := y0 + ph - frac*ph
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n", x0, y, x0+pw, y)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s %s</text>`+"\n", x0-4, y+4, strconv.FormatFloat(frac*hi, 'g', 4, 64), p.unit)
		}
		var pts []string
		for j, m := range minutes {
			x := x0 + pw*float64(j)/math.Max(1, float64(len(minutes)-1))
			y := y0 + ph - ph*p.f(m)/hi
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#1f5fa8"/>`+"\n", x, y)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f5fa8" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="start">1</text>`+"\n", x0, y0+ph+14)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%d</text>`+"\n", x0+pw, y0+ph+14, len(minutes))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">minute</text>`+"\n", x0+pw/2, y0+ph+14)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
