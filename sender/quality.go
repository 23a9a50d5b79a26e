package sender

import (
	"math"
	"time"

	"replenish/media"
	"replenish/rate"
)

// Quality control: aim the encoder a little above the transport's drain rate
// so that the socket stays just backlogged. TCP then stays cwnd-limited, its
// delivery-rate samples measure the path rather than our own bitrate, and
// bandwidth is discovered without a separate probe. Two signals correct the
// aim: raw frames discarded while waiting for an invitation mean the target is
// too high (the frame rate fell below the source's), and an application-
// limited rate sample means it is too low (the transport could have sent
// more).

// Controller tuning. The gain multiplies the drain rate to give the target.
const (
	initialGain = 1.1
	minGain     = 0.5
	maxGain     = 2.0
	skipFactor  = 0.92 // per discarded frame, up to three per update
	idleFactor  = 1.03 // per update with an application-limited sample
	maxRise     = 1.15 // the target rises at most this much per update
	maxFall     = 0.5  // and falls at most to this fraction per update

	upHold    = 2 * time.Second // the target must qualify this long before moving up a rung
	upMargin  = 1.2             // ... qualifying means at least upMargin * the next rung's Min
	rungGap   = time.Second     // at least this long between rung changes (each costs a keyframe)
	maxSkipIn = 3
)

// Controller chooses the encoder's target bitrate and the resolution rung for
// each frame. It is a pure function of its observations and the times they
// carry; it is not safe for concurrent use.
type Controller struct {
	ladder     []media.Rung
	rung       int
	target     rate.Bitrate // unclamped by the rung: what the path could carry
	gain       float64
	upSince    time.Time // when the target began to qualify for the next rung; zero if it does not
	lastChange time.Time // last rung change
}

// Observation is what the sender knows when it is about to encode a frame.
type Observation struct {
	Now        time.Time
	DrainRate  rate.Bitrate // the transport's estimate; zero if unknown
	AppLimited bool         // the transport's latest rate sample was application-limited
	Skipped    int          // raw frames discarded unseen since the previous encode
}

// Decision is the controller's choice for the next frame.
type Decision struct {
	Bitrate     rate.Bitrate // the encoder's target for this frame
	Rung        media.Rung
	RungChanged bool
}

// NewController returns a controller over ladder (ascending, non-empty) that
// starts at the given bitrate, clamped to the ladder's range.
func NewController(ladder []media.Rung, start rate.Bitrate) *Controller {
	c := &Controller{ladder: ladder, gain: initialGain}
	c.target = c.clamp(start)
	c.rung = c.highestFor(c.target)
	return c
}

// Rung returns the current rung.
func (c *Controller) Rung() media.Rung { return c.ladder[c.rung] }

// Target returns the current unclamped target: the bitrate the controller
// believes the path carries, before the rung's limits.
func (c *Controller) Target() rate.Bitrate { return c.target }

// Update takes one observation and returns the decision for the next frame.
func (c *Controller) Update(o Observation) Decision {
	switch {
	case o.Skipped > 0:
		c.gain *= math.Pow(skipFactor, float64(min(o.Skipped, maxSkipIn)))
	case o.AppLimited:
		c.gain *= idleFactor
	}
	c.gain = min(max(c.gain, minGain), maxGain)

	if o.DrainRate > 0 {
		want := o.DrainRate.Scale(c.gain)
		want = min(want, c.target.Scale(maxRise))
		want = max(want, c.target.Scale(maxFall))
		c.target = c.clamp(want)
	} else if o.Skipped > 0 {
		c.target = c.clamp(c.target.Scale(math.Pow(skipFactor, float64(min(o.Skipped, maxSkipIn)))))
	}

	changed := c.chooseRung(o.Now)
	r := c.ladder[c.rung]
	return Decision{Bitrate: min(max(c.target, r.Min), r.Max), Rung: r, RungChanged: changed}
}

// chooseRung moves down a rung as soon as the target falls below the
// current rung's Min, and up only after the target has held above the next
// rung's Min (with margin) for upHold. Changes are at least rungGap apart.
func (c *Controller) chooseRung(now time.Time) bool {
	if !c.lastChange.IsZero() && now.Sub(c.lastChange) < rungGap {
		return false
	}
	if c.rung > 0 && c.target < c.ladder[c.rung].Min {
		c.rung = c.highestFor(c.target)
		c.lastChange, c.upSince = now, time.Time{}
		return true
	}
	if c.rung+1 < len(c.ladder) && c.target >= c.ladder[c.rung+1].Min.Scale(upMargin) {
		if c.upSince.IsZero() {
			c.upSince = now
		}
		if now.Sub(c.upSince) >= upHold {
			c.rung++
			c.lastChange, c.upSince = now, time.Time{}
			return true
		}
		return false
	}
	c.upSince = time.Time{}
	return false
}

// highestFor returns the highest rung whose Min is at most b (the lowest rung
// if none).
func (c *Controller) highestFor(b rate.Bitrate) int {
	i := 0
	for j, r := range c.ladder {
		if r.Min <= b {
			i = j
		}
	}
	return i
}

func (c *Controller) clamp(b rate.Bitrate) rate.Bitrate {
	lo, hi := c.ladder[0].Min, c.ladder[len(c.ladder)-1].Max
	return min(max(b, lo), hi)
}
