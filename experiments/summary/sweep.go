package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/metrics"
	"replenish/rate"
	"replenish/records"
)

// What a video run's summary says of the path's use, for the sweep of
// rates and paths: how the drain estimate compares with the bottleneck
// rate, how long the link idled while frames waited, which rungs were
// sent, the floor of capture to received, and how fast the run recovered
// from each step of its schedule. experiments/README.md defines each
// field.

// Recovery criteria (see recoveries).
const (
	recoveryStride  = 100 * time.Millisecond // between two windows' starts
	c2rWindow       = 500 * time.Millisecond // capture to received: the median of the frames captured in a window
	c2rMinFrames    = 3                      // fewer frames in a window is not a recovery
	c2rMarginMs     = 25                     // over floor_ms
	utilWindow      = time.Second            // utilization: the media received in a window
	utilTarget      = 0.9                    // of the bottleneck rate
	recoverySustain = time.Second            // the criterion holds for every window starting within this
)

// IdleLog is what a run gathered of its bottleneck's idle spans
// (emu.Path.TakeIdle).
type IdleLog struct {
	Known bool       // the spans were gathered (not for runs recorded before)
	Spans [][2]int64 // [from, to] in µs since the epoch, in time order
	Lost  int        // spans the emulator or the cap did not keep
}

// maxIdleSpans caps the spans an IdleLog keeps.
const maxIdleSpans = 1 << 20

// Add appends spans and counts lost ones.
func (l *IdleLog) Add(spans []emu.IdleSpan, lost int) {
	l.Known = true
	l.Lost += lost
	for _, s := range spans {
		if len(l.Spans) >= maxIdleSpans {
			l.Lost++
			continue
		}
		l.Spans = append(l.Spans, [2]int64{s.From.UnixMicro(), s.To.UnixMicro()})
	}
}

// windowFrames returns the frames the sender recorded that were captured
// in the measured window.
func windowFrames(tl Timeline, frames []joinedFrame) []joinedFrame {
	var out []joinedFrame
	for _, f := range frames {
		if !f.viewerOnly && tl.in(f.CaptureUs) {
			out = append(out, f)
		}
	}
	return out
}

// at returns the time of a stamp in µs since the epoch as a duration since
// T0.
func (tl Timeline) at(us int64) time.Duration {
	return time.Duration(us-tl.T0.UnixMicro()) * time.Microsecond
}

// us returns a duration since T0 as µs since the epoch.
func (tl Timeline) us(t time.Duration) int64 { return tl.T0.UnixMicro() + t.Microseconds() }

// sweepFields sets r's drain ratio, idle fraction, rung fraction, floor,
// capture to received over the floor and recoveries, and what
// ceilingFields sets, and notes why one is missing. c2r holds the capture
// to received of the window's frames, as in capture_to_received_ms, and
// c2rAt each one's capture in µs since the epoch.
func sweepFields(r *report.Run, in Input, frames []joinedFrame, recv []records.ViewerFrame, c2r []float64, c2rAt []int64) {
	ceilingFields(r, in, frames)
	win := windowFrames(in.TL, frames)
	r.RungFraction = rungFraction(win)
	var note string
	share := payloadShare(in, win)
	if r.DrainRatio, note = drainRatio(in, win, share); note != "" {
		r.Notes = append(r.Notes, note)
	}
	if r.IdleFraction, note = idleFraction(in, frames); note != "" {
		r.Notes = append(r.Notes, note)
	}
	r.UtilizationSteady = steadyUtilization(in, recv)
	floorAt, note, ok := floor(in, win, share)
	if !ok {
		return
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	r.FloorMs = ptr(math.Round(floorAt(in.Spec.Warmup)*1000) / 1000)
	r.OverFloorMs = overFloor(in.TL, c2r, c2rAt, floorAt)
	if len(in.Spec.Path.Schedule) > 0 {
		r.RecoveryS = recoveries(in, frames, recv, share, floorAt)
		r.RiseWindowHeld = riseWindowHeld(in, frames, r.RecoveryS)
	}
}

// steadyUtilization returns the media received over the window less the
// recovery each change of the rate may take by its target, over the
// bottleneck's rate in what is left; nil when the window holds no such
// step. A doubling back at 90% within its 5 s still costs the whole
// window's utilization what the climb left unused: judged over the whole
// window, the two targets would ask for two things.
func steadyUtilization(in Input, recv []records.ViewerFrame) *float64 {
	from, to := in.Spec.Warmup, in.Spec.Total()
	var cut [][2]time.Duration
	for _, st := range steps(in.Spec.Path) {
		allow := 0.0
		switch st.Change {
		case report.StepRateFall:
			allow = report.RecoveryFallMaxS
		case report.StepRateRise:
			allow = report.RecoveryRiseMaxS
		}
		at := time.Duration(st.AtS * float64(time.Second))
		end := at + time.Duration(allow*float64(time.Second))
		if allow > 0 && end > from && at < to {
			cut = append(cut, [2]time.Duration{max(at, from), min(end, to)})
		}
	}
	if len(cut) == 0 {
		return nil
	}
	keep := keptSpans(from, to, cut)
	var bits, capacity float64
	for _, k := range keep {
		capacity += in.Spec.Path.MeanRate(k[0], k[1]) * (k[1] - k[0]).Seconds()
		for _, x := range recv {
			if at := in.TL.at(x.ReceivedUs); at >= k[0] && at < k[1] {
				bits += 8 * float64(x.Bytes)
			}
		}
	}
	if capacity <= 0 {
		return nil
	}
	return ptr(bits / capacity)
}

// keptSpans returns [from, to) less the spans in cut, in order.
func keptSpans(from, to time.Duration, cut [][2]time.Duration) [][2]time.Duration {
	slices.SortFunc(cut, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
	var keep [][2]time.Duration
	t := from
	for _, c := range cut {
		if c[0] > t {
			keep = append(keep, [2]time.Duration{t, c[0]})
		}
		t = max(t, c[1])
	}
	if t < to {
		keep = append(keep, [2]time.Duration{t, to})
	}
	return keep
}

// rungFraction returns the share of frames at each resolution, "WxH".
func rungFraction(win []joinedFrame) map[string]float64 {
	counts := map[string]int{}
	n := 0
	for _, f := range win {
		if f.Width > 0 && f.Height > 0 {
			counts[strconv.Itoa(f.Width)+"x"+strconv.Itoa(f.Height)]++
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]float64, len(counts))
	for k, c := range counts {
		out[k] = math.Round(1e4*float64(c)/float64(n)) / 1e4
	}
	return out
}

// drainRatio returns the percentiles of the invitation's drain estimate
// over the bottleneck rate when the frame was written, over the frames
// whose estimate came from path-limited windows (the sender, or the queue
// the network held, kept the bottleneck busy); nil when none did.
//
// The estimate counts the bytes the sender wrote (RTP, framing, its
// reports); the bottleneck's rate counts IP packets, whose headers the
// estimate never sees: at 100 kb/s and 15 fps they are a tenth of the
// link. So the rate is taken in the estimate's units, times share, the
// window's payloadShare, and an exact estimate reads 1 on every path. The
// second result is a note when the share is unknown and the rate is taken
// as it is.
func drainRatio(in Input, win []joinedFrame, share float64) (*metrics.Percentiles, string) {
	note := ""
	if share == 0 {
		share, note = 1, "drain_ratio against the bottleneck's IP rate: the bytes written or the link's are unknown"
	}
	var ratios []float64
	for _, f := range win {
		if !f.Drain.Known() || f.Drain.AppLimited {
			continue
		}
		written := f.WriteStartUs
		if written == 0 {
			written = f.EncodeEndUs
		}
		if r := in.Spec.Path.RateAt(in.TL.at(written)); r > 0 {
			ratios = append(ratios, float64(f.Drain.RateBps)/(float64(r)*share))
		}
	}
	if len(ratios) == 0 {
		return nil, ""
	}
	p := metrics.Summarize(ratios).Only(metrics.P50 | metrics.P95 | metrics.Count).Round(4)
	return &p, note
}

// payloadShare returns the share of the bottleneck's bytes in the window
// that the sender wrote: the window's frames' written bytes over the IP
// bytes the emulator delivered toward the receiver in it. It returns 0
// when either is unknown (a frame without its written bytes, as in
// records from before they were kept), or when competing flows shared the
// link's bytes.
func payloadShare(in Input, win []joinedFrame) float64 {
	if in.Spec.CrossInWindow() {
		return 0
	}
	ip := in.Final.Forward.Total.Rate()
	var written int64
	for _, f := range win {
		if f.Written <= 0 {
			return 0
		}
		written += int64(f.Written)
	}
	if ip <= 0 || written == 0 || in.TL.Duration <= 0 {
		return 0
	}
	return float64(written) * 8 / in.TL.Duration.Seconds() / ip
}

// floor returns floor_ms as a function of the time since T0: the one-way
// delay then (with half the path's jitter, its median draw), plus the
// median frame's serialization at the bottleneck rate then, plus the
// median encode, all over the window's frames. On a path whose rate steps
// the median frame is that of the frames captured while the path had the
// rate (rateMedians), as the path model's segments take it: the stream
// fills a doubled link with frames twice as large, whose own
// serialization the window's median (mostly the slower path's frames)
// halved (a 1.4 to 2.8 Mb/s doubling at 15 fps read 43 ms over the floor
// at the median, 15 ms against each rate's own frames). A frame's
// serialization is that of its packets: the bytes written for it over
// share, the window's payloadShare, so that the headers count (at 30 kb/s
// they are 23 ms of a frame's 125). Where the share is unknown (0) it is the bytes written, or the VP8 bytes where those
// are, and the second result says so. It reports false without frames.
func floor(in Input, win []joinedFrame, share float64) (func(time.Duration) float64, string, bool) {
	note := ""
	var sizes, encodes []float64
	for _, f := range win {
		switch {
		case share > 0:
			sizes = append(sizes, float64(f.Written)/share)
		case f.Written > 0:
			sizes = append(sizes, float64(f.Written))
			note = "floor_ms: a frame's serialization counts the bytes written, without the packets' IP headers (their share of the link is unknown)"
		default:
			sizes = append(sizes, float64(f.Bytes))
			note = "floor_ms: a frame's serialization counts its VP8 bytes only (the bytes written are unknown)"
		}
		if f.EncodeStartUs > 0 && f.EncodeEndUs >= f.EncodeStartUs {
			encodes = append(encodes, ms(f.EncodeEndUs-f.EncodeStartUs))
		}
	}
	if len(sizes) == 0 || len(encodes) == 0 {
		return nil, "", false
	}
	p := in.Spec.Path
	size := rateMedians(in, win, sizes)
	slices.Sort(encodes)
	encode := metrics.Percentile(encodes, 50)
	return func(t time.Duration) float64 {
		fwd, _ := emu.SplitRTT(p.RTTAt(t))
		fwd += p.Jitter / 2
		r := p.RateAt(t)
		return float64(fwd)/float64(time.Millisecond) + size(r)*8/float64(r)*1e3 + encode
	}, note, true
}

// rateMedians returns the median of sizes (one per frame of win) over the
// frames captured while the path had a given rate, or over all of them
// for a rate none was captured at.
func rateMedians(in Input, win []joinedFrame, sizes []float64) func(rate.Bitrate) float64 {
	by := map[rate.Bitrate][]float64{}
	for i, f := range win {
		r := in.Spec.Path.RateAt(in.TL.at(f.CaptureUs))
		by[r] = append(by[r], sizes[i])
	}
	med := map[rate.Bitrate]float64{}
	for r, v := range by {
		slices.Sort(v)
		med[r] = metrics.Percentile(v, 50)
	}
	all := slices.Sorted(slices.Values(sizes))
	whole := metrics.Percentile(all, 50)
	return func(r rate.Bitrate) float64 {
		if m, ok := med[r]; ok {
			return m
		}
		return whole
	}
}

// overFloor returns the percentiles of each frame's capture to received
// (c2r, ms) less the floor on the path when it was captured (c2rAt, µs
// since the epoch): on a path whose round trip or rate steps, floor_ms
// (the floor at the window's start) is not every frame's. Nil without
// frames.
func overFloor(tl Timeline, c2r []float64, c2rAt []int64, floorAt func(time.Duration) float64) *metrics.Percentiles {
	if len(c2r) == 0 || len(c2r) != len(c2rAt) {
		return nil
	}
	over := make([]float64, len(c2r))
	for i, v := range c2r {
		over[i] = v - floorAt(tl.at(c2rAt[i]))
	}
	p := pct(over)
	return &p
}

// idleFraction returns the share of the measured window in which the
// bottleneck was idle while the sender had a raw frame waiting to be
// invited (waitSpans), or nil and why not.
func idleFraction(in Input, frames []joinedFrame) (*float64, string) {
	switch {
	case !in.Idle.Known:
		return nil, ""
	case in.Idle.Lost > 0:
		return nil, fmt.Sprintf("idle fraction unknown: %d of the bottleneck's idle spans were not kept", in.Idle.Lost)
	}
	from, to := in.TL.window()
	idle := clip(in.Idle.Spans, from, to)
	both := intersect(idle, waitSpans(frames))
	var sum int64
	for _, s := range both {
		sum += s[1] - s[0]
	}
	v := math.Round(1e6*float64(sum)/float64(to-from)) / 1e6
	return &v, ""
}

// waitSpans returns the spans, in µs since the epoch, in which the sender
// had a raw frame waiting to be invited: for each frame encoded, from the
// capture of the first raw frame after the one encoded before it (the
// source renders at a steady rate, so the frames it skipped were evenly
// spaced between the two captures) to its encode start. They are sorted
// and merged.
func waitSpans(frames []joinedFrame) [][2]int64 {
	enc := make([]joinedFrame, 0, len(frames))
	for _, f := range frames {
		if !f.viewerOnly && f.CaptureUs > 0 && f.EncodeStartUs >= f.CaptureUs {
			enc = append(enc, f)
		}
	}
	slices.SortFunc(enc, func(a, b joinedFrame) int { return cmp.Compare(a.EncodeStartUs, b.EncodeStartUs) })
	var spans [][2]int64
	for i, f := range enc {
		start := f.CaptureUs
		if i > 0 && f.CaptureUs > enc[i-1].CaptureUs {
			prev := enc[i-1].CaptureUs
			start = prev + (f.CaptureUs-prev)/int64(f.Skipped+1)
		}
		spans = append(spans, [2]int64{start, f.EncodeStartUs})
	}
	return merge(spans)
}

// merge sorts spans by start and merges those that overlap.
func merge(spans [][2]int64) [][2]int64 {
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]int64
	for _, s := range spans {
		if s[1] <= s[0] {
			continue
		}
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// clip returns the parts of sorted, disjoint spans within [from, to].
func clip(spans [][2]int64, from, to int64) [][2]int64 {
	var out [][2]int64
	for _, s := range spans {
		a, b := max(s[0], from), min(s[1], to)
		if b > a {
			out = append(out, [2]int64{a, b})
		}
	}
	return out
}

// intersect returns the intersection of two sorted lists of disjoint
// spans.
func intersect(a, b [][2]int64) [][2]int64 {
	var out [][2]int64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
		if hi > lo {
			out = append(out, [2]int64{lo, hi})
		}
		if a[i][1] < b[j][1] {
			i++
		} else {
			j++
		}
	}
	return out
}

// recoveries returns, for each step of the run's schedule, the seconds
// from the step until the run recovered from it, or nil when it did not
// before the next step or the end of the window (or the step fell in the
// warm-up). After a rise of the rate the criterion is utilization (utilOK);
// after any other step (a fall of the rate, a change of the RTT) it is
// capture to received (c2rOK), against floor_ms on the path after the step.
func recoveries(in Input, frames []joinedFrame, recv []records.ViewerFrame, share float64, floorAt func(time.Duration) float64) []*float64 {
	c2r := c2rOK(in, frames, floorAt)
	util := utilOK(in, frames, recv, share)
	out := make([]*float64, len(in.Spec.Path.Schedule))
	for i, st := range steps(in.Spec.Path) {
		at := in.Spec.Path.Schedule[i].At
		if at < in.Spec.Warmup {
			continue
		}
		if st.Change == report.StepRateRise {
			out[i] = firstSustained(at, stepEnd(in, i), utilWindow, util)
		} else {
			out[i] = firstSustained(at, stepEnd(in, i), c2rWindow, c2r)
		}
	}
	return out
}

// windowHeldSlack is how far below its congestion window the transport's
// bytes in flight may be for the window to count as holding the stream:
// three full-size packets (quic-go calls a sender with no more room than
// that congestion-limited, and grows its window only then).
const windowHeldSlack = 3 * 1500

// riseWindowHeld returns, for each rise of the rate in the window, the
// share of the frames written from the step until the run was back
// (recovery, or the next step or the window's end if it was not) whose
// invitation found the transport's bytes in flight within windowHeldSlack
// of its congestion window: the sender offered what the window let
// through, so the window's growth, not the sender's climb, set the pace.
// Other steps, and a rise with no such record, are nil; nil when no step
// has a share.
func riseWindowHeld(in Input, frames []joinedFrame, recovery []*float64) []*float64 {
	out := make([]*float64, len(in.Spec.Path.Schedule))
	found := false
	for i, st := range steps(in.Spec.Path) {
		at := in.Spec.Path.Schedule[i].At
		if st.Change != report.StepRateRise || at < in.Spec.Warmup {
			continue
		}
		end := stepEnd(in, i)
		if i < len(recovery) && recovery[i] != nil {
			end = min(end, at+time.Duration(*recovery[i]*float64(time.Second)))
		}
		held, n := 0, 0
		for _, f := range frames {
			d := f.Drain
			if d == nil || d.Cwnd <= 0 || d.InFlight < 0 {
				continue
			}
			if t := in.TL.at(d.AtUs); t < at || t >= end {
				continue
			}
			n++
			if d.InFlight >= d.Cwnd-windowHeldSlack {
				held++
			}
		}
		if n > 0 {
			out[i], found = ptr(math.Round(1e3*float64(held)/float64(n))/1e3), true
		}
	}
	if !found {
		return nil
	}
	return out
}

// stepEnd returns when the i-th step of the schedule is followed by the
// next, or the measured window ends, whichever comes first.
func stepEnd(in Input, i int) time.Duration {
	end, sched := in.Spec.Total(), in.Spec.Path.Schedule
	if i+1 < len(sched) {
		end = min(end, sched[i+1].At)
	}
	return end
}

// firstSustained returns the seconds from step to the first window start
// t (step, step+recoveryStride, ...) such that ok holds for every window
// start in [t, t+recoverySustain], counting only windows of width that end
// by horizon; nil if there is none.
func firstSustained(step, horizon, width time.Duration, ok func(time.Duration) bool) *float64 {
	n := int((horizon-width-step)/recoveryStride) + 1
	need := int(recoverySustain/recoveryStride) + 1
	if n < need {
		return nil
	}
	oks := make([]bool, n)
	for k := range oks {
		oks[k] = ok(step + time.Duration(k)*recoveryStride)
	}
	for k := 0; k+need <= n; k++ {
		if !slices.Contains(oks[k:k+need], false) {
			v := (time.Duration(k) * recoveryStride).Seconds()
			return &v
		}
	}
	return nil
}

// c2rOK returns whether, for the window [t, t+c2rWindow), at least
// c2rMinFrames frames captured in it were received, with a median capture
// to received at most floor_ms (on the path at t) plus c2rMarginMs.
func c2rOK(in Input, frames []joinedFrame, floorAt func(time.Duration) float64) func(time.Duration) bool {
	type point struct{ capture, c2r int64 }
	var pts []point
	for _, f := range frames {
		if f.ReceivedUs > 0 && f.CaptureUs > 0 {
			pts = append(pts, point{f.CaptureUs, f.ReceivedUs - f.CaptureUs})
		}
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.capture, b.capture) })
	return func(t time.Duration) bool {
		from, to := in.TL.us(t), in.TL.us(t+c2rWindow)
		i := sort.Search(len(pts), func(i int) bool { return pts[i].capture >= from })
		var vals []float64
		for ; i < len(pts) && pts[i].capture < to; i++ {
			vals = append(vals, ms(pts[i].c2r))
		}
		if len(vals) < c2rMinFrames {
			return false
		}
		slices.Sort(vals)
		return metrics.Percentile(vals, 50) <= floorAt(t)+c2rMarginMs
	}
}

// utilOK returns whether the link carried the stream at least utilTarget
// busy over [t, t+utilWindow): the bytes written for the frames received
// in it over share, the window's payloadShare (the payload's share of the
// link's IP bytes), as link_utilization counts the link. Counting the media alone, a rise
// to a low rate could never recover: at 200 kb/s the headers hold VP8 at
// 86 to 89% of a link that is 92 to 93% busy. Where the share is unknown
// (0: frames without their written bytes, or competing flows on the link)
// it counts the media received, as before the share was known.
func utilOK(in Input, frames []joinedFrame, recv []records.ViewerFrame, share float64) func(time.Duration) bool {
	type arrival struct {
		us    int64
		bytes float64
	}
	var arr []arrival
	if share > 0 {
		for _, f := range frames {
			if f.ReceivedUs > 0 {
				arr = append(arr, arrival{f.ReceivedUs, float64(f.Written) / share})
			}
		}
	} else {
		for _, r := range recv {
			arr = append(arr, arrival{r.ReceivedUs, float64(r.Bytes)})
		}
	}
	slices.SortFunc(arr, func(a, b arrival) int { return cmp.Compare(a.us, b.us) })
	sums := make([]float64, len(arr)+1) // sums[i]: bytes of the first i
	for i, a := range arr {
		sums[i+1] = sums[i] + a.bytes
	}
	idx := func(us int64) int {
		return sort.Search(len(arr), func(i int) bool { return arr[i].us >= us })
	}
	return func(t time.Duration) bool {
		bytes := sums[idx(in.TL.us(t+utilWindow))] - sums[idx(in.TL.us(t))]
		return bytes*8/utilWindow.Seconds() >= utilTarget*float64(in.Spec.Path.RateAt(t))
	}
}
