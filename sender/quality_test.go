package sender

import (
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

var testLadder = []media.Rung{
	{Size: media.Size{W: 160, H: 90}, Min: 30 * rate.Kbps, Max: 250 * rate.Kbps},
	{Size: media.Size{W: 320, H: 180}, Min: 150 * rate.Kbps, Max: 800 * rate.Kbps},
	{Size: media.Size{W: 640, H: 360}, Min: 400 * rate.Kbps, Max: 2500 * rate.Kbps},
	{Size: media.Size{W: 1280, H: 720}, Min: 2500 * rate.Kbps, Max: 20 * rate.Mbps},
}

const frame = time.Second / 30

// run feeds n observations 1/30 s apart, built by obs, and returns the last
// decision and the time after it.
func run(c *Controller, t time.Time, n int, obs func(i int) Observation) (Decision, time.Time) {
	var d Decision
	for i := range n {
		o := obs(i)
		o.Now = t
		d = c.Update(o)
		t = t.Add(frame)
	}
	return d, t
}

func TestControllerTracksDrainRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		drain    rate.Bitrate
		wantSize media.Size
	}{
		{"100 kb/s path", 100 * rate.Kbps, media.Size{W: 160, H: 90}},
		{"2 Mb/s path", 2 * rate.Mbps, media.Size{W: 640, H: 360}},
		{"20 Mb/s path", 20 * rate.Mbps, media.Size{W: 1280, H: 720}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder, 500*rate.Kbps)
			// Alternate: frames skipped when the target is above the
			// drain rate, application-limited samples when below.
			d, _ := run(c, time.Unix(0, 0), 30*30, func(int) Observation {
				o := Observation{DrainRate: tc.drain}
				if c.Target() > tc.drain {
					o.Skipped = 1
				} else {
					o.Idle = 10 * time.Millisecond
				}
				return o
			})
			if d.Rung.Size != tc.wantSize {
				t.Errorf("rung %v, want %v", d.Rung.Size, tc.wantSize)
			}
			lo, hi := tc.drain.Scale(0.8), tc.drain.Scale(1.25)
			if got := c.Target(); got < lo || got > hi {
				t.Errorf("target %v, want within [%v, %v] of drain %v", got, lo, hi, tc.drain)
			}
			if d.Bitrate < d.Rung.Min || d.Bitrate > d.Rung.Max {
				t.Errorf("bitrate %v outside rung %v..%v", d.Bitrate, d.Rung.Min, d.Rung.Max)
			}
		})
	}
}

func TestControllerSignals(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, tc := range []struct {
		name string
		obs  Observation
		// want compares the target after one update with the start.
		want func(before, after rate.Bitrate) bool
	}{
		{"skipped frames lower it", Observation{DrainRate: 1 * rate.Mbps, Skipped: 2},
			func(b, a rate.Bitrate) bool { return a < b }},
		{"an idle link raises it", Observation{DrainRate: 1 * rate.Mbps, Idle: 10 * time.Millisecond},
			func(b, a rate.Bitrate) bool { return a > b }},
		{"queueing in the network lowers it", Observation{DrainRate: 1 * rate.Mbps, RTT: 300 * time.Millisecond, MinRTT: 172 * time.Millisecond},
			func(b, a rate.Bitrate) bool { return a < b }},
		{"an idle link with some queueing holds it", Observation{DrainRate: 1 * rate.Mbps, Idle: 10 * time.Millisecond, RTT: 212 * time.Millisecond, MinRTT: 172 * time.Millisecond},
			func(b, a rate.Bitrate) bool { return a == b }},
		{"a link busy to the write holds it", Observation{DrainRate: 1 * rate.Mbps, Idle: -time.Millisecond},
			func(b, a rate.Bitrate) bool { return a == b }},
		{"discards in a keyframe's wake are ignored", Observation{DrainRate: 1 * rate.Mbps, Skipped: 2, Keyframe: true},
			func(b, a rate.Bitrate) bool { return a == b }},
		{"unknown drain keeps it", Observation{},
			func(b, a rate.Bitrate) bool { return a == b }},
		{"unknown drain with skips keeps it", Observation{Skipped: 1},
			func(b, a rate.Bitrate) bool { return a == b }},
		{"a huge sample rises at most maxRise", Observation{DrainRate: 1 * rate.Gbps},
			func(b, a rate.Bitrate) bool { return a <= b.Scale(maxRise)+1 && a > b }},
		{"a collapse falls at most to maxFall", Observation{DrainRate: 1 * rate.Kbps},
			func(b, a rate.Bitrate) bool { return a >= b.Scale(maxFall)-1 && a < b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder, 1*rate.Mbps)
			before := c.Target()
			tc.obs.Now = t0
			c.Update(tc.obs)
			if after := c.Target(); !tc.want(before, after) {
				t.Fatalf("target %v -> %v", before, after)
			}
		})
	}
}

func TestControllerRungHysteresis(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := NewController(testLadder, 400*rate.Kbps)
	if c.Rung().Size.W != 320 {
		t.Fatalf("start rung %v, want 320x180", c.Rung().Size)
	}
	// A path that carries 2 Mb/s: the target rises quickly, but the rung
	// moves up only after upHold.
	var upAt time.Time
	t1 := t0
	for i := range 200 {
		d := c.Update(Observation{Now: t1, DrainRate: 2 * rate.Mbps, Idle: 10 * time.Millisecond})
		if d.RungChanged {
			upAt = t1
			break
		}
		if i == 0 && d.RungChanged {
			t.Fatal("moved up on the first sample")
		}
		t1 = t1.Add(frame)
	}
	if upAt.IsZero() {
		t.Fatal("never moved up")
	}
	if got := upAt.Sub(t0); got < upHold {
		t.Fatalf("moved up after %v, want at least %v", got, upHold)
	}
	if c.Rung().Size.W != 640 {
		t.Fatalf("rung %v after moving up, want 640x360", c.Rung().Size)
	}
	// The path collapses: the rung moves down, but not within rungGap of
	// the last change.
	d := c.Update(Observation{Now: upAt.Add(rungGap / 2), DrainRate: 50 * rate.Kbps})
	if d.RungChanged {
		t.Fatal("changed rung within rungGap")
	}
	tn := upAt.Add(rungGap)
	for range 3 * int(rungGap/frame) {
		d = c.Update(Observation{Now: tn, DrainRate: 50 * rate.Kbps, Skipped: 1})
		tn = tn.Add(frame)
	}
	if c.Rung().Size.W != 160 {
		t.Fatalf("rung %v after collapse, want 160x90", c.Rung().Size)
	}
	if d.Bitrate < testLadder[0].Min {
		t.Fatalf("bitrate %v below the ladder's floor", d.Bitrate)
	}
}

func TestControllerMaxRung(t *testing.T) {
	c := NewController(testLadder[:3], 1*rate.Mbps) // max 640x360
	d, _ := run(c, time.Unix(0, 0), 30*20, func(int) Observation {
		return Observation{DrainRate: 1 * rate.Gbps, Idle: 10 * time.Millisecond}
	})
	if d.Rung.Size.W != 640 || d.Bitrate != testLadder[2].Max {
		t.Fatalf("on a fast path with max 640x360: %v at %v, want 640x360 at %v", d.Rung.Size, d.Bitrate, testLadder[2].Max)
	}
}

// TestControllerRecovers pushes the gain down with a burst of discarded
// frames (as a sudden drop in the path's rate would) and checks that an idle
// link brings the target back to the drain rate within seconds.
func TestControllerRecovers(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	t0 := time.Unix(0, 0)
	_, t1 := run(c, t0, 30, func(int) Observation { return Observation{DrainRate: 2 * rate.Mbps, Skipped: 3} })
	if got := c.Target(); got > (2 * rate.Mbps).Scale(minGain*1.01) {
		t.Fatalf("after discards: target %v, want about %v", got, (2 * rate.Mbps).Scale(minGain))
	}
	run(c, t1, 8*30, func(int) Observation { return Observation{DrainRate: 2 * rate.Mbps, Idle: 10 * time.Millisecond} })
	if got := c.Target(); got < (2 * rate.Mbps).Scale(0.95) {
		t.Fatalf("after 8 s of an idle link: target %v, want at least 95%% of 2 Mb/s", got)
	}
}

// TestControllerQueueingOncePerRTT checks that a persistent queueing signal
// lowers the gain once per round trip, not once per frame: the RTT reflects
// a change only a round trip later.
func TestControllerQueueingOncePerRTT(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	queued := func(int) Observation {
		return Observation{DrainRate: 2 * rate.Mbps, RTT: 400 * time.Millisecond, MinRTT: 172 * time.Millisecond}
	}
	// 12 frames at 30 fps span 367 ms: within one 400 ms round trip.
	run(c, time.Unix(0, 0), 12, queued)
	if got, want := c.Target(), (2 * rate.Mbps).Scale(queueFactor); got != want {
		t.Fatalf("after one round trip of queueing: target %v, want %v (one decrease)", got, want)
	}
}
