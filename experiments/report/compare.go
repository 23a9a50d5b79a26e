package report

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Plots that compare runs across a table (capture to received over time,
// one curve per run: the transports side by side on one path) and across
// the whole results directory (capture to received over its floor against
// the bottleneck rate).

// c2rTimePlot draws the capture to received of each run of a table over
// time, on a logarithmic axis, with the measured window of the first run
// marked; nil when fewer than one run has points.
func c2rTimePlot(t table, extras map[string]*runExtra, colors map[string]int) (*plot.Plot, error) {
	var curves []curve
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range t.Runs {
		s := extras[r.ID].C2RTime
		var xs, ys []float64
		for j, y := range s.Y {
			if y > 0 { // a log axis shows only positive values
				xs, ys = append(xs, s.X[j]), append(ys, y)
				lo, hi = min(lo, y), max(hi, y)
			}
		}
		col, dash := style(colors[colorKey(r)])
		curves = append(curves, curve{Label: t.Labels[i], Color: col, Dashes: dash, Width: vg.Points(1), X: xs, Y: ys})
	}
	if math.IsInf(lo, 1) {
		return nil, nil
	}
	p := newPlot()
	p.Title.Text = t.Title + "\ncapture to received over time"
	if _, err := addCurves(p, curves); err != nil {
		return nil, err
	}
	p.X.Label.Text = "time since start (s); dashed: measured window"
	p.Y.Label.Text = "capture to received (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = msLogTicks
	p.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo))))
	p.Y.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min * 10
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(6)
	windowMarks(windowOf(t.Runs[0]))(p)
	return p, nil
}

// floorPoint is one run's place on the floor plot.
type floorPoint struct {
	run      Run
	rate     float64 // bits per second
	p50, p95 float64 // capture to received over floor_ms, ms
}

// floorPoints returns the runs that have a floor_ms and a capture to
// received, without a schedule (their rate is not one), in report order.
func floorPoints(runs []Run) []floorPoint {
	var out []floorPoint
	for _, r := range runs {
		p50, p95 := overFloor(r)
		if r.Schedule != "" || r.RateBps <= 0 || !finite(p50) {
			continue
		}
		out = append(out, floorPoint{run: r, rate: float64(r.RateBps), p50: p50, p95: p95})
	}
	return out
}

// floorSeries groups points into series that differ in everything but the
// rate (transport, mode, congestion control, RTT, loss, queue, workload),
// each named by the attributes that vary among the points, and sorted by
// rate.
func floorSeries(pts []floorPoint) (names []string, series [][]floorPoint) {
	attrs := []func(Run) string{
		transportName, func(r Run) string { return r.Mode }, func(r Run) string { return r.CC },
		func(r Run) string { return fmtMs(r.RTTMs) + " RTT" }, func(r Run) string { return fmtLoss(r.Loss) + " loss" },
		func(r Run) string { return fmtMs(r.JitterMs) + " jitter" },
		func(r Run) string { return fmtMs(r.QueueMs) + " queue" }, func(r Run) string { return r.Workload },
	}
	var varying []func(Run) string
	for _, a := range attrs {
		if slices.ContainsFunc(pts, func(p floorPoint) bool { return a(p.run) != a(pts[0].run) }) {
			varying = append(varying, a)
		}
	}
	index := map[string]int{}
	for _, p := range pts {
		var parts []string
		for _, a := range varying {
			parts = append(parts, a(p.run))
		}
		name := strings.Join(parts, ", ")
		i, ok := index[name]
		if !ok {
			i = len(names)
			index[name] = i
			names, series = append(names, name), append(series, nil)
		}
		series[i] = append(series[i], p)
	}
	for _, s := range series {
		slices.SortStableFunc(s, func(a, b floorPoint) int { return cmp.Compare(a.rate, b.rate) })
	}
	return names, series
}

// floorMinMs is where the floor plot's logarithmic axis starts: smaller
// values, and negative ones (a run faster than its floor's median frame),
// are drawn there.
const floorMinMs = 1

// floorPlots draws capture to received p50 and p95 over floor_ms against
// the bottleneck rate, both on logarithmic axes, one line per series
// (floorSeries); nil when no run has a floor.
func floorPlots(runs []Run) ([]*plot.Plot, error) {
	pts := floorPoints(runs)
	if len(pts) == 0 {
		return nil, nil
	}
	names, series := floorSeries(pts)
	var plots []*plot.Plot
	for _, q := range []struct {
		name string
		pick func(floorPoint) float64
	}{{"p50", func(p floorPoint) float64 { return p.p50 }}, {"p95", func(p floorPoint) float64 { return p.p95 }}} {
		p := newPlot()
		hi := floorMinMs * 10.0
		for i, s := range series {
			xys := make(plotter.XYs, 0, len(s))
			for _, pt := range s {
				if v := q.pick(pt); finite(v) {
					xys = append(xys, plotter.XY{X: pt.rate, Y: max(v, floorMinMs)})
					hi = max(hi, v)
				}
			}
			if len(xys) == 0 {
				continue
			}
			if err := addLinePoints(p, names[i], i, xys); err != nil {
				return nil, err
			}
		}
		p.Y.Label.Text = "capture to received " + q.name + " − floor"
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, msLogTicks
		p.Y.Min, p.Y.Max = floorMinMs, math.Pow10(int(math.Ceil(math.Log10(hi))))
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = bpsLogTicks
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(6)
		plots = append(plots, p)
	}
	plots[0].Title.Text = "capture to received over its floor, by bottleneck rate"
	plots[len(plots)-1].X.Label.Text = "bottleneck rate (log scale)"
	return plots, nil
}

// addLinePoints adds a line with point marks, in the i-th style, to p.
func addLinePoints(p *plot.Plot, label string, i int, xys plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("report: plotting %s: %w", label, err)
	}
	col, dash := style(i)
	l.Color, l.Dashes, l.Width = col, dash, vg.Points(1.5)
	pts.Color, pts.Radius = col, vg.Points(2.5)
	p.Add(l, pts)
	p.Legend.Add(label, l, pts)
	return nil
}

// rateLabel names a rate on an axis: "500 kb/s", "2 Mb/s", "20 Mb/s".
func rateLabel(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%g Gb/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%g Mb/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%g kb/s", bps/1e3)
	}
	return fmt.Sprintf("%g b/s", bps)
}

// overviewFigures draws the plots across all runs into dir: the floor plot.
func overviewFigures(dir string, runs []Run, names *fileNamer) ([]figure, error) {
	plots, err := floorPlots(runs)
	if err != nil || len(plots) == 0 {
		return nil, err
	}
	svg, err := renderSVG(plots, 8*vg.Inch, 3.6*vg.Inch)
	if err != nil {
		return nil, err
	}
	fig := figure{File: names.file("capture-to-received-over-floor"),
		Caption: "Capture to received p50 (top) and p95 (bottom) less floor_ms (the one-way delay, the median frame's " +
			"serialization at the bottleneck and the median encode), against the bottleneck rate, both on log scales: " +
			"how much queueing a method adds on top of what the path and the frame cost. Values under 1 ms are drawn at 1 ms; " +
			"runs with rate or RTT steps are left out."}
	if err := writeFile(filepath.Join(dir, filepath.FromSlash(fig.File)), svg); err != nil {
		return nil, err
	}
	return []figure{fig}, nil
}
