package console

import (
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// chart is the overview's handled and failed rows per minute over the last hour, drawn as a
// server-rendered SVG bar chart (presentation attributes only: the CSP allows no inline style).
type chart struct {
	Width, Height int
	Bars          []bar
	MaxPerMinute  int64
	Handled       int64
	Failed        int64
	Capped        bool
}

type bar struct {
	X, HandledY, HandledH, FailedY, FailedH int
	Label                                   string
}

const (
	chartMinutes = 60
	barWidth     = 6
	chartHeight  = 60
)

func newChart(a ports.Activity, now time.Time) chart {
	ch := chart{Width: chartMinutes * barWidth, Height: chartHeight, Capped: a.Capped}
	end := now.UTC().Truncate(time.Minute)
	start := end.Add(-(chartMinutes - 1) * time.Minute)
	perMinute := make(map[time.Time]ports.MinuteActivity, len(a.Minutes))
	for _, m := range a.Minutes {
		perMinute[m.Minute.UTC().Truncate(time.Minute)] = m
		ch.Handled += m.Handled
		ch.Failed += m.Failed
		ch.MaxPerMinute = max(ch.MaxPerMinute, m.Handled+m.Failed)
	}
	scale := max(ch.MaxPerMinute, 1)
	for i := range chartMinutes {
		minute := start.Add(time.Duration(i) * time.Minute)
		m := perMinute[minute]
		hh := int(m.Handled * chartHeight / scale)
		fh := int(m.Failed * chartHeight / scale)
		ch.Bars = append(ch.Bars, bar{
			X:        i * barWidth,
			HandledY: chartHeight - hh, HandledH: hh,
			FailedY: chartHeight - hh - fh, FailedH: fh,
			Label: minute.Format("15:04") + ": " + strconv.FormatInt(m.Handled, 10) + " handled, " + strconv.FormatInt(m.Failed, 10) + " failed",
		})
	}
	return ch
}
