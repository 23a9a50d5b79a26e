package summary

import (
	"time"

	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/records"
)

// pageFields sets r.Page for a run with a page leg: the leg, and the
// frames the page displayed in the window (its WebCodecs view; the native
// player's are left out), by the time they were displayed.
func pageFields(r *report.Run, in Input, displayed []records.ViewerFrame) {
	leg := in.Spec.Page
	if leg == nil {
		return
	}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p := &report.PageLeg{
		Mode: leg.Mode.String(), RateBps: int64(leg.Rate), RTTMs: msOf(leg.RTT), QueueMs: msOf(leg.Queue),
		Schedule: scenario.FormatSchedule(leg.Schedule), OneWayMs: msOf(leg.OneWay()),
	}
	p.QueueDelayMs = report.NoPercentiles()
	if f := in.PageFinal; f != nil {
		p.QueueDelayMs, p.Drops = f.Forward.Total.Queue.Only(report.Figures), f.Forward.Total.Drops
	}
	var g2g []float64
	var byLayer [4]int
	n := 0
	for _, d := range displayed {
		if d.Native || !in.TL.in(d.DisplayedUs) {
			continue
		}
		n++
		if d.TID != nil && int(*d.TID) < len(byLayer) {
			byLayer[*d.TID]++
		} else {
			byLayer[0]++
		}
		switch {
		case d.Misread:
			p.Misreads++
		case d.G2GMs != nil:
			g2g = append(g2g, *d.G2GMs)
		}
	}
	secs := in.Spec.Duration.Seconds()
	p.G2GMs = pct(g2g)
	p.FPS = float64(n) / secs
	for i, c := range byLayer {
		p.LayerFPS[i] = float64(c) / secs
	}
	r.Page = p
}
