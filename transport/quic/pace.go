package quic

import (
	"sync"
	"time"
)

// paceGain is the pacing rate's multiple of the congestion window a
// smoothed round trip: quic-go's own (and about Linux's 1.2).
const paceGain = 1.25

// paceBurst is the longest burst the pacer lets go at once, as time at its
// rate, and paceMinBurst the least, in bytes: two of quic-go's packets.
// Linux lets a paced socket send about a millisecond's worth at a time,
// and never less than two segments.
const (
	paceBurst    = time.Millisecond
	paceMinBurst = 2 * datagramSize
)

// pacer spreads the media stream's bytes over time when Config.Pace is
// set. quic-go paces its packets at paceGain times cwnd a smoothed round
// trip, but its budget refills to ten packets in any pause, and a stream
// in replenish mode pauses before every frame: every frame of up to ten
// packets (12.8 KB: every frame at 1 Mb/s and 15 fps) left at once, at the
// line rate, and where the bottleneck's buffer was shorter than the frame
// the frame lost its tail. The pacer is quic-go's pacing without that
// burst: a token bucket of paceBurst at the same rate, consulted by the
// media stream's write limiter (which must not block: it only says how
// many bytes may go now), and a wait for the writer until the budget is
// positive again.
type pacer struct {
	mu     sync.Mutex
	rate   float64   // bytes a second; zero: unknown, nothing is held back
	budget float64   // bytes that may go now; below zero once a packet overdrew it
	at     time.Time // when budget was brought up to date
}

// setRate sets the rate from the congestion window (bytes) and the
// smoothed round trip; unknown (zero) values turn pacing off until known.
func (p *pacer) setRate(cwnd uint64, srtt time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cwnd == 0 || srtt <= 0 {
		p.rate = 0
		return
	}
	p.rate = paceGain * float64(cwnd) / srtt.Seconds()
}

// refill brings the budget up to now. p.mu must be held.
func (p *pacer) refill(now time.Time) {
	burst := max(paceMinBurst, p.rate*paceBurst.Seconds())
	if p.at.IsZero() {
		p.budget = burst
	} else if d := now.Sub(p.at); d > 0 {
		p.budget = min(burst, p.budget+p.rate*d.Seconds())
	}
	p.at = now
}

// allow returns how many of n bytes ready for a packet may go at now: all
// of them while the budget is above zero (the budget may then fall below
// zero by up to n), none otherwise.
func (p *pacer) allow(now time.Time, n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 {
		return n
	}
	p.refill(now)
	if p.budget <= 0 {
		return 0
	}
	p.budget -= float64(n)
	return n
}

// paceRecheck is the longest the writer waits for the budget before it
// reads the rate again: after an outage or a loss the window is small and
// the round trip long, and a wait worked out at that rate could outlast
// the recovery by far.
const paceRecheck = 10 * time.Millisecond

// delay returns how long after now the budget is above zero again at the
// current rate, at most paceRecheck.
func (p *pacer) delay(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 {
		return 0
	}
	p.refill(now)
	if p.budget > 0 {
		return 0
	}
	return min(paceRecheck, time.Duration((-p.budget+1)/p.rate*float64(time.Second)))
}
