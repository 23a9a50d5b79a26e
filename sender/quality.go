package sender

import (
	"math"
	"time"

	"replenish/media"
	"replenish/rate"
)

// Quality control: aim the encoder at the transport's drain rate times a
// gain near 1, so that the socket stays just backlogged. TCP then stays
// cwnd-limited, its delivery-rate samples measure the path rather than our
// own bitrate, and bandwidth is discovered without a separate probe. Three
// signals correct the gain:
//
//   - raw frames discarded while the sender waited for an invitation mean
//     the target is too high: the frame rate fell below the source's;
//   - a round trip well above the path's minimum means the target is too
//     high as well: the excess is queueing at the bottleneck, where a
//     loss-based congestion control would otherwise fill the buffer until
//     it drops packets, and a video frame caught in the loss recovery waits
//     a retransmission timeout at the source;
//   - a link that went idle between the invitation and the write (the
//     backlog at the invitation drained before the next frame was written),
//     with little queueing in the network, means the target is too low.
//
// A keyframe is several frames' worth of data, so the frames discarded in
// its wake say nothing about the target and are not counted against it.

// Controller tuning.
const (
	initialGain  = 1.0
	minGain      = 0.6
	maxGain      = 1.3
	skipFactor   = 0.93 // per discarded frame, up to maxSkipIn per update
	maxSkipIn    = 3
	idleStep     = 0.002                 // gain added per update after an idle link
	idleMin      = 2 * time.Millisecond  // idle time that counts
	queueHigh    = 40 * time.Millisecond // queueing (RTT above the minimum) that lowers the gain
	queueLow     = 25 * time.Millisecond // queueing below which an idle link raises it
	queueFactor  = 0.9                   // the gain's factor for queueing above queueHigh
	queueHold    = time.Second           // at least this long between two such steps
	maxRise      = 1.15                  // the target rises at most this much per update
	maxFall      = 0.5                   // and falls at most to this fraction per update
	keyGrace     = 3                     // frames after a keyframe whose discards are ignored
	upHold       = 2 * time.Second       // the target must qualify this long before moving up a rung
	rungGap      = time.Second           // at least this long between rung changes (each costs a keyframe)
	unknownDrain = 0
)

// Controller chooses the encoder's target bitrate and the resolution rung for
// each frame. It is a pure function of its observations and the times they
// carry; it is not safe for concurrent use.
type Controller struct {
	ladder     []media.Rung
	rung       int
	target     rate.Bitrate // unclamped by the rung: what the path could carry
	gain       float64
	sinceKey   int       // frames since the last keyframe
	lastQueue  time.Time // when queueing last lowered the gain
	upSince    time.Time // when the target began to qualify for the next rung; zero if it does not
	lastChange time.Time // last rung change
}

// Observation is what the sender knows when it is about to encode a frame.
type Observation struct {
	Now       time.Time
	DrainRate rate.Bitrate // the transport's estimate; zero if unknown
	Skipped   int          // raw frames discarded unseen since the previous encode
	// Idle is how long the link sat idle before this write: the time from
	// the invitation to the write, less the time the backlog at the
	// invitation took to drain. Zero or negative: the link stayed busy.
	Idle time.Duration
	// Keyframe says the previous frame was a keyframe.
	Keyframe bool
	// RTT and MinRTT are the transport's smoothed and smallest round
	// trips; zero if unknown.
	RTT, MinRTT time.Duration
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
	c := &Controller{ladder: ladder, gain: initialGain, sinceKey: keyGrace}
	c.target = c.clamp(start)
	c.rung = c.startRung(c.target)
	return c
}

// Rung returns the current rung.
func (c *Controller) Rung() media.Rung { return c.ladder[c.rung] }

// Target returns the current unclamped target: the bitrate the controller
// believes the path carries, before the rung's limits.
func (c *Controller) Target() rate.Bitrate { return c.target }

// Update takes one observation and returns the decision for the next frame.
func (c *Controller) Update(o Observation) Decision {
	if o.Keyframe {
		c.sinceKey = 0
	} else {
		c.sinceKey++
	}
	skipped := o.Skipped
	if c.sinceKey <= keyGrace {
		skipped = 0
	}
	queueing := time.Duration(0)
	if o.RTT > 0 && o.MinRTT > 0 {
		queueing = o.RTT - o.MinRTT
	}
	switch {
	case skipped > 0:
		c.gain *= math.Pow(skipFactor, float64(min(skipped, maxSkipIn)))
	case queueing > queueHigh:
		// One step, then wait for it to show: the encoder's rate
		// control takes about a second to follow a new target, and
		// the RTT shows the result a round trip after that.
		if c.lastQueue.IsZero() || o.Now.Sub(c.lastQueue) >= max(queueHold, 2*o.RTT) {
			c.gain *= queueFactor
			c.lastQueue = o.Now
		}
	case o.Idle >= idleMin && queueing < queueLow:
		c.gain += idleStep
	}
	c.gain = min(max(c.gain, minGain), maxGain)

	// Without a drain rate the transport gives no view of the path (no
	// source buffer management): the target stays where it is, as an
	// application configured for a bitrate would keep it.
	if o.DrainRate > unknownDrain {
		want := o.DrainRate.Scale(c.gain)
		want = min(want, c.target.Scale(maxRise))
		want = max(want, c.target.Scale(maxFall))
		c.target = c.clamp(want)
	}

	changed := c.chooseRung(o.Now)
	r := c.ladder[c.rung]
	return Decision{Bitrate: min(max(c.target, r.Min), r.Max), Rung: r, RungChanged: changed}
}

// chooseRung moves down a rung as soon as the target falls below the
// current rung's Min, and up only after the target has held at or above the
// next rung's default bitrate (the middle of its range) for upHold: a rung
// is worth its keyframe only when the path carries it comfortably. Changes
// are at least rungGap apart.
func (c *Controller) chooseRung(now time.Time) bool {
	if !c.lastChange.IsZero() && now.Sub(c.lastChange) < rungGap {
		return false
	}
	if c.rung > 0 && c.target < c.ladder[c.rung].Min {
		for c.rung > 0 && c.target < c.ladder[c.rung].Min {
			c.rung--
		}
		c.lastChange, c.upSince = now, time.Time{}
		return true
	}
	if c.rung+1 < len(c.ladder) && c.target >= c.ladder[c.rung+1].Default() {
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

// startRung returns the highest rung whose default bitrate is at most b (the
// lowest rung if none).
func (c *Controller) startRung(b rate.Bitrate) int {
	i := 0
	for j, r := range c.ladder {
		if r.Default() <= b {
			i = j
		}
	}
	return i
}

func (c *Controller) clamp(b rate.Bitrate) rate.Bitrate {
	lo, hi := c.ladder[0].Min, c.ladder[len(c.ladder)-1].Max
	return min(max(b, lo), hi)
}
