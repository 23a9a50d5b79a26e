package sender

import (
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// TestControllerProbeOverflow probes a 230 ms path whose buffer overflows
// before any queue shows in the round trip: the probe's only sign is a few
// packets lost. After it the probe may lead the drain rate by no more than
// overflowLead of queue over a feedback delay; the same probe without the
// losses goes on past that, and so does one whose losses the path's random
// loss explains.
func TestControllerProbeOverflow(t *testing.T) {
	const rtt = 230 * time.Millisecond
	drain := 4 * rate.Mbps
	probe := func(base float64, lost func(sent int64) int64) *Controller {
		c := NewController(testLadder, drain)
		f := newFeed(c)
		var sent int64
		obs := func() Observation {
			sent += 12 // packets a frame
			return Observation{DrainRate: drain, AppLimited: true, RTT: rtt, MinRTT: rtt, Sent: sent, Lost: lost(sent)}
		}
		f.run(5*time.Second, obs)
		// Cruising at the drain rate; now the probe.
		c.rate, c.capacity, c.ceiling = drain.Scale(cruiseGain), drain, drain
		c.phase, c.phaseAt, c.speed = probing, f.now, c.probeSpeed()
		c.loss.base = base
		f.run(4*time.Second, obs)
		return c
	}
	var probeStart int64
	overflowed := probe(0, func(sent int64) int64 {
		if probeStart == 0 && sent > 5*30*12 {
			probeStart = sent
		}
		if probeStart > 0 && sent > probeStart+10*12 {
			return 5 // five packets, lost a third of a second into the probe
		}
		return 0
	})
	bound := drain.Scale(1 + overflowLead.Seconds()/overflowed.fb.Seconds())
	if !overflowed.State().Overflow {
		t.Fatal("five packets lost while probing: not taken for an overflow")
	}
	if got := overflowed.rate; got > bound {
		t.Errorf("after a probe's overflow: rate %v, want at most %v (the drain rate %v and %v of queue over a feedback delay of %v)",
			got, bound, drain, overflowLead, overflowed.fb)
	}
	clean := probe(0, func(int64) int64 { return 0 })
	if got := clean.rate; got <= bound {
		t.Errorf("probe without losses: rate %v, want past %v (else the test shows nothing)", got, bound)
	}
	// Random loss the loss meter took for the path's (see lossMeter): a
	// packet in a hundred.
	random := probe(0.01, func(sent int64) int64 { return sent / 100 })
	if random.State().Overflow {
		t.Errorf("the path's random loss while probing taken for an overflow")
	}
	if got := random.rate; got <= bound {
		t.Errorf("probe with the path's random loss: rate %v, want past %v", got, bound)
	}
}

// TestWatchOverflow follows a probe and the cut that ends it, with losses
// declared at different times: during the probe, in the feedback delays
// after a cut that kept the capacity (a probe's overshoot, also where the
// probe had raised the capacity on its way), after a cut that found a
// slower path, after the watch ended; and at the path's
// random loss rate (the loss meter's base, or seen while cruising), and
// too few.
func TestWatchOverflow(t *testing.T) {
	const fb = 300 * time.Millisecond
	type step struct {
		at       time.Duration // since the probe began
		phase    phase
		capacity float64 // Mb/s
		lost     int64   // declared lost by then
	}
	// 4 Mb/s of 1400-byte packets, from 10 s before the probe.
	packets := func(at time.Duration) int64 { return int64((at + 10*time.Second).Seconds() * 4e6 / 8 / 1400) }
	probe := []step{{0, probing, 4, 0}, {200 * time.Millisecond, probing, 4.2, 0}, {400 * time.Millisecond, probing, 4.3, 0}}
	probeRaised := []step{{0, probing, 4, 0}, {200 * time.Millisecond, probing, 4.6, 0}, {400 * time.Millisecond, probing, 5.0, 0}}
	cut := func(capacity float64, lost int64, after ...time.Duration) []step {
		s := []step{{500 * time.Millisecond, recovering, capacity, 0}}
		for _, a := range after {
			s = append(s, step{500*time.Millisecond + a, recovering, capacity, lost})
		}
		return s
	}
	// A cruise of 3 s and a probe, losing a share of every packet.
	randomLoss := func(share float64) []step {
		var s []step
		for at := -3 * time.Second; at <= time.Second; at += 100 * time.Millisecond {
			ph := cruising
			if at >= 0 {
				ph = probing
			}
			s = append(s, step{at, ph, 4, int64(share * float64(packets(at)-packets(-3*time.Second)))})
		}
		return s
	}
	tests := []struct {
		name  string
		steps []step
		base  float64
		want  bool
	}{
		{"lost while probing", append(probe[:2:2], step{400 * time.Millisecond, probing, 4.3, 6}), 0, true},
		{"lost after a cut that kept the capacity", append(probe, cut(4.1, 6, fb)...), 0, true},
		{"lost after a cut that found a slower path", append(probe, cut(2.2, 6, fb)...), 0, false},
		// A halving during a probe: its first cut took the queue for a
		// burst and kept the capacity, the next found the slower path.
		{"lost after a cut that kept the capacity, then a slower path", append(probe, append(cut(4.1, 6, fb),
			step{500*time.Millisecond + 3*fb/2, recovering, 2.2, 6})...), 0, false},
		// An earlier probe's overflow stands when a later probe's cut
		// finds a slower path.
		{"an earlier probe's overflow, then a slower path", append(append(probe[:2:2], step{400 * time.Millisecond, probing, 4.3, 6}),
			step{500 * time.Millisecond, recovering, 4.1, 6}, step{500*time.Millisecond + overflowTail*fb + 50*time.Millisecond, recovering, 4.1, 6},
			step{1500 * time.Millisecond, cruising, 4.1, 6}, step{2 * time.Second, probing, 4.1, 6}, step{2500 * time.Millisecond, recovering, 2.2, 6}), 0, true},
		// The probe's own rate, sent without a queue, raised the
		// capacity as it went; the cut takes it back to about where the
		// probe began, not to a slower path.
		{"lost after a cut below the capacity the probe raised", append(probeRaised, cut(4.1, 6, fb)...), 0, true},
		{"lost long after the cut", append(probe, cut(4.1, 6, overflowTail*fb+50*time.Millisecond)...), 0, false},
		{"the path's random loss", append(probe, cut(4.1, 6, fb)...), 0.02, false},
		{"three lost", append(probe, cut(4.1, 3, fb)...), 0, false},
		{"the path's random loss, seen while cruising", randomLoss(0.02), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewController(testLadder, 4*rate.Mbps)
			c.fb, c.loss.base = fb, tt.base
			start := time.Unix(1000, 0)
			for _, s := range tt.steps {
				c.phase, c.capacity = s.phase, rate.Bitrate(s.capacity*float64(rate.Mbps))
				now := start.Add(s.at)
				sent := packets(s.at)
				c.watchOverflow(Observation{Now: now, Sent: sent, Lost: s.lost})
			}
			if got := c.overflowing(start.Add(time.Second)); got != tt.want {
				t.Errorf("overflow taken: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestControllerHeldProbe probes a 200 ms path whose drain rate does not
// rise: the transport drains no faster than before, and what the probe
// adds waits at the sender. Held at the overflow cap, the probe ends within
// overflowHold feedback delays, and the stream cruises under the drain
// rate. Where the drain rate follows the rate sent (the path carries
// more), comes from application-limited windows (nothing waits at the
// sender: the drain rate is the stream's own, and follows it late), or
// without an overflow (no cap), the probe goes on.
func TestControllerHeldProbe(t *testing.T) {
	const rtt = 200 * time.Millisecond
	drain := 10 * rate.Mbps
	type path struct {
		overflow, follow, appLimited bool
	}
	probe := func(p path) (ended time.Duration, at rate.Bitrate, c *Controller) {
		c = NewController(testLadder, drain)
		f := newFeed(c)
		d := drain
		obs := func() Observation {
			if p.follow {
				d = max(d, c.sentRate(f.now.Add(-sentWindow), f.now))
			}
			return Observation{DrainRate: d, AppLimited: p.appLimited, RTT: rtt, MinRTT: rtt}
		}
		f.run(5*time.Second, obs)
		c.rate, c.capacity, c.ceiling = drain.Scale(cruiseGain), drain, drain
		c.phase, c.phaseAt, c.speed = probing, f.now, c.probeSpeed()
		if p.overflow {
			c.overflow.at = f.now // a probe lost packets before this one
		}
		start := f.now
		for f.now.Sub(start) < 3*time.Second {
			f.frame(obs())
			if c.phase != probing {
				return f.now.Sub(start), c.rate, c
			}
		}
		return -1, c.rate, c
	}
	for _, p := range []path{{overflow: true}} {
		ended, at, c := probe(p)
		if ended < 0 {
			t.Errorf("%+v: a probe with the drain rate flat still probing after 3 s at %v (drain rate %v)", p, at, drain)
			continue
		}
		// The probe reaches the hold within a second at its speed here.
		if most := time.Second + overflowHold*c.fb; ended > most {
			t.Errorf("%+v: held probe ended after %v, want within %v", p, ended, most)
		}
		if at > drain.Scale(cruiseGain) || c.capacity > drain || c.phase != cruising {
			t.Errorf("%+v: after the held probe: %v at %v, capacity %v; want cruising at most %v", p, c.phase, at, c.capacity, drain.Scale(cruiseGain))
		}
	}
	for _, p := range []path{{overflow: true, appLimited: true}, {overflow: true, follow: true}, {}, {appLimited: true}} {
		// Still probing after 3 s (held at the cap), or past it.
		if ended, at, _ := probe(p); ended >= 0 && at <= drain.Scale(1.1) {
			t.Errorf("%+v: probe ended after %v at %v, want it probing still or past %v", p, ended, at, drain.Scale(1.1))
		}
	}
}

// TestEvidenceBackloggedDrain: a rate written without a queue is evidence
// of the capacity, except, once a probe overflowed the buffer, beyond a
// drain rate measured with the transport backlogged (not
// application-limited): that drain rate is the path's, and the rest waits
// at the sender.
func TestEvidenceBackloggedDrain(t *testing.T) {
	drain := 10 * rate.Mbps
	for _, tc := range []struct {
		appLimited, overflow bool
	}{{false, true}, {true, true}, {false, false}} {
		c := NewController(testLadder, drain)
		c.capacity, c.low, c.high = drain, qLow, qHigh
		now := time.Unix(1000, 0)
		if tc.overflow {
			c.overflow.at = now
		}
		// 11 Mb/s written over the last second, 30 frames a second.
		for at := now.Add(-time.Second); at.Before(now); at = at.Add(time.Second / 30) {
			c.sent = push(c.sent, written{at, at.Add(time.Second / 30), 11e6 / 8 / 30}, at.Add(-sentKeep))
		}
		c.evidence(Observation{Now: now, DrainRate: drain, AppLimited: tc.appLimited}, 0)
		backlogged := tc.overflow && !tc.appLimited
		if got := c.capacity; (!backlogged && got < drain.Scale(1.09)) || (backlogged && got != drain) {
			t.Errorf("%+v: capacity %v, want %v if backlogged after an overflow, else about 11 Mb/s", tc, got, drain)
		}
	}
}

// TestOverflowFasterPath: a probe's overflow is remembered until the
// stream sends past the ceiling without a queue (the path became faster:
// a doubling), not when it sends up to it.
func TestOverflowFasterPath(t *testing.T) {
	ceiling := 4 * rate.Mbps
	for _, tc := range []struct {
		sent      rate.Bitrate
		excess    time.Duration
		forgotten bool
	}{
		{4400 * rate.Kbps, 0, true},
		{4100 * rate.Kbps, 0, false},         // within probePast of the ceiling
		{4400 * rate.Kbps, 2 * qHigh, false}, // a queue built: not clean
	} {
		c := NewController(testLadder, ceiling)
		c.capacity, c.ceiling, c.low, c.high = ceiling, ceiling, qLow, qHigh
		now := time.Unix(1000, 0)
		c.overflow.at = now.Add(-5 * time.Second)
		for at := now.Add(-time.Second); at.Before(now); at = at.Add(time.Second / 30) {
			c.sent = push(c.sent, written{at, at.Add(time.Second / 30), float64(tc.sent) / 8 / 30}, at.Add(-sentKeep))
		}
		c.evidence(Observation{Now: now, DrainRate: tc.sent, AppLimited: true}, tc.excess)
		if got := !c.overflowing(now); got != tc.forgotten {
			t.Errorf("sent %v, excess %v: overflow forgotten %v, want %v", tc.sent, tc.excess, got, tc.forgotten)
		}
	}
}

// TestOverflowCapWindowBound: with only the transport's window bound for
// a drain rate (loss recovery), the cap leads the capacity instead.
func TestOverflowCapWindowBound(t *testing.T) {
	c := NewController(testLadder, 10*rate.Mbps)
	now := time.Unix(1000, 0)
	c.fb, c.capacity, c.rate = 200*time.Millisecond, 10*rate.Mbps, 7*rate.Mbps
	c.overflow.at = now
	want := 20 * rate.Mbps
	bound := c.capacity.Scale(1 + overflowLead.Seconds()/c.fb.Seconds())
	if got := c.overflowCap(Observation{Now: now, DrainRate: 6 * rate.Mbps, WindowBound: true}, want); got > bound {
		t.Errorf("window bound only: capped at %v, want at most %v", got, bound)
	}
	if got := c.overflowCap(Observation{Now: now, DrainRate: 8 * rate.Mbps}, want); got > (8 * rate.Mbps).Scale(1+overflowLead.Seconds()/c.fb.Seconds()) {
		t.Errorf("measured drain rate: capped at %v, want the drain rate's lead", got)
	}
}

// TestControllerSendLimited: the drain rate stays flat, the transport
// backlogged, and what the stream writes stays at the drain rate whatever
// the target (BBR paces at its estimate; the invitations the target's
// frames need come late, and frames are skipped), with no queue in the
// round trip. The start and a probe both end
// within a few feedback delays instead of holding the target above the
// path for good. Where the writes follow the target
// (TestControllerHeldProbe's paths without overflow), a probe goes on.
func TestControllerSendLimited(t *testing.T) {
	const rtt = 10 * time.Millisecond
	drain := 4 * rate.Mbps
	for _, probe := range []bool{false, true} {
		c := NewController(testLadder, drain/2)
		f := newFeed(c)
		obs := func() Observation {
			sent := min(f.d.Bitrate, drain).Scale(1.03) // the frame's share, headers on
			w := sent.Bytes(frame)
			return Observation{DrainRate: drain, RTT: rtt, MinRTT: rtt, Encoded: w * 100 / 103, Written: w}
		}
		if probe {
			f.run(5*time.Second, obs)
			c.rate, c.capacity, c.ceiling = drain.Scale(cruiseGain), drain, drain
			c.phase, c.phaseAt, c.speed = probing, f.now, c.probeSpeed()
		}
		from := c.phase
		start := f.now
		var ended time.Duration = -1
		var over time.Duration // time with the target past heldLead of the drain rate
		for f.now.Sub(start) < 5*time.Second {
			f.frame(obs())
			if c.rate > drain.Scale(heldLead) {
				over += frame
			}
			if ended < 0 && c.phase == cruising {
				ended = f.now.Sub(start)
			}
		}
		if ended < 0 {
			t.Errorf("from %v: still %v after 5 s at %v (drain rate %v)", from, c.phase, c.rate, drain)
		}
		if over > time.Second {
			t.Errorf("from %v: the target stood past %v of the drain rate for %v of 5 s", from, heldLead, over)
		}
	}
}

// TestSendLimited: a rate past the drain rate, with what was written not
// past it, is one the stream cannot send, unless the encoder is what holds
// the stream: its rung's Max bounds what the rate asks of it, and for a
// keyframe's payback (keyUntil) the new rung's encoder writes under its
// target. The exemptions were TestControllerRungProbeReplay's before it
// replayed the run's frames at their own rung.
func TestSendLimited(t *testing.T) {
	const drain = 800 * rate.Kbps
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		rung    int // of media.Ladder
		rate    rate.Bitrate
		written rate.Bitrate
		keyed   bool // a keyframe is being paid back
		want    bool
	}{
		{"the transport holds the rate", 2, 1200 * rate.Kbps, 780 * rate.Kbps, false, true},
		{"what was written keeps up", 2, 1200 * rate.Kbps, 900 * rate.Kbps, false, false},
		{"the rate within the drain's noise", 2, 860 * rate.Kbps, 780 * rate.Kbps, false, false},
		{"at the rung's Max", 1, 1200 * rate.Kbps, 780 * rate.Kbps, false, false},
		{"a keyframe paid back", 2, 1200 * rate.Kbps, 780 * rate.Kbps, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(media.Ladder, drain)
			c.rung, c.rate, c.overhead = tc.rung, tc.rate, 1.03
			for at := now.Add(-sentKeep); at.Before(now); at = at.Add(frame) {
				c.sent = push(c.sent, written{at, at.Add(frame), float64(tc.written) * frame.Seconds() / 8}, now.Add(-sentKeep))
			}
			if tc.keyed {
				c.keyUntil = now.Add(100 * time.Millisecond)
			}
			if got := c.sendLimited(Observation{Now: now}, drain); got != tc.want {
				t.Errorf("sendLimited = %v, want %v (rate %v, written %v, drain %v)", got, tc.want, tc.rate, tc.written, drain)
			}
		})
	}
}
