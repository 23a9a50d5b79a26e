package sender

import (
	"cmp"
	"testing"
	"time"

	"replenish/rate"
)

// TestDrainPlan follows a 30 ms queue at 500 kb/s drained by frames at 0.9
// of the link: 3.3 ms a frame, gone after nine frames. The plan holds from
// then until a lag later, and ends early if the signal reads more queue
// than the cut saw coming; frames at the link's rate never drain it, and
// the plan ends drainTime and the lag after the cut.
func TestDrainPlan(t *testing.T) {
	const capacity = 500 * rate.Kbps
	for _, tc := range []struct {
		name   string
		excess time.Duration // what the signal reads throughout
		frames int           // frames after the cut
		fill   float64       // of the link, a frame; 0 means 0.9
		want   planState
	}{
		{"draining", 20 * time.Millisecond, 8, 0, planDraining},
		{"drained", 20 * time.Millisecond, 10, 0, planDrained},
		{"signal lags", 35 * time.Millisecond, 12, 0, planDrained},
		{"lag over", 20 * time.Millisecond, 16, 0, planOff},
		{"more than the cut saw", 40 * time.Millisecond, 10, 0, planOff},
		{"sent at the capacity", 20 * time.Millisecond, 30, 1, planDraining},
		{"never drained", 20 * time.Millisecond, 34, 1, planOff}, // past drainTime and the lag
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p drainPlan
			p.start(time.Unix(1000, 0), 30*time.Millisecond, capacity)
			now := time.Unix(1000, 0)
			bytes := int(cmp.Or(tc.fill, 0.9) * float64(capacity) / 8 * frame.Seconds())
			for range tc.frames {
				now = now.Add(frame)
				p.add(bytes, frame, now)
			}
			if got := p.state(now, tc.excess, 100*time.Millisecond); got != tc.want {
				t.Errorf("%d frames after a cut on a 30 ms queue, excess %v: state %v, want %v", tc.frames, tc.excess, got, tc.want)
			}
		})
	}
	var p drainPlan
	p.start(time.Unix(1000, 0), 30*time.Millisecond, capacity)
	p.state(time.Unix(1000, 0), 50*time.Millisecond, time.Second)
	now := time.Unix(1001, 0)
	p.add(0, time.Second, now)
	if p.state(now, 0, time.Second) != planOff {
		t.Errorf("a plan the signal refuted holds again")
	}
}

// TestControllerDrainPlan cuts on a probe's overshoot at 2 Mb/s and then
// reads a queue that the smoothed RTT keeps showing (25 ms, above the
// band) after the frames sent below the capacity have drained it. The
// rate must return to the cruising rate within a second; not when the
// drain rate does not confirm the capacity (the path may have slowed),
// nor when the signal reads more than the cut saw coming.
func TestControllerDrainPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		drain  rate.Bitrate // the path carries 2 Mb/s
		excess time.Duration
		back   bool
	}{
		{"confirmed", 2 * rate.Mbps, 25 * time.Millisecond, true},
		{"path slowed", 3 * rate.Mbps, 25 * time.Millisecond, false},
		{"queue grew", 2 * rate.Mbps, 45 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder, 2*rate.Mbps)
			f := newFeed(c)
			obs := func(excess time.Duration) func() Observation {
				return func() Observation {
					c.rate = min(c.rate, 2*rate.Mbps) // the path carries no more
					o := clean(tc.drain)()
					o.AppLimited, o.RTT = false, o.RTT+excess
					return o
				}
			}
			f.run(10*time.Second, obs(0))
			o := obs(20 * time.Millisecond)()
			o.Now = f.now
			before := c.lastCut
			c.congested(o, 20*time.Millisecond, 0.05)
			if c.lastCut == before {
				t.Fatal("no cut")
			}
			cut := c.rate
			f.run(time.Second, obs(tc.excess))
			back := c.rate >= c.capacity.Scale(cruiseGain*0.98)
			if back != tc.back {
				t.Errorf("cut to %v (capacity %v), a second reading %v: rate %v, back at cruise %v, want %v",
					cut, c.capacity, tc.excess, c.rate, back, tc.back)
			}
		})
	}
}
