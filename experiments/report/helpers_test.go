package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"replenish/metrics"
)

// writeRun writes run.json (raw, so that tests can omit fields) and, unless
// records is nil, records.jsonl into dir/runs/<name>/.
func writeRun(t testing.TB, dir, name, runJSON string, records []string) {
	t.Helper()
	rd := filepath.Join(dir, runsDir, name)
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rd, runFile), []byte(runJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if records != nil {
		data := strings.Join(records, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(rd, recordsFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mustJSON encodes v, failing the test on error.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Names of the synthetic scenarios.
const (
	bulkScenario  = "bulk 64 KiB, 2 Mb/s, 172 ms RTT, 200 ms queue"
	videoScenario = "video, 2 Mb/s, 172 ms RTT, 200 ms queue"
)

// bulkRun returns a bulk run in the shape of seed 000's 2 Mb/s column, with
// its records: writes every 0.28 s whose source delay is delayMs (with a
// little noise) and samples every 0.2 s.
func bulkRun(t testing.TB, mode string, delayMs, goodput float64) (Run, []string) {
	t.Helper()
	r := Run{
		ID: "2mbit-172ms-bulk-" + mode, Scenario: bulkScenario, Mode: mode,
		Transport: "tcp", Workload: "bulk=65536", CC: "cubic",
		RateBps: 2_000_000, RTTMs: 172, QueueMs: 200, DurationS: 40, WarmupS: 5,
		SourceDelayMs: pct(delayMs, delayMs*1.06, delayMs*1.1),
		GoodputBps:    goodput, Utilization: goodput / 2e6,
		BottleneckQueueMs: pct(180, 195, 199),
		EmulatorDrops:     3, Retransmits: 12, Writes: 160,
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(mode))))
	var recs []string
	for ts := 0.0; ts < 45; ts += 0.28 {
		d := delayMs * (1 + 0.05*rng.Float64())
		recs = append(recs, fmt.Sprintf(`{"kind":"write","t":%.3f,"bytes":65536,"source_delay_ms":%.3f}`, ts, d))
	}
	for ts := 0.0; ts < 45; ts += 0.2 {
		recs = append(recs, fmt.Sprintf(`{"kind":"sample","t":%.3f,"goodput_bps":%.0f,"queue_ms":%.1f,"rate_bps":2000000}`,
			ts, goodput*(0.95+0.1*rng.Float64()), 150+50*rng.Float64()))
	}
	return r, recs
}

// videoRun returns a video run with frames at 30 fps carrying parts, and
// capture-to-received and (if browser) glass-to-glass delays.
func videoRun(t testing.TB, mode string, delayMs float64, browser bool) (Run, []string) {
	t.Helper()
	fps := 29.8
	r := Run{
		ID: "2mbit-172ms-video-" + mode, Scenario: videoScenario, Mode: mode,
		Transport: "tcp", Workload: "video", CC: "cubic",
		RateBps: 2_000_000, RTTMs: 172, QueueMs: 200, DurationS: 20, WarmupS: 2,
		SourceDelayMs:       pct(delayMs, delayMs*2, delayMs*3),
		CaptureToReceivedMs: pctPtr(delayMs+100, delayMs+120, delayMs+130),
		PartsMs: map[string]metrics.Percentiles{
			"wait":         pct(1, 2, 3),
			"encode":       pct(3.2, 5, 6),
			"source_delay": pct(delayMs, delayMs*2, delayMs*3),
			"network":      pct(90, 110, 120),
		},
		GoodputBps: 1.8e6, Utilization: 0.9, FPS: &fps, Width: 640, Height: 360, BitrateBps: 1.75e6,
		BottleneckQueueMs: pct(20, 40, 60),
		Frames:            600,
	}
	if browser {
		r.G2GMs = pctPtr(delayMs+130, delayMs+160, delayMs+170)
	}
	var recs []string
	for i := range 660 {
		ts := float64(i) / 30
		g2g := ""
		if browser {
			g2g = fmt.Sprintf(`,"g2g_ms":%.2f`, delayMs+130)
		}
		recs = append(recs, fmt.Sprintf(`{"kind":"frame","t":%.4f,"bytes":7000,"width":640,"height":360,"key":%t,`+
			`"source_delay_ms":%.2f,"capture_to_received_ms":%.2f%s,`+
			`"parts_ms":{"wait":1,"encode":3.2,"source_delay":%.2f,"network":90}}`,
			ts, i%300 == 0, delayMs+float64(i%7), delayMs+100, g2g, delayMs))
	}
	for i := range 110 {
		ts := float64(i) * 0.2
		recs = append(recs, fmt.Sprintf(`{"kind":"sample","t":%.1f,"goodput_bps":1.8e6,"bitrate_bps":1.75e6,"queue_ms":20,`+
			`"drain_bps":1.9e6,"target_bps":2.0e6,"rate_bps":%d}`, ts, []int{2000000, 1000000}[i/80]))
	}
	return r, recs
}

// sameFloat reports whether a and b are equal, counting NaN as equal to NaN.
func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// sameRun compares runs field by field through their JSON encoding, which
// is NaN-free, after checking that the NaNs sit in the same places.
func sameRun(t testing.TB, got, want Run) bool {
	t.Helper()
	ps := func(r Run) []float64 {
		return []float64{r.SourceDelayMs.P50, r.SourceDelayMs.P95, r.SourceDelayMs.P99,
			r.BottleneckQueueMs.P50, r.BottleneckQueueMs.P95, r.BottleneckQueueMs.P99,
			r.GoodputBps, r.Utilization}
	}
	g, w := ps(got), ps(want)
	for i := range g {
		if !sameFloat(g[i], w[i]) {
			return false
		}
	}
	return mustJSON(t, got) == mustJSON(t, want)
}

// pct returns a distribution of run.json.
func pct(p50, p95, p99 float64) metrics.Percentiles {
	return metrics.Percentiles{P50: p50, P95: p95, P99: p99, Figures: Figures}
}

// pctPtr returns a pointer to pct(p50, p95, p99).
func pctPtr(p50, p95, p99 float64) *metrics.Percentiles {
	p := pct(p50, p95, p99)
	return &p
}
