package sender

import (
	"math"
	"time"

	"replenish/rate"
)

// Loss control tuning; lossMeter's doc comment says where each number comes
// from.
const (
	lossHigh   = 0.02             // a loss rate this far above the base is congestion
	lossMin    = 4                // and only with at least this many packets lost in the window
	lossSigma  = 3                // and more than the base explains by this many standard deviations
	judgeSigma = 1                // a loss cut answered congestion if the loss after it fell this far below half (see fell)
	lossWindow = time.Second      // the loss rate's window, at least
	lossFb     = 2                // and at least this many feedback delays
	lossForget = 30 * time.Second // a base above the window's loss rate falls to it over this
	lossLoad   = 0.5              // a loss cut only if the rate sent over the window was this much of the rate
)

// lossMeter measures the share of packets the transport declares lost, the
// congestion signal of a bottleneck buffer too short for a queue to show in
// the round trip.
//
// The excess (see Controller.excess) does not count the queueing a frame's
// own serialization explains, up to one frame at the capacity. A drop-tail
// buffer shorter than that overflows before its queue reaches the band:
// measured on emulated paths of 5 and 10 Mb/s with 20 and 30 ms buffers,
// with BBR the controller cruised and probed over a capacity 2 to 6% above
// the path's, the buffer stood 14 to 23 ms full and dropped 3% of the
// packets, and frames waited 50 ms in the sender's own buffers (capture to
// received 50 to 70 ms over the floor at the median). (With CUBIC and QUIC
// the frames wait for the window instead, and under 0.2% is lost: the
// rule does not act there.) A sender that overfills a full buffer loses
// the excess: over a window, loss = 1 − capacity/sent, so the capacity is
// the rate sent times one less the loss rate, which a loss cut takes the
// rate below as a queue's cut does (cutFactor). With it, three of four
// such BBR runs came down to 3 to 4 ms over the floor (the fourth to 37),
// at 76 to 92% of the link instead of 94: a loss cut holds for about a second while it is judged (below),
// and BBR's gain cycle overfills the buffer again a few seconds later.
//
// Random loss (a radio link) is no congestion: cutting does not lower it.
// A loss cut is judged over a window that starts a feedback delay after
// it, while the rate stays where the cut put it: a loss rate it did not
// halve (by more than chance: see fell) is the path's, taken as the base,
// and the capacity from before the cut comes back. (Judged while the rate recovered to 98% of the new
// estimate, BBR's own gain cycle went on losing 2 to 10% of the packets
// at that rate, 3 to 5% under the path's: every run with a 20 or 30 ms
// buffer took that for the path's loss within 6 to 17 s, and went on as
// without the loss rate.) A loss rate after the cut over twice the one it
// answered is not a path's steady loss but the transport repairing what
// was lost before it (after a probe's overshoot into a 30 ms buffer, 16%
// of the packets sent in the next second were retransmissions): the
// judgment waits one more window. lossHigh is the loss rate above which
// WebRTC's GCC stops raising its rate; the window is long enough for
// lossMin losses at 2% from 200 packets a second (a 2 Mb/s stream); and
// the count must exceed what the path's random loss (randomLoss) explains
// by lossSigma (see significant). While a loss cut's capacity stands, a
// drain rate above it is not taken for the capacity (the drain estimate's
// windowed maximum ran 2 to 6% over the path in those runs), and neither
// is the rate sent while the window shows loss.
type lossMeter struct {
	samples []lossSample
	from    time.Time // losses count from here: after a cut has shown, after a keyframe's payback
	frac    float64   // the loss rate over the last window judged
	base    float64   // the path's random loss rate, which cuts did not lower
	lossy   bool      // the last window's loss rate was congestion
	capped  bool      // the capacity is a loss cut's estimate
	// The last loss cut until it is judged: when, the loss rate it
	// answered, and the capacity and ceiling before it.
	cutAt           time.Time
	cutFrac         float64
	extended        bool // its judgment waited a window for the repair of earlier losses
	cutCap, cutCeil rate.Bitrate
}

type lossSample struct {
	t          time.Time
	sent, lost int64
}

func (s lossSample) at() time.Time { return s.t }

// add keeps the transport's counts as of now, and those of the last keep;
// counts that fall (a new connection) restart the window.
func (m *lossMeter) add(o Observation, keep time.Duration) {
	if o.Sent <= 0 {
		return
	}
	if n := len(m.samples); n > 0 && (o.Sent < m.samples[n-1].sent || o.Lost < m.samples[n-1].lost) {
		m.samples = m.samples[:0]
		m.from = o.Now
	}
	m.samples = push(m.samples, lossSample{o.Now, o.Sent, o.Lost}, o.Now.Add(-keep))
}

// rate returns the share of packets lost over the last span (from the
// latest sample at least span old, and not before from), how many were
// lost and how many sent; ok is false until the samples cover such a
// window.
func (m *lossMeter) rate(now time.Time, span time.Duration, from time.Time) (frac float64, lost, sent int64, ok bool) {
	if len(m.samples) < 2 {
		return 0, 0, 0, false
	}
	last := m.samples[len(m.samples)-1]
	start := -1
	for i, s := range m.samples {
		if s.t.After(now.Add(-span)) {
			break
		}
		if !s.t.Before(from) {
			start = i
		}
	}
	if start < 0 {
		return 0, 0, 0, false
	}
	s := m.samples[start]
	if last.sent <= s.sent {
		return 0, 0, 0, false
	}
	lost, sent = last.lost-s.lost, last.sent-s.sent
	return float64(lost) / float64(sent), lost, sent, true
}

// lossCongested takes in the transport's counts and reports whether the
// loss over the window is congestion. It first judges the last loss cut
// once the window lies after it: if the loss rate did not halve (fell),
// it is the path's (the base), and the capacity and ceiling from before
// the cut come back.
func (c *Controller) lossCongested(o Observation, dt time.Duration) bool {
	m := &c.loss
	span := c.lossSpan()
	m.add(o, 2*span)
	if o.Now.Before(c.keyUntil) {
		m.from = later(m.from, c.keyUntil) // a keyframe's burst may overflow the buffer: not the rate's
	}
	frac, lost, sent, ok := m.rate(o.Now, span, m.from)
	if !ok {
		return false
	}
	if frac < m.base {
		m.base += (frac - m.base) * min(dt.Seconds()/lossForget.Seconds(), 1)
	}
	if !m.cutAt.IsZero() {
		if frac > 2*m.cutFrac && !m.extended {
			// More than the cut answered: the transport still repairs
			// the losses from before it. Judge the next window.
			m.from, m.extended = o.Now, true
			return false
		}
		if !fell(lost, sent, m.cutFrac/2) {
			m.base = max(m.base, frac)
			c.capacity, c.ceiling = max(c.capacity, m.cutCap), m.cutCeil
			c.phase, c.phaseAt = recovering, o.Now
			m.capped = false
		}
		m.cutAt = time.Time{}
	}
	m.frac = frac
	base := c.randomLoss()
	m.lossy = frac > base+lossHigh && lost >= lossMin && significant(frac, lost, base)
	return m.lossy
}

// randomLoss is the path's random loss rate as far as the controller knows
// it: the loss meter's base, or the loss rate while cruising (see
// quietLoss) once quietMin packets count, if higher. The base alone is
// learned only from a loss cut's judgement, which has a packet or two to
// go on where a window holds a few dozen: BBR at 300 kb/s, 173 ms and 2%
// random loss (a segment or two a frame, about 3% retransmitted) drew a
// loss cut on a second with four losses one to three times a run, three
// judged as congestion in a row took the capacity from 255 to 184 kb/s,
// and the stream used 61 to 70% of the link.
func (c *Controller) randomLoss() float64 {
	w := &c.overflow
	if w.quietSent < quietMin {
		return c.loss.base
	}
	return max(c.loss.base, w.quietLost/w.quietSent)
}

// fell reports whether lost packets of sent are fewer than a loss rate
// of frac would lose, by judgeSigma standard deviations of the count
// (Poisson): a loss cut's judgement (see lossMeter), with frac half the
// rate the cut answered. Taken as the rate itself (fewer lost than
// half), the judgement failed on a path's random loss as often as not
// where a window holds a few packets: QUIC at 730 kb/s and 3% random
// loss sent about 60 packets a second, a cut answered a window of 6 to
// 8%, and the window after it had to hold two losses or more to pass;
// four loss cuts in 18 s stood, each on the rate the last had left
// (350 to 500 kb/s, where default's stream carried 630), before one
// passed and the base was learned (TestFell).
func fell(lost, sent int64, frac float64) bool {
	expect := float64(sent) * frac
	return float64(lost) < expect-judgeSigma*math.Sqrt(expect)
}

// significant reports whether lost packets at a loss rate of frac are more
// than a path losing base at random would lose, by lossSigma standard
// deviations of the count (Poisson). At 2% random loss and 170 packets a
// second (QUIC at 2 Mb/s), one window in eight lost 3.7% or more, the
// base plus lossHigh, and each was cut without it.
func significant(frac float64, lost int64, base float64) bool {
	if frac <= 0 {
		return false
	}
	expect := float64(lost) / frac * base
	return float64(lost)-expect > lossSigma*math.Sqrt(max(expect, 1))
}

// overflow returns the share of the packets sent over the last span that
// the transport declared lost beyond the path's base, if more were lost
// than the base explains (see significant); 0 otherwise. Unlike the loss
// rate the meter judges, it counts the losses right after a cut too: they
// are what the load before it overflowed.
func (m *lossMeter) overflow(now time.Time, span time.Duration) float64 {
	frac, lost, _, ok := m.rate(now, span, time.Time{})
	if !ok || lost < lossMin || !significant(frac, lost, m.base) {
		return 0
	}
	return max(frac-m.base, 0)
}

// lossSpan is the loss rate's window.
func (c *Controller) lossSpan() time.Duration { return max(lossWindow, lossFb*c.fb) }

// lossSent returns the rate sent over the loss rate's window (the rate,
// before anything was sent).
func (c *Controller) lossSent(o Observation) rate.Bitrate {
	if sent := c.sentRate(o.Now.Add(-c.lossSpan()), o.Now); sent > 0 {
		return sent
	}
	return c.rate
}

// loadLost reports whether the losses over the window are the stream's
// load overflowing a buffer: it sent at least lossLoad of its rate. Less,
// and the transport held the frames back: its window, shrunk by the
// losses, is the limit, not the path's buffer (TCP with CUBIC at 5% random
// loss, 2 Mb/s, 80 ms: a window of three segments sent 130 kb/s while the
// rate was 1.4 Mb/s, and the 22% of them lost took the capacity to
// 103 kb/s, the lowest rung, for the rest of the run). The skipped frames
// lower the rate then (transportLimited). A drop-tail buffer that
// overflows under the stream's load drops what the load sends past it:
// with BBR and a 20 ms buffer (10 Mb/s, 40 ms), the stream sent 62 to 109%
// of its rate in the second before each cut after the start.
func (c *Controller) loadLost(o Observation) bool {
	return c.lossSent(o) >= c.rate.Scale(lossLoad)
}

// lossCut takes the rate below the capacity the loss rate shows: the rate
// sent over the window times one less the loss rate, no more than the
// capacity known.
func (c *Controller) lossCut(o Observation) {
	m := &c.loss
	frac := m.frac // this update's window, judged by lossCongested
	est := min(c.capacity, c.lossSent(o).Scale(1-frac))
	m.cutAt, m.cutFrac, m.cutCap, m.cutCeil, m.extended = o.Now, frac, c.capacity, c.ceiling, false
	m.capped = true
	c.capacity, c.ceiling = est, est
	c.rate = min(c.rate, est.Scale(cutFactor))
	c.lastCut, c.lastCutQ = o.Now, c.excessNow
	c.phase, c.phaseAt = recovering, o.Now
}
