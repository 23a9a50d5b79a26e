package report

import (
	"math"
	"slices"
	"strings"
	"testing"

	"replenish/metrics"
)

// targetRuns returns a run of TargetMode that meets every target, on a
// 10 Mb/s path halved at 20 s, and the default run on the same path, which
// overfills it.
func targetRuns() (rep, def Run) {
	f := func(v float64) *float64 { return &v }
	rep = Run{
		ID: "10mbit-80ms-video-replenish=15ms", Scenario: "video, 10 Mb/s, 80 ms RTT, 200 ms queue, schedule 20s=5mbit",
		Mode: TargetMode, Transport: "tcp", Workload: "video", CC: "cubic",
		RateBps: 10_000_000, RTTMs: 80, QueueMs: 200, DurationS: 30, WarmupS: 5, Schedule: "20s=5mbit",
		SourceDelayMs:       pct(0.1, 0.3, 0.5),
		CaptureToReceivedMs: pctPtr(110, 150, 170),
		GoodputBps:          0.92 * 7.5e6, Utilization: 0.92,
		BottleneckQueueMs: pct(8, 20, 30),
		DrainRatio:        &metrics.Percentiles{P50: 0.97, P95: 1.02, N: 800, Figures: metrics.P50 | metrics.P95 | metrics.Count},
		FloorMs:           f(100),
		SerializationMs:   f(30), // source delay limit: 1.2 × 30 + 5 = 41 ms
		Ceiling:           &TopRung{Size: "1280x720", Seconds: 20},
		Steps:             []Step{{AtS: 20, Change: StepRateFall, RateBps: 5e6, RTTMs: 80}},
		RecoveryS:         []*float64{f(1)},
	}
	def = rep
	def.ID, def.Mode = "10mbit-80ms-video-default", "default"
	def.SourceDelayMs = pct(300, 900, 1200)
	def.BottleneckQueueMs = pct(150, 190, 199) // over 40 + 25 ms: overfilled
	def.SerializationMs = f(40)
	return rep, def
}

func TestTargets(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		target string
		name   string
		change func(rep, def *Run) // nil def: no default run on the path
		want   verdict
		cell   string // a part of the cell
	}{
		{"source delay p50", "met", nil, met, "0.10 ms (≤ 41 ms) met"},
		{"source delay p50", "at the limit", func(r, _ *Run) { r.SourceDelayMs.P50 = 41 }, met, "41 ms (≤ 41 ms) met"},
		{"source delay p50", "missed", func(r, _ *Run) { r.SourceDelayMs.P50 = 50 }, missed, "50 ms (≤ 41 ms) missed by 9.0 ms"},
		{"source delay p50", "results written before serialization_ms", func(r, _ *Run) { r.SerializationMs = nil }, notApplicable,
			"n/a: no serialization_ms (resummarize)"},

		{"capture to received p50", "met", nil, met, "110 ms (≤ 125 ms) met"},
		{"capture to received p50", "at the limit", func(r, _ *Run) { r.CaptureToReceivedMs.P50 = 125 }, met, "met"},
		{"capture to received p50", "missed", func(r, _ *Run) { r.CaptureToReceivedMs.P50 = 130 }, missed, "130 ms (≤ 125 ms) missed by 5.0 ms"},
		{"capture to received p50", "unknown", func(r, _ *Run) { r.CaptureToReceivedMs = nil }, notApplicable, "n/a: capture to received unknown"},
		{"capture to received p50", "missed by less than the last digit", func(r, _ *Run) { r.CaptureToReceivedMs.P50 = 125.001 }, missed,
			"125 ms (≤ 125 ms) missed by < 0.01 ms"},
		{"capture to received p50", "each frame over its floor", func(r, _ *Run) { r.OverFloorMs = pctPtr(19, 60, 90) }, met,
			"19 ms over the floor (≤ 25 ms) met"},
		{"capture to received p50", "each frame over its floor, missed", func(r, _ *Run) {
			r.OverFloorMs, r.CaptureToReceivedMs.P50 = pctPtr(30, 60, 90), 110 // 110 ms is under floor_ms + 25 ms: not judged
		}, missed, "30 ms over the floor (≤ 25 ms) missed by 5.0 ms"},
		{"capture to received p95", "met", nil, met, "150 ms (≤ 180 ms) met"},
		{"capture to received p95", "each frame over its floor, missed", func(r, _ *Run) { r.OverFloorMs = pctPtr(19, 90, 99) }, missed,
			"90 ms over the floor (≤ 80 ms) missed by 10 ms"},
		{"capture to received p95", "missed", func(r, _ *Run) { r.CaptureToReceivedMs.P95 = 190 }, missed, "190 ms (≤ 180 ms) missed by 10 ms"},
		{"capture to received p95", "unknown", func(r, _ *Run) { r.CaptureToReceivedMs.P95 = math.NaN() }, notApplicable, "n/a"},

		{"utilization", "met", nil, met, "92.0% (≥ 90%) met"},
		{"utilization", "at the limit", func(r, _ *Run) { r.Utilization, r.GoodputBps = 0.9, 0.9*7.5e6 }, met, "met"},
		{"utilization", "missed", func(r, _ *Run) { r.Utilization, r.GoodputBps = 0.8, 0.8*7.5e6 }, missed, "80.0% (≥ 90%) missed by 10.0 points"},
		{"utilization", "missed by less than the last digit", func(r, _ *Run) { r.Utilization, r.GoodputBps = 0.8998, 0.8998*7.5e6 }, missed, "89.98% (≥ 90%) missed by 0.02 points"},
		{"utilization", "missed, the encoder able to fill the link", func(r, _ *Run) {
			r.Utilization, r.GoodputBps = 0.8, 0.8*7.5e6
			r.Ceiling = &TopRung{Size: "1280x720", Seconds: 20, OutputRatio: f(0.8), SaturationBps: f(9.5e6)} // over 90% of the 10 Mb/s before the halving
		}, missed, "missed by 10.0 points"},
		{"utilization", "encoder-limited", func(r, _ *Run) {
			r.Utilization, r.GoodputBps = 0.6, 0.6*7.5e6
			r.Ceiling = &TopRung{Size: "1280x720", Seconds: 20, OutputRatio: f(0.6), SaturationBps: f(4.5e6)}
		}, met, "100.0% of what the top rung can send (≥ 90%) met: encoder-limited, 1280x720 saturates at 4.50 Mb/s (60% of the link"},
		// Below what its top rung can send: 3.4 Mb/s of the 4.5 it can.
		{"utilization", "encoder-limited, short of it", func(r, _ *Run) {
			r.Utilization, r.GoodputBps = 0.45, 0.45*7.5e6
			r.Ceiling = &TopRung{Size: "1280x720", Seconds: 20, OutputRatio: f(0.6), SaturationBps: f(4.5e6)}
		}, missed, "75.0% of what the top rung can send (≥ 90%) missed by 15.0 points: encoder-limited"},
		{"utilization", "results written before top_rung", func(r, _ *Run) {
			r.Utilization, r.GoodputBps, r.Ceiling = 0.8, 0.8*7.5e6, nil
		}, missed, "missed by 10.0 points (top rung's ceiling unknown)"},
		{"utilization", "unknown", func(r, _ *Run) { r.Utilization = math.NaN() }, notApplicable, "n/a: utilization unknown"},

		{"drain ratio p50", "met", nil, met, "0.97 (0.9 to 1.1) met"},
		{"drain ratio p50", "at the lower limit", func(r, _ *Run) { r.DrainRatio.P50 = 0.9 }, met, "met"},
		{"drain ratio p50", "at the upper limit", func(r, _ *Run) { r.DrainRatio.P50 = 1.1 }, met, "met"},
		{"drain ratio p50", "missed below", func(r, _ *Run) { r.DrainRatio.P50 = 0.85 }, missed, "0.85 (0.9 to 1.1) missed by 0.05"},
		{"drain ratio p50", "missed above", func(r, _ *Run) { r.DrainRatio.P50 = 1.2 }, missed, "1.20 (0.9 to 1.1) missed by 0.10"},
		{"drain ratio p50", "no path-limited estimate", func(r, _ *Run) { r.DrainRatio = nil }, notApplicable, "n/a: no path-limited drain estimate"},

		{"recovery", "met after a halving", nil, met, "1.00 s (≤ 2.00 s) met"},
		{"recovery", "at the limit after a halving", func(r, _ *Run) { r.RecoveryS = []*float64{f(2)} }, met, "2.00 s (≤ 2.00 s) met"},
		{"recovery", "missed after a halving", func(r, _ *Run) { r.RecoveryS = []*float64{f(2.5)} }, missed, "2.50 s (≤ 2.00 s) missed by 500 ms"},
		{"recovery", "not back after a halving", func(r, _ *Run) { r.RecoveryS = []*float64{nil} }, missed,
			"not back within 15.0 s (≤ 2.00 s) missed by over 13.0 s"},
		{"recovery", "met after a doubling", func(r, _ *Run) {
			r.Steps[0].Change, r.RecoveryS = StepRateRise, []*float64{f(4)}
		}, met, "4.00 s (≤ 5.00 s) met"},
		{"recovery", "missed after a doubling", func(r, _ *Run) {
			r.Steps[0].Change, r.RecoveryS = StepRateRise, []*float64{f(6)}
		}, missed, "6.00 s (≤ 5.00 s) missed by 1.00 s"},
		{"recovery", "missed after a doubling the transport's window held", func(r, _ *Run) {
			r.Steps[0].Change, r.RecoveryS, r.RiseWindowHeld = StepRateRise, []*float64{f(6)}, []*float64{f(0.93)}
		}, missed, "6.00 s (≤ 5.00 s) missed by 1.00 s; the transport's congestion window held the stream for 93% of the climb"},
		{"recovery", "not back after a doubling the transport's window held", func(r, _ *Run) {
			r.Steps[0].Change, r.RecoveryS, r.RiseWindowHeld = StepRateRise, []*float64{nil}, []*float64{f(0.8)}
		}, missed, "missed by over 10.0 s; the transport's congestion window held the stream for 80% of the climb"},
		{"recovery", "a doubling past what the encoder can send", func(r, _ *Run) {
			r.Steps[0].Change, r.Steps[0].RateBps, r.RecoveryS = StepRateRise, 20e6, []*float64{nil}
			r.Ceiling.SaturationBps = f(17.5e6)
		}, notApplicable, "n/a: encoder-limited after the rise: 1280x720 saturates at 17.5 Mb/s (88% of 20.0 Mb/s)"},
		{"recovery", "a doubling the encoder can fill", func(r, _ *Run) {
			r.Steps[0].Change, r.Steps[0].RateBps, r.RecoveryS = StepRateRise, 20e6, []*float64{f(6)}
			r.Ceiling.SaturationBps = f(18.5e6)
		}, missed, "6.00 s (≤ 5.00 s) missed by 1.00 s"},
		{"recovery", "a doubling past the top rung's Max", func(r, _ *Run) {
			r.Steps[0].Change, r.Steps[0].RateBps, r.RecoveryS = StepRateRise, 24.2e6, []*float64{nil}
			r.Ceiling.MaxBps = 20e6
		}, notApplicable, "n/a: ladder-limited after the rise: 1280x720 sends at most its Max, 20.0 Mb/s (83% of 24.2 Mb/s)"},
		{"recovery", "a doubling below the top rung's Max", func(r, _ *Run) {
			r.Steps[0].Change, r.Steps[0].RateBps, r.RecoveryS = StepRateRise, 20e6, []*float64{f(6)}
			r.Ceiling.MaxBps = 20e6
		}, missed, "6.00 s (≤ 5.00 s) missed by 1.00 s"},
		{"recovery", "a doubling past an encoder that saturates below the Max", func(r, _ *Run) {
			r.Steps[0].Change, r.Steps[0].RateBps, r.RecoveryS = StepRateRise, 24.2e6, []*float64{nil}
			r.Ceiling.SaturationBps, r.Ceiling.MaxBps = f(17.5e6), 20e6
		}, notApplicable, "n/a: encoder-limited after the rise: 1280x720 saturates at 17.5 Mb/s (72% of 24.2 Mb/s)"},
		{"recovery", "an RTT step", func(r, _ *Run) { r.Steps[0].Change = StepRTT }, notApplicable, "n/a: rtt step: no target"},
		{"recovery", "a step in the warm-up", func(r, _ *Run) { r.Steps[0].AtS = 3 }, notApplicable, "n/a: step in the warm-up"},
		{"recovery", "no schedule", func(r, _ *Run) { r.Schedule, r.Steps, r.RecoveryS = "", nil, nil }, notApplicable, "n/a: no step"},
		{"recovery", "results written before steps", func(r, _ *Run) { r.Steps = nil }, notApplicable, "n/a: no steps (resummarize)"},

		{"default's source delay p50", "met", nil, met, "3000× (≥ 10×) met"},
		{"default's source delay p50", "at the limit", func(_, d *Run) { d.SourceDelayMs.P50 = 1 }, met, "10× (≥ 10×) met"},
		{"default's source delay p50", "missed", func(_, d *Run) { d.SourceDelayMs.P50 = 0.5 }, missed, "5.0× (≥ 10×) missed by 2.0×"},
		{"default's source delay p50", "default does not overfill", func(_, d *Run) {
			d.SourceDelayMs.P50, d.BottleneckQueueMs.P50 = 0.5, 65 // not over 40 + 25 ms
		}, notApplicable, "n/a: default does not overfill (queue p50 65 ms ≤ 65 ms, source delay p50 0.50 ms)"},
		{"default's source delay p50", "default's frames wait in its socket", func(_, d *Run) {
			d.SourceDelayMs.P50, d.BottleneckQueueMs.P50 = 60, 20 // over 1.2 × 40 + 5 ms: its excess stands in the socket, not the bottleneck
		}, met, "600× (≥ 10×) met"},
		{"default's source delay p50", "default's frames wait no more than their serialization", func(_, d *Run) {
			d.SourceDelayMs.P50, d.BottleneckQueueMs.P50 = 53, 20
		}, notApplicable, "n/a: default does not overfill (queue p50 20 ms ≤ 65 ms, source delay p50 53 ms)"},
		{"default's source delay p50", "no default run", nil, notApplicable, "n/a: no default run on this path"},
	}
	for _, c := range tests {
		t.Run(c.target+"/"+c.name, func(t *testing.T) {
			i := slices.IndexFunc(targets, func(tg target) bool { return tg.name == c.target })
			if i < 0 {
				t.Fatalf("no target %q", c.target)
			}
			rep, def := targetRuns()
			rep.CaptureToReceivedMs = pctPtr(110, 150, 170) // not shared with def
			if c.change != nil {
				c.change(&rep, &def)
			}
			d := &def
			if c.name == "no default run" {
				d = nil
			}
			j := targets[i].judge(rep, d)
			if j.verdict != c.want || !strings.Contains(j.cell, c.cell) {
				t.Errorf("%q (verdict %d), want verdict %d and %q", j.cell, j.verdict, c.want, c.cell)
			}
		})
	}
}

// TestRecoveryWindowHeldMissedOnly: a met rise says nothing of the
// transport's window.
func TestRecoveryWindowHeldMissedOnly(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rep, def := targetRuns()
	rep.Steps[0].Change, rep.RecoveryS, rep.RiseWindowHeld = StepRateRise, []*float64{f(4)}, []*float64{f(0.93)}
	if j := judgeRecovery(rep, &def); j.verdict != met || j.cell != "4.00 s (≤ 5.00 s) met" {
		t.Errorf("%q (verdict %d), want met and no word of the window", j.cell, j.verdict)
	}
}

// TestUtilizationLinkCell checks that the utilization cell shows the
// link's use beside it when known, and that the verdict stays that of
// utilization alone.
func TestUtilizationLinkCell(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name   string
		util   float64
		link   *float64
		ceil   *TopRung
		want   verdict
		cell   string
		steady *float64
	}{
		{"met", 0.92, f(0.955), nil, met, "92.0% (≥ 90%) met; link 95.5%", nil},
		{"met, the link below the limit", 0.92, f(0.5), nil, met, "92.0% (≥ 90%) met; link 50.0%", nil},
		{"missed", 0.643, f(0.8353), nil, missed, "64.3% (≥ 90%) missed by 25.7 points; link 83.5%", nil},
		{"missed, the link above the limit", 0.8, f(0.95), nil, missed, "80.0% (≥ 90%) missed by 10.0 points; link 95.0%", nil},
		{"unknown link", 0.8, nil, nil, missed, "80.0% (≥ 90%) missed by 10.0 points", nil},
		{"top rung's ceiling unknown", 0.8, f(0.95), &TopRung{}, missed,
			"80.0% (≥ 90%) missed by 10.0 points (top rung's ceiling unknown); link 95.0%", nil},
		{"encoder-limited", 0.6, f(0.7), &TopRung{Size: "1280x720", Seconds: 20, OutputRatio: f(0.6), SaturationBps: f(4.5e6)}, met,
			"100.0% of what the top rung can send (≥ 90%) met: encoder-limited, 1280x720 saturates at 4.50 Mb/s (60% of the link; utilization 60.0%); link 70.0%", nil},
		// targetRuns' link: 10 Mb/s, 5 Mb/s from 20 s, a mean of 7.5. The
		// top rung can send 8.5 Mb/s, then 5: a mean of 6.75, of which
		// the stream's 6.0 is 88.9%.
		{"encoder-limited before a halving", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, SaturationBps: f(8.5e6)}, missed,
			"88.9% of what the top rung can send (≥ 90%) missed by 1.1 points: encoder-limited while the link ran at 10.0 Mb/s: 1280x720 saturates at 8.50 Mb/s (85% of it; utilization 80.0%); link 85.0%", nil},
		// The same, judged on the steady part as utilization is: the
		// 2 s after the halving left out: 8.5 Mb/s for 15 s and 5 for 13
		// can be sent, 6.88 at the mean, and the stream carried 0.82 of
		// the link's 7.68.
		{"encoder-limited before a halving, steady part", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, SaturationBps: f(8.5e6)}, met,
			"91.6% of what the top rung can send (≥ 90%) met: encoder-limited while the link ran at 10.0 Mb/s: 1280x720 saturates at 8.50 Mb/s (85% of it; utilization 80.0%); without the recovery after the steps (whole window 80.0%); link 85.0%", f(0.82)},
		{"the encoder fills the link before a halving", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, SaturationBps: f(9.5e6)}, missed,
			"80.0% (≥ 90%) missed by 10.0 points; link 85.0%", nil},
		{"the link above the top rung's Max", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, MaxBps: 6e6}, met,
			"109.1% of what the top rung can send (≥ 90%) met: ladder-limited, 1280x720 sends at most its Max, 6.00 Mb/s (80% of the link; utilization 80.0%); link 85.0%", nil},
		{"the link above the top rung's Max before a halving", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, MaxBps: 8.5e6}, missed,
			"88.9% of what the top rung can send (≥ 90%) missed by 1.1 points: ladder-limited while the link ran at 10.0 Mb/s: 1280x720 sends at most its Max, 8.50 Mb/s (85% of it; utilization 80.0%); link 85.0%", nil},
		{"the top rung's Max above the link", 0.8, f(0.85), &TopRung{Size: "1280x720", Seconds: 20, MaxBps: 20e6}, missed,
			"80.0% (≥ 90%) missed by 10.0 points; link 85.0%", nil},
		{"steps: the steady part met", 0.865, f(0.955), nil, met,
			"91.2% (≥ 90%) met; without the recovery after the steps (whole window 86.5%); link 95.5%", f(0.912)},
		{"steps: the steady part missed", 0.85, f(0.955), nil, missed,
			"88.0% (≥ 90%) missed by 2.0 points; without the recovery after the steps (whole window 85.0%); link 95.5%", f(0.88)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := targetRuns()
			rep.Utilization, rep.GoodputBps, rep.LinkUtilization, rep.UtilizationSteady = tc.util, tc.util*7.5e6, tc.link, tc.steady
			switch {
			case tc.ceil == nil:
				// targetRuns' ceiling: known, without a saturation rate.
			case tc.ceil.Size == "":
				rep.Ceiling = nil
			default:
				rep.Ceiling = tc.ceil
			}
			j := judgeUtilization(rep, nil)
			if j.verdict != tc.want || j.cell != tc.cell {
				t.Errorf("%q (verdict %d), want %q (verdict %d)", j.cell, j.verdict, tc.cell, tc.want)
			}
		})
	}
}

// TestSharedLink checks that a run sharing its path with competing flows
// is not judged on utilization or the drain ratio, and says what each side
// got.
func TestSharedLink(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rep, _ := targetRuns()
	rep.Utilization, rep.GoodputBps = 0.26, 0.26*7.5e6
	rep.DrainRatio = &metrics.Percentiles{P50: 0.3, P95: 0.4, N: 100}
	rep.CrossFlows, rep.CrossGoodputBps = 1, f(0.7*7.5e6)
	want := "n/a: shared with a competing flow: the video 26%, the competition 70%"
	for name, judge := range map[string]func(Run, *Run) judgement{"utilization": judgeUtilization, "drain ratio": judgeDrainRatio} {
		if j := judge(rep, nil); j.verdict != notApplicable || j.cell != want {
			t.Errorf("%s: %q (verdict %d), want %q", name, j.cell, j.verdict, want)
		}
	}
	rep.CrossFlows, rep.CrossGoodputBps = 2, nil
	if j := judgeUtilization(rep, nil); j.cell != "n/a: shared with 2 competing flows" {
		t.Errorf("unknown competition: %q", j.cell)
	}
}

// TestTargetsSection checks which runs the section judges, the default
// run each is compared with, the counts, and where the section stands in
// summary.md.
func TestTargetsSection(t *testing.T) {
	rep, def := targetRuns()
	other := rep // another path, whose default is over QUIC only
	other.ID, other.Scenario, other.Schedule, other.Steps, other.RecoveryS = "2mbit-80ms-video-replenish=15ms", "video, 2 Mb/s", "", nil, nil
	other.SourceDelayMs.P50 = 50 // missed
	quicDef := def
	quicDef.ID, quicDef.Scenario, quicDef.Transport = "2mbit-80ms-video-quic-default", other.Scenario, "quic"
	old := rep // written before the sweep's fields: not judged
	old.ID, old.Scenario, old.FloorMs = "1mbit-video-replenish=15ms", "video, 1 Mb/s", nil
	bulk, _ := bulkRun(t, TargetMode, 10, 1.9e6)
	runs := []Run{rep, def, other, quicDef, old, bulk}
	SortRuns(runs)
	tab := targetsOf(runs)
	if tab == nil {
		t.Fatal("no Targets section")
	}
	var ids []string
	for _, row := range tab.Rows {
		ids = append(ids, row[0])
	}
	if want := []string{other.ID, rep.ID}; !slices.Equal(ids, want) {
		t.Errorf("rows %q, want %q (runs without steps first)", ids, want)
	}
	last := len(tab.Header) - 1
	if got := tab.Rows[1][last]; !strings.HasSuffix(got, "met") {
		t.Errorf("default compared: %q, want met", got)
	}
	if got := tab.Rows[0][last]; got != "n/a: no default run on this path" {
		t.Errorf("a default over another transport compared: %q", got)
	}
	wantCounts := map[string][3]string{ // met, missed, n/a
		"source delay p50": {"1", "1", "0"},
		"recovery":         {"1", "0", "1"},
		"utilization":      {"2", "0", "0"},
	}
	for _, c := range tab.Counts {
		if w, ok := wantCounts[c[0]]; ok && [3]string(c[2:]) != w {
			t.Errorf("counts of %s: %q, want %q", c[0], c[2:], w)
		}
	}
	md := Markdown(runs)
	if !strings.HasPrefix(md, "## Targets\n") || !strings.Contains(md, "| source delay p50 | ≤ 1.2 × serialization + 5 ms | 1 | 1 | 0 |") {
		t.Errorf("summary.md does not open with the Targets section and its counts:\n%s", md)
	}
	if !strings.Contains(md, "| "+other.ID+" | 50 ms (≤ 41 ms) missed by 9.0 ms |") {
		t.Errorf("summary.md lacks the missed row:\n%s", md)
	}
	if targetsOf([]Run{old, bulk}) != nil || strings.Contains(Markdown([]Run{old, bulk}), "Targets") {
		t.Error("a Targets section without runs that have the sweep's fields")
	}
}

// TestLossHeld checks that on a path with random loss, where the unmanaged
// sender (default) used less than UtilizationMin of the link while its
// frames waited in its socket, utilization is judged against what it
// carried, the drain ratio and a rise's recovery are not judged, and
// default's source delay is; and that each condition, missing, leaves the
// ordinary judgement.
func TestLossHeld(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	// The cells of the run judged against default's link use, and of the
	// ordinary judgement.
	const (
		heldCell  = "93.3% of a backlogged sender's link use (≥ 90%) met: at 1% loss its transport carried 4.5% of the link, this run 4.2%; utilization 3.9%"
		plainCell = "3.9% (≥ 90%) missed by 86.1 points; link 4.2%"
	)
	for _, tc := range []struct {
		name   string
		change func(rep, def *Run)
		want   verdict
		cell   string
		drain  verdict
	}{
		{"met", nil, met,
			heldCell, notApplicable},
		{"missed", func(r, _ *Run) { r.LinkUtilization = f(0.03) }, missed,
			"66.7% of a backlogged sender's link use (≥ 90%) missed by 23.3 points: at 1% loss its transport carried 4.5% of the link, this run 3.0%; utilization 3.9%", notApplicable},
		{"no loss", func(r, d *Run) { r.Loss, d.Loss = 0, 0 }, missed, plainCell, missed},
		{"no default run", func(_, d *Run) { d.ID = "" }, missed, plainCell, missed},
		{"default filled the link", func(_, d *Run) { d.LinkUtilization = f(0.95) }, missed, plainCell, missed},
		{"default's frames did not wait", func(_, d *Run) { d.SourceDelayMs.P50 = 40 }, missed, plainCell, missed},
		{"default's serialization unknown", func(_, d *Run) { d.SerializationMs = nil }, missed, plainCell, missed},
		{"none of default's frames left the host", func(_, d *Run) {
			d.SerializationMs, d.Frames, d.SourceDelayMs.P50 = nil, 0, math.NaN()
		}, met, heldCell, notApplicable},
		{"default's frames unknown, some received", func(_, d *Run) {
			d.SerializationMs, d.Frames, d.SourceDelayMs.P50 = nil, 100, math.NaN()
		}, missed, plainCell, missed},
		{"default's own top rung below what it would have written", func(_, d *Run) { d.Ceiling.MaxBps = 370e3 }, missed,
			plainCell, missed},
		{"default's top rung above it", func(_, d *Run) { d.Ceiling.MaxBps = 380e3 }, met,
			heldCell, notApplicable},
		{"the ladder below what the loss leaves", func(r, _ *Run) { r.Ceiling.MaxBps = 300e3 }, met,
			"130.0% of what the top rung can send (≥ 90%) met: ladder-limited, 1280x720 sends at most its Max, 300 kb/s (4% of the link; utilization 3.9%); link 4.2%", notApplicable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, def := targetRuns()
			rep.Schedule, rep.Steps, rep.RecoveryS = "", nil, nil
			rep.Loss, def.Loss = 0.01, 0.01
			rep.Utilization, rep.GoodputBps, rep.LinkUtilization = 0.039, 0.039*7.5e6, f(0.042)
			rep.DrainRatio = &metrics.Percentiles{P50: 0.07, P95: 0.1, N: 100}
			def.LinkUtilization = f(0.045)
			def.SourceDelayMs.P50 = 5000 // over 1.2 × 40 + 5 ms: its frames waited
			c := *def.Ceiling
			def.Ceiling = &c
			if tc.change != nil {
				tc.change(&rep, &def)
			}
			d := &def
			if def.ID == "" {
				d = nil
			}
			if j := judgeUtilization(rep, d); j.verdict != tc.want || j.cell != tc.cell {
				t.Errorf("utilization %q (verdict %d), want %q (verdict %d)", j.cell, j.verdict, tc.cell, tc.want)
			}
			if j := judgeDrainRatio(rep, d); j.verdict != tc.drain {
				t.Errorf("drain ratio %q (verdict %d), want verdict %d", j.cell, j.verdict, tc.drain)
			}
		})
	}
	// Default's backlog stands in its socket, not at the bottleneck: it
	// overfilled its transport, and is judged for it.
	rep, def := targetRuns()
	rep.Loss, def.Loss = 0.01, 0.01
	def.LinkUtilization, def.BottleneckQueueMs = f(0.045), pct(0.5, 2, 3)
	def.SourceDelayMs.P50 = 5000
	if j := judgeDefault(rep, &def); j.verdict != met || j.cell != "50000× (≥ 10×) met" {
		t.Errorf("default held by the loss: %q (verdict %d)", j.cell, j.verdict)
	}
	def.SerializationMs, def.Frames, def.SourceDelayMs.P50 = nil, 0, math.NaN()
	if j := judgeDefault(rep, &def); j.verdict != met || !strings.HasPrefix(j.cell, "none of default's frames") {
		t.Errorf("none of default's frames left the host: %q (verdict %d)", j.cell, j.verdict)
	}
	// A rise the loss keeps the transport from filling: not judged; a
	// fall still is.
	rise, _ := targetRuns()
	rise.Loss, rise.LinkUtilization = 0.01, f(0.042)
	rise.Steps[0].Change, rise.RecoveryS = StepRateRise, []*float64{nil}
	riseDef := def
	riseDef.Loss, riseDef.SourceDelayMs.P50, riseDef.SerializationMs = 0.01, 5000, f(40)
	if j := judgeRecovery(rise, &riseDef); j.verdict != notApplicable || !strings.Contains(j.cell, "1% loss holds the transport") {
		t.Errorf("a rise held by the loss: %q (verdict %d)", j.cell, j.verdict)
	}
	if j := judgeRecovery(rise, nil); j.verdict != missed {
		t.Errorf("a rise without default's yardstick: %q (verdict %d)", j.cell, j.verdict)
	}
	rise.Steps[0].Change, rise.RecoveryS = StepRateFall, []*float64{f(3)}
	if j := judgeRecovery(rise, &riseDef); j.verdict != missed {
		t.Errorf("a fall with loss: %q (verdict %d)", j.cell, j.verdict)
	}
	// A fall whose criterion, the median back under the floor plus 25 ms,
	// the retransmissions hold as they hold the p50 (see
	// TestRetransmitHeld): not judged.
	fall := rise
	fall.RateBps, fall.RTTMs, fall.Loss, fall.Utilization, fall.GoodputBps, fall.LinkUtilization = 5_800_000, 169, 0.02, 0.8, 0.8*5.8e6, f(0.838)
	fall.Steps = []Step{{AtS: 20, Change: StepRateFall, RateBps: 2_900_000, RTTMs: 169}}
	if j := judgeRecovery(fall, &riseDef); j.verdict != notApplicable || !strings.HasPrefix(j.cell, "n/a: fall: 2% loss: 69% of the time") {
		t.Errorf("a fall whose median the repairs hold: %q (verdict %d)", j.cell, j.verdict)
	}
	// Without loss too: frames that never left the host were held by
	// default's own backlog (BBR paces its window at the bottleneck's
	// rate and keeps that bottleneck's queue short).
	rep.Loss, def.Loss = 0, 0
	if j := judgeDefault(rep, &def); j.verdict != met || !strings.HasPrefix(j.cell, "none of default's frames") {
		t.Errorf("default without loss, none of its frames left the host: %q (verdict %d)", j.cell, j.verdict)
	}
}

// TestRetransmitHeld checks that the p95 target is not judged where random
// loss makes a reliable transport hold at least a twentieth of the frames
// for a retransmission, sent within the round trip less the target's 80 ms
// after a lost packet, nor the p50 where it holds half of them within the
// round trip less 25 ms; and that each is judged wherever one of those
// conditions fails.
func TestRetransmitHeld(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	const p50, p95 = "capture to received p50", "capture to received p95"
	for _, tc := range []struct {
		target string
		name   string
		change func(r *Run)
		want   verdict
		cell   string
	}{
		// 4.2% of 19.9 Mb/s in 1500-byte packets: 70 a second, 1.4 lost.
		{p95, "held", nil, notApplicable, "n/a: 2% loss: 9% of the time lies within 67 ms (the round trip, 147 ms, less the 80 ms allowed) after a lost packet (70 packets a second), whose retransmission holds the frames sent then past the target"},
		{p95, "no loss", func(r *Run) { r.Loss = 0 }, missed, "148 ms over the floor (≤ 80 ms) missed by 68 ms"},
		{p95, "too few losses", func(r *Run) { r.Loss = 0.01 }, missed, "missed by 68 ms"}, // 4.6% of the time
		{p95, "a round trip the target allows", func(r *Run) { r.RTTMs = 80 }, missed, "missed by 68 ms"},
		{p95, "a round trip that steps down", func(r *Run) {
			r.Schedule, r.Steps = "20s=/60ms", []Step{{AtS: 20, Change: StepRTT, RTTMs: 60}}
		}, missed, "missed by 68 ms"},
		{p95, "RTP, which holds no frame for another's packet", func(r *Run) { r.Transport = "webrtc" }, missed, "missed by 68 ms"},
		{p95, "QUIC", func(r *Run) { r.Transport = "quic" }, notApplicable, "n/a: 2% loss"},
		{p95, "the link's use unknown", func(r *Run) { r.LinkUtilization = nil }, missed, "missed by 68 ms"},
		// Half the frames: 16% of the time lies within 122 ms of a loss here.
		{p50, "too few losses for the median", nil, missed, "33 ms over the floor (≤ 25 ms) missed by 8.0 ms"},
		// 5.8 Mb/s, 84% of it in use: 405 packets a second, 8.1 lost.
		{p50, "held", func(r *Run) {
			r.RateBps, r.RTTMs, r.Utilization, r.GoodputBps, r.LinkUtilization = 5_800_000, 169, 0.8, 0.8*5.8e6, f(0.838)
		}, notApplicable, "n/a: 2% loss: 69% of the time lies within 144 ms (the round trip, 169 ms, less the 25 ms allowed)"},
		{p50, "a round trip the median's target allows", func(r *Run) {
			r.RateBps, r.RTTMs, r.Utilization, r.GoodputBps, r.LinkUtilization = 5_800_000, 25, 0.8, 0.8*5.8e6, f(0.838)
		}, missed, "missed by 8.0 ms"},
	} {
		t.Run(tc.target+"/"+tc.name, func(t *testing.T) {
			i := slices.IndexFunc(targets, func(tg target) bool { return tg.name == tc.target })
			r, _ := targetRuns()
			r.Schedule, r.Steps, r.RecoveryS = "", nil, nil
			r.RateBps, r.RTTMs, r.Loss = 19_900_000, 147, 0.02
			r.Utilization, r.GoodputBps, r.LinkUtilization = 0.039, 0.039*19.9e6, f(0.042)
			r.OverFloorMs = pctPtr(33, 148, 200)
			if tc.change != nil {
				tc.change(&r)
			}
			j := targets[i].judge(r, nil)
			if j.verdict != tc.want || !strings.Contains(j.cell, tc.cell) {
				t.Errorf("%q (verdict %d), want %q (verdict %d)", j.cell, j.verdict, tc.cell, tc.want)
			}
		})
	}
}
