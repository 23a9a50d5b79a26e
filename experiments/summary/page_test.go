package summary

import (
	"math"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/scenario"
	"replenish/metrics"
	"replenish/rate"
	"replenish/records"
	"replenish/transport"
)

// TestPageFields checks the page leg's summary: the leg as configured, and
// the frames the page displayed in the window (by display time), counted
// by temporal layer, with glass to glass from those whose stamp read; the
// native player's frames and those outside the window left out.
func TestPageFields(t *testing.T) {
	spec := scenario.Run{Warmup: 2 * time.Second, Duration: 8 * time.Second,
		Page: &scenario.PageLeg{Rate: rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond,
			Schedule: []scenario.Step{{At: 5 * time.Second, Rate: 500 * rate.Kbps}}, Mode: transport.DefaultMode}}
	final := &emu.Stats{}
	final.Forward.Total.Drops = 3
	final.Forward.Total.Queue = metrics.Percentiles{N: 10, P50: 120, P95: 190, P99: 199, Max: 200, Figures: metrics.All}
	in := Input{Spec: spec, TL: Timeline{T0: t0, Warmup: spec.Warmup, Duration: spec.Duration}, PageFinal: final}
	tid := func(v uint8) *uint8 { return &v }
	var displayed []records.ViewerFrame
	// 10 s at 20 fps: layers TL0, TL2, TL1, TL2; frame 50 misread.
	for i := range 200 {
		d := records.ViewerFrame{Kind: records.KindDisplayed, Stream: 1, Frame: uint32(i), Client: 1,
			DisplayedUs: at(time.Duration(i) * 50 * time.Millisecond), G2GMs: g2g(float64(100 + i%10)),
			TID: tid([]uint8{0, 2, 1, 2}[i%4])}
		if i == 50 {
			d.Misread, d.G2GMs = true, nil
		}
		displayed = append(displayed, d)
	}
	native := records.ViewerFrame{Kind: records.KindDisplayed, Native: true, DisplayedUs: at(5 * time.Second), G2GMs: g2g(9999)}
	displayed = append(displayed, native)

	var r = baseRun(in)
	pageFields(&r, in, displayed)
	p := r.Page
	if p == nil {
		t.Fatal("no page leg in the summary")
	}
	if p.Mode != "replenish=15ms" || p.RateBps != 1_000_000 || p.RTTMs != 40 || p.QueueMs != 200 || p.OneWayMs != 20 || p.Schedule != "5s=500kbit" {
		t.Errorf("leg %+v", p)
	}
	if p.Drops != 3 || p.QueueDelayMs.P50 != 120 || p.QueueDelayMs.P95 != 190 {
		t.Errorf("the leg's queue %+v, drops %d; want the emulator's", p.QueueDelayMs, p.Drops)
	}
	// The window, 2 s to 10 s, holds frames 40 to 199 and 200's slot: 160.
	if p.FPS != 160.0/8 || p.LayerFPS != [4]float64{40.0 / 8, 40.0 / 8, 80.0 / 8, 0} || p.Misreads != 1 {
		t.Errorf("fps %v, by layer %v, misreads %d", p.FPS, p.LayerFPS, p.Misreads)
	}
	if p.G2GMs.P50 != 104 && p.G2GMs.P50 != 105 || p.G2GMs.P95 != 109 || math.IsNaN(p.G2GMs.P99) {
		t.Errorf("g2g %+v, want the frames' 100 to 109 ms (the native player's 9999 left out)", p.G2GMs)
	}
	in.Spec.Page = nil
	r = baseRun(in)
	if pageFields(&r, in, displayed); r.Page != nil {
		t.Errorf("a run without a page leg has one: %+v", r.Page)
	}
}
