package sender

import (
	"math"
	"time"

	"replenish/rate"
)

// probeSpeed returns the relative growth per second with which a probe
// that crosses the capacity builds at most about 30 ms of queue before its
// signal (qHigh) returns a feedback delay later: the queue grows as
// v·t²/2, so v ≤ (√(2·30ms) − √(2·qHigh))² / fb² ≈ probeK/fb².
func (c *Controller) probeSpeed() float64 {
	f := c.fb.Seconds()
	return min(probeMax, probeK/(f*f))
}

// grow raises the rate: exponentially while starting; after a cut back to
// the cruising rate within a few feedback delays; then, after cruising, by
// probing past the capacity at a speed the feedback delay allows, faster
// and faster once well past it; while another flow's queue stands (a
// streak of undos: see answered), without the cruise and at foreignSpeed
// at least; while the frames' own queueing says the path is faster (see
// faster), without the cruise and at regainSpeed at least.
func (c *Controller) grow(o Observation, dt time.Duration) {
	if !c.loss.cutAt.IsZero() {
		return // a loss cut is being judged at the rate it set: see lossMeter
	}
	foreign, faster := c.foreignClimb(o), c.faster(o.Now)
	cruise := c.capacity.Scale(cruiseGain)
	want, lead := c.rate, c.rate
	if c.phase == recovering {
		lead = min(c.shown, cruise) // the encoder filled it before the cut
	}
	switch c.phase {
	case starting:
		want = c.rate.Scale(math.Exp(startGrowth * dt.Seconds()))
		if c.held(o, want, want) {
			return // a rate the stream cannot send: see held
		}
	case recovering:
		want += rate.Bitrate(float64(cruise-want) * (1 - math.Exp(-2*dt.Seconds()/c.fb.Seconds())))
		if want >= cruise.Scale(0.98) {
			c.phase, c.phaseAt = cruising, o.Now
		}
	case cruising:
		want = max(want, cruise)
		if o.Now.Sub(c.phaseAt) >= max(cruiseTime, cruiseFb*c.fb) || foreign || faster {
			c.phase, c.phaseAt, c.speed = probing, o.Now, c.probeSpeed()
			c.overflow.heldAt = time.Time{} // an earlier probe's hold is not this one's
		}
	case probing:
		if faster {
			c.speed = max(c.speed, regainSpeed) // for the rest of the probe
		}
		speed := c.speed
		if foreign {
			speed = max(speed, foreignSpeed)
		}
		if c.rate < c.before.Scale(cruiseGain) {
			// Below where the path carried the stream before the last
			// cut: that may have been a burst or a stall rather than
			// the path slowing, so climb back fast; if the path did
			// slow, this finds out once, and forgets.
			speed = max(speed, regainSpeed)
		} else {
			c.before = 0
		}
		want = c.rate.Scale(1 + speed*dt.Seconds())
		capped := c.overflowCap(o, want)
		if c.held(o, want, capped) {
			return
		}
		// Not while the overflow cap holds it: the speed would be
		// spent at once when the cap goes.
		if c.rate > c.ceiling.Scale(probePast) && want > c.rate && capped == want { // also with no ceiling
			c.speed = min(c.speed*math.Exp2(dt.Seconds()/max(probeDouble, c.fb).Seconds()), probeFastest)
		}
		want = capped
	}
	if sr := c.sentRate(o.Now.Add(-sentWindow), o.Now); sr > 0 {
		want = min(want, max(lead, sr.Scale(sentLead)))
	}
	c.rate = max(c.rate, want)
	c.rate = min(c.rate, c.ladder[len(c.ladder)-1].Max.Scale(2))
}

// faster reports that the path has become faster: for half a feedback
// delay the excess has read below minus the band's top and fasterShare of
// a frame's serialization at the capacity. When the link's rate rises,
// each frame serializes in less time, so the smoothed RTT's envelope falls
// under the self term, which follows it only as the round trips of
// refWindow age (a low percentile of them): after a doubling, frames of a
// segment or two read about half their serialization below it for a
// second. That is the only word of the new rate while the stream is
// application-limited, and the cruise and a probe at a few packets a
// second are slow: probeSpeed is probeK/fb², and the smoothed RTT's
// feedback delay there is eight frames. In the path model a doubling from
// 100 to 200 kb/s took 6 to 8.3 s (the median of 15 seeds) to be back at
// 90% of the link at 20 to 172 ms; with the probe at regainSpeed for the
// rest of it, 2.7 to 3.6 s (TestLowRateDoubling). The excess read is the
// round trip's alone where the frames' waits are not read
// (a frame's serialization under a quarter of the round trip: see
// headWait), whose floor of zero hid the fall at 300 ms, and then only
// while the frames' waits show no queue either. The half feedback delay
// passes over the self term's noise on long paths of many packets a
// frame (CUBIC at 10 Mb/s and 172 ms read −12 to −13 ms for three frames
// now and then, and its p95 over the floor rose 32 → 41 ms without it).
// Not while starting or recovering from a cut: a cut's frames are
// smaller, and the self term counts only their growth (see ownNow). A
// round trip that falls for good reads so too for a moment (the shift
// falls with it, and the self term's round trips stand above the new
// base): with the threshold at a quarter of a frame's serialization and
// the band's bottom, that return (BBR, 3 Mb/s, 320 to 80 ms) lost two
// points of the link; at this one it does not.
func (c *Controller) faster(now time.Time) bool {
	return !c.fastFrom.IsZero() && now.Sub(c.fastFrom) >= c.fb/2
}

// watchFaster notes, at every update, since when the excess has read a
// faster path (see faster): the excess the update read, or own, the round
// trip's alone, where the frames' waits were not read (waits false).
func (c *Controller) watchFaster(now time.Time, own time.Duration, waits bool) {
	read := c.excessNow
	if !waits {
		read = own
	}
	low := (c.phase == cruising || c.phase == probing) && c.excessNow < c.low &&
		read < -max(c.high, time.Duration(fasterShare*float64(c.frameSer())))
	switch {
	case !low:
		c.fastFrom = time.Time{}
	case c.fastFrom.IsZero():
		c.fastFrom = now
	}
}
