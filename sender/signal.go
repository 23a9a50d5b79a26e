package sender

import (
	"math"
	"slices"
	"time"

	"replenish/rate"
)

// feedback returns the delay before a change of rate shows in the smoothed
// RTT: a round trip, plus the time the kernel's smoothing (an eighth per
// ACK) takes to follow, at least a frame.
func (c *Controller) feedback(o Observation, dt time.Duration) time.Duration {
	if o.Written <= 0 || dt <= 0 {
		return o.RTT + dt
	}
	acks := float64((o.Written + mssGuess - 1) / mssGuess)
	return o.RTT + max(dt, time.Duration(8/acks*float64(dt)))
}

// band returns the congestion band: an excess below low lets the rate
// rise, one above high is congestion. It is qLow to qHigh unless the
// frames' own size noise moves the delay signal more: then high is noiseK
// standard deviations of a frame's serialization at the capacity, and low
// half of it. A cruising stream's frame is about a frame interval of the
// link whatever the rate, and its size varies with libvpx's rate control
// and the temporal layers. The deviation is taken from one frame to the
// next (the mean absolute change of the log size, times √π/2 for two
// normal samples' difference), so that a change of target or rung, which
// moves the average, is not taken for noise. On the lowest rung (15 fps:
// a frame is about 65 ms of the link) the frames vary by 11 to 13%
// (measured at 100 kb/s), so high is 15 to 17 ms, and the queue a frame
// larger than the last leaves is not a cut; at 30 fps, with 2 to 10%
// (500 kb/s to 20 Mb/s), it stays qHigh.
func (c *Controller) band() (low, high time.Duration) {
	sd := c.sizeDev * math.Sqrt(math.Pi) / 2
	high = max(qHigh, time.Duration(noiseK*sd*float64(c.frameSer())))
	return max(qLow, high/2), high
}

// frameSer returns an average frame's serialization at the capacity.
func (c *Controller) frameSer() time.Duration { return c.capacity.Duration(int(c.frameAvg)) }

// evidence raises the capacity to what the path has shown it carries: a
// delivered rate is a lower bound on capacity, whether the transport's
// measured drain rate (the most bytes delivered over a window of at least
// a round trip; not its window bound, which is no delivery) or the rate the
// controller sent while no queue built. The drain
// rate is a windowed maximum that, while the flow is application-limited,
// keeps its last value: after the path slows it still remembers the old
// rate, so a drain rate above the ceiling (where the path last congested)
// is not taken. The ceiling itself goes once the controller has sent above
// it without a queue building: the path has become faster, and with it
// goes the memory of a probe's overflow (see overflowed). Within
// overflowKeep of a probe's overflow, what was sent counts only up to a
// drain rate the transport measured while backlogged (not
// application-limited): that is the path's rate, or its window's, and the
// rest waits at the sender. Counted whole, it raised the capacity to the
// rate of a probe the overflow cap had held (see held), and the stream
// cruised above what the transport drained. (Everywhere, it cost the
// stream its share beside a download: TestBesideDownload.)
//
// A path-limited window that closed after the last cut is no memory of an
// older path, so its rate counts above the ceiling too, and raises it: a
// probe's cut takes its capacity from the queue's growth (cutEstimate)
// before the window that measured the path under that queue has closed.
// At 500 kb/s and 209 ms, CUBIC, the window closed 30 ms after the cut at
// 458 kb/s, the cut had estimated 428, and the stream cruised 3.5 s at 84%
// of the link before its next probe.
//
// So does a drain rate that rose, after a cut that judged a probe's
// overshoot, above the drain rate at that cut, path-limited or not: a
// window closed since with more delivered than any before it, under the
// probe's queue. At a few packets a second no window is path-limited, and
// the cut's estimate from the queue's growth reads low: after a doubling
// from 100 to 200 kb/s (the path model, BBR at 80 ms) the cut took
// 163 kb/s while the window under the probe's queue measured 183; there
// and with CUBIC at 172 ms the stream was back at 90% of the link 7.0 s
// after the doubling at the median of 15 seeds (3.5 s with this). Not
// after other cuts: after a halving, the window that closes after its
// first cut may have begun on the faster path (taken after any cut, the
// halvings of the matrix took 1.45 s to be back within the bounds at the
// mean of the medians, against 1.29).
func (c *Controller) evidence(o Observation, excess time.Duration) {
	clean := excess < c.low && c.skips < skipHigh && !c.loss.lossy
	sent := c.sentRate(o.Now.Add(-sentWindow), o.Now)
	if !clean {
		sent = 0
	}
	if d := measured(o); d > 0 && !o.AppLimited && c.overflowing(o.Now) {
		sent = min(sent, d) // the rest waits at the sender
	}
	if c.ceiling > 0 && sent > c.ceiling.Scale(probePast) {
		c.ceiling = 0
		c.overflow.at, c.overflow.before = time.Time{}, time.Time{} // see overflowed
	}
	held := c.agedRate(o)
	lower := max(held, sent)
	switch {
	case c.loss.capped:
		lower = sent // see lossMeter
	case c.ceiling > 0 && measured(o) > c.ceiling.Scale(probePast):
		lower = sent
		if !o.WindowBound && !c.lastCut.IsZero() && o.NewestAt.After(c.lastCut) {
			lower = max(lower, o.Newest)
			c.ceiling = max(c.ceiling, o.Newest)
		}
		if d := measured(o); !o.Aged && !c.lastCut.IsZero() && c.shotAt.Equal(c.lastCut) && d > c.shotDrain {
			lower = max(lower, d)
			c.ceiling = max(c.ceiling, d)
		}
	}
	if o.Aged && lower > c.capacity && lower == held {
		c.aged.lift, c.aged.at = lower, o.Now
	}
	c.capacity = max(c.capacity, lower)
}

// agedRate returns the drain rate as evidence of the capacity. A rate held
// from an aged window (Observation.Aged) is a memory of the path, which
// may have slowed since: the first cut after it raised the capacity judges
// it, and one that takes the capacity below drainTrust of it (the queue
// says the path carries less) leaves it in doubt until a window measures
// the path again. A cut that keeps the capacity (a burst's drain, the
// transport's limit) says nothing of the path and leaves it whole. A
// doubted rate raises the capacity to at most agedGain times the rate
// sent, so that a path that has come back to it is found in a few steps
// and one that has not is overshot by a quarter at most.
func (c *Controller) agedRate(o Observation) rate.Bitrate {
	d, a := measured(o), &c.aged
	if !o.Aged {
		*a = agedMemory{}
		return d
	}
	if a.lift > 0 && c.lastCut.After(a.at) {
		a.doubt = a.doubt || c.capacity < a.lift.Scale(drainTrust)
		a.lift = 0
	}
	if a.doubt {
		return min(d, c.sentRate(o.Now.Add(-sentWindow), o.Now).Scale(agedGain))
	}
	return d
}

// agedMemory is what the controller knows of a drain rate held from aged
// windows (see agedRate).
type agedMemory struct {
	lift  rate.Bitrate // the rate that last raised the capacity, until a cut judges it
	at    time.Time
	doubt bool // a cut judged it: the path carries less
}

// measured returns the drain rate if the transport measured it, 0 if it is
// only the window bound (Observation.WindowBound).
func measured(o Observation) rate.Bitrate {
	if o.WindowBound {
		return 0
	}
	return o.DrainRate
}

// excess returns the queueing not explained by the path or the frames' own
// serialization. A frame's packets queue behind each other at the
// bottleneck, so the smoothed RTT swings with the size of the frames acked
// last; its lower envelope (the smallest over the last few frames) moves
// only with a standing queue. The excess is that envelope above the base
// (the transport's minimum RTT, plus any shift learned when the round trip
// rose for good, see shifted), less the self term (see self): the smoothed
// RTT's low percentile (selfRank) over refWindow above the base each round
// trip had, at most one average frame's serialization at the capacity, so
// that a standing queue larger than that cannot hide in it. (Not the
// minimum: a pause, as BBR's PROBE_RTT, empties the path for a moment and
// would make the frames' own queueing look like excess for the whole
// window.) Each round trip counts at the frames' size now (ownNow): where a
// frame is a segment or two, its own queueing is its whole serialization,
// and the round trips of smaller frames held the self term for seconds after
// the rate rose. Recovering from a halving's cuts to 250 kb/s (QUIC, 172 ms,
// 160x90 at 15 fps), the frames grew from 500 to 1400 bytes, the growth read
// as 12 ms of excess, and the cut it drew took the capacity to 120 kb/s
// (TestExcessFollowsFrameSize). Nor does the self term take the round trips
// of the first selfWait feedback delays (selfFrom), while the transport's
// smoothed RTT is still the handshake's: over QUIC at 15 fps, 3.1 Mb/s and
// 212 ms, a quarter of the first three seconds' round trips held it at 3 ms
// while the frames' own queueing was about 30, and the base moved by the
// difference at 3 s (see shifted) in nine runs of ten; a cut that a slower
// path's queue drew later was then undone for another flow's
// (TestSelfTermAfterFirstAcks).
func (c *Controller) excess(o Observation, dt time.Duration) time.Duration {
	base := o.MinRTT + c.shift
	recent := o.RTT
	frames := dt
	if !c.measured {
		frames /= time.Duration(1 + max(o.Skipped, 0))
	}
	span := max(envelope, frames*5/2)
	for _, s := range c.rtts {
		if !s.t.Before(o.Now.Add(-span)) {
			recent = min(recent, time.Duration(s.v))
		}
	}
	return recent - base - c.self(o)
}

// self returns the self term: the frames' own queueing, a low percentile
// (selfRank) of the kept round trips' height over the base each was taken
// at, at the frames' size now (see ownNow), at most a frame's
// serialization at the capacity. It skips the round trips of the first
// selfWait feedback delays (see selfFrom), and those of a series of cuts
// that the base's move ended (selfGap): they stood over the old base. The
// round trips from before the series keep the height over the base they
// had, the frames' own queueing then; measured against the new base they
// read none. After a round trip's step from 20 to 172 ms (a real run at
// 2 Mb/s, CUBIC), the cuts had taken the frames to a tenth of their size,
// and their round trips over the base they set read none either: for the
// four seconds of refWindow the self term stayed near zero while the
// frames, back at 1.9 Mb/s, queued 15 to 20 ms behind each other, and
// that read as excess drew three more cuts, to 1.28 Mb/s.
func (c *Controller) self(o Observation) time.Duration {
	from := c.selfFrom
	if c.rtts[len(c.rtts)-1].t.Before(from) {
		from = time.Time{} // too early: every round trip counts
	}
	c.scratch = c.scratch[:0]
	for _, s := range c.rtts {
		if s.t.Before(from) {
			continue
		}
		c.scratch = append(c.scratch, c.ownNow(time.Duration(s.v)-o.MinRTT-s.shift, s.size))
	}
	if len(c.scratch) == 0 {
		return 0
	}
	slices.Sort(c.scratch)
	return min(c.scratch[len(c.scratch)*selfRank/100], c.frameSer())
}

// ownNow returns q, a smoothed RTT's height above the base when the frames
// averaged size bytes, at the frames' size now (plainAvg): a frame's own
// queueing grows with its size. Only growth counts, beyond selfGrown (the
// frames' size noise and the encoder's following of its target) and up to
// selfScale: scaled down after a cut, the self term lost what the
// smoothing still held of the larger frames, and in the path model the
// halvings at 300 ms overshot their p95 bound. And in full only where a
// frame is up to selfPackets segments, less as it has more: a frame of
// many segments moves the smoothed RTT by a small share of its
// serialization, and a probe's larger frames scaled in full hid the start
// of its queue (the path model at 16 Mb/s and 300 ms: p95 over the floor
// 64 → 85 ms).
func (c *Controller) ownNow(q time.Duration, size float64) time.Duration {
	if q <= 0 {
		return 0
	}
	if size <= 0 || c.plainAvg <= 0 {
		return q
	}
	k := min(max(c.plainAvg/size/selfGrown, 1), selfScale)
	w := min(1, selfPackets*mssGuess/c.plainAvg)
	return time.Duration(float64(q) * (1 + w*(k-1)))
}

// shifted raises the base round trip when a standing excess does not respond
// to the controller's cuts: after shiftCuts cuts over shiftTime and shiftFb
// feedback delays, a queue of its own would have drained at least by half,
// while an excess that stays is not its own: the path's round trip rose, or
// another flow holds a queue it cannot drain, and cutting further would only
// starve the stream. The cuts answered the round trip, not the rate, so the
// capacity and ceiling from before the first of them come back and the rate
// recovers to them, leading the rate sent up to what was sent when the first
// came (see grow). They stayed at the last cut's estimate in real runs whose
// round trip stepped from 20 to 172 ms: three or four cuts took the capacity
// from 2 Mb/s to 230 to 265 kb/s, and the probe took seconds to find the
// link again (TestControllerRTTStepReplay; utilization 0.59 over the run).
// Held to sentLead over the rate sent (the cuts had taken the stream down a
// rung, which forgets what the rung before carried), the climb from 286 kb/s
// took 5 s (TestControllerShiftRegainsRate). If the path also slowed, the
// next cut finds out with the base right. The shift falls at once when the
// round trip does. An excess below half the first cut's is draining only
// while it is also below the last cut's: after a shift taken while the round
// trip was still rising, the excess left over fell once (the self term grew)
// and then stood, and read as draining it was cut every half second for the
// rest of a run (TestControllerRTTStepReplay). Nor does the base move while
// the excess is not standing: within a feedback delay of a cut, which has
// yet to show, or while the smoothed RTT falls fast enough to take the
// excess away within shiftFall (a queue draining; a cut drains its own
// within drainTime) or rises faster than slopeHigh (a queue growing). A
// halving's queue that the first cuts had not caught
// (TestControllerHalvingReplay) was taken for a raised round trip as it
// fell. Any fall was draining before: after a step from 20 to 172 ms the
// smoothed RTT fell 3 ms a second for 2 s, 40 s to take 130 ms away, and the
// base moved 4.6 s after the step, with the stream cut to a tenth of the
// path (TestControllerRTTStepReplay). The cuts count as one series only
// while the excess stays above the band: a series that drained the queue is
// over (see control), or a new queue seconds later met the conditions at its
// first crossing (TestControllerLowRateNoShiftReplay: the base moved 40 to
// 68 ms in most runs at 100 kb/s). A series also ends when shiftTime passes
// without a cut, but only if the excess fell below the band's top since the
// last: a standing excess, slowly falling below the last cut's, held off
// cuts for 2.1 s after a round trip's step (BBR), the series that ended then
// took the capacity it had left (416 kb/s on 2 Mb/s) as the one to give
// back, and the base moved 5.9 s after the step
// (TestControllerRTTStepReplay). Nor does it move once the excess is a fifth
// below the last cut's, however flat for a moment and however small the
// first cut's (a probe's, before the path halved; a halving's queue fell
// from 165 to 100 ms and stood briefly, and the base moved 120 ms:
// TestControllerHalvingReplay), nor while the rate sent exceeds the measured
// drain rate by more than its noise: that excess is the rate's queue, which
// cuts aimed at a drain rate still remembering the faster path had not
// caught (a BBR halving from 2 to 1 Mb/s: the base moved 70 ms, the next
// queue rose to 270 ms over the minimum), nor while the excess exceeds the
// last cut's by more than shiftGrown: it grew since, and that cut has yet to
// answer it (another BBR halving, after a probe's three cuts of 13 to 23 ms:
// BBR held its window for 0.76 s without an invitation, the first excess
// after the gap, 130 ms, read as standing over it, and the base moved
// 82 ms). Where the cuts took the rate far down, the series is judged
// sooner (see shiftDue).
func (c *Controller) shifted(o Observation, excess time.Duration) {
	c.shift = max(0, min(c.shift, o.RTT-o.MinRTT))
	if excess <= c.high || c.cuts < shiftCuts || !c.shiftDue(o) {
		return
	}
	if excess < c.lastCutQ*4/5 || excess.Seconds() > c.lastCutQ.Seconds()*shiftGrown {
		return // not where the last cut left it: draining (see shiftFall), or grown since and not yet answered
	}
	if excess < c.firstCutQ/2 && excess < c.lastCutQ {
		return // draining since the series began
	}
	if d := measured(o); d > 0 && c.sentRate(o.Now.Add(-sentWindow), o.Now) > d.Scale(overDrain) {
		return // the path carries less than is sent
	}
	if c.slowed(o) {
		return
	}
	// The samples come a frame apart and none while the transport holds
	// the frames back on its window: take at least the last three, or the
	// trend over a gap reads as flat.
	from := c.slopeFrom(o.Now)
	if k := len(c.rtts) - 3; k >= 0 && c.rtts[k].t.Before(from) {
		from = c.rtts[k].t
	}
	sl := c.slopeSince(o.Now, from)
	if o.Now.Sub(c.lastCut) < c.fb || gone(excess, sl, shiftFall) || sl > slopeHigh {
		return
	}
	// The base moves to the least smoothed RTT over the last second, since
	// the last cut showed: judged sooner (see unanswered), a series may
	// have begun while the round trip still rose, and the second before
	// held part of the rise (replayed, a 33 ms shift on a 152 ms step;
	// the rest drew a new series of cuts).
	lo, _, _ := c.rttSpan(later(o.Now.Add(-time.Second), c.lastCut.Add(c.fb)))
	low := min(o.RTT, lo)
	c.shift = max(c.shift, low-o.MinRTT)
	c.cuts = 0
	// The series' cuts answered the round trip, not the rate: take back
	// the capacity they lowered, and approach it again.
	if c.firstCap > c.capacity {
		c.capacity, c.ceiling, c.before = c.firstCap, c.firstCeil, 0
		c.phase, c.phaseAt = recovering, o.Now
		c.shown = max(c.shown, c.firstSent)
	}
}

// shiftDue reports whether a series of cuts has waited long enough for
// the base to move: shiftTime and shiftFb feedback delays since its first
// cut, or, from shiftSoonest on, as long as the last cut needed to show
// that it left the excess unanswered (see unanswered).
func (c *Controller) shiftDue(o Observation) bool {
	since := o.Now.Sub(c.firstCut)
	return since >= max(shiftTime, shiftFb*c.fb) || (since >= shiftSoonest && c.unanswered(o))
}

// unanswered reports whether the series' cuts took the rate sent to under
// shiftSent of what was sent before the first, and the excess, at least
// shiftStand band tops at the last cut, has stood since that cut showed (the
// smoothed RTT within a quarter of the cut's excess, over three samples at
// least) for as long as a queue of the stream's own would have taken to
// drain by half: a feedback delay, and half the cut's excess over the share
// of itself such a queue loses a second, 1 − sent/capacity (the capacity the
// cut estimated, at most what was sent before the series); and the transport
// lost fewer than lossMin packets since the series began beyond the path's
// own loss. A queue that stands while the stream sends half of what built it
// is not the stream's own, unless the buffer is full.
//
// After a round trip's step from 20 to 172 ms (2 Mb/s, CUBIC, seven real
// runs replayed), the series' cuts took what the stream sent from about 1.9
// Mb/s to 280 to 780 kb/s, and the excess stood at 135 to 155 ms; the
// feedback delay, at one ACK a frame, had grown to 0.3 to 0.45 s, and six of
// them held the base for up to 2.7 s, in which more cuts took the capacity
// as low as 224 kb/s. Waiting for the drain instead, the base moved 1.0 to
// 1.7 s after the step, not 1.8 to 2.9 (TestControllerRTTStepReplay).
//
// A full buffer stands however the rate falls: after a halving from 10 to 5
// Mb/s (BBR, 80 ms, a real run), BBR held 124 KB in flight, paced at its own
// estimate, the excess stood at 75 to 100 ms while the stream sent 2 Mb/s,
// the base moved 1.8 s after the step, and the capacity the cuts had lowered
// came back, 10 Mb/s on the 5 Mb/s path: p95 324 ms over the floor.
func (c *Controller) unanswered(o Observation) bool {
	if c.lastCutQ < shiftStand*c.high || c.firstSent <= 0 {
		return false
	}
	sent := c.sentRate(c.lastCut, o.Now)
	capacity := min(c.capacity, c.firstSent)
	if sent > c.firstSent.Scale(shiftSent) || sent >= capacity {
		return false
	}
	fall := 1 - float64(sent)/float64(capacity)
	if o.Now.Sub(c.lastCut) < c.fb+time.Duration(float64(c.lastCutQ/2)/fall) {
		return false
	}
	if lost, pkts := o.Lost-c.firstLost, o.Sent-c.firstPkts; float64(lost) >= c.loss.base*float64(pkts)+lossMin {
		return false // the buffer overflowed: a full one stands however the rate falls
	}
	lo, hi, n := c.rttSpan(c.lastCut.Add(c.fb))
	return n >= 3 && hi-lo <= c.lastCutQ/4
}

// rttSpan returns the least and the greatest smoothed RTT kept since from,
// and how many there are (with none, lo is the longest duration).
func (c *Controller) rttSpan(from time.Time) (lo, hi time.Duration, n int) {
	lo = time.Duration(math.MaxInt64)
	for _, s := range c.rtts {
		if !s.t.Before(from) {
			lo, hi, n = min(lo, time.Duration(s.v)), max(hi, time.Duration(s.v)), n+1
		}
	}
	return lo, hi, n
}

// slowed reports whether the path slowed since the series' first cut: a
// path-limited window that closed since delivered less than slowerShare
// of what the stream sent before that cut, and the buffer overflowed
// meanwhile (more than lossHigh of the packets sent lost, above the
// path's own loss, and lossMin at least). Then the excess is the stream's
// own queue, which the cuts have yet to drain, and not a longer round
// trip: in the path model a fall from 1.44 Mb/s to 608 kb/s (BBR, 73 ms)
// filled the buffer, lost 28% of the packets over the series, and its
// cuts, taken for a round trip's, were given back (the rate from 843 kb/s
// to 1.31 Mb/s) with the queue still full: p95 624 ms over the floor.
// A window after a longer round trip delivers less too (the congestion
// window was sized for the shorter one) but loses nothing; beside
// another flow's queue the stream's delivery keeps up with what it sends
// (see answered).
func (c *Controller) slowed(o Observation) bool {
	if o.Newest <= 0 || !o.NewestAt.After(c.firstCut) || o.Newest >= c.firstSent.Scale(slowerShare) {
		return false
	}
	lost, sent := o.Lost-c.firstLost, o.Sent-c.firstPkts
	return lost >= lossMin && float64(lost) > (c.loss.base+lossHigh)*float64(sent)
}

// slope returns the trend of the smoothed RTT, in seconds per second: over
// slopeWindow, or since the queue began to rise (the excess was last below
// the band) if that is more recent, so that a queue growing since a moment ago
// is not averaged with the flat time before it.
func (c *Controller) slope(now time.Time) float64 {
	return c.slopeSince(now, c.slopeFrom(now))
}

// slopeFrom returns the start of slope's window.
func (c *Controller) slopeFrom(now time.Time) time.Time {
	from := now.Add(-slopeWindow)
	if c.riseFrom.After(from) {
		from = c.riseFrom
	}
	return from
}

// slopeSince returns the trend of the smoothed RTT since from, in seconds
// per second; 0 over fewer than three samples.
func (c *Controller) slopeSince(now, from time.Time) float64 {
	var n, st, sv, stt, stv float64
	for _, s := range c.rtts {
		if s.t.Before(from) {
			continue
		}
		t := s.t.Sub(now).Seconds()
		v := time.Duration(s.v).Seconds()
		n, st, sv, stt, stv = n+1, st+t, sv+v, stt+t*t, stv+t*v
	}
	d := n*stt - st*st
	if n < 3 || d <= 0 {
		return 0
	}
	return (n*stv - st*sv) / d
}

// waitGrowth returns the queue's growth since from that the frames'
// waits show (see headWait), in seconds per second of sending; 0 if they
// do not grow, are not read, or fewer than waitSteps steps from one
// frame's wait to the next were read since. A frame's wait is read when
// its predecessor's acknowledgement returns, which comes later by the
// wait itself, so a wait that grows w seconds per second read is a queue
// growing w/(1−w) per second sent, and w never reaches 1. The growth is
// the least of the last waitSteps steps', and none from waitTrendMax up:
// a longer base round trip raises the waits at once, in a step or two of
// the least of three (a path's, for the shift to learn: see shifted);
// taken for a growth, as the trend over the window or as the median
// step, it read as a path ten times slower (BBR, 3 Mb/s, 80 to 320 ms, in
// the path model: the capacity fell to 93 kb/s, and the stream sent 15
// to 30 kb/s for 15 s).
func (c *Controller) waitGrowth(from time.Time) float64 {
	w, n := math.Inf(1), 0
	for i := len(c.waited) - 1; i > 0 && n < waitSteps; i-- {
		s, prev := c.waited[i], c.waited[i-1]
		if prev.t.Before(from) {
			break
		}
		if s.t.After(prev.t) {
			w = min(w, (s.v-prev.v)/float64(s.t.Sub(prev.t)))
			n++
		}
	}
	if n < waitSteps || w <= 0 || w >= waitTrendMax {
		return 0
	}
	return w / (1 - w)
}

// gone says a smoothed RTT falling at slope (s/s) takes the excess away
// within d: the slope shows about 1/lagFactor of the queue's fall.
func gone(excess time.Duration, slope float64, d time.Duration) bool {
	return slope < 0 && excess.Seconds() <= -lagFactor*slope*d.Seconds()
}

// rttSamples keeps the transport's last freshSamples round-trip samples
// (Observation.LatestRTT), one per acknowledgement.
type rttSamples struct {
	v  [freshSamples]time.Duration
	n  int
	at time.Time // the newest sample's acknowledgement
}

// add takes o's sample if it is one not yet taken.
func (r *rttSamples) add(o Observation) {
	if o.LatestRTT <= 0 || !o.LatestRTTAt.After(r.at) {
		return
	}
	r.at = o.LatestRTTAt
	r.v[r.n%freshSamples] = o.LatestRTT
	r.n++
}

// freshRTT returns the round trip the controller reads: the transport's
// smoothed RTT, or the largest of its last freshSamples samples when that
// is smaller and the newest came within a smoothed round trip. The kernel
// (and quic-go) smooths an eighth per ACK, so at a few packets a second
// the smoothed RTT takes seconds to follow a queue that has drained: after
// a halving from 200 to 100 kb/s at 228 ms (BBR, 24 fps) the stream sent
// at 13 kb/s, an eighth of the link, for seven seconds while the smoothed
// RTT came down from 640 to 280 ms, an eighth per frame's ACK. Where every
// recent sample is lower, the queue they crossed is; the largest of three
// passes over one sample's noise, a delayed ACK adds to a sample and never
// takes from it, and while a queue builds the samples (each of a frame's
// last byte, behind the frame's own) lie above the smoothed RTT and change
// nothing. Read only while recovering, the samples left the smoothed RTT's
// lag to the cruise that followed, which took it for a queue and cut: in
// the path model at 100 kb/s and 300 ms (BBR) the p95 over the floor
// passed 80 ms in 9 runs of 15 (TestRateControlOnPaths).
func (c *Controller) freshRTT(o Observation) time.Duration {
	c.fresh.add(o)
	if c.fresh.n < freshSamples || o.RTT <= 0 || o.Now.Sub(c.fresh.at) > o.RTT {
		return o.RTT
	}
	return min(o.RTT, slices.Max(c.fresh.v[:]))
}

// frameWaits keeps the last waitFrames frames' waits behind their
// predecessors (Observation.HeadWait), one per frame, and whether a
// repair may have lengthened each (Observation.HeadWaitRepaired).
type frameWaits struct {
	v        [waitFrames]time.Duration
	repaired [waitFrames]bool
	n        int
	at       time.Time // the newest frame's write
}

// add takes o's wait, less shift, if it is a frame not yet taken.
func (w *frameWaits) add(o Observation, shift time.Duration) {
	if o.HeadWaitAt.IsZero() || !o.HeadWaitAt.After(w.at) {
		return
	}
	w.at = o.HeadWaitAt
	w.v[w.n%waitFrames] = o.HeadWait - shift
	w.repaired[w.n%waitFrames] = o.HeadWaitRepaired
	w.n++
}

// least returns the least of the last waitFrames waits, each less the
// shift when it was taken; ok false until there are that many, or where a
// repair may have lengthened each of them.
func (w *frameWaits) least() (time.Duration, bool) {
	if w.n < waitFrames || !slices.Contains(w.repaired[:], false) {
		return 0, false
	}
	return slices.Min(w.v[:]), true
}

// headWait returns the queue the stream's own frames stand in at the
// bottleneck where the smoothed round trip cannot show it: the least of
// the last waitFrames frames' waits behind their predecessors' tails
// (transport.HeadWatch: the predecessor's acknowledgement less the frame's
// write and the minimum round trip), less the shift and waitMargin, and
// whether it read them; 0 and false if the transport does not report the
// waits, where a frame's serialization at the capacity is under a quarter
// of the base round trip, or where a repair may have lengthened each of
// the waits (a retransmission since the predecessor's write holds its
// acknowledgement a round trip: with random loss of 2 to 3% at 200 ms
// (BBR, 15 fps), most frames hold a lost packet, and read as a queue their
// waits cut the stream to an eighth of the link, 13% in two real runs at
// 23.3 Mb/s against 47 and 57% with them set aside;
// TestLossyWaitsRepaired). A repaired wait is still a bound, so it counts
// in the least where another is clean.
// A frame several round trips long (10 to 15 fps at a few Mb/s) takes the
// whole of CUBIC's window, its own queueing fills the smoothed RTT, and the
// self term (up to one frame at the capacity) hides a standing queue of up
// to a frame behind it: at 10 fps on 1 Mb/s and 20 ms, 64 ms at the median
// with the link 99% busy. Each frame's wait reads that queue directly. In
// the path model (every fourth path of the matrix and its steps, five
// seeds) it took the paths broken at 15 fps from 30 to 22 and at 10 fps
// from 61 to 53; at 30 fps two either way, the VP8 share 0.8583 against
// 0.8573 (TestLowFrameRate). Ungated it cost 30 fps 0.4 points for one
// path fewer at 15 fps: where a frame is short against the round trip the
// delay signal already sees the queue, and the wait's noise (a delayed
// ACK) only adds cuts. The least of three frames passes over a frame
// larger than the rest, which queues the next behind it once. Real runs,
// TCP CUBIC at 2 Mb/s, 10 ms, a 50 ms buffer, 15 fps, two each: capture to
// received over the floor 61 and 77 ms at the median without it, 12 and
// 12 ms with it, the link 95% busy either way.
func (c *Controller) headWait(o Observation) (time.Duration, bool) {
	n := c.waits.n
	c.waits.add(o, c.shift)
	w, ok := c.waits.least()
	base := o.MinRTT + c.shift
	if !ok || o.HeadWaitAt.IsZero() || c.frameSer() < base/4 {
		return 0, false
	}
	if c.waits.n > n {
		c.waited = push(c.waited, sample{t: o.Now, v: float64(w)}, o.Now.Add(-refWindow))
	}
	return w - waitMargin, true
}
