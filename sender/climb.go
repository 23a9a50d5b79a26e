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
// at least.
func (c *Controller) grow(o Observation, dt time.Duration) {
	if !c.loss.cutAt.IsZero() {
		return // a loss cut is being judged at the rate it set: see lossMeter
	}
	foreign := c.foreignClimb(o)
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
		if o.Now.Sub(c.phaseAt) >= max(cruiseTime, cruiseFb*c.fb) || foreign {
			c.phase, c.phaseAt, c.speed = probing, o.Now, c.probeSpeed()
			c.overflow.heldAt = time.Time{} // an earlier probe's hold is not this one's
		}
	case probing:
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
