package summary

import (
	"math"
	"slices"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/rate"
	"replenish/records"
)

func TestSerialization(t *testing.T) {
	// 5000 B frames written 5 ms after their capture, at 1 Mb/s: 40 ms
	// each, 80 ms at 500 kb/s.
	for _, c := range []struct {
		name     string
		schedule []scenario.Step
		want     float64
	}{
		{"steady", nil, 40},
		// Halved at 7 s: 150 of the window's 240 frames at 40 ms.
		{"halved late", []scenario.Step{{At: 7 * time.Second, Rate: 500 * rate.Kbps}}, 40},
		// Halved at 4 s: 180 of them at 80 ms.
		{"halved early", []scenario.Step{{At: 4 * time.Second, Rate: 500 * rate.Kbps}}, 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := videoInput()
			in.Spec.Path.Schedule = c.schedule
			r, _ := summarizeVideo(in, videoRecords())
			if r.SerializationMs == nil || !near(*r.SerializationMs, c.want, 1e-9) {
				t.Errorf("serialization %v ms, want %v", r.SerializationMs, c.want)
			}
		})
	}
}

// topFrames returns 30 fps frames from 0 to 10 s, each as frame(i, f)
// makes it from a 1280x720 frame with no skips, no keyframe, and a
// 10 Mb/s target met.
func topFrames(frame func(i int, f *records.Frame)) []joinedFrame {
	var out []joinedFrame
	for i := range 300 {
		capture := time.Duration(i) * time.Second / 30
		f := records.Frame{CaptureUs: at(capture), WriteStartUs: at(capture + 5*time.Millisecond),
			Width: 1280, Height: 720, TargetBps: 10_000_000, Bytes: 10_000_000 / 30 / 8}
		frame(i, &f)
		out = append(out, joinedFrame{Frame: f})
	}
	return out
}

func TestTopRung(t *testing.T) {
	// The window is 2 s to 10 s: 8 bins of 30 frames.
	bytesAt := func(bps float64) int { return int(math.Round(bps / 30 / 8)) }
	tests := []struct {
		name      string
		maxRes    string
		frame     func(i int, f *records.Frame)
		seconds   int
		ratio     float64 // 0: none
		saturates float64 // 0: none
	}{
		{"path-limited: the encoder meets its target", "", func(int, *records.Frame) {}, 8, 1, 0},
		{"the encoder short of its target", "", func(_ int, f *records.Frame) { f.Bytes = bytesAt(7e6) }, 8, 0.7, 7e6},
		{"at ceilingShort of its target", "", func(_ int, f *records.Frame) { f.Bytes = 37_500 }, 8, 0.9, 0}, // 9 Mb/s
		{"just under ceilingShort", "", func(_ int, f *records.Frame) { f.Bytes = 37_400 }, 8, 0.8976, 8.976e6},
		{"half the bins short do not make a saturation", "", func(i int, f *records.Frame) {
			if i >= 180 { // from 6 s: four bins at half the target
				f.Bytes = bytesAt(5e6)
			}
		}, 8, 1, 0},
		{"the target at the rung's Max", "", func(_ int, f *records.Frame) {
			f.TargetBps, f.Bytes = 20_000_000, bytesAt(19e6)
		}, 8, 0.95, 19e6},
		{"the target within ceilingAtMax of the rung's Max", "", func(_ int, f *records.Frame) {
			f.TargetBps, f.Bytes = 19_900_000, bytesAt(19e6)
		}, 8, 0.9548, 19e6},
		{"the target under ceilingAtMax of the rung's Max", "", func(_ int, f *records.Frame) {
			f.TargetBps, f.Bytes = 19_700_000, bytesAt(19.7e6)
		}, 8, 1, 0},
		{"below the top rung", "", func(_ int, f *records.Frame) { f.Width, f.Height, f.Bytes = 640, 360, bytesAt(1e6) }, 0, 0, 0},
		{"the top rung of a smaller ladder", "640x360", func(_ int, f *records.Frame) {
			f.Width, f.Height, f.TargetBps, f.Bytes = 640, 360, 2_500_000, bytesAt(2.4e6)
		}, 8, 0.96, 2.4e6},
		{"skips and keyframes left out", "", func(i int, f *records.Frame) {
			f.Bytes = bytesAt(7e6)
			f.Key = i%60 == 0 // in every other bin
			if i%60 == 31 {
				f.Skipped = 1 // in the others
			}
		}, 0, 0, 0},
		{"the bin after a rung change left out", "", func(i int, f *records.Frame) {
			f.Bytes = bytesAt(7e6)
			if i < 120 { // 640x360 until 4 s: the bins from 5 s judged
				f.Width, f.Height = 640, 360
			}
		}, 5, 0.7, 7e6},
		{"at the top rung from the window's start", "", func(i int, f *records.Frame) {
			if i < 60 { // the second before the window is not: its first bin is left out
				f.Width, f.Height = 640, 360
			}
		}, 7, 1, 0},
		{"too few bins judged", "", func(i int, f *records.Frame) {
			f.Bytes = bytesAt(7e6)
			if i < 150 { // 640x360 until 5 s: four bins judged
				f.Width, f.Height = 640, 360
			}
		}, 4, 0, 0},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			in := videoInput()
			in.Spec.MaxRes = c.maxRes
			got := topRung(in, topFrames(c.frame))
			size := "1280x720"
			if c.maxRes != "" {
				size = c.maxRes
			}
			if got == nil || got.Size != size || got.Seconds != c.seconds {
				t.Fatalf("top rung %+v, want %s with %d s judged", got, size, c.seconds)
			}
			wantMax := int64(20e6) // 1280x720's Max
			if c.maxRes == "640x360" {
				wantMax = 2.5e6
			}
			if got.MaxBps != wantMax {
				t.Errorf("max %d b/s, want the rung's Max, %d", got.MaxBps, wantMax)
			}
			same := func(p *float64, want, tol float64) bool {
				return (want == 0 && p == nil) || (want != 0 && p != nil && math.Abs(*p-want) <= tol)
			}
			if !same(got.OutputRatio, c.ratio, 1e-4) {
				t.Errorf("output ratio %v, want %v (0: none)", fmtPtr(got.OutputRatio), c.ratio)
			}
			if !same(got.SaturationBps, c.saturates, 1e3) {
				t.Errorf("saturation %v, want %v (0: none)", fmtPtr(got.SaturationBps), c.saturates)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	p := scenario.Path{Rate: 2 * rate.Mbps, RTT: 80 * time.Millisecond, Schedule: []scenario.Step{
		{At: 20 * time.Second, Rate: rate.Mbps},
		{At: 25 * time.Second, Rate: 2 * rate.Mbps},
		{At: 30 * time.Second, RTT: 172 * time.Millisecond},
		{At: 35 * time.Second, Carrier: emu.CarrierDown},
		{At: 38 * time.Second, Carrier: emu.CarrierUp},
		{At: 40 * time.Second, Rate: 2 * rate.Mbps}, // no change of rate
	}}
	want := []report.Step{
		{AtS: 20, Change: report.StepRateFall, RateBps: 1e6, RTTMs: 80},
		{AtS: 25, Change: report.StepRateRise, RateBps: 2e6, RTTMs: 80},
		{AtS: 30, Change: report.StepRTT, RateBps: 2e6, RTTMs: 172},
		{AtS: 35, Change: report.StepDown, RateBps: 2e6, RTTMs: 172},
		{AtS: 38, Change: report.StepUp, RateBps: 2e6, RTTMs: 172},
		{AtS: 40, Change: report.StepRTT, RateBps: 2e6, RTTMs: 172},
	}
	if got := steps(p); !slices.Equal(got, want) {
		t.Errorf("steps\n %+v\nwant\n %+v", got, want)
	}
	if got := steps(scenario.Path{Rate: rate.Mbps}); got != nil {
		t.Errorf("steps without a schedule: %+v", got)
	}
}
