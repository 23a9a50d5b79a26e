package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/metrics"
)

// transportRuns returns video runs of one path over every transport: TCP
// default and replenish, QUIC replenish and expire, WebRTC; with the
// fields of the sweep.
func transportRuns(t *testing.T) ([]Run, [][]string) {
	var runs []Run
	var recs [][]string
	for _, c := range []struct {
		transport, mode string
		delay           float64
	}{
		{"webrtc", "gcc", 40}, {"quic", "replenish=15ms", 1}, {"tcp", "replenish=15ms", 0.5},
		{"quic", "expire=100ms", 2}, {"tcp", "default", 900},
	} {
		r, rec := videoRun(t, c.mode, c.delay, false)
		r.Transport = c.transport
		if c.transport != "tcp" {
			r.ID = "2mbit-172ms-video-" + c.transport + "-" + c.mode
		}
		floor, lost, undecodable := 95.0, 0, 0
		r.FloorMs, r.FramesLost, r.Undecodable = &floor, &lost, &undecodable
		r.Freezes = &Freezes{}
		r.RungFraction = map[string]float64{"640x360": 1}
		if c.transport != "webrtc" {
			r.DrainRatio = &metrics.Percentiles{P50: 0.97, P95: 1.05, N: 500, Figures: metrics.P50 | metrics.P95 | metrics.Count}
		}
		if c.mode == "expire=100ms" {
			lost, undecodable = 12, 30
			r.Expiry = &Expiry{Dropped: 2, Reset: 10, BytesReset: 40000, Waste: 0.031}
			r.Freezes = &Freezes{Count: 2, TotalMs: 512}
		}
		runs, recs = append(runs, r), append(recs, rec)
	}
	return runs, recs
}

func TestTransportsSideBySide(t *testing.T) {
	runs, _ := transportRuns(t)
	SortRuns(runs)
	tabs := tables(runs)
	if len(tabs) != 1 {
		t.Fatalf("%d tables, want one for the path", len(tabs))
	}
	tab := tabs[0]
	want := []string{"tcp default", "tcp replenish=15ms", "quic replenish=15ms", "quic expire=100ms", "webrtc gcc"}
	if !slices.Equal(tab.Labels, want) {
		t.Errorf("rows %q, want %q (by transport, then mode)", tab.Labels, want)
	}
	if !strings.HasPrefix(tab.Conditions, "cubic, video") {
		t.Errorf("conditions %q name no transport when they differ", tab.Conditions)
	}
	if len(tab.Ratios) != 1 || !strings.Contains(tab.Ratios[0], "tcp default is 1800× that of tcp replenish=15ms") {
		t.Errorf("ratios %q, want TCP's alone (QUIC has no default run here)", tab.Ratios)
	}
	for _, h := range []string{"freezes", "lost / undecodable", "expiry waste", "drain ratio p50 / p95", "floor", "capture to received − floor p50 / p95"} {
		if !slices.Contains(tab.Header, h) {
			t.Errorf("no column %q in %q", h, tab.Header)
		}
	}
	if slices.Contains(tab.Header, "idle") || slices.Contains(tab.Header, "recovery") {
		t.Errorf("columns without values shown: %q", tab.Header)
	}
	cell := func(row, col string) string {
		return tab.Rows[slices.Index(tab.Labels, row)][slices.Index(tab.Header, col)]
	}
	for _, c := range []struct{ row, col, want string }{
		{"quic expire=100ms", "expiry waste", "3.1% (10 reset, 2 dropped)"},
		{"quic expire=100ms", "lost / undecodable", "12 / 30"},
		{"quic expire=100ms", "freezes", "2 / 512 ms"},
		{"tcp replenish=15ms", "freezes", "0"},
		{"webrtc gcc", "drain ratio p50 / p95", "–"},
		{"tcp replenish=15ms", "drain ratio p50 / p95", "0.97 / 1.05"},
		{"tcp replenish=15ms", "capture to received − floor p50 / p95", "5.5 ms / 26 ms"},
	} {
		if got := cell(c.row, c.col); got != c.want {
			t.Errorf("%s, %s: %q, want %q", c.row, c.col, got, c.want)
		}
	}
}

// TestFloorSeries checks the floor plot's series: named by what varies
// among the runs besides the rate, sorted by rate, without runs that have
// steps.
func TestFloorSeries(t *testing.T) {
	var runs []Run
	for _, rate := range []int64{10_000_000, 500_000, 2_000_000} {
		for _, cc := range []string{"cubic", "bbr"} {
			r, _ := videoRun(t, "replenish=15ms", 1, false)
			floor := 50.0
			r.RateBps, r.CC, r.FloorMs = rate, cc, &floor
			runs = append(runs, r)
		}
	}
	stepped := runs[0]
	stepped.Schedule = "20s=1mbit"
	runs = append(runs, stepped)
	names, series := floorSeries(floorPoints(runs))
	if !slices.Equal(names, []string{"cubic", "bbr"}) || len(series) != 2 {
		t.Fatalf("series %q", names)
	}
	var rates []float64
	for _, p := range series[0] {
		rates = append(rates, p.rate)
	}
	if !slices.Equal(rates, []float64{500e3, 2e6, 10e6}) || series[0][0].p50 != 51 {
		t.Errorf("cubic: rates %v, first p50 %v; want sorted rates without the stepped run, 101 - 50 ms", rates, series[0][0].p50)
	}
	if got := rateLabel(2e6) + ", " + rateLabel(500e3); got != "2 Mb/s, 500 kb/s" {
		t.Errorf("rate labels %q", got)
	}
}

// TestBuildTransports builds a report of the transports' runs and checks
// its comparison plots: capture to received over time per table, and over
// the floor across runs on the index page.
func TestBuildTransports(t *testing.T) {
	dir := t.TempDir()
	runs, recs := transportRuns(t)
	for i, r := range runs {
		writeRun(t, dir, r.ID, mustJSON(t, r), recs[i])
	}
	if err := build(dir, nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"video-2-mb-s-172-ms-rtt-200-ms-queue-capture-to-received-over-time.svg", "capture-to-received-over-floor.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, plotsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "capture-to-received-over-floor.svg" {
			continue
		}
		for _, label := range []string{"tcp default", "quic expire=100ms", "webrtc gcc"} {
			if !strings.Contains(string(b), label) {
				t.Errorf("%s lacks the curve %q", f, label)
			}
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, indexHTML))
	if !strings.Contains(string(page), `<h2>Across runs</h2>`) || !strings.Contains(string(page), "plots/capture-to-received-over-floor.svg") {
		t.Error("index.html does not show the plot across runs")
	}
}
