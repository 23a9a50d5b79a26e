package loopback

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"replenish/media"
	"replenish/metrics"
	"replenish/transport"
	"replenish/viewer"
)

func TestCollector(t *testing.T) {
	var c collector
	t0 := time.Unix(1000, 0)
	rec := func() {
		c.record(viewer.Record{Kind: viewer.RecordReceived, Capture: t0, Received: t0.Add(12 * time.Millisecond), ClockOffset: 2 * time.Millisecond})
		c.record(viewer.Record{Kind: viewer.RecordDisplayed, G2G: 20 * time.Millisecond, Decode: 2 * time.Millisecond, Draw: -1})
		c.record(viewer.Record{Kind: viewer.RecordDisplayed, Misread: true, G2G: -1, Decode: -1, Draw: 3 * time.Millisecond})
	}
	rec() // before the window: not counted
	c.set(true)
	rec()
	rec()
	c.set(false)
	rec() // after the window
	cfg := Config{Mode: transport.DefaultMode, MaxSize: media.Size{W: 640, H: 360}, FPS: 30, Warmup: time.Second, Duration: 2 * time.Second}
	r := c.result(cfg)
	if r.FramesReceived != 2 || r.FramesDisplayed != 4 || r.Misreads != 2 || r.MisreadPct != 50 || r.DisplayedFPS != 2 {
		t.Errorf("counts %+v", r)
	}
	if r.G2G.N != 2 || r.G2G.P50 != 20 || r.CaptureToReceived.P50 != 10 || r.Decode.N != 2 || r.Draw.P50 != 3 {
		t.Errorf("distributions: g2g %+v, c2r %+v, decode %+v, draw %+v", r.G2G, r.CaptureToReceived, r.Decode, r.Draw)
	}
	if r.Mode != "replenish=15ms" || r.Size != "640x360" {
		t.Errorf("mode %q, size %q", r.Mode, r.Size)
	}
}

func TestWriteText(t *testing.T) {
	p := func(p50, p95, p99 float64) metrics.Percentiles {
		return metrics.Percentiles{N: 600, P50: p50, P95: p95, P99: p99, Max: p99, Figures: metrics.All}
	}
	r := &Result{Transport: "tcp", Mode: "replenish=15ms", Size: "640x360", FPS: 30, WarmupS: 5, DurationS: 20, FramesReceived: 600, FramesDisplayed: 600,
		DisplayedFPS: 30, G2G: p(11.2, 17.6, 22.3), CaptureToReceived: p(4.2, 6.4, 8.5), Decode: p(2, 2.8, 3), Draw: p(2.5, 7.8, 9),
		SourceDelay: metrics.Percentiles{N: 600, P50: 0.03, P95: 0.08, Figures: metrics.Count | metrics.P50 | metrics.P95}}
	var b bytes.Buffer
	r.WriteText(&b)
	for _, want := range []string{
		"loopback tcp replenish=15ms at 640x360, 30 fps: 20 s measured after 5 s warm-up\n",
		"  frames received 600, displayed 600 (30.0 fps), misreads 0 (0.00%)\n",
		"  glass-to-glass        p50   11.2  p95   17.6  p99   22.3 ms  (targets p50 <= 50, p95 <= 100, misreads < 1%: met)\n",
		"  sender source delay   p50   0.03  p95   0.08 ms\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	r.G2G.P95 = 150
	if r.Met() {
		t.Error("a p95 of 150 ms meets the targets")
	}
}
