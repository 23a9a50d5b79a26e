package sender_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/sender"
	"replenish/sender/pathmodel"
)

// The targets the controller must meet on the model, the ones users
// measure on real paths (README, "Rate control"). The floor is the one-way
// delay, the median frame's serialization at the bottleneck and the median
// encode.
const (
	excessP50   = 25 * time.Millisecond // capture to received p50 above the floor
	excessP95   = 80 * time.Millisecond // and p95
	minUtil     = 0.9                   // of what both the top rung and the transport can fill
	halvingTime = 2 * time.Second       // to capture to received back within the bounds after a halving
	doublingTo  = 5 * time.Second       // to utilization back at minUtil after a doubling
)

// pathCase is one path of the matrix and what it must meet.
type pathCase struct {
	name string
	cfg  pathmodel.Config
	lim  limit
}

// limit relaxes the targets for a path. Physical limits are derived from
// the path (limitsFor); the controller's own shortfalls, where it misses a
// target the physics allows, are listed by name in shortfalls with the
// bound it does meet, so that they are visible and cannot grow.
type limit struct {
	p50      time.Duration // added to excessP50
	p95      time.Duration // added to excessP95
	util     float64       // replaces minUtil if set
	halving  time.Duration // replaces halvingTime if set; -1: not asserted
	doubling time.Duration // replaces doublingTo if set; -1: not asserted
	why      []string
}

func (l *limit) relax(o limit) {
	l.p50 += o.p50
	l.p95 += o.p95
	if o.util > 0 {
		l.util = min(nonzero(l.util, minUtil), o.util)
	}
	l.halving = relaxTime(l.halving, o.halving)
	l.doubling = relaxTime(l.doubling, o.doubling)
	l.why = append(l.why, o.why...)
}

// relaxTime combines two step time limits: -1 (not asserted) from either
// wins, then the longer; 0 is unset.
func relaxTime(cur, o time.Duration) time.Duration {
	if cur < 0 || o < 0 {
		return -1
	}
	return max(cur, o)
}

func nonzero[T comparable](v, d T) T {
	var z T
	if v == z {
		return d
	}
	return v
}

// limitsFor returns the relaxations a path's physics calls for.
func limitsFor(name string, p pathmodel.Path) limit {
	var l limit
	// A drop-tail buffer this short holds less than two frames at the
	// link rate (a frame at 90% of the link is 30 ms of it; a keyframe,
	// several times that): frames overflow it however short the standing
	// queue is, and the frame a lost packet belongs to waits for its
	// retransmission, a round trip or more.
	if p.Queue <= 50*time.Millisecond {
		l.relax(limit{p95: p.RTT, why: []string{"buffer under two frames: losses cost a round trip"}})
	}
	if p.Loss > 0 {
		l.relax(limit{p95: p.RTT, why: []string{"random loss: a retransmission costs a round trip"}})
	}
	lowest := p.Rate
	for _, st := range p.Steps {
		if st.Rate > 0 {
			lowest = min(lowest, st.Rate)
		}
	}
	// At a few hundred kb/s a frame is one or two segments: the kernel
	// takes one RTT sample per frame (15 a second on the lowest rung)
	// and its smoothed RTT needs eight to follow a change, half a second;
	// and the RTT moves by a whole segment's serialization (23 ms at
	// 500 kb/s, 116 ms at 100 kb/s) as frames cross segment boundaries,
	// several times the controller's congestion threshold. The
	// controller then cuts on noise and probes slowly.
	if lowest <= 500*rate.Kbps {
		low := limit{util: 0.75, halving: 4 * time.Second, doubling: -1,
			why: []string{"at most 500 kb/s: one or two segments a frame, a coarse and slow delay signal (shortfall)"}}
		if len(p.Steps) > 0 {
			low.util = 0.6 // the doubling back is not found within the run
		}
		l.relax(low)
	}
	// Below the lowest rung's Min the frames are spread instead
	// (media.Rung.IntervalAt): each keeps about 450 bytes on the wire, 90
	// to 120 ms of a 30 to 40 kb/s link. The delay signal's grain is one
	// such frame (one ACK, one RTT sample), so a probe's overshoot shows
	// a frame or more late, and a frame a fifth above the median (the
	// size noise and the temporal layers) adds a fifth of one to the
	// floor, which counts the median's.
	if lowest < 50*rate.Kbps {
		frame := lowest.Duration(450)
		l.relax(limit{p95: frame, why: []string{fmt.Sprintf("below the lowest rung's Min: a frame is %v of the link, the signal's grain (shortfall)", frame.Round(time.Millisecond))}})
	}
	if s, ok := shortfalls[name]; ok {
		l.relax(s)
	}
	return l
}

// shortfalls are the paths where the controller misses a target that
// physics does not explain, with the bound it meets on them.
var shortfalls = map[string]limit{
	// BBR at a 10 ms RTT: it paces at its estimate of the flow's own
	// (application-limited) rate, so a frame leaves at about the stream's
	// rate rather than the link's (source delay p50 32 to 36 ms, about a
	// frame interval); frames are skipped (22 to 24 fps) and the
	// controller backs off.
	"bbr,20M,10ms,q50ms":  {util: 0.83, why: []string{"utilization 0.80, 0.81 against BBR's own 0.95 (shortfall)"}},
	"bbr,10M,10ms,q500ms": {util: 0.85, why: []string{"utilization 0.82 to 0.85 against BBR's own 0.95 (shortfall)"}},
	// The probe cycle at 300 ms: each probe's cut costs more than the
	// probe gains, and a doubled or halved link is found late.
	"cubic,16M,300ms,halve-double": {doubling: 9500 * time.Millisecond, why: []string{"the probe cycle at 300 ms: doubling found in 5.5 to 9.4 s (shortfall)"}},
	"cubic,4M,300ms,halve-double": {halving: 2600 * time.Millisecond, doubling: 6 * time.Second,
		why: []string{"halving: capture to received back in 2.4 to 2.5 s; doubling found in 5.1 to 5.8 s (shortfall)"}},
	"bbr,4M,300ms,halve-double": {doubling: 7 * time.Second, why: []string{"doubling found in 5.1 to 6.9 s (shortfall)"}},
	// BBR at a long round trip: the transport's drain rate follows the
	// application-limited flow's own rate, so a cut on BBR's gain-cycle
	// queue is not made good, and some runs fall to 320x180 or 640x360
	// (as the sweep's real 2mbit-172ms-bbr run does: 0.62, a third of it
	// at 320x180). With random loss or a buffer under two frames, the
	// losses add cuts of their own.
	"bbr,5M,172ms,q100ms": {util: 0.57, why: []string{"utilization 0.53, 0.65, 0.68 (shortfall)"}},
	"bbr,4M,172ms,halve-double": {util: 0.65, doubling: 12 * time.Second,
		why: []string{"utilization 0.60, 0.61, 0.75, a fifth of it at 320x180; doubling found in 7.2, 7.5, 11.8 s (shortfall)"}},
	// A lost segment holds every frame behind it for a round trip (123 ms)
	// until its retransmission arrives.
	"random3,bbr,12.2M,123ms,q293ms,loss0.005": {util: 0.48, p50: 15 * time.Millisecond,
		why: []string{"utilization 0.43 to 0.73; capture to received p50 16 to 39 ms above the floor, over 25 in 10 to 11 of 15 runs (shortfall)"}},
	"bbr,1M,172ms,q500ms": {util: 0.85, why: []string{"utilization 0.80 to 0.84, part of it at 320x180 (shortfall)"}},
	"bbr,2M,172ms,q50ms":  {util: 0.72, why: []string{"utilization 0.67 to 0.81, up to a fifth of it at 320x180 (shortfall)"}},
	"random7,bbr,1.6M,230ms,q79ms,loss0.005": {util: 0.81,
		why: []string{"utilization 0.75 to 0.81, part of it at 320x180 (shortfall)"}},
	// A halving from a full 200 kb/s at 300 ms: the queue grows at 85% of
	// the new rate for a feedback delay (a round trip, and a smoothed RTT
	// that follows one ACK a frame: 0.9 s) before the first cut can see
	// it, 0.6 s of queue to drain. (It met the bounds while the sent rate
	// counted whole frames in its window and read 7% low: the stream held
	// half the link, utilization 0.62, and had little to drain.)
	"bbr,200k,300ms,halve-double": {p95: 110 * time.Millisecond, halving: 5500 * time.Millisecond,
		why: []string{"halving: capture to received back in 2.2 to 5.0 s, p95 30 to 182 ms above the floor (shortfall)"}},
	// Paths whose rate wanders. walk0's buffer, 200 ms at its first
	// 384 kb/s, is 40 ms once the rate has wandered to 1.94 Mb/s, about
	// one frame: a probe's larger frames lose their tails there, and the
	// frames behind a retransmission arrive a round trip late.
	"walk0,cubic,384k,178ms": {p95: 50 * time.Millisecond,
		why: []string{"capture to received p95 33 to 125 ms above the floor, over 80 in 8 of 15 runs (shortfall)"}},
	// A doubling that comes with a round trip from 29 to 131 ms: the base
	// moves only after the cuts the longer round trip draws (see shifted).
	"walk2,cubic,4.06M,29ms": {doubling: 9 * time.Second,
		why: []string{"the doubling at 20 s, with the round trip from 29 to 131 ms, found in 5.8 to 8.6 s (shortfall)"}},
	"bbr,1M,300ms,halve-double": {p95: 25 * time.Millisecond,
		why: []string{"capture to received p95 86 to 100 ms above the floor, a third or more of it at 320x180 (shortfall)"}},
}

// matrix returns the paths the controller is checked on: every rate with
// every round trip, with both congestion controls and a spread of buffer
// depths; rate halvings and doublings; round trip steps; paths drawn at
// random with a fixed seed; paths with jitter; paths slower than the
// lowest rung; and paths whose rate wanders.
func matrix() []pathCase {
	rates := []rate.Bitrate{100 * rate.Kbps, 300 * rate.Kbps, 500 * rate.Kbps, 1 * rate.Mbps, 2 * rate.Mbps,
		5 * rate.Mbps, 10 * rate.Mbps, 20 * rate.Mbps, 50 * rate.Mbps}
	rtts := []time.Duration{10, 20, 80, 172, 300}
	queues := []time.Duration{50, 100, 200, 500}
	var cs []pathCase
	add := func(name string, p pathmodel.Path) {
		p.Queue = max(p.Queue, minQueue(p.Rate))
		seed := uint64(len(cs) + 1)
		cs = append(cs, pathCase{name: name, cfg: pathmodel.Config{Path: p, Seed: seed}, lim: limitsFor(name, p)})
	}
	i := 0
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range rates {
			for _, rtt := range rtts {
				q := queues[i%len(queues)] * time.Millisecond
				i++
				p := pathmodel.Path{Rate: r, RTT: rtt * time.Millisecond, Queue: q, CC: cc}
				add(fmt.Sprintf("%v,%s,%v,q%v", cc, short(r), p.RTT, max(q, minQueue(r)).Round(time.Millisecond)), p)
			}
		}
	}
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range []rate.Bitrate{200 * rate.Kbps, 1 * rate.Mbps, 4 * rate.Mbps, 16 * rate.Mbps} {
			for _, rtt := range []time.Duration{20, 80, 172, 300} {
				p := pathmodel.Path{Rate: r, RTT: rtt * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc,
					Steps: []pathmodel.Step{{At: 25 * time.Second, Rate: r / 2}, {At: 40 * time.Second, Rate: r}}}
				add(fmt.Sprintf("%v,%s,%v,halve-double", cc, short(r), p.RTT), p)
			}
		}
		for _, rtt := range []time.Duration{20, 80} {
			p := pathmodel.Path{Rate: 3 * rate.Mbps, RTT: rtt * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc,
				Steps: []pathmodel.Step{{At: 25 * time.Second, RTT: 4 * rtt * time.Millisecond}, {At: 40 * time.Second, RTT: rtt * time.Millisecond}}}
			add(fmt.Sprintf("%v,3M,%v,rtt-x4", cc, p.RTT), p)
		}
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for j := range 16 {
		r := rate.Bitrate(100e3 * math.Pow(500, rng.Float64()))
		rtt := time.Duration(float64(10*time.Millisecond) * math.Pow(30, rng.Float64())).Round(time.Millisecond)
		q := time.Duration(float64(50*time.Millisecond) * math.Pow(10, rng.Float64())).Round(time.Millisecond)
		cc := pathmodel.CC(j % 2)
		loss := []float64{0, 0, 0.001, 0.005}[j%4]
		p := pathmodel.Path{Rate: r, RTT: rtt, Queue: q, CC: cc, Loss: loss}
		add(fmt.Sprintf("random%d,%v,%s,%v,q%v,loss%v", j, cc, short(r), rtt, max(q, minQueue(r)).Round(time.Millisecond), loss), p)
	}
	// A round trip that rises eightfold for good (20 to 160 ms, as a
	// route change does), added last so that the paths above keep their
	// seeds.
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range []rate.Bitrate{500 * rate.Kbps, 2 * rate.Mbps, 8 * rate.Mbps} {
			p := pathmodel.Path{Rate: r, RTT: 20 * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc,
				Steps: []pathmodel.Step{{At: 25 * time.Second, RTT: 160 * time.Millisecond}}}
			add(fmt.Sprintf("%v,%s,20ms,rtt-x8", cc, short(r)), p)
		}
	}
	// Delay that varies from packet to packet (as on a radio link), up
	// to half the round trip; the floor counts the jitter's median draw.
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, j := range []struct {
			r        rate.Bitrate
			rtt, jit time.Duration
		}{{500 * rate.Kbps, 80, 20}, {2 * rate.Mbps, 20, 10}, {10 * rate.Mbps, 80, 20}} {
			p := pathmodel.Path{Rate: j.r, RTT: j.rtt * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc, Jitter: j.jit * time.Millisecond}
			add(fmt.Sprintf("%v,%s,%v,jitter%v", cc, short(j.r), p.RTT, p.Jitter), p)
		}
	}
	// Paths slower than the lowest rung at its own frame rate (about
	// 58 kb/s on the wire at its Min), where the frame rate falls
	// (media.Rung.IntervalAt), in a buffer of eight packets (3.2 s at
	// 30 kb/s).
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range []rate.Bitrate{30 * rate.Kbps, 40 * rate.Kbps} {
			for _, rtt := range []time.Duration{20, 172} {
				p := pathmodel.Path{Rate: r, RTT: rtt * time.Millisecond, Queue: minQueue(r), CC: cc}
				add(fmt.Sprintf("%v,%s,%v,below-rung", cc, short(r), p.RTT), p)
			}
		}
	}
	// Paths whose rate wanders (walkPaths), added last so that the paths
	// above keep their seeds.
	// Each runs on 10 s past its last step, so that every step's recovery
	// is judged (the default 60 s left a step at 58 s two seconds, in
	// which no fall could recover for a whole second).
	for j, p := range walkPaths() {
		add(fmt.Sprintf("walk%d,%v,%s,%v", j, p.CC, short(p.Rate), p.RTT), p)
		cs[len(cs)-1].cfg.Duration = p.Steps[len(p.Steps)-1].At + 10*time.Second
	}
	return cs
}

// walkPaths returns six paths whose rate wanders, as `experiments draw
// --walk` draws them: from 20 s, a step every 8 to 10 s by a factor of
// 1.25 to 2.5 either way (kept within 150 kb/s to 40 Mb/s), three in ten
// with a new round trip.
func walkPaths() []pathmodel.Path {
	wr := rand.New(rand.NewPCG(43, 43))
	var out []pathmodel.Path
	for j := range 6 {
		r := rate.Bitrate(300e3 * math.Pow(60, wr.Float64()))
		rtt := time.Duration(20+wr.IntN(181)) * time.Millisecond
		p := pathmodel.Path{Rate: r, RTT: rtt, Queue: 200 * time.Millisecond, CC: pathmodel.CC(j % 2)}
		for at, cur := 20*time.Second, r; at <= 62*time.Second; at += time.Duration(8+wr.IntN(3)) * time.Second {
			f := 1.0
			for math.Abs(math.Log(f)) < math.Log(1.25) {
				f = math.Exp((2*wr.Float64() - 1) * math.Log(2.5))
			}
			if next := cur.Scale(f); next < 150*rate.Kbps || next > 40*rate.Mbps {
				f = 1 / f // turn back at the edges
			}
			cur = cur.Scale(f)
			st := pathmodel.Step{At: at, Rate: cur}
			if wr.Float64() < 0.3 {
				st.RTT = time.Duration(20+wr.IntN(181)) * time.Millisecond
			}
			p.Steps = append(p.Steps, st)
		}
		out = append(out, p)
	}
	return out
}

// short names a rate in a case name: 500k, 12.5M.
func short(r rate.Bitrate) string {
	if r >= rate.Mbps {
		return strconv.FormatFloat(float64(r)/float64(rate.Mbps), 'g', 3, 64) + "M"
	}
	return strconv.FormatFloat(float64(r)/float64(rate.Kbps), 'g', 3, 64) + "k"
}

// minQueue is the shallowest buffer the matrix uses: eight full packets
// (a router's buffer holds at least a few; at 100 kb/s that is 960 ms).
func minQueue(r rate.Bitrate) time.Duration {
	return r.Duration(8 * 1500)
}

// outcome is one path's result against its bounds.
type outcome struct {
	c    pathCase
	r    *pathmodel.Result
	bulk float64
	bad  []broken
}

// broken is a bound a run broke: which one, and by how much.
type broken struct {
	bound string
	msg   string
}

// seeds is how many runs of each path, with different frame-size noise,
// the loss draws and the source's phase, the test judges: a bound is
// broken when most of them break it (the median run does). One run's
// outcome turns on where its probes happen to fall against the steps
// and the losses; a controller that holds only on the seed it was tuned
// on is not done.
const seeds = 15

func TestRateControlOnPaths(t *testing.T) {
	if raceEnabled {
		// The model is one goroutine per run and ten times slower under
		// the race detector; test.sh runs this test without it.
		t.Skip("runs without the race detector (test.sh)")
	}
	cs := matrix()
	if testing.Short() {
		cs = shortMatrix(cs)
	}
	checkPaths(t, cs)
}

// TestRateControlDelayedAck runs the short matrix with a receiver that
// delays its ACKs as Linux does (pathmodel.Path.DelayedAck): a lone full
// segment inside a frame waits for the next one or for 40 ms. The stream's
// frames end in a PSH segment, acknowledged at once, so the bounds are the
// same; the full matrix with delayed ACKs breaks one path, BBR at 2.82 Mb/s
// and 10 ms (NOTEBOOK.md, "Delayed ACKs, measured and in the path model").
func TestRateControlDelayedAck(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	cs := shortMatrix(matrix())
	for i := range cs {
		cs[i].cfg.Path.DelayedAck = true
	}
	checkPaths(t, cs)
}

// checkPaths runs each path with seeds seeds and reports the bounds most of
// them broke.
func checkPaths(t *testing.T, cs []pathCase) {
	outs := make([]outcome, len(cs))
	t.Run("paths", func(t *testing.T) {
		for i, c := range cs {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				runs := make([]outcome, seeds)
				for k := range runs {
					ck := c
					ck.cfg.Seed += uint64(k) * 1000
					runs[k] = check(t, ck)
				}
				outs[i] = runs[0]
				for _, b := range mostlyBroken(runs) {
					t.Error(b)
				}
				if len(mostlyBroken(runs)) > 0 {
					for k, o := range runs {
						t.Logf("seed %d: %s", k, summary(o))
					}
				}
			})
		}
	})
	logWorst(t, outs)
}

// mostlyBroken returns the bounds more than half the runs broke, each
// with its message from every run that broke it.
func mostlyBroken(runs []outcome) []string {
	var out []string
	var order []string
	msgs := map[string][]string{}
	for _, o := range runs {
		for _, b := range o.bad {
			if _, ok := msgs[b.bound]; !ok {
				order = append(order, b.bound)
			}
			msgs[b.bound] = append(msgs[b.bound], b.msg)
		}
	}
	for _, bound := range order {
		if m := msgs[bound]; 2*len(m) > len(runs) {
			out = append(out, fmt.Sprintf("%d of %d runs: %s", len(m), len(runs), strings.Join(m, "; ")))
		}
	}
	return out
}

// shortMatrix keeps every fourth path and all the steps.
func shortMatrix(cs []pathCase) []pathCase {
	var out []pathCase
	for i, c := range cs {
		if i%4 == 0 || len(c.cfg.Path.Steps) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// check runs one path and returns the bounds it broke.
func check(t *testing.T, c pathCase) outcome {
	r, err := pathmodel.Run(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := pathmodel.Bulk(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := outcome{c: c, r: r, bulk: bulk}
	bad := func(bound, format string, a ...any) {
		o.bad = append(o.bad, broken{bound, fmt.Sprintf(format, a...)})
	}
	if r.SourceExcess.P50 > 0 {
		bad("source", "source delay p50 %v > 1.2 x serialization %v + 5 ms", r.SourceDelay.P50, r.Ser)
	}
	if lim := excessP50 + c.lim.p50; r.Excess.P50 > lim {
		bad("p50", "capture to received p50 %v above the floor %v (> %v)", r.Excess.P50, r.Floor, lim)
	}
	if lim := excessP95 + c.lim.p95; r.Excess.P95 > lim {
		bad("p95", "capture to received p95 %v above the floor %v (> %v)", r.Excess.P95, r.Floor, lim)
	}
	// A backlogged flow of the same congestion control bounds what a
	// stream over it can use (BBR's PROBE_RTT, CUBIC's sawtooth in a
	// buffer shorter than the BDP).
	if want := nonzero(c.lim.util, minUtil) * min(1, bulk); r.Util < want {
		bad("util", "utilization %.2f < %.2f (a backlogged flow: %.2f)", r.Util, want, bulk)
	}
	for _, rc := range r.Recoveries {
		switch {
		case rc.Step.Rate > 0 && rc.Step.Rate < rateBefore(c.cfg.Path, rc.Step.At):
			// Each step its own bound: a path whose rate wanders has
			// several, and most runs must break the same one.
			if lim := nonzero(c.lim.halving, halvingTime); lim > 0 && (rc.Latency < 0 || rc.Latency > lim) {
				bad(fmt.Sprint("halving at ", rc.Step.At), "after the halving at %v, capture to received back within bounds after %v (> %v)", rc.Step.At, rc.Latency, lim)
			}
		case rc.Step.Rate > 0:
			if lim := nonzero(c.lim.doubling, doublingTo); lim > 0 && (rc.Util < 0 || rc.Util > lim) {
				bad(fmt.Sprint("doubling at ", rc.Step.At), "after the doubling at %v, utilization back at %.0f%% after %v (> %v)", rc.Step.At, 100*minUtil, rc.Util, lim)
			}
		}
	}
	return o
}

// rateBefore returns the path's rate just before at.
func rateBefore(p pathmodel.Path, at time.Duration) rate.Bitrate {
	r := p.Rate
	for _, st := range p.Steps {
		if st.At < at && st.Rate > 0 {
			r = st.Rate
		}
	}
	return r
}

func summary(o outcome) string {
	r := o.r
	var rungs []string
	for k, v := range r.Rungs {
		if v >= 0.01 {
			rungs = append(rungs, fmt.Sprintf("%v %.0f%%", k, 100*v))
		}
	}
	slices.Sort(rungs)
	var rec []string
	for _, rc := range r.Recoveries {
		rec = append(rec, fmt.Sprintf("step %v: latency %v util %v", rc.Step.At, rc.Latency, rc.Util))
	}
	return fmt.Sprintf("floor %v ser %v fps %.1f | source p50 %v | c2r p50 %v p95 %v, above floor p50 %v p95 %v | queue p50 %v p95 %v | util %.2f (raw %.2f, VP8 %.2f, bulk %.2f) drops %d | %s | %s%s",
		r.Floor, r.Ser, r.FPS, r.SourceDelay.P50, r.CaptureToReceived.P50, r.CaptureToReceived.P95, r.Excess.P50, r.Excess.P95,
		r.Queue.P50, r.Queue.P95, r.Util, r.RawUtil, r.VideoUtil, o.bulk, r.Drops, strings.Join(rungs, ", "), strings.Join(rec, "; "), whyText(o.c.lim))
}

func whyText(l limit) string {
	if len(l.why) == 0 {
		return ""
	}
	return " | limits: " + strings.Join(l.why, "; ")
}

// logWorst logs the worst path for each measure.
func logWorst(t *testing.T, outs []outcome) {
	var done []outcome
	for _, o := range outs {
		if o.r != nil {
			done = append(done, o)
		}
	}
	if len(done) == 0 {
		return
	}
	worst := func(label string, v func(o outcome) float64, unit string) {
		w := slices.MaxFunc(done, func(a, b outcome) int { return cmpF(v(a), v(b)) })
		t.Logf("worst %-28s %8.2f%s  %s", label, v(w), unit, w.c.name)
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	worst("source delay p50 - bound", func(o outcome) float64 { return ms(o.r.SourceExcess.P50) }, " ms")
	worst("c2r p50 above floor", func(o outcome) float64 { return ms(o.r.Excess.P50) }, " ms")
	worst("c2r p95 above floor", func(o outcome) float64 { return ms(o.r.Excess.P95) }, " ms")
	worst("c2r p95 above floor (no limit)", func(o outcome) float64 {
		if len(o.c.lim.why) > 0 {
			return 0
		}
		return ms(o.r.Excess.P95)
	}, " ms")
	worst("queue p95", func(o outcome) float64 { return ms(o.r.Queue.P95) }, " ms")
	worst("1 - util", func(o outcome) float64 { return 1 - o.r.Util }, "")
	worst("bulk util - util", func(o outcome) float64 { return min(1, o.bulk) - o.r.Util }, "")
	worst("halving: latency recovery", func(o outcome) float64 { return recovery(o, true) }, " s")
	worst("doubling: util recovery", func(o outcome) float64 { return recovery(o, false) }, " s")
}

func recovery(o outcome, halving bool) float64 {
	var w float64
	for _, rc := range o.r.Recoveries {
		if rc.Step.Rate == 0 || (rc.Step.Rate < o.c.cfg.Path.Rate) != halving {
			continue
		}
		d := rc.Util
		if halving {
			d = rc.Latency
		}
		if d < 0 {
			return math.Inf(1)
		}
		w = max(w, d.Seconds())
	}
	return w
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLowRateFillsLink checks the cruise at 100 kb/s, where a frame is one
// packet: no window is ever backlogged, so the transport's drain rate
// measures only the stream's own rate. Taken for the capacity at every
// cut, it held the link about 91% busy (median of seven seeds, CUBIC, at
// 20, 80 and 172 ms: 0.915, 0.919, 0.895); with the queue's growth trusted
// over an application-limited drain rate, 0.950, 0.934, 0.930.
func TestLowRateFillsLink(t *testing.T) {
	for _, rtt := range []time.Duration{20, 80, 172} {
		p := pathmodel.Path{Rate: 100 * rate.Kbps, RTT: rtt * time.Millisecond, Queue: 200 * time.Millisecond, CC: pathmodel.Cubic}
		var utils []float64
		for k := range 7 {
			r, err := pathmodel.Run(pathmodel.Config{Path: p, Seed: uint64(k + 1)})
			if err != nil {
				t.Fatal(err)
			}
			utils = append(utils, r.RawUtil)
		}
		slices.Sort(utils)
		med := utils[len(utils)/2]
		t.Logf("%v: link busy %.3f (seeds %.3f)", p.RTT, med, utils)
		if med < 0.925 {
			t.Errorf("100 kb/s, %v: link %.3f busy (median of %.3f), want at least 0.925", p.RTT, med, utils)
		}
	}
}

// TestLowFrameRate runs the controller at 15 fps on paths of the matrix
// where a frame is several round trips of the link long, five seeds each,
// against the matrix's bounds. There the smoothed RTT cannot tell a
// standing queue from the frames' own queueing, and the transport's report
// of each frame's wait behind the one before (Observation.HeadWait) is
// what keeps the queue short: without it every one of these paths broke a
// bound on capture to received over the floor, at the median or at p95.
// Each frame is most of a frame interval of the link; on the two paths
// whose buffer is shorter than that (cubic,10M,80ms,q50ms and random6),
// unpaced CUBIC let each frame's burst into the buffer, losses came every
// few seconds and each cost a cut: utilization missed its bound (0.83 to
// 0.93 and 0.79 to 0.94 over 15 seeds) until the sender paced long frames
// (transport/tcp's LongFrame; random6 fails with pathmodel's NoPacing).
func TestLowFrameRate(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	paths := []string{"cubic,2M,10ms,q50ms", "cubic,10M,80ms,q50ms", "random6,", "random10,"}
	for _, c := range matrix() {
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(c.name, p) }) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runs := make([]outcome, 5)
			for k := range runs {
				ck := c
				ck.cfg.Seed += uint64(k) * 1000
				ck.cfg.FPS = 15
				runs[k] = check(t, ck)
			}
			for _, b := range mostlyBroken(runs) {
				t.Error(b)
			}
		})
	}
}

// TestDoublingAfterOverflow: at 1 Mb/s, 225 ms and a 100 ms buffer
// (CUBIC), a probe before the doubling at 20 s overflows the buffer, and
// the overflow cap then held the climb after the doubling (see
// overflowed): back at 90% of the link 14 to 27 s after it in seven seeds
// of eight, against 2.8 to 5.7 s once sending past the ceiling without a
// queue forgets the overflow. Of five seeds, those that overflowed before
// the doubling (four at least, or the path no longer tests the cap) must
// be back within twice doublingTo. The buffer is 80 ms: at 100 ms, once
// the self term waited for the frames' first acknowledgements (selfWait),
// one seed in five overflowed before the doubling. (At 50 and 60 ms, four
// and six packets, the climb after the doubling takes 11 to 22 s in one to
// three seeds of five: a buffer that a few frames overflow keeps the cap.)
func TestDoublingAfterOverflow(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	const step = 20 * time.Second
	tested := 0
	for k := range 5 {
		var ctl *sender.Controller
		overflowed := false
		cfg := pathmodel.Config{
			Path: pathmodel.Path{Rate: rate.Mbps, RTT: 225 * time.Millisecond, Queue: 80 * time.Millisecond,
				Steps: []pathmodel.Step{{At: step, Rate: 2 * rate.Mbps}}},
			Seed: uint64(k*1000 + 7),
			NewController: func(l []media.Rung, s rate.Bitrate) pathmodel.Controller {
				ctl = sender.NewController(l, s)
				return ctl
			},
		}
		var epoch time.Time
		cfg.Trace = func(o sender.Observation, _ sender.Decision) {
			if epoch.IsZero() {
				epoch = o.Now
			}
			overflowed = overflowed || (o.Now.Sub(epoch) < step && ctl.State().Overflow)
		}
		r, err := pathmodel.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !overflowed {
			continue
		}
		tested++
		for _, rc := range r.Recoveries {
			if rc.Util < 0 || rc.Util > 2*doublingTo {
				t.Errorf("seed %d: utilization back at %.0f%% %v after the doubling, want within %v", cfg.Seed, 100*minUtil, rc.Util, 2*doublingTo)
			}
		}
	}
	if tested < 4 {
		t.Errorf("%d seeds of 5 overflowed before the doubling, want 4 at least: the path no longer tests the cap", tested)
	}
}

// TestStartFarAbovePath starts at 1 Mb/s (cmd/sender's default) on 100 and
// 200 kb/s paths with the experiments' buffer (200 ms, never under 8 full
// packets: 960 ms at 100 kb/s), at 20, 80 and 172 ms, CUBIC and BBR, three
// seeds each. The first round trips' queue is unavoidable (the transport's
// initial window alone is a second of a 100 kb/s path); it must be gone
// within seconds. Measured on the queue the frames met from 3 to 10 s, its
// 95th percentile at the median of the runs was 751 ms at 100 kb/s and
// 194 ms at 200 kb/s while the cuts took the rate asked for as the load
// and the drain rate measured nothing for seconds (the first window,
// begun before anything was in flight, application-limited); 176 and 23 ms
// with the start's rules (the Controller's doc, The start) and early
// windows (transport/drain). Utilization after 10 s stays where it was.
func TestStartFarAbovePath(t *testing.T) {
	for _, tc := range []struct {
		rate  rate.Bitrate
		queue time.Duration // the bound on the median run's 95th percentile
	}{{100 * rate.Kbps, 300 * time.Millisecond}, {200 * rate.Kbps, 100 * time.Millisecond}} {
		var q95s []time.Duration
		var utils []float64
		for _, rtt := range []time.Duration{20, 80, 172} {
			for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
				p := pathmodel.Path{Rate: tc.rate, RTT: rtt * time.Millisecond, CC: cc,
					Queue: max(200*time.Millisecond, tc.rate.Duration(8*1500))}
				for seed := range 3 {
					r, err := pathmodel.Run(pathmodel.Config{Path: p, Seed: uint64(seed + 1), Start: rate.Mbps, Duration: 30 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					var q []time.Duration
					for _, f := range r.Frames {
						if f.Capture >= 3*time.Second && f.Capture < 10*time.Second && f.Queue >= 0 {
							q = append(q, f.Queue)
						}
					}
					if len(q) == 0 {
						t.Fatalf("%v %v: no frame from 3 to 10 s", p.Rate, p.RTT)
					}
					slices.Sort(q)
					q95s = append(q95s, q[len(q)*95/100])
					utils = append(utils, r.RawUtil)
				}
			}
		}
		slices.Sort(q95s)
		slices.Sort(utils)
		q, u := q95s[len(q95s)/2], utils[len(utils)/2]
		t.Logf("%v from 1 Mb/s: queue p95 from 3 to 10 s %v at the median run, link busy %.3f after 10 s", tc.rate, q.Round(time.Millisecond), u)
		if q > tc.queue {
			t.Errorf("%v from 1 Mb/s: queue p95 from 3 to 10 s %v at the median run, want at most %v", tc.rate, q.Round(time.Millisecond), tc.queue)
		}
		if u < 0.93 {
			t.Errorf("%v from 1 Mb/s: link %.3f busy after 10 s at the median run, want at least 0.93", tc.rate, u)
		}
	}
}

// downloadPath is a path the stream shares with one download of its
// congestion control, over a 200 ms buffer.
type downloadPath struct {
	rate rate.Bitrate
	rtt  time.Duration
	cc   pathmodel.CC
}

func (d downloadPath) name() string { return fmt.Sprintf("%v,%s,%v", d.cc, short(d.rate), d.rtt) }

// path returns the model's path; a positive until ends the download then.
func (d downloadPath) path(until time.Duration) pathmodel.Path {
	return pathmodel.Path{Rate: d.rate, RTT: d.rtt, Queue: 200 * time.Millisecond, CC: d.cc, Cross: 1, CrossUntil: until}
}

// TestBesideDownload runs the stream beside one download (CUBIC or BBR)
// on the same bottleneck and requires the share of the link it keeps not
// to fall back: the controller reads the download's queue as congestion,
// and before cuts the queue did not answer were undone
// (Controller.answered) it kept 5 to 7% of 2 Mb/s at 40 ms and 7 to 11%
// at 172 ms beside CUBIC; while the rate held rather than climbed in the
// time the undo gives, 6.9% of 10 Mb/s beside CUBIC and 20% of 2 Mb/s
// beside BBR at the median; before that time doubled with each undo in a
// streak (foreignQueue), 11, 21 and 10% beside CUBIC and 28 and 31%
// beside BBR, in the order below (with it 12, 23, 11, 39 and 31%): the
// medians of five seeds. Fifteen show how the runs split: beside BBR at 2
// Mb/s a run settles at 320x180 near a quarter of the link or at 640x360
// near two fifths, and the five seeds' median read 0.42 where fifteen
// read 0.34. Over fifteen, with the encoder's dip after a deep cut: 12.5,
// 29.6, 12.9, 28.3 and 31.5% (13.4, 29.2, 11.7, 34.4 and 31.4% without
// it); since the quiet time skips the cruise and probes at foreignSpeed
// at least in a streak (see Controller.answered), 31.5, 31.0, 15.1, 36.5
// and 32.8%; since a path that grew speeds the probe (Controller.faster),
// 32.1, 30.6, 16.4, 34.1 and 29.2% (31.4, 31.0, 15.1, 36.9 and 29.9%
// while it read the excess with the frames' waits' floor everywhere).
// BBR at 2 Mb/s splits as above: its floor sits below the lower
// medians, still above the 28.3% without the streak's climb.
// These floors record a shortfall, not a target: a fair share is half.
func TestBesideDownload(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	for _, tc := range []struct {
		downloadPath
		want float64
	}{
		{downloadPath{2 * rate.Mbps, 40 * time.Millisecond, pathmodel.Cubic}, 0.25},
		{downloadPath{2 * rate.Mbps, 172 * time.Millisecond, pathmodel.Cubic}, 0.20},
		{downloadPath{10 * rate.Mbps, 40 * time.Millisecond, pathmodel.Cubic}, 0.09},
		{downloadPath{2 * rate.Mbps, 40 * time.Millisecond, pathmodel.BBR}, 0.32},
		{downloadPath{10 * rate.Mbps, 80 * time.Millisecond, pathmodel.BBR}, 0.28},
	} {
		t.Run(tc.name(), func(t *testing.T) {
			var shares []float64
			for k := range 15 {
				r, err := pathmodel.Run(pathmodel.Config{Path: tc.path(0), Seed: uint64(k*1000 + 3)})
				if err != nil {
					t.Fatal(err)
				}
				shares = append(shares, r.RawUtil)
			}
			slices.Sort(shares)
			t.Logf("the stream's share of the link over the seeds: %.3f", shares)
			if got := shares[len(shares)/2]; got < tc.want {
				t.Errorf("median share %.3f, want at least %.2f", got, tc.want)
			}
		})
	}
}

// TestAfterDownload runs the stream beside one download that ends at 25 s
// and measures it alone from 30 s: the judgement that the queue was the
// download's must end with it (foreignQueue), or the stream climbs with
// no cut on its own queue. Over nine seeds a path, at most one run may
// break the matrix's bounds on the excess over the floor (p50 25 ms, p95
// 80 ms), and the median run keeps the link 90% busy.
func TestAfterDownload(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	for _, tc := range []downloadPath{
		{2 * rate.Mbps, 40 * time.Millisecond, pathmodel.Cubic},
		{2 * rate.Mbps, 172 * time.Millisecond, pathmodel.Cubic},
		{5 * rate.Mbps, 20 * time.Millisecond, pathmodel.Cubic},
		{2 * rate.Mbps, 40 * time.Millisecond, pathmodel.BBR},
	} {
		t.Run(tc.name(), func(t *testing.T) {
			var utils []float64
			broken := 0
			for k := range 9 {
				r, err := pathmodel.Run(pathmodel.Config{Path: tc.path(25 * time.Second), Seed: uint64(k*1000 + 3), Warmup: 30 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				utils = append(utils, r.RawUtil)
				if r.Excess.P50 > 25*time.Millisecond || r.Excess.P95 > 80*time.Millisecond {
					broken++
					t.Logf("seed %d: excess over the floor p50 %v, p95 %v", k*1000+3, r.Excess.P50, r.Excess.P95)
				}
			}
			slices.Sort(utils)
			if broken > 1 {
				t.Errorf("%d of 9 runs broke the bounds after the download ended, want at most 1", broken)
			}
			if u := utils[len(utils)/2]; u < 0.9 {
				t.Errorf("link %.3f busy at the median run after the download ended, want at least 0.9", u)
			}
		})
	}
}

// TestAfterDownloadAcrossPaths runs TestAfterDownload's measure over more
// paths (CUBIC and BBR, 2 and 5 Mb/s, 20, 80 and 172 ms, nine seeds
// each) and counts the runs whose p95 over the floor passes 80 ms. The
// quiet time's fast probe (see Controller.answered), taken on every undo,
// broke it in 8 of the 108 runs: undos the stream's own queue drew after
// the download ended, on a shift left within the band, let the rate run
// past the path. Held to a shift above the band and to a stream the path
// drains, none (nor before the fast probe).
func TestAfterDownloadAcrossPaths(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	broken, runs := 0, 0
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range []rate.Bitrate{2 * rate.Mbps, 5 * rate.Mbps} {
			for _, rtt := range []time.Duration{20 * time.Millisecond, 80 * time.Millisecond, 172 * time.Millisecond} {
				d := downloadPath{r, rtt, cc}
				for k := range 9 {
					res, err := pathmodel.Run(pathmodel.Config{Path: d.path(25 * time.Second), Seed: uint64(k*1000 + 5), Warmup: 30 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					runs++
					if res.Excess.P95 > 80*time.Millisecond {
						broken++
						t.Logf("%s, seed %d: excess over the floor p95 %v", d.name(), k*1000+5, res.Excess.P95)
					}
				}
			}
		}
	}
	if broken > 2 {
		t.Errorf("%d of %d runs broke the p95 bound after the download ended, want at most 2", broken, runs)
	}
}

// controllerOr returns a pathmodel.Config.NewController that makes the
// sender's controller, wrapped by wrap where wrapped is set (a run with
// one of the controller's inputs hidden, to compare against).
func controllerOr(wrapped bool, wrap func(*sender.Controller) pathmodel.Controller) func([]media.Rung, rate.Bitrate) pathmodel.Controller {
	return func(l []media.Rung, s rate.Bitrate) pathmodel.Controller {
		if wrapped {
			return wrap(sender.NewController(l, s))
		}
		return sender.NewController(l, s)
	}
}

// stale hides the transport's round-trip samples from the controller, for
// a run that reads the smoothed RTT alone.
type stale struct{ *sender.Controller }

func (s stale) Update(o sender.Observation) sender.Decision {
	o.LatestRTT, o.LatestRTTAt = 0, time.Time{}
	return s.Controller.Update(o)
}

// TestFewPacketsReadFreshRTT runs the stream at a few packets a second,
// on the matrix's paths below the lowest rung (30 and 40 kb/s, 20 and 172
// ms, CUBIC and BBR, fifteen seeds each), where the smoothed RTT follows a
// drained queue an eighth per ACK, over seconds. Reading the transport's
// newest samples (sender's freshRTT) keeps more of the link busy than the
// smoothed RTT alone: 0.952 against 0.929 over the eight paths, at the
// median of each path's seeds (0.953 and 0.926 without the encoder's dip
// after a deep cut). Halvings from 200 to 100 kb/s at 172 and 300 ms,
// where a real run had shown the lag, no longer tell the two apart in the
// path model: capture to received back within the bounds after 169 s in
// all over sixty runs with the samples and 145 s without (163 and 157 s
// without the dip); the five seeds this test once ran there had read 45
// and 50 s.
func TestFewPacketsReadFreshRTT(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	var with, without float64
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, r := range []rate.Bitrate{30 * rate.Kbps, 40 * rate.Kbps} {
			for _, rtt := range []time.Duration{20 * time.Millisecond, 172 * time.Millisecond} {
				for _, fresh := range []bool{true, false} {
					var utils []float64
					for k := range 15 {
						r, err := pathmodel.Run(pathmodel.Config{
							Path:          pathmodel.Path{Rate: r, RTT: rtt, Queue: minQueue(r), CC: cc},
							Seed:          uint64(k*1000 + 11),
							NewController: controllerOr(!fresh, func(c *sender.Controller) pathmodel.Controller { return stale{c} }),
						})
						if err != nil {
							t.Fatal(err)
						}
						utils = append(utils, r.Util)
					}
					if fresh {
						with += median(utils) / 8
					} else {
						without += median(utils) / 8
					}
				}
			}
		}
	}
	t.Logf("utilization over the paths: %.3f with the samples, %.3f without", with, without)
	if with < without+0.01 {
		t.Errorf("utilization %.3f with the transport's samples, %.3f without: want a point more at least", with, without)
	}
}

// TestLowRateDoubling halves a link and doubles it back (as the matrix's
// halve-double paths do) where the probe is slowest: 200 kb/s at 20 to
// 172 ms, and with CUBIC at 300 ms and 1 Mb/s at 300 ms. At a few packets
// a second the probe's speed, probeK/fb² over a feedback delay of eight
// frames' ACKs, is about 2% a second, and the cruise before it lasts four
// feedback delays: the stream was back at 90% of the link 5.2 to 9 s after
// the doubling (the median of 15 seeds). The frames' own queueing, which
// halves with the doubling, ends the cruise and speeds the probe (see
// faster): 3.0 to 3.8 s. BBR at 300 ms is not among them: at 200 kb/s
// nothing reads faster in time (9.4 s), and at 1 Mb/s its seeds split
// between 3.6 and 9 s (the median 3.9 s over one set of 15, 5.1 s over
// another; 6.5 s before).
func TestLowRateDoubling(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	const want = 4.5 // seconds, the median of the seeds on every path
	// A shortfall, the bound it meets: most seeds take the slow way, the
	// first probe's cut landing below the path and the probe after the
	// cruise climbing a few percent a second (a feedback delay of eight
	// frames). It met want (3.7 s) while the model's drain estimate left
	// out the slack the transport's allows for (NOTEBOOK.md, "Delayed
	// ACKs, measured and in the path model").
	slow := map[string]float64{"cubic,200k,300ms,halve-double": 9.5}
	type path struct {
		cc  pathmodel.CC
		r   rate.Bitrate
		rtt time.Duration
	}
	var paths []path
	for _, cc := range []pathmodel.CC{pathmodel.Cubic, pathmodel.BBR} {
		for _, rtt := range []time.Duration{20, 80, 172} {
			paths = append(paths, path{cc, 200 * rate.Kbps, rtt * time.Millisecond})
		}
	}
	paths = append(paths, path{pathmodel.Cubic, 200 * rate.Kbps, 300 * time.Millisecond},
		path{pathmodel.Cubic, 1 * rate.Mbps, 300 * time.Millisecond})
	for _, pt := range paths {
		p := pathmodel.Path{Rate: pt.r, RTT: pt.rtt, Queue: 200 * time.Millisecond, CC: pt.cc,
			Steps: []pathmodel.Step{{At: 25 * time.Second, Rate: pt.r / 2}, {At: 40 * time.Second, Rate: pt.r}}}
		c := pathCase{name: fmt.Sprintf("%v,%s,%v,halve-double", pt.cc, short(pt.r), pt.rtt), cfg: pathmodel.Config{Path: p}}
		var back []float64
		for k := range 15 {
			c.cfg.Seed = uint64(k*1000 + 7)
			back = append(back, recovery(check(t, c), false))
		}
		lim := want
		if l, ok := slow[c.name]; ok {
			lim = l
		}
		if m := median(back); m > lim {
			t.Errorf("%s: back at 90%% of the link %.1f s after the doubling at the median (want at most %.1f s); every seed: %v", c.name, m, lim, back)
		} else {
			t.Logf("%s: %.1f s at the median", c.name, m)
		}
	}
}

// unrepaired hides from the controller that a frame's wait may hold a
// repair's round trip, for a run that reads every wait as a queue.
type unrepaired struct{ *sender.Controller }

func (u unrepaired) Update(o sender.Observation) sender.Decision {
	o.HeadWaitRepaired = false
	return u.Controller.Update(o)
}

// TestLossyWaitsRepaired runs BBR at 15 fps over long paths with random
// loss, where most frames hold a lost packet and their predecessors'
// acknowledgements wait a repair's round trip. Read as a queue, those waits
// (80 to 190 ms at 23 Mb/s and 210 ms with 3% loss, in a real run whose
// bottleneck queue stayed under 10 ms) cut the stream to an eighth of the
// link. With the repaired waits set aside the stream carries at least a
// quarter more at the median of five seeds (in the model, whose BBR
// stalls more often after losses than Linux's: 0.64 against 0.43 of the
// link at 10 Mb/s, 0.71 against 0.51 at 5 Mb/s, over seven seeds).
func TestLossyWaitsRepaired(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (test.sh)")
	}
	paths := []pathmodel.Path{
		{Rate: 10 * rate.Mbps, RTT: 200 * time.Millisecond, Queue: 100 * time.Millisecond, CC: pathmodel.BBR, Loss: 0.02},
		{Rate: 5 * rate.Mbps, RTT: 200 * time.Millisecond, Queue: 60 * time.Millisecond, CC: pathmodel.BBR, Loss: 0.03},
	}
	for _, p := range paths {
		t.Run(fmt.Sprintf("%v,%v,%g", p.Rate, p.RTT, p.Loss), func(t *testing.T) {
			t.Parallel()
			var with, without []float64
			for k := range 5 {
				for _, repaired := range []bool{true, false} {
					cfg := pathmodel.Config{Path: p, Seed: uint64(k*1000 + 13), FPS: 15,
						NewController: controllerOr(!repaired, func(c *sender.Controller) pathmodel.Controller { return unrepaired{c} }),
					}
					r, err := pathmodel.Run(cfg)
					if err != nil {
						t.Fatal(err)
					}
					if repaired {
						with = append(with, r.Util)
					} else {
						without = append(without, r.Util)
					}
				}
			}
			w, wo := median(with), median(without)
			t.Logf("utilization at the median seed: %.3f with repaired waits set aside, %.3f reading them as a queue", w, wo)
			if w < 1.25*wo {
				t.Errorf("utilization %.3f with repaired waits set aside, %.3f reading them as a queue: want at least a quarter more", w, wo)
			}
		})
	}
}

// median returns the median of v (the upper one of an even count).
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
