package sender

import (
	"time"

	"replenish/rate"
)

// drainPlan follows the queue a probe's overshoot left at the bottleneck,
// from the bytes written since the cut and the capacity the drain rate
// confirmed, so that the rate returns to the cruising rate when that queue
// has gone rather than when the smoothed RTT shows it gone, a feedback
// delay and more later. At 500 kb/s the link sat idle for most of that delay
// after every probe: the cut's rate (overshootCut less the drain) was 0.9
// of the link, and the signal, still showing the queue, held it there
// and took a lagging rise for a second cut.
//
// The plan holds only while its premise does: the capacity is known (the
// cut was a probe's overshoot that the drain rate confirmed) and the
// signal shows no more queue than the cut saw coming. If the path carries
// less than the capacity, the queue does not drain, the signal passes
// what the cut saw and the plan ends; the signal's own rules take over.
// The cut drains its queue within drainTime: a plan whose queue has not
// drained by then ends too.
type drainPlan struct {
	on       bool
	q        float64       // the queue predicted now, in seconds at capacity
	peak     time.Duration // the queue the cut saw coming
	capacity rate.Bitrate
	at       time.Time // the cut
	doneAt   time.Time // when the predicted queue ran out; zero until then
}

// planLag is how long past a feedback delay after the predicted end of
// the queue the signal may still show it: the excess is the lower
// envelope of the smoothed RTT over 2.5 frames, at least envelope.
const planLag = envelope

// start plans the drain of queue q at capacity after a cut at now.
func (p *drainPlan) start(now time.Time, q time.Duration, capacity rate.Bitrate) {
	*p = drainPlan{on: q > 0 && capacity > 0, q: q.Seconds(), peak: q, capacity: capacity, at: now}
}

// add accounts for bytes written over dt ending at now: the bottleneck
// took dt of its queue away and the bytes' serialization joined it.
func (p *drainPlan) add(bytes int, dt time.Duration, now time.Time) {
	if !p.on || !p.doneAt.IsZero() {
		return
	}
	p.q += float64(bytes)*8/float64(p.capacity) - dt.Seconds()
	if p.q <= 0 {
		p.doneAt = now
	}
}

// planState is what a drainPlan says of the queue the signal shows.
type planState int

const (
	planOff      planState = iota // no plan: the signal's own rules
	planDraining                  // the cut's queue, still draining
	planDrained                   // the cut's queue, gone; the signal lags
)

// state says whether the queue the signal shows is the cut's, draining or
// predicted gone: it is while the signal reads no more than the cut saw
// coming, until lag after the predicted end. Past that, once the signal
// reads more, or if the queue has not drained within drainTime, the plan
// ends.
func (p *drainPlan) state(now time.Time, excess, lag time.Duration) planState {
	if !p.on {
		return planOff
	}
	end := p.at.Add(drainTime + lag)
	if !p.doneAt.IsZero() {
		end = p.doneAt.Add(lag)
	}
	if excess > p.peak+qLow || now.After(end) {
		p.on = false
		return planOff
	}
	if p.doneAt.IsZero() {
		return planDraining
	}
	return planDrained
}
