package sender

import (
	"time"

	"replenish/rate"
)

// answer is the state before a cut, kept until its queue shows whether the
// cut answered it.
type answer struct {
	at                      time.Time
	q, peak                 time.Duration // the excess at the cut, and its highest since
	capacity, ceiling, rate rate.Bitrate
	sent                    rate.Bitrate // the rate sent over sentWindow before the cut
}

// await keeps the state before a cut for answered, unless an earlier cut
// awaits its judgement.
func (c *Controller) await(now time.Time, excess time.Duration) {
	if c.ans.at.IsZero() {
		c.ans = answer{at: now, q: excess, capacity: c.capacity, ceiling: c.ceiling, rate: c.rate,
			sent: c.sentRate(now.Add(-sentWindow), now)}
	}
}

// answered judges a cut, and those after it before the judgement, a
// feedback delay and half drainTime after the first: a queue of the
// stream's own falls once it sends below the capacity, while one that is
// above the band and higher than at the cut, with the path draining what
// the stream sent (the rate sent since within overDrain of the drain
// rate), is another flow's, unless the stream had overshot the capacity
// before the cut (its rate past probePast times it) and the queue has
// since fallen below ownFall of its peak: an overshoot's queue grows for
// a feedback delay after the cut, then drains, and taken for another
// flow's it suppressed the cuts through a halving of the link
// (TestAnsweredOwnOvershoot). The cuts are then undone (the capacity,
// ceiling and rate from before the first come back) and none follows for
// shiftTime or two feedback delays (doubled for each undo in a streak:
// see foreignQueue), in which the rate climbs as on an empty queue: held
// there instead, it never reached probing before the other flow's next
// cycle drew the next cut, and beside one download the stream kept 6.9%
// of 10 Mb/s (CUBIC, 40 ms) and 20% of 2 Mb/s (BBR, 40 ms) in the path
// model, at the median of five seeds (10 and 28% with the climb, 11 and
// 39% with the streak; TestBesideDownload). Climbing as on an empty
// queue, it still kept little: the other flow's queue is also the feedback
// delay (a 130 kb/s stream beside CUBIC at 2 Mb/s and 40 ms read a delay
// of 730 ms), so the cruise lasted seconds and the probe's speed
// (probeK/fb²) was 2 to 6% a second, and the quiet time ran out first.
// In a streak's quiet time (a second undo or later) the rate now skips
// the cruise and probes at foreignSpeed at least, while the base's shift
// stands above the band and the stream sends no more than the path
// drains (overDrained): no signal of its own queue shows under another
// flow's anyway, and the rate leads what the encoder sends by sentLead at
// most. Without those conditions it ran past the path on its own queue
// taken for another flow's: after a download ended, on a shift of 11 ms
// left within the band, to 3 Mb/s on a 2 Mb/s path (the path model,
// CUBIC, 20 ms; TestAfterDownloadAcrossPaths); and on a real path after
// the round trip stepped from 20 to 172 ms, a quiet time after an undo
// took the rate from 1.8 to 2.9 Mb/s on 2 Mb/s in 1.5 s (p95 89 ms over
// the floor). Beside one download (64 paths: CUBIC and BBR, 1 to 10
// Mb/s, 20 to 172 ms, 100 and 200 ms buffers, nine seeds) the stream's
// median share rose from 18.4 to 24.2% beside CUBIC (the least path's
// from 2.1 to 6.0%) and from 27.4 to 27.6% beside BBR, and after the
// download ended (the same paths, measured alone from 5 s after its end)
// no run broke the bounds, as before. Nor where a path-limited window
// that closed since the cut delivered less than slowerShare of what the
// stream sent, since the cut or over sentWindow before it: the path
// slowed, while the drain rate's windowed maximum remembers the faster
// one for ten round trips. (A deep cut sends little since: after a fall
// from 337 to 188 kb/s, with the round trip from 90 to 28 ms, a cut to
// 66 kb/s was judged while its 1.5 s queue drained, read above the
// queue at the cut, and undone to 326 kb/s, twice, with 2 s of queue
// each time; the path model, TestAnsweredDeepCut.) Another flow's queue takes
// from the stream's delivery only what that flow pushes past the link (at
// most BBR's probing gain, 1.25: beside a BBR download at 10 Mb/s in the
// path model, 42 of 43 judgements found the newest window at 0.78 or more
// of what was sent). A probe's cut at 3 Mb/s (QUIC, 212 ms, 15 fps) was
// judged after the link halved, its queue grown to 183 ms, the newest
// window 1.49 Mb/s against 2.3 sent, and the undo the maximum's 2.97 Mb/s
// allowed put the rate back to 3 Mb/s on 1.55 (TestAnsweredHalvedPath).
// Only once the base has moved (see
// shifted): before, a halving's queue is not answered by a cut too shallow
// either, and the drain rate's windowed maximum still remembers the faster
// path (TestRateControlOnPaths' halvings took 3.5 to 12 s to recover).
func (c *Controller) answered(o Observation, excess time.Duration) {
	if c.ans.at.IsZero() {
		return
	}
	c.ans.peak = max(c.ans.peak, excess)
	if o.Now.Sub(c.ans.at) < c.fb+drainTime/2 {
		return
	}
	a := c.ans
	c.ans = answer{}
	draining := a.rate > a.capacity.Scale(probePast) && float64(excess) < ownFall*float64(a.peak)
	grown := excess > a.q && excess > c.high && !draining
	sent, drained := c.sentRate(a.at, o.Now), measured(o)
	carried := sent > 0 && drained > 0 && sent.Scale(1/overDrain) <= drained
	if o.Newest > 0 && o.NewestAt.After(a.at) && o.Newest < max(sent, a.sent).Scale(slowerShare) {
		carried = false // the path slowed since the cut: see above
	}
	if c.shift <= c.high {
		c.foreign.undos = 0 // the base is within the band of the minimum: no streak
	}
	if c.shift <= 0 || !grown || !carried {
		return
	}
	c.capacity, c.ceiling = max(c.capacity, a.capacity), max(c.ceiling, a.ceiling)
	c.rate = max(c.rate, min(a.rate, c.capacity.Scale(cruiseGain)))
	c.foreign.undo(o.Now, max(shiftTime, 2*c.fb), c.shift)
}

// foreignQueue is the judgement that the excess is another flow's queue:
// no cut until a time. Each undo in a streak (while the base stays
// shifted above the band) doubles the quiet time, up to maxUndos: beside
// a download each of its cycles drew a cut, and each cut and undo cost
// the climb back. The judgement ends early once the base's shift falls
// to half what it was at the last undo: the other flow's queue is gone
// (the download ended), and the stream's own queue counts again.
type foreignQueue struct {
	until time.Time
	first time.Time     // until when the quiet time lasts unextended by the streak
	undos int           // in the streak
	shift time.Duration // the base's shift at the last undo
}

// undo starts a quiet time of d at now, doubled for each undo before it
// in the streak, with the base shifted by shift.
func (f *foreignQueue) undo(now time.Time, d, shift time.Duration) {
	f.undos = min(f.undos+1, maxUndos)
	f.until, f.first, f.shift = now.Add(d<<(f.undos-1)), now.Add(d), shift
}

// holds reports whether the quiet time lasts at now, with the base
// shifted by shift. It ends the judgement, streak and all, if the other
// flow's queue went, or, in the time the streak added, if own reports
// that the stream sends more than the path delivers of it (asked only
// then).
func (f *foreignQueue) holds(now time.Time, shift time.Duration, own func() bool) bool {
	if !now.Before(f.until) {
		return false
	}
	if shift < f.shift/2 || (!now.Before(f.first) && own()) {
		*f = foreignQueue{}
		return false
	}
	return true
}

// foreignClimb reports whether the rate climbs fast, skipping the cruise
// (see answered): in the quiet time of a streak of undos (the second or
// later), while the base stands shifted above the band and the path
// drains what the stream sends.
func (c *Controller) foreignClimb(o Observation) bool {
	return o.Now.Before(c.foreign.until) && c.foreign.undos >= 2 &&
		c.shift > c.high && !c.overDrained(o)
}

// overDrained reports whether the rate sent over the last sentWindow is
// more than overDrain times the drain rate: the stream's own queue grows.
// Alone after a download ended, an undo judged the stream's own probe's
// queue another flow's, and the streak let it climb to 3.4 Mb/s on a
// 2 Mb/s path for 7 s. Beside a download that fills the buffer it holds
// too once the stream pushes past what it gets, and the streak then ends:
// most of the streak's gain beside CUBIC went with it (NOTEBOOK).
func (c *Controller) overDrained(o Observation) bool {
	d := measured(o)
	return d > 0 && c.sentRate(o.Now.Add(-sentWindow), o.Now) > d.Scale(overDrain)
}

// congested cuts the rate below the path's capacity, deep enough to drain
// the excess queue within drainTime. The capacity is estimated as the rate
// sent a feedback delay ago (what the queue's growth now shows) divided by
// one plus that growth, and no more than the drain rate. Then it waits a
// feedback delay and a little for the cut to show before cutting again
// (unless the queue's growth says the path slowed: slowerPath), and cuts
// again only if the queue has not begun to drain.
func (c *Controller) congested(o Observation, excess time.Duration, slope float64) {
	if !c.lastCut.IsZero() && o.Now.Sub(c.lastCut) < c.fb+100*time.Millisecond && !c.slowerPath(o) {
		return
	}
	// A queue that falls is draining: below the excess at the last cut,
	// or falling fast enough (the slope shows about 1/lagFactor of it) to
	// be gone within drainTime. A second cut on it would only leave the
	// link idle when it is gone.
	if !c.lastCut.IsZero() && slope <= 0 && (excess < c.lastCutQ || gone(excess, slope, drainTime)) {
		return
	}
	stalled := !c.stallAt.IsZero() && o.Now.Sub(c.stallAt) < c.fb+drainTime
	burst := (slope > burstSlope || stalled) && (!c.lastBurst || c.afterOutage(o.Now))
	c.lastBurst = burst
	c.plan = drainPlan{}
	if burst {
		c.drainBurst(o, excess)
		return
	}
	est, confirmed := c.cutEstimate(o, slope)
	// The queue now is the excess plus what it grew over the feedback
	// delay (the lagged slope, times lagFactor); the cut drains it
	// within drainTime.
	queue := excess.Seconds() + lagFactor*max(slope, 0)*c.fb.Seconds()
	c.countCut(o, excess)
	if d := measured(o); !confirmed && c.startQueue && d > est {
		// The start's queue has not drained since: no congestion before
		// it, so the drain rate is a lower bound of the path's (and the
		// path's, if the start's queue kept it path-limited), with no
		// older, faster path to remember; what stands is what the start
		// wrote (over QUIC, with its retransmissions), not the rate sent
		// since.
		est = d
	}
	cut := cutFactor
	overshoot := confirmed && slope > 0 && c.cuts == 1
	if overshoot {
		cut = overshootCut // a probe's overshoot: see the Controller's doc
	}
	f := max(minCut, cut-queue/drainTime.Seconds())
	switch {
	case c.before > 0:
		c.before = 0 // regaining congested: the path did slow
	case est < c.capacity.Scale(regainBelow) && c.measured:
		c.before = c.capacity
	}
	if c.phase == recovering && !confirmed {
		// The last cut's queue has not drained: the path carries no
		// more than that cut's estimate, whatever was sent a feedback
		// delay ago (at the start, the first frames' overshoot).
		est = min(est, c.capacity)
	}
	c.await(o.Now, excess)
	c.ceiling, c.capacity, c.loss.capped = est, est, false
	c.noteShown(o.Now)
	c.rate = min(c.rate, est.Scale(f))
	c.lastCut, c.lastCutQ, c.dipped = o.Now, excess, false
	c.phase, c.phaseAt = recovering, o.Now
	if overshoot {
		c.plan.start(o.Now, time.Duration(queue*float64(time.Second)), est)
		c.shotAt, c.shotDrain = o.Now, measured(o)
	}
}

// drainBurst cuts on a burst: a queue that grows faster than the sending
// rate can make it, or the first after a stall the transport reported, is
// the backlog a stall left (BBR's PROBE_RTT, a retransmission timeout)
// leaving at once. It says nothing of the capacity; drain it and keep the
// estimate. If it goes on growing, the next cut treats it as the rate's.
func (c *Controller) drainBurst(o Observation, excess time.Duration) {
	f := max(minCut, cutFactor-excess.Seconds()/drainTime.Seconds())
	c.noteShown(o.Now)
	c.rate = min(c.rate, c.capacity.Scale(f))
	c.lastCut, c.lastCutQ, c.dipped = o.Now, excess, false
	c.phase, c.phaseAt = recovering, o.Now
}

// countCut counts a cut in its series, which starts afresh at the first
// cut since the queue drained, or at one more than shiftTime after the
// last if the excess fell to the band's top since (see shifted), keeping
// what stood before it; the first congestion of all is the start's queue.
func (c *Controller) countCut(o Observation, excess time.Duration) {
	if c.cuts == 0 || (o.Now.Sub(c.lastCut) > shiftTime && c.dipped) {
		c.cuts, c.firstCut, c.firstCutQ = 0, o.Now, excess
		c.firstCap, c.firstCeil = c.capacity, c.ceiling
		c.firstSent = c.sentRate(o.Now.Add(-sentWindow), o.Now)
		c.firstPkts, c.firstLost = o.Sent, o.Lost
	}
	c.cuts++
	if !c.congestedOnce {
		c.congestedOnce, c.startQueue = true, true
	}
}

// slowerPath reports that the queue's growth since the last cut, at least
// half a slopeWindow of it, says the path carries less than slowerShare
// of the capacity that cut assumed: what was sent a feedback delay ago
// over one plus the growth. The next cut then need not wait for the last
// one's effect, a feedback delay and more: that delay grows with the
// queue, and a path that halved during a probe fills its buffer first.
// At 4 Mb/s, 300 ms and a 200 ms buffer the path model's second cut came
// 0.8 s after the first, once the buffer was full and the round trip
// flat, took the rate that was sent for the capacity (3.2 Mb/s for a
// 2 Mb/s path), and a third cut a second later ended it: nine seeds of
// fifteen were back within bounds after more than 2 s, none with this.
// The growth is the smoothed RTT's (times lagFactor) or the frames'
// waits' (waitGrowth), whichever is more: at a few ACKs a second the
// smoothed RTT moves an eighth per ACK and lags the queue by a second
// (BBR, 230 kb/s halved at 202 ms: 0.15 s/s over the 0.47 s after a
// cut, while the frames' waits, read every 130 ms, grew 49 to 64 ms at
// each reading, a queue growing 0.53 s a second sent), and the second
// cut came when the queue stood at 410 ms (TestSlowerPathFromWaits).
func (c *Controller) slowerPath(o Observation) bool {
	if o.Now.Sub(c.lastCut) < slopeWindow/2 {
		return false
	}
	growth := max(lagFactor*c.slopeSince(o.Now, c.lastCut), c.waitGrowth(c.lastCut))
	if growth <= lagFactor*slopeHigh {
		return false
	}
	then := o.Now.Add(-c.fb)
	sent := c.sentRate(then.Add(-sentWindow), then)
	return sent.Scale(1/(1+growth)) < c.capacity.Scale(slowerShare)
}

// noteShown keeps, at a cut, the rate sent over the last sentWindow: the
// encoder filled it at this rung, so recovering the rate may lead up to it
// (see grow). Over a series of cuts, each before the last one's queue
// drained, it keeps the highest: the later ones come after the rate fell.
func (c *Controller) noteShown(now time.Time) {
	sent := c.sentRate(now.Add(-sentWindow), now)
	if c.phase == recovering {
		sent = max(sent, c.shown)
	}
	c.shown = sent
}

// cutEstimate returns the capacity a cut takes the rate below, and whether
// the drain rate confirms the queue's growth: the rate sent a feedback
// delay ago over one plus the growth is within drainTrust of it.
func (c *Controller) cutEstimate(o Observation, slope float64) (est rate.Bitrate, confirmed bool) {
	// The queue grows at sent/capacity − 1 seconds per second, and the
	// smoothed RTT's slope shows about half of that growth when the
	// excess first crosses qHigh (the kernel moves it an eighth per ACK:
	// lagFactor), so the capacity is what was sent a feedback delay ago
	// over one plus lagFactor times the slope.
	then := o.Now.Add(-c.fb)
	sent := c.sentRate(then.Add(-sentWindow), then)
	if sent < c.rate/2 || !c.cappedAt.Before(then.Add(-sentWindow)) {
		// The window held a stall (the frames it skipped, the backlog
		// it then let go at once): what was written then is not what
		// reached the bottleneck, and says nothing of the path.
		sent = max(sent, c.rate)
	}
	// The drain rate measured the bottleneck while this queue built; it
	// is the better estimate unless the queue's growth says the path is
	// well below it (it slowed, and the windowed maximum remembers). A
	// drain rate from application-limited windows measured only the
	// stream's own rate, a lower bound: when the growth says the path
	// carries more, the growth's estimate stands. (At 100 kb/s a frame is
	// one packet, no window is backlogged, and the drain rate sat at the
	// rate the stream had cruised at: each cut set the capacity back to
	// it, and the link stayed 90% busy.)
	//
	// What the bottleneck dropped of it did not join the queue, so the
	// share the transport declared lost over the same span (beyond the
	// path's random loss) comes off. A full drop-tail buffer shows no
	// growth at all, and the rate sent then confirmed the drain rate's
	// windowed maximum, which still held the faster path after a halving
	// (BBR, 20.6 to 10.3 Mb/s, 158 ms, a 50 ms buffer: three cuts kept
	// 19.75 Mb/s while a quarter of the packets were lost, and the stream
	// sent 16 to 19 Mb/s into the full buffer for 2 s).
	kept := 1 - c.loss.overflow(o.Now, sentWindow)
	share := kept / (1 + max(slope, 0))
	est = sent.Scale(share)
	d := measured(o)
	if d <= 0 || max(sent, c.recentLoad(o, then)).Scale(share) < d.Scale(drainTrust) {
		est = sent.Scale(kept / (1 + lagFactor*max(slope, 0)))
		if !c.measured && o.WindowBound && o.Late > 0 {
			est = min(est, o.DrainRate)
		}
		return est, false
	}
	if !o.AppLimited || est < d {
		est = d
	}
	return est, true
}

// recentLoad returns the highest rate sent over sentWindow ending between
// then (a feedback delay ago) and a round trip ago: the smoothed RTT's
// growth now comes from arrivals within that span (its smoothing spreads
// them), and while a probe raises the rate the load a feedback delay ago
// is the least of them.
func (c *Controller) recentLoad(o Observation, then time.Time) rate.Bitrate {
	var best rate.Bitrate
	for end := then; !end.After(o.Now.Add(-o.MinRTT)); end = end.Add(20 * time.Millisecond) {
		best = max(best, c.sentRate(end.Add(-sentWindow), end))
	}
	return best
}

// transportLimited lowers the rate below the transport's drain rate when
// frames keep being skipped without queueing in the network: the transport
// drains slower than the encoder fills it (BBR paces at its own estimate,
// which an application-limited flow holds near the flow's rate). The
// probing that follows lets BBR's gain cycle find the backlog it needs to
// raise its estimate, which the drain rate then shows.
func (c *Controller) transportLimited(o Observation) {
	if !c.lastCut.IsZero() && o.Now.Sub(c.lastCut) < c.fb+200*time.Millisecond {
		return
	}
	c.rate = c.rate.Scale(skipStep)
	if d := measured(o); d > 0 {
		c.rate = min(c.rate, d.Scale(cruiseGain))
	}
	c.lastCut = o.Now
	if c.phase == probing || c.phase == starting {
		c.phase, c.phaseAt = cruising, o.Now
	}
}

// afterOutage reports that now is within a feedback delay and drainTime
// of an outage's end: the queue then is what the transport resends of what
// the outage lost, and what it held back, leaving at once (QUIC at
// 100 kb/s after a 1 s outage: 8 KB, 640 ms of the link, its excess read
// 17 and then 429 ms); every cut then drains it as a burst (see
// congested), and the losses then declared are the outage's, not a
// probe's (see watchOverflow).
func (c *Controller) afterOutage(now time.Time) bool {
	return !c.outageAt.IsZero() && now.Sub(c.outageAt) < c.fb+drainTime
}

// outage reports that the update ends an outage: the transport invited
// nothing for outageGap and outageRTTs round trips, with frames waiting
// (Late), and for twice as long as the frame before took to drain at the
// measured drain rate (a keyframe's backlog at 30 kb/s holds the next
// frame over a second; before a measurement, the start's backlog holds it
// for as long as the path needs to drain a window many times its own).
// What the outage lost is the outage's: repaired once the path is back,
// its losses are no load's, and counted they cut the rate to what the
// stream sent through it, a few kb/s (QUIC, 100 kb/s, a 1 s outage: to
// 5.8 kb/s, and 20 s to climb back); so the loss meter judges only from a
// feedback delay on, and the queue the repairs build is a stall's burst
// (see congested and afterOutage). Its skipped frames are not the
// transport's rate.
func (c *Controller) outage(o Observation, dt time.Duration) bool {
	if o.Late <= 0 || dt < max(outageGap, outageRTTs*o.RTT) {
		return false
	}
	d := measured(o)
	return d > 0 && dt > 2*d.Duration(o.Written)
}
