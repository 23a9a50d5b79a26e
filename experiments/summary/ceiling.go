package summary

import (
	"math"
	"slices"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/media"
	"replenish/metrics"
	"replenish/rate"
)

// What a video run's summary gives for judging it against the sweep's
// targets (experiments/report's Targets): the median frame's own
// serialization at the bottleneck, the sender's ceiling at the top rung of
// its ladder, and what each step of the schedule changed.

// Top rung criteria (see topRung).
const (
	ceilingBin     = time.Second // the window is judged in bins of this length
	ceilingShort   = 0.9         // encoder output below this share of its target in ceilingRank of the bins: the encoder is the limit
	ceilingRank    = 75          // the percentile of the bins' output ratios compared with ceilingShort
	ceilingAtMax   = 0.99        // a target at or above this share of the rung's Max: the ladder is the limit
	ceilingMinBins = 5           // fewer judged bins give no verdict
)

// ceilingFields sets r's serialization, top rung and steps.
func ceilingFields(r *report.Run, in Input, frames []joinedFrame) {
	win := windowFrames(in.TL, frames)
	r.SerializationMs = serialization(in, win)
	r.Ceiling = topRung(in, frames)
	r.Steps = steps(in.Spec.Path)
}

// writtenAt returns when a frame was written, in µs since the epoch: its
// write start, or for a frame whose record lost it, its encode end.
func writtenAt(f joinedFrame) int64 {
	if f.WriteStartUs != 0 {
		return f.WriteStartUs
	}
	return f.EncodeEndUs
}

// serialization returns the median over the window's frames of a frame's
// encoded bytes at the bottleneck rate when it was written, in ms; nil
// without frames.
func serialization(in Input, win []joinedFrame) *float64 {
	var vals []float64
	for _, f := range win {
		if r := in.Spec.Path.RateAt(in.TL.at(writtenAt(f))); r > 0 && f.Bytes > 0 {
			vals = append(vals, float64(f.Bytes)*8/float64(r)*1e3)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	slices.Sort(vals)
	return ptr(math.Round(metrics.Percentile(vals, 50)*1e3) / 1e3)
}

// ladderTop returns the top rung of the ladder of a sender limited to
// maxRes ("" for the sender's default, the whole ladder).
func ladderTop(maxRes string) media.Rung {
	ladder := media.Ladder
	if sz, err := media.ParseSize(maxRes); maxRes != "" && err == nil {
		ladder = media.RungFor(sz)
	}
	return ladder[len(ladder)-1]
}

// topRung returns what the window shows of the sender's ceiling at the top
// rung of its ladder (no seconds when no frame reached it).
//
// The window is cut into ceilingBin bins by capture time. A bin is judged
// when it holds frames, all at the top rung, none a keyframe and none
// after skipped frames (a skip lowers the output whatever the encoder
// could do), and the bin before it held only top rung frames too (the
// encoder's rate control takes about a second to follow a new rung). Per
// judged bin, the encoder's output is the bin's encoded bits per second
// and its target the median of its frames' targets. Where the path sets
// the target and the encoder meets it, output over target is about 1,
// though single bins fall short while the encoder follows a rising target
// late: in the sweep's runs at 10 and 20 Mb/s, where the encoder met a
// fixed 19.4 Mb/s target in default mode, the ceilingRank percentile of
// the bins' ratios lay between 0.92 and 1.04. An encoder that cannot
// produce what the path allows falls short in every bin, to about 0.8
// (the controller never leads what was sent by more than 25%). The
// sender, not the path, is the limit when that percentile is below
// ceilingShort, or when the median target sits at the rung's Max
// (ceilingAtMax: the ladder's own ceiling); its saturation rate is then
// the median output over the judged bins. Both need ceilingMinBins judged
// bins.
func topRung(in Input, frames []joinedFrame) *report.TopRung {
	top := ladderTop(in.Spec.MaxRes)
	bins := topBins(in, frames, top.Size)
	out := &report.TopRung{Size: top.Size.String(), MaxBps: int64(top.Max)}
	var ratios, outputs, targets []float64
	for k := 1; k < len(bins); k++ {
		b, prev := bins[k], bins[k-1]
		if b.frames == 0 || b.atTop < b.frames || b.spoilt || prev.frames == 0 || prev.atTop < prev.frames {
			continue
		}
		slices.Sort(b.targets)
		target := metrics.Percentile(b.targets, 50)
		got := b.bits / ceilingBin.Seconds()
		outputs, targets = append(outputs, got), append(targets, target)
		if target > 0 {
			ratios = append(ratios, got/target)
		}
	}
	out.Seconds = len(outputs)
	if len(outputs) < ceilingMinBins || len(ratios) == 0 {
		return out
	}
	at := func(v []float64, p float64) float64 { slices.Sort(v); return metrics.Percentile(v, p) }
	ratio := at(ratios, ceilingRank)
	out.OutputRatio = ptr(math.Round(ratio*1e4) / 1e4)
	if ratio < ceilingShort || at(targets, 50) >= ceilingAtMax*float64(top.Max) {
		out.SaturationBps = ptr(math.Round(at(outputs, 50)))
	}
	return out
}

// topBin is what one bin of the window holds (topBins).
type topBin struct {
	frames, atTop int       // frames captured in it, and those at the top rung
	spoilt        bool      // a keyframe, or a frame after skipped ones, at the top rung
	bits          float64   // encoded, of the frames at the top rung
	targets       []float64 // of the frames at the top rung
}

// topBins returns the frames the sender recorded in ceilingBin bins of
// capture time: bins[0] is the bin before the window, bins[k] the k-th of
// the window.
func topBins(in Input, frames []joinedFrame, top media.Size) []topBin {
	from, _ := in.TL.window()
	binUs := ceilingBin.Microseconds()
	bins := make([]topBin, int(in.TL.Duration/ceilingBin)+1)
	for _, f := range frames {
		if f.viewerOnly || f.CaptureUs < from-binUs {
			continue
		}
		k := 0
		if f.CaptureUs >= from {
			k = int((f.CaptureUs-from)/binUs) + 1
		}
		if k >= len(bins) {
			continue
		}
		b := &bins[k]
		b.frames++
		if f.Width != top.W || f.Height != top.H {
			continue
		}
		b.atTop++
		b.spoilt = b.spoilt || f.Key || f.Skipped > 0
		b.bits += float64(f.Bytes) * 8
		b.targets = append(b.targets, float64(f.TargetBps))
	}
	return bins
}

// stepChange returns what a step of a schedule changes, after a path at
// rate prev: StepRateRise when it raises the rate, StepRateFall when it
// lowers it, StepDown and StepUp for an outage, StepRTT otherwise.
func stepChange(st scenario.Step, prev rate.Bitrate) string {
	switch {
	case st.Carrier == emu.CarrierDown:
		return report.StepDown
	case st.Carrier == emu.CarrierUp:
		return report.StepUp
	case st.Rate > prev:
		return report.StepRateRise
	case st.Rate > 0 && st.Rate < prev:
		return report.StepRateFall
	}
	return report.StepRTT
}

// steps describes the steps of p's schedule: when, what they change, and
// the path after them; nil without a schedule.
func steps(p scenario.Path) []report.Step {
	if len(p.Schedule) == 0 {
		return nil
	}
	out := make([]report.Step, len(p.Schedule))
	prev := p.Rate
	for i, st := range p.Schedule {
		out[i] = report.Step{AtS: st.At.Seconds(), Change: stepChange(st, prev), RateBps: int64(p.RateAt(st.At)),
			RTTMs: float64(p.RTTAt(st.At)) / float64(time.Millisecond)}
		if st.Rate > 0 {
			prev = st.Rate
		}
	}
	return out
}
