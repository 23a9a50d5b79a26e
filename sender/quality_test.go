package sender

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

var testLadder = []media.Rung{
	{Size: media.Size{W: 160, H: 90}, FPS: 15, Min: 40 * rate.Kbps, Max: 250 * rate.Kbps},
	{Size: media.Size{W: 320, H: 180}, Min: 150 * rate.Kbps, Max: 800 * rate.Kbps},
	{Size: media.Size{W: 640, H: 360}, Min: 400 * rate.Kbps, Max: 2500 * rate.Kbps},
	{Size: media.Size{W: 1280, H: 720}, Min: 2500 * rate.Kbps, Max: 20 * rate.Mbps},
}

const frame = time.Second / 30

// feed drives a controller one frame at a time as the sender does: each
// observation reports the frame the previous decision encoded.
type feed struct {
	c     *Controller
	now   time.Time
	d     Decision
	fill  float64       // the encoder's output over its target; 0 means 1
	every time.Duration // the frame interval; 0 means frame
}

func newFeed(c *Controller) *feed {
	return &feed{c: c, now: time.Unix(1000, 0), d: Decision{Bitrate: c.Target(), Rung: c.Rung()}}
}

// frame observes o one frame interval after the last, with the previous
// frame's sizes filled in unless o sets them.
func (f *feed) frame(o Observation) Decision {
	every := cmp.Or(f.every, frame)
	f.now = f.now.Add(every)
	fill := cmp.Or(f.fill, 1)
	if o.Encoded == 0 {
		o.Encoded = int(float64(f.d.Bitrate) / 8 * every.Seconds() * fill)
	}
	if o.Written == 0 {
		o.Written = o.Encoded * 103 / 100
	}
	o.Now = f.now
	f.d = f.c.Update(o)
	return f.d
}

// run observes obs() for every frame over d.
func (f *feed) run(d time.Duration, obs func() Observation) Decision {
	for end := f.now.Add(d); f.now.Before(end); {
		f.frame(obs())
	}
	return f.d
}

// clean is a path without queueing: the round trip at its minimum.
func clean(drain rate.Bitrate) func() Observation {
	return func() Observation {
		return Observation{DrainRate: drain, AppLimited: true, RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond}
	}
}

func TestControllerWithoutDrainRateKeepsTarget(t *testing.T) {
	c := NewController(testLadder, 1*rate.Mbps)
	f := newFeed(c)
	before := c.rate
	for _, o := range []Observation{{}, {Skipped: 3}, {RTT: 300 * time.Millisecond, MinRTT: 50 * time.Millisecond}} {
		f.run(2*time.Second, func() Observation { return o })
		if got := c.rate; got != before {
			t.Fatalf("after %+v without a drain rate: rate %v, want %v unchanged", o, got, before)
		}
	}
}

// TestControllerState checks what a frame's record keeps of the
// controller: nothing before it acts; then its phase, rate and capacity;
// and a cut flagged on the update that made it, with the queue it read.
func TestControllerState(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(time.Second, func() Observation { return Observation{} }) // no drain rate: it does not act
	if st := c.State(); st != (ControlState{}) {
		t.Fatalf("state %+v before the controller acted, want zero", st)
	}
	f.run(5*time.Second, clean(2*rate.Mbps))
	st := c.State()
	if st.Phase == "" || st.Rate != c.rate || st.Capacity != c.capacity || st.Cut {
		t.Fatalf("state %+v on a clean path, want its phase, rate %v and capacity %v, no cut", st, c.rate, c.capacity)
	}
	start := f.now
	var cut ControlState
	prev := st
	f.run(time.Second, func() Observation {
		o := clean(2 * rate.Mbps)()
		o.RTT += f.now.Sub(start) / 2 // a queue growing half a second per second
		if st := c.State(); st.Cut && !cut.Cut {
			if st.Rate >= prev.Rate {
				t.Errorf("cut flagged at rate %v, from %v before it", st.Rate, prev.Rate)
			}
			cut = st
		} else {
			prev = st
		}
		return o
	})
	if !cut.Cut || cut.Phase != "recovering" || cut.Excess < qHigh {
		t.Fatalf("first cut's state %+v, want flagged, recovering, on an excess over %v", cut, qHigh)
	}
	if st := c.State(); st.Cut && c.lastCut != c.prev {
		t.Errorf("state %+v flags a cut the last update did not make", st)
	}
}

// TestControllerFindsBandwidth checks that without queueing the target
// grows past its own sending rate (the drain rate of an
// application-limited flow measures only that), and that it does not run
// ahead of an encoder that does not fill it.
func TestControllerFindsBandwidth(t *testing.T) {
	c := NewController(testLadder, 500*rate.Kbps)
	f := newFeed(c)
	f.run(2*time.Second, clean(500*rate.Kbps))
	if got := c.Target(); got < 1*rate.Mbps {
		t.Fatalf("after 2 s without queueing from 500 kb/s: target %v, want at least doubled", got)
	}
	f.run(10*time.Second, clean(500*rate.Kbps))
	if got := c.Rung().Size.W; got != 1280 {
		t.Fatalf("after 12 s without queueing: rung %v, want the top", c.Rung().Size)
	}

	c = NewController(testLadder, 500*rate.Kbps)
	f = newFeed(c)
	sent := 300 * rate.Kbps
	stuck := func() Observation {
		o := clean(sent)()
		o.Encoded = int(float64(sent) / 8 * frame.Seconds())
		return o
	}
	f.run(sentWindow, stuck) // until the sent rate is known
	before := c.rate
	f.run(5*time.Second, stuck)
	if got := c.rate; got > max(before, sent.Scale(sentLead*1.05)) {
		t.Fatalf("encoder stuck at %v: rate %v -> %v, want no more than %v above what it sends", sent, before, got, sentLead)
	}
}

// TestControllerIgnoresWindowBound starts on a 2 Mb/s path with a 10 ms
// round trip whose transport reports, before it has measured anything, its
// window bound: ten segments over the handshake's round trip, 11 Mb/s. The
// round trip carries each frame's own serialization at the bottleneck and
// any standing queue. Taken for the capacity, the bound caps the self term
// at a sixth of the frames' serialization, which then reads as 6 to 12 ms
// of excess: the controller would neither grow nor cut. It must grow to
// the path instead.
func TestControllerIgnoresWindowBound(t *testing.T) {
	const (
		link  = 2 * rate.Mbps
		base  = 10 * time.Millisecond
		bound = 11 * rate.Mbps
	)
	c := NewController(testLadder, 500*rate.Kbps)
	f := newFeed(c)
	var queue time.Duration
	start := f.now
	f.run(3*time.Second, func() Observation {
		sent := rate.Bitrate(float64(f.d.Bitrate) * 1.03)
		queue = max(0, queue+time.Duration(float64(frame)*(float64(sent)/float64(link)-1)))
		ser := link.Duration(int(float64(sent) / 8 * frame.Seconds()))
		o := Observation{DrainRate: sent, AppLimited: true, RTT: base + queue + ser, MinRTT: base}
		if f.now.Sub(start) < 100*time.Millisecond {
			o.DrainRate, o.WindowBound = bound, true // no window measured yet
		}
		return o
	})
	if got := c.Target(); got < link/2 {
		t.Errorf("after 3 s on a %v path that reported its %v window bound at first: target %v, want at least half the path", link, bound, got)
	}
}

// TestControllerCutsOnQueueing builds a queue (the round trip rising) and
// checks the cut: below the rate that built it, within a feedback delay of
// the queue showing, and once per feedback delay.
func TestControllerCutsOnQueueing(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(10*time.Second, func() Observation { // cruise at 2 Mb/s
		o := clean(2 * rate.Mbps)()
		o.AppLimited = false
		return o
	})
	c.rate = min(c.rate, 2*rate.Mbps) // hold the rate where the path was measured
	sent := c.rate
	// The queue grows half a second per second from here.
	start := f.now
	var cuts []time.Time
	last := c.Target()
	f.run(1500*time.Millisecond, func() Observation {
		o := clean(2 * rate.Mbps)()
		o.AppLimited = false // the drain rate is the path's, as above
		o.RTT += f.now.Sub(start) / 2
		if tg := c.Target(); tg < last {
			cuts = append(cuts, f.now)
		}
		last = c.Target()
		return o
	})
	if len(cuts) == 0 {
		t.Fatal("no cut while the queue grew for 1.5 s")
	}
	// The excess reaches qHigh after 2·qHigh; the smoothed RTT shows it
	// within a round trip and the slope window.
	if d := cuts[0].Sub(start); d > 2*qHigh+50*time.Millisecond+slopeWindow {
		t.Errorf("first cut %v after the queue began, want within %v", d, 2*qHigh+50*time.Millisecond+slopeWindow)
	}
	if got := c.rate; got > sent.Scale(cutFactor) {
		t.Errorf("after the cut: rate %v, want below %v of the %v sent", got, cutFactor, sent)
	}
	for i := 1; i < len(cuts); i++ {
		if d := cuts[i].Sub(cuts[i-1]); d < 50*time.Millisecond+100*time.Millisecond {
			t.Errorf("cuts %v apart, want at least a feedback delay and 100 ms", d)
		}
	}
}

// TestControllerDrainingQueueNoSecondCut: a feedback delay after a cut, the
// queue stands above the excess at that cut (the cut's queue grew on
// while the cut was on its way) but falls. If it falls fast enough to be
// gone within drainTime, the cut is working and a second one would only
// leave the link idle; if it falls slowly or stands, the cut was not
// deep enough.
func TestControllerDrainingQueueNoSecondCut(t *testing.T) {
	for _, tc := range []struct {
		slope float64 // the smoothed RTT's trend, s/s
		cut   bool
	}{
		{-0.05, false}, // 2·0.05 s/s drains 40 ms in 0.4 s
		{-0.01, true},  // 2·0.01 s/s would take 2 s
		{0, true},
	} {
		c := NewController(testLadder, 2*rate.Mbps)
		now := time.Unix(1000, 0)
		c.fb = 200 * time.Millisecond
		c.lastCut, c.lastCutQ = now.Add(-c.fb-200*time.Millisecond), 20*time.Millisecond
		before := c.lastCut
		c.congested(Observation{Now: now, DrainRate: 2 * rate.Mbps, RTT: 90 * time.Millisecond, MinRTT: 50 * time.Millisecond},
			40*time.Millisecond, tc.slope)
		if cut := c.lastCut != before; cut != tc.cut {
			t.Errorf("slope %v, a 40 ms queue above the last cut's 20 ms: cut %v, want %v", tc.slope, cut, tc.cut)
		}
	}
}

// TestControllerFaster: a path that grew reads as an excess well below
// zero (see faster), from the round trip alone where the frames' waits
// are not read; it counts once it has held for half a feedback delay, not
// while the waits show a queue, and not while recovering from a cut.
func TestControllerFaster(t *testing.T) {
	for _, tc := range []struct {
		name           string
		phase          phase
		excess, own    time.Duration
		waits          bool // the frames' waits were read
		faster, before bool // after half a feedback delay, and before it
	}{
		{"a doubling's fall", cruising, -30 * time.Millisecond, -30 * time.Millisecond, true, true, false},
		{"hidden under the waits' floor", probing, 0, -30 * time.Millisecond, false, true, false},
		{"the waits read, none below zero", probing, 0, -30 * time.Millisecond, true, false, false},
		{"the waits show a queue", cruising, 8 * time.Millisecond, -30 * time.Millisecond, true, false, false},
		{"within the band", cruising, -10 * time.Millisecond, -10 * time.Millisecond, true, false, false},
		{"recovering", recovering, -30 * time.Millisecond, -30 * time.Millisecond, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder, 200*rate.Kbps)
			c.capacity, c.frameAvg = 200*rate.Kbps, 1500 // 60 ms a frame: the threshold is 21 ms
			c.fb, c.low, c.high = 600*time.Millisecond, qLow, qHigh
			c.phase, c.excessNow = tc.phase, tc.excess
			var got []bool
			for _, dt := range []time.Duration{0, c.fb / 4, c.fb / 2} {
				now := time.Unix(1000, 0).Add(dt)
				c.watchFaster(now, tc.own, tc.waits)
				got = append(got, c.faster(now))
			}
			if got[0] || got[1] != tc.before || got[2] != tc.faster {
				t.Errorf("faster at 0, a quarter and half a feedback delay: %v, want false, %v, %v", got, tc.before, tc.faster)
			}
		})
	}
}

// TestControllerOvershootCut: the first cut on a queue that grows at a
// rate the drain rate confirms (a probe's overshoot) takes the rate to
// overshootCut of the capacity, less what drains the queue; a cut the
// drain rate does not confirm (it remembers a faster path), or the second
// of a series, keeps cutFactor's margin.
func TestControllerOvershootCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		drain  rate.Bitrate // the path carries 2 Mb/s
		second bool
		factor float64
	}{
		{"probe's overshoot", 2 * rate.Mbps, false, overshootCut},
		{"path slowed", 3 * rate.Mbps, false, cutFactor},
		{"second cut", 2 * rate.Mbps, true, cutFactor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder, 2*rate.Mbps)
			f := newFeed(c)
			f.run(10*time.Second, func() Observation {
				c.rate = min(c.rate, 2*rate.Mbps) // the path carries no more
				o := clean(tc.drain)()
				o.AppLimited = false
				return o
			})
			if tc.second {
				c.cuts, c.lastCut, c.lastCutQ = 1, f.now.Add(-time.Second), 10*time.Millisecond
			}
			const excess, slope = 20 * time.Millisecond, 0.05
			o := clean(tc.drain)()
			o.Now, o.AppLimited, o.RTT = f.now, false, o.RTT+excess
			before := c.rate
			c.congested(o, excess, slope)
			queue := excess.Seconds() + lagFactor*slope*c.fb.Seconds()
			want := min(before, c.capacity.Scale(tc.factor-queue))
			if c.rate < want.Scale(0.99) || c.rate > want.Scale(1.01) {
				t.Errorf("cut to %v from %v, capacity %v: want %v (%.2f of it, less the %.0f ms queue)",
					c.rate, before, c.capacity, want, tc.factor, queue*1e3)
			}
		})
	}
}

// TestControllerProbeLoadConfirms cuts on a probe's overshoot at 100 kb/s
// and 15 fps, where the feedback delay is over half a second (the
// smoothed RTT follows eight ACKs, eight frames): the rate sent a
// feedback delay ago was the cruising rate, under the drain rate, and
// over one plus the growth it would put the path under three quarters of
// the drain rate, as if it had slowed.
// The probe's load since then built the queue; with it the growth agrees
// with the drain rate, and the capacity stays there.
func TestControllerProbeLoadConfirms(t *testing.T) {
	const drain = 95 * rate.Kbps
	c := NewController(testLadder[:1], 80*rate.Kbps)
	f := newFeed(c)
	f.every = time.Second / 15
	hold := func(r rate.Bitrate) func() Observation {
		return func() Observation {
			c.rate = r
			return clean(drain)()
		}
	}
	f.run(10*time.Second, hold(80*rate.Kbps))
	f.run(600*time.Millisecond, hold(110*rate.Kbps))
	const excess, slope = 20 * time.Millisecond, 0.25
	o := clean(drain)()
	o.Now, o.RTT = f.now, o.RTT+excess
	c.congested(o, excess, slope)
	if c.capacity < drain.Scale(0.95) {
		t.Fatalf("a probe's overshoot set the capacity to %v; the drain rate is %v", c.capacity, drain)
	}
}

// TestControllerBandFollowsFrameNoise holds a queue of 14 ms, above qHigh,
// on the lowest rung at 100 kb/s, where a frame is a frame interval
// (67 ms) of the link. With frames of even size it is congestion. With
// frames whose size varies by 16% (libvpx's vary by 11 to 18% there),
// one frame larger than the last leaves that much: the band must rise
// with the noise (about 2·0.16·65 ms, 21 ms) and the rate must stay.
// (At 13% the band's top, about 17 ms, is within its own estimate's
// spread of the 14 ms queue, and a seed decides.)
func TestControllerBandFollowsFrameNoise(t *testing.T) {
	const link = 100 * rate.Kbps
	for _, tc := range []struct {
		name string
		sd   float64 // of a frame's log size
		cut  bool
	}{
		{"even frames", 0.01, true},
		{"noisy frames", 0.16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder[:1], link)
			f := newFeed(c)
			f.every = time.Second / 15
			rng := rand.New(rand.NewPCG(1, 2))
			obs := func(queue func() time.Duration) func() Observation {
				return func() Observation {
					c.rate = min(c.rate, link) // the path carries no more
					o := clean(link)()
					o.Encoded = int(float64(f.d.Bitrate) / 8 * f.every.Seconds() * math.Exp(tc.sd*rng.NormFloat64()))
					o.RTT += queue()
					return o
				}
			}
			f.run(10*time.Second, obs(func() time.Duration { return 0 }))
			ser := c.capacity.Duration(int(c.frameAvg))
			want := max(qHigh, time.Duration(noiseK*tc.sd*float64(ser)))
			if c.high < want*3/4 || c.high > want*5/4 {
				t.Errorf("band's top %v, want about %v (frames of %v at the capacity, sd %.2f)", c.high, want, ser, tc.sd)
			}
			// The queue rises to 14 ms over 200 ms and stays, for less
			// than the self term's percentile takes to follow.
			start, cutBefore := f.now, c.lastCut
			f.run(700*time.Millisecond, obs(func() time.Duration {
				return min(f.now.Sub(start)*14/200, 14*time.Millisecond)
			}))
			if cut := c.lastCut != cutBefore; cut != tc.cut {
				t.Errorf("cut %v with a 14 ms queue and band %v to %v, want %v", cut, c.low, c.high, tc.cut)
			}
		})
	}
}

// TestControllerShiftsBase moves the round trip up for good (a route
// change): the cuts do not move it, so the controller must take it as the
// new base and climb back rather than starve the stream. The same standing
// excess on a path that slowed (a path-limited window delivering half of
// what was sent, and the buffer overflowing: see slowed) is the stream's
// own queue, and the base stays.
func TestControllerShiftsBase(t *testing.T) {
	for _, tc := range []struct {
		name      string
		newest    float64 // the newest path-limited window's rate over the rate before, 0 if none
		lostShare float64 // of the packets sent since the round trip rose
		wantShift bool
	}{
		{"a longer route", 0, 0, true},
		{"a longer route, the window sized for the shorter one", 0.5, 0, true},
		{"a longer route, beside another flow's losses", 0.95, 0.1, true},
		{"a slower path that overflowed", 0.5, 0.1, false},
	} {
		c := NewController(testLadder, 2*rate.Mbps)
		f := newFeed(c)
		f.run(10*time.Second, clean(2*rate.Mbps))
		before := c.Target()
		var sent, lost float64
		f.run(15*time.Second, func() Observation {
			o := clean(2 * rate.Mbps)()
			o.RTT = 100 * time.Millisecond // MinRTT stays 50 ms: the kernel's minimum remembers
			sent += 10
			lost += 10 * tc.lostShare
			o.Sent, o.Lost = 1000+int64(sent), int64(lost)
			if tc.newest > 0 {
				o.Newest, o.NewestAt = before.Scale(tc.newest), f.now
			}
			return o
		})
		if shifted := c.shift >= 40*time.Millisecond; shifted != tc.wantShift {
			t.Errorf("%s: base shift %v after the round trip rose by 50 ms, moved %v, want %v", tc.name, c.shift, shifted, tc.wantShift)
		}
		if got := c.Target(); tc.wantShift && got < before.Scale(0.9) {
			t.Errorf("%s: 15 s after the round trip rose for good: target %v, want back near %v", tc.name, got, before)
		}
	}
}

// TestControllerTransportLimited skips frames without any queueing in the
// network (BBR pacing at its own estimate): the rate falls below the drain
// rate.
func TestControllerTransportLimited(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(5*time.Second, clean(2*rate.Mbps))
	f.run(2*time.Second, func() Observation {
		o := clean(1 * rate.Mbps)()
		o.Skipped, o.Late = 1, 1
		return o
	})
	if got := c.rate; got > (1 * rate.Mbps).Scale(cruiseGain) {
		t.Fatalf("skipping half the frames at a drain rate of 1 Mb/s: rate %v, want below %v of it", got, cruiseGain)
	}
}

// TestControllerWindowBoundNoCut stalls as BBR's PROBE_RTT does: cwnd
// held at four segments for a few frames, so frames are skipped waiting
// for invitations and the drain estimate is only the window's bound. The
// rate falls by a step at most, not to the bound.
func TestControllerWindowBoundNoCut(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(10*time.Second, clean(2*rate.Mbps))
	before := c.rate
	// The invitation comes 400 ms late, 11 frames skipped waiting for it,
	// with the bound as the drain estimate (as measured on a 2 Mb/s,
	// 172 ms path: 229 kb/s).
	f.now = f.now.Add(11 * frame)
	o := clean(2 * rate.Mbps)()
	o.DrainRate, o.WindowBound = 230*rate.Kbps, true
	o.Skipped, o.Late = 11, 11
	f.frame(o)
	f.run(time.Second, clean(2*rate.Mbps))
	if got := c.rate; got < before.Scale(skipStep*skipStep) {
		t.Fatalf("after a PROBE_RTT stall: rate %v, was %v; want a step down at most", got, before)
	}
}

// TestControllerStallBacklogKeepsCapacity stalls as BBR's PROBE_RTT does
// on a 500 kb/s path (cwnd at four segments for 200 ms: frames skipped
// waiting for invitations, the drain estimate only the window's bound),
// and then the backlog leaves: the queue grows for a round trip, more
// slowly than a burst from a longer stall, and drains. The capacity is
// the path's as before the stall; the cut drains the queue and no more.
func TestControllerStallBacklogKeepsCapacity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window bool // the stall's frame reports the window fallen (Observation.WindowBound)
	}{
		{"the window fell", true},
		// BBR's PROBE_RTT at 15 fps on 2 Mb/s, 123 ms: no invitation came
		// while the window was small, and the frame after it saw the
		// window back; the capacity went from 2 Mb/s to 972 kb/s.
		{"no invitation while the window was small", false},
	} {
		t.Run(tc.name, func(t *testing.T) { stallBacklog(t, tc.window) })
	}
}

// stallBacklog runs TestControllerStallBacklogKeepsCapacity's stall.
func stallBacklog(t *testing.T, window bool) {
	const link = 500 * rate.Kbps
	c := NewController(testLadder, link)
	f := newFeed(c)
	var queue time.Duration // a fluid bottleneck queue at the link's rate
	path := func(extra time.Duration) func() Observation {
		return func() Observation {
			sent := float64(f.d.Bitrate) * 1.03 // Written over Encoded, as frame fills in
			queue = max(queue+time.Duration((sent/float64(link)-1)*float64(frame)), 0)
			o := clean(link)()
			o.RTT += queue + extra
			return o
		}
	}
	f.run(20*time.Second, path(0))
	before := c.capacity
	if before < link.Scale(0.8) || before > link.Scale(1.2) {
		t.Fatalf("on a %v path: capacity %v before the stall", link, before)
	}
	f.now = f.now.Add(6 * frame)
	o := path(0)()
	if window {
		o.DrainRate, o.WindowBound = 200*rate.Kbps, true
	}
	o.Skipped, o.Late = 6, 6
	f.frame(o)
	// The backlog adds 60 ms of queue over 400 ms (the queue before the
	// stall stays as it was).
	start, rate0, held := f.now, c.rate, queue
	f.run(400*time.Millisecond, func() Observation {
		o := clean(link)()
		o.RTT += held + 60*time.Millisecond*f.now.Sub(start)/(400*time.Millisecond)
		return o
	})
	if c.rate >= rate0 {
		t.Fatalf("no cut while a stall's backlog built 60 ms of queue")
	}
	if c.capacity < before.Scale(0.9) {
		t.Fatalf("cut after a stall's backlog: capacity %v, was %v; want it kept", c.capacity, before)
	}
}

// TestControllerStallUnderQueue stalls as TestControllerStallBacklogKeepsCapacity
// does, but while a queue shows, as measured on a 500 kb/s, 172 ms path
// with BBR: a standing queue of 20 ms, the stall (frames skipped waiting
// for invitations, the drain estimate only the window's bound), then the
// backlog adding 20 ms over 400 ms, which then drains. A stall under a
// queue is not told from a path that slowed, so the cuts are not taken
// for a burst; but the rate written in the stall is not the load that
// built the queue, and taken for it, it halved the capacity.
func TestControllerStallUnderQueue(t *testing.T) {
	const link = 500 * rate.Kbps
	c := NewController(testLadder, link)
	f := newFeed(c)
	f.run(20*time.Second, func() Observation {
		c.rate = min(c.rate, link) // the path carries no more
		return clean(link)()
	})
	before := c.capacity
	if before < link.Scale(0.9) || before > link.Scale(1.1) {
		t.Fatalf("on a %v path: capacity %v before the stall", link, before)
	}
	const standing, backlog = 20 * time.Millisecond, 20 * time.Millisecond
	f.run(200*time.Millisecond, func() Observation {
		o := clean(link)()
		o.RTT += standing
		return o
	})
	for range 2 {
		f.now = f.now.Add(3 * frame)
		o := clean(link)()
		o.RTT += standing
		o.DrainRate, o.WindowBound = 200*rate.Kbps, true
		o.Skipped, o.Late = 3, 3
		f.frame(o)
	}
	start := f.now
	f.run(1500*time.Millisecond, func() Observation {
		o := clean(link)()
		at := f.now.Sub(start)
		up := backlog * min(at, 400*time.Millisecond) / (400 * time.Millisecond)
		down := backlog * max(at-400*time.Millisecond, 0) / (600 * time.Millisecond)
		o.RTT += standing + max(up-down, 0)
		return o
	})
	if c.capacity < before.Scale(0.8) {
		t.Fatalf("cut after a stall under a queue: capacity %v, was %v; want it kept", c.capacity, before)
	}
}

// TestControllerSlowEncodeNotTransport skips frames while encoding (a
// stalled CPU), not while waiting for invitations: the path said nothing,
// so the rate holds.
func TestControllerSlowEncodeNotTransport(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(5*time.Second, clean(2*rate.Mbps))
	before := c.rate
	f.run(2*time.Second, func() Observation {
		o := clean(1 * rate.Mbps)()
		o.Skipped = 3
		return o
	})
	if c.rate < before.Scale(0.95) {
		t.Fatalf("frames skipped while encoding cut the rate %v -> %v", before, c.rate)
	}
}

func TestControllerFrameBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    func(o *Observation, nominal int)
		want func(normal, got rate.Bitrate) bool
	}{
		// The encoder spends one frame interval's worth on a frame after
		// skips (it is told the interval, not the gap): the target stays.
		{"after two skipped frames the same", func(o *Observation, _ int) { o.Skipped = 2 },
			func(n, g rate.Bitrate) bool { return g == n }},
		{"after many skipped frames the same", func(o *Observation, _ int) { o.Skipped = 20 },
			func(n, g rate.Bitrate) bool { return g == n }},
		// A keyframe's excess is paid back over keyPayback.
		{"after a keyframe less", func(o *Observation, nominal int) {
			o.Keyframe, o.Encoded, o.Written = true, 5*nominal, 5*nominal
		}, func(n, g rate.Bitrate) bool { return g < n.Scale(0.9) && g >= n/2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder[:3], 1*rate.Mbps)
			f := newFeed(c)
			f.run(3*time.Second, func() Observation {
				c.rate = min(c.rate, 1*rate.Mbps) // within the rung's range
				return clean(1 * rate.Mbps)()
			})
			twin := c.clone()
			o := clean(1 * rate.Mbps)()
			normal := (&feed{c: twin, now: f.now, d: f.d}).frame(o).Bitrate
			tc.o(&o, int(float64(c.rate)/8*frame.Seconds()))
			if got := f.frame(o).Bitrate; !tc.want(normal, got) {
				t.Fatalf("bitrate %v, otherwise %v", got, normal)
			}
		})
	}
}

// clone returns a copy of c that shares nothing with it.
func (c *Controller) clone() *Controller {
	d := *c
	d.rtts, d.sent, d.scratch = slices.Clone(c.rtts), slices.Clone(c.sent), nil
	return &d
}

// TestControllerKeyframeGrace checks that the queue a keyframe builds is
// not taken for congestion, and the skips in its wake not for a slow
// transport.
func TestControllerKeyframeGrace(t *testing.T) {
	c := NewController(testLadder, 2*rate.Mbps)
	f := newFeed(c)
	f.run(5*time.Second, clean(2*rate.Mbps))
	before := c.rate
	o := clean(2 * rate.Mbps)()
	o.Keyframe, o.Encoded, o.Written = true, 30000, 31000
	f.frame(o)
	f.run(keyPayback/2, func() Observation {
		o := clean(2 * rate.Mbps)()
		o.RTT += 40 * time.Millisecond
		o.Skipped = 1
		return o
	})
	if c.rate < before {
		t.Fatalf("a keyframe's queue and skips cut the rate %v -> %v", before, c.rate)
	}
}

// TestControllerRungUp starts at a target that already qualifies for the
// next rung: it moves up after upHold, not before.
func TestControllerRungUp(t *testing.T) {
	c := NewController(testLadder, 800*rate.Kbps) // 320x180's Max
	if c.Rung().Size.W != 320 {
		t.Fatalf("start rung %v, want 320x180", c.Rung().Size)
	}
	f := newFeed(c)
	start := f.now
	var upAt time.Time
	f.run(3*upHold, func() Observation {
		if upAt.IsZero() && f.d.RungChanged {
			upAt = f.now
		}
		return clean(2 * rate.Mbps)()
	})
	if upAt.IsZero() {
		t.Fatal("never moved up")
	}
	if got := upAt.Sub(start); got < upHold || got > upHold+300*time.Millisecond {
		t.Fatalf("moved up after %v, want after upHold %v", got, upHold)
	}
}

// TestControllerRungDown checks that a target below the rung's Min moves
// the rung down only after downHold, unless it is far below.
func TestControllerRungDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share float64 // the target as a share of the rung's Min
		after time.Duration
	}{
		{"just below", 0.9, downHold},
		{"far below", downFar * 0.9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder[:3], 1*rate.Mbps)
			if c.Rung().Size.W != 640 {
				t.Fatalf("start rung %v, want 640x360", c.Rung().Size)
			}
			f := newFeed(c)
			f.run(2*rungGap, func() Observation { // no change: rungGap is past
				c.rate = min(c.rate, 1*rate.Mbps)
				return clean(1 * rate.Mbps)()
			})
			low := testLadder[2].Min.Scale(tc.share)
			c.rate, c.capacity, c.ceiling = low.Scale(c.overhead), low, low
			start := f.now
			var downAt time.Time
			f.run(2*downHold, func() Observation {
				if downAt.IsZero() && f.d.RungChanged {
					downAt = f.now
				}
				o := clean(low)()
				o.RTT += qLow // hold: neither grow nor cut
				return o
			})
			if downAt.IsZero() || c.Rung().Size.W != 320 {
				t.Fatalf("rung %v, want 320x180", c.Rung().Size)
			}
			if got := downAt.Sub(start); got < tc.after || got > tc.after+2*frame {
				t.Fatalf("moved down after %v, want after %v", got, tc.after)
			}
		})
	}
}

// TestControllerSaturatedEncoder moves up a rung when the encoder cannot
// reach its target at the current one and the path has room.
func TestControllerSaturatedEncoder(t *testing.T) {
	c := NewController(testLadder, 600*rate.Kbps)
	f := newFeed(c)
	f.fill = 0.5
	c.rate = 600 * rate.Kbps
	f.run(3*time.Second, func() Observation {
		c.rate = min(c.rate, 600*rate.Kbps) // below 320x180's Max and 640x360's default
		o := clean(600 * rate.Kbps)()
		o.RTT += qLow
		return o
	})
	if got := c.Rung().Size.W; got != 640 {
		t.Fatalf("encoder at half its target of %v: rung %v, want 640x360", c.Target(), c.Rung().Size)
	}
}

// TestControllerMakesUpUndershoot checks that while cruising on an empty
// queue the target asks for what the encoder leaves short of it, down to
// makeUpLow, never less than the rate; and not with a queue, nor while
// recovering from a cut or probing.
func TestControllerMakesUpUndershoot(t *testing.T) {
	for _, tc := range []struct {
		fill  float64
		ph    phase
		queue time.Duration
		want  float64 // the target over the rate's share for video
	}{
		{1, cruising, 0, 1},
		{0.95, cruising, 0, 1 / 0.95},
		{0.7, cruising, 0, 1 / makeUpLow},
		{1.1, cruising, 0, 1},
		{0.95, cruising, 20 * time.Millisecond, 1}, // above the frames' own serialization
		{0.95, recovering, 0, 1},
		{0.95, probing, 0, 1},
	} {
		c := NewController(testLadder, 1*rate.Mbps)
		f := newFeed(c)
		f.fill = tc.fill
		d := f.run(3*time.Second, func() Observation {
			// Held: no cut, and a capacity far above, so that a
			// recovery stays one.
			c.rate, c.capacity, c.phase = 1*rate.Mbps, 3*rate.Mbps, tc.ph
			o := clean(1 * rate.Mbps)()
			o.RTT += tc.queue
			return o
		})
		got := float64(d.Bitrate) * c.overhead / float64(c.rate)
		if math.Abs(got-tc.want) > 0.01 {
			t.Errorf("encoder at %.2f of its target, phase %d, queue %v: target %.3f of the rate, want %.3f", tc.fill, tc.ph, tc.queue, got, tc.want)
		}
	}
}

// TestControllerEncodeBudget holds the rung where the next one's frames
// would take too long to encode (the CPU, not the path, is the limit). The
// prediction scales 640x360's encode time by the pixels plus the bytes
// (encodeFits); at 640x360's Max, 2.5 Mb/s, 1280x720 is predicted at 2.7
// times it at 30 fps (10.7 KB frames) and 1.9 times at 10 fps (32 KB),
// where the pixels alone would say 4.
func TestControllerEncodeBudget(t *testing.T) {
	for _, tc := range []struct {
		fps    int
		encode time.Duration // at 640x360
		want   int
	}{
		{30, 3 * time.Millisecond, 1280},
		{30, 6500 * time.Microsecond, 1280}, // 17.5 ms predicted
		{30, 8500 * time.Microsecond, 640},  // 22.9 ms
		{10, 9500 * time.Microsecond, 1280}, // 18.1 ms
		{10, 11500 * time.Microsecond, 640}, // 21.9 ms
	} {
		c := NewController(testLadder, 1*rate.Mbps)
		f := newFeed(c)
		f.every = time.Second / time.Duration(tc.fps)
		f.run(10*time.Second, func() Observation {
			o := clean(1 * rate.Gbps)()
			if c.Rung().Size.W == 640 {
				o.EncodeTime = tc.encode
			}
			return o
		})
		if got := c.Rung().Size.W; got != tc.want {
			t.Errorf("%d fps, encoding 640x360 in %v: rung %v, want width %d", tc.fps, tc.encode, c.Rung().Size, tc.want)
		}
	}
}

// TestControllerEncodeBudgetLowest moves up from the lowest rung however
// long its frames take to encode: its encoder's mode is not the next
// rung's (see encodeFits).
func TestControllerEncodeBudgetLowest(t *testing.T) {
	c := NewController(testLadder, 60*rate.Kbps)
	f := newFeed(c)
	f.run(10*time.Second, func() Observation {
		o := clean(1 * rate.Mbps)()
		if c.Rung().Size == testLadder[0].Size {
			o.EncodeTime = encodeBudget/4 + time.Millisecond
		}
		return o
	})
	if got := c.Rung().Size; got == testLadder[0].Size {
		t.Errorf("encoding 160x90 in %v on a 1 Mb/s path: rung %v, want above it", encodeBudget/4+time.Millisecond, got)
	}
}

func TestControllerMaxRung(t *testing.T) {
	c := NewController(testLadder[:3], 1*rate.Mbps) // max 640x360
	f := newFeed(c)
	d := f.run(20*time.Second, clean(1*rate.Gbps))
	if d.Rung.Size.W != 640 || d.Bitrate != testLadder[2].Max {
		t.Fatalf("on a fast path with max 640x360: %v at %v, want 640x360 at %v", d.Rung.Size, d.Bitrate, testLadder[2].Max)
	}
}

func TestSkippedFrames(t *testing.T) {
	for _, tc := range []struct {
		gap, interval time.Duration
		want          int
	}{
		{frame, frame, 0},
		{frame * 13 / 10, frame, 0}, // late, not a whole frame
		{2 * frame, frame, 1},
		{5 * frame, frame, 4},
		{2 * frame, 2 * frame, 0}, // a 15 fps rung takes every other frame
		{4 * frame, 2 * frame, 1},
		{0, frame, 0},
		{frame, 0, 0},
	} {
		if got := SkippedFrames(tc.gap, tc.interval); got != tc.want {
			t.Errorf("SkippedFrames(%v, %v) = %d, want %d", tc.gap, tc.interval, got, tc.want)
		}
	}
}

func TestSkipsOf(t *testing.T) {
	for _, tc := range []struct {
		gap, waited time.Duration
		want        skips
	}{
		{frame, frame / 2, skips{}},
		{3 * frame, 2 * frame, skips{all: 2, late: 2}},     // the wait took them
		{4 * frame, frame / 3, skips{all: 3, late: 0}},     // a slow encode took them
		{4 * frame, frame * 3 / 2, skips{all: 3, late: 1}}, // both
		{2 * frame, 5 * frame, skips{all: 1, late: 1}},     // never more than the gap's
	} {
		if got := skipsOf(tc.gap, tc.waited, frame); got != tc.want {
			t.Errorf("skipsOf(%v, %v) = %+v, want %+v", tc.gap, tc.waited, got, tc.want)
		}
	}
}

// TestControllerFollowsTarget: a drain rate marked as a congestion
// controller's target (WebRTC's GCC) is followed as is, queueing or not,
// and the encoder gets it less the packets' overhead.
func TestControllerFollowsTarget(t *testing.T) {
	c := NewController(testLadder, 500*rate.Kbps)
	f := newFeed(c)
	for _, target := range []rate.Bitrate{1200 * rate.Kbps, 300 * rate.Kbps, 2 * rate.Mbps} {
		d := f.run(3*time.Second, func() Observation {
			// A queue that the delay-based control would cut on.
			return Observation{DrainRate: target, Target: true, RTT: 400 * time.Millisecond, MinRTT: 50 * time.Millisecond}
		})
		if c.rate != target {
			t.Errorf("following %v: rate %v", target, c.rate)
		}
		if d.Bitrate > target || d.Bitrate < target.Scale(0.9) {
			t.Errorf("following %v: encoder target %v, want it less the overhead (3%%)", target, d.Bitrate)
		}
	}
}

// TestSentRateWholeIntervals: frames of 750 bytes at 15 a second, each
// written 0 to 10 ms late (the invitation's jitter). The rate sent over
// the last sentWindow (7.5 frame intervals) is the stream's, because each
// frame's bytes count over its own interval: counted at their write
// times, the window held 7 frames and read 6.7% low.
func TestSentRateWholeIntervals(t *testing.T) {
	const frame = 750
	interval := time.Second / 15
	stream := rate.FromBytesPerSecond(frame / interval.Seconds())
	c := NewController(testLadder, 100*rate.Kbps)
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Unix(1000, 0)
	var sum, sq, n float64
	for k := range 300 {
		now := t0.Add(time.Duration(k)*interval + time.Duration(rng.Int64N(int64(10*time.Millisecond))))
		c.Update(Observation{Now: now, Encoded: frame, Written: frame})
		if k < 20 {
			continue
		}
		e := float64(c.sentRate(now.Add(-sentWindow), now))/float64(stream) - 1
		sum, sq, n = sum+e, sq+e*e, n+1
	}
	mean, rms := sum/n, math.Sqrt(sq/n)
	if math.Abs(mean) > 0.01 || rms > 0.02 {
		t.Errorf("sent rate off the stream's by %.2f%% on average, %.2f%% rms; want within 1%% and 2%%", mean*100, rms*100)
	}
}

// backlogged observes for d a path without queueing that carries no more
// than path, with the transport backlogged (not application-limited).
func (f *feed) backlogged(d time.Duration, path rate.Bitrate) Decision {
	return f.run(d, func() Observation {
		f.c.rate = min(f.c.rate, path)
		o := clean(path)()
		o.AppLimited = false
		return o
	})
}

// TestControllerRecoversToWhatItSent: after a deep cut, held while its
// queue drains, the rate returns to the cruising rate within a second,
// even with an encoder that gives only 85% of a raised target at once. The
// rate may lead what was sent by sentLead, but up to the rate sent when the
// cut came it need not: the encoder filled that at this rung. Held to
// sentLead alone, the rate rose by about a quarter a second and took
// seconds to come back.
func TestControllerRecoversToWhatItSent(t *testing.T) {
	c := NewController(testLadder, 1*rate.Mbps)
	f := newFeed(c)
	f.backlogged(5*time.Second, 1*rate.Mbps)
	o := clean(1 * rate.Mbps)()
	o.Now, o.AppLimited, o.RTT = f.now, false, o.RTT+500*time.Millisecond
	c.congested(o, 500*time.Millisecond, 0)
	if c.phase != recovering || c.rate > c.capacity.Scale(0.5) {
		t.Fatalf("a 500 ms queue: phase %d, rate %v of capacity %v; want a deep cut", c.phase, c.rate, c.capacity)
	}
	// The queue drains for 1.5 s, the rate held at the cut's; then none.
	f.fill = 0.85
	f.run(1500*time.Millisecond, func() Observation {
		o := clean(c.capacity)()
		o.RTT += 100 * time.Millisecond
		return o
	})
	f.run(time.Second, func() Observation { return clean(c.capacity)() })
	if cruise := c.capacity.Scale(cruiseGain); c.rate < cruise.Scale(0.95) {
		t.Errorf("a second after the cut: rate %v, want near the cruising rate %v", c.rate, cruise)
	}
}

// TestControllerRecoversAcrossRungDown: a series of cuts takes the rate far
// below the rung's Min (a halving into a short buffer), the rung moves down
// at once, and the rate holds there while the queue drains. The recovery
// then climbs back to what the encoder filled before the cuts, up to the
// lower rung's Max, within a second, as it does without the rung change
// (TestControllerRecoversToWhatItSent); held to a quarter above
// what the new rung had sent, it took 3.5 s to climb from 54 to 172 kb/s
// on a path that carried 293 (a real run, 620 to 310 kb/s at 119 ms,
// CUBIC, a 60 ms buffer).
func TestControllerRecoversAcrossRungDown(t *testing.T) {
	c := NewController(testLadder, 600*rate.Kbps)
	f := newFeed(c)
	f.backlogged(5*time.Second, 600*rate.Kbps)
	if c.Rung().Size.W != 320 {
		t.Fatalf("rung %v, want 320x180", c.Rung().Size)
	}
	o := clean(600 * rate.Kbps)()
	o.Now, o.AppLimited, o.RTT = f.now, false, o.RTT+300*time.Millisecond
	c.congested(o, 300*time.Millisecond, 0)
	path := 300 * rate.Kbps
	c.rate, c.capacity, c.ceiling = 60*rate.Kbps, path, path // what the series left
	if !c.chooseRung(f.now) || c.Rung().Size.W != 160 {
		t.Fatalf("rung %v after the cuts, want 160x90 at once", c.Rung().Size)
	}
	f.fill = 0.85
	f.run(700*time.Millisecond, func() Observation {
		c.rate = 60 * rate.Kbps // held while the queue drains
		return clean(path)()
	})
	f.run(time.Second, func() Observation { return clean(path)() })
	if want := testLadder[0].Max.Scale(0.95); c.rate < want {
		t.Errorf("a second after the queue drained: rate %v, want at least %v (the lower rung's Max, short of the cruising rate %v)",
			c.rate, want, path.Scale(cruiseGain))
	}
}

// TestControllerSeriesCutKeepsCapacity: a cut before the last one's queue
// drained (recovering) does not raise the capacity to what was sent a
// feedback delay ago, which at the start is the first frames' overshoot;
// the drain rate unknown, the growth's estimate is all it has. Out of a
// probe the same estimate stands.
func TestControllerSeriesCutKeepsCapacity(t *testing.T) {
	for _, tc := range []struct {
		ph   phase
		keep bool
	}{{recovering, true}, {probing, false}} {
		c := NewController(testLadder, 1400*rate.Kbps)
		f := newFeed(c)
		f.run(2*time.Second, func() Observation {
			c.rate = 1400 * rate.Kbps
			return Observation{RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond}
		})
		c.phase, c.capacity = tc.ph, 800*rate.Kbps
		c.lastCut, c.lastCutQ = f.now.Add(-c.fb-200*time.Millisecond), 50*time.Millisecond
		c.congested(Observation{Now: f.now, RTT: 250 * time.Millisecond, MinRTT: 50 * time.Millisecond}, 200*time.Millisecond, 0.1)
		if kept := c.capacity <= 800*rate.Kbps; kept != tc.keep {
			t.Errorf("phase %d, 1.4 Mb/s sent a feedback delay ago: capacity %v after the cut, want kept at 800 kb/s: %v", tc.ph, c.capacity, tc.keep)
		}
	}
}

// TestControllerStartFarAbovePath starts at 1 Mb/s on a 100 kb/s path with
// a 172 ms round trip, as measured over TCP with CUBIC: the transport
// takes the first frames into its initial window, then holds the sender
// for 0.84 s while the bottleneck's queue grows to 400 ms, and has measured
// nothing (its drain rate is only its window per round trip, 139 kb/s).
// The frame after the gap must read that queue and cut, and the cut must
// take no capacity above what the window let through: the rate asked for,
// taken instead, kept a queue of most of a second for seconds. Nor is the
// start's rate, a guess, regained as a capacity the path once carried.
func TestControllerStartFarAbovePath(t *testing.T) {
	const (
		minRTT = 172 * time.Millisecond
		bound  = 139 * rate.Kbps
	)
	c := NewController(testLadder, 1*rate.Mbps)
	f := newFeed(c)
	o := Observation{DrainRate: 650 * rate.Kbps, WindowBound: true, RTT: minRTT, MinRTT: minRTT}
	f.frame(o)
	f.run(250*time.Millisecond, func() Observation { return o })
	f.every = 840 * time.Millisecond
	f.frame(Observation{
		DrainRate: bound, WindowBound: true, RTT: 582 * time.Millisecond, MinRTT: minRTT,
		Skipped: 25, Late: 25, Encoded: 3300, Written: 3464,
	})
	if !c.lastCut.Equal(f.now) {
		t.Fatalf("a 410 ms queue after 0.84 s held by the transport: no cut (excess %v)", c.excessNow)
	}
	if c.capacity > bound {
		t.Errorf("capacity %v after the start's cut, want at most the window's %v", c.capacity, bound)
	}
	if c.before != 0 {
		t.Errorf("after the start's cut: regaining toward %v, the start's rate", c.before)
	}
}

// TestControllerStartQueueKeepsDrainRate: over QUIC from 1 Mb/s on a
// 100 kb/s path, the first cut took the rate to a third of the measured
// drain rate (92 kb/s, path-limited: the start's queue kept the bottleneck
// busy), and the queue stood for seconds more while quic-go repaired the
// start's losses. The next cuts read the rate sent since (28 kb/s) over
// the queue's growth as the path, cut to 8 kb/s, and the stream took 10 s
// to come back. While the start's queue has not drained, a cut takes no
// capacity below such a drain rate; once it has, the growth's estimate
// stands again.
func TestControllerStartQueueKeepsDrainRate(t *testing.T) {
	const (
		drain  = 92 * rate.Kbps
		minRTT = 172 * time.Millisecond
	)
	for _, drained := range []bool{false, true} {
		c := NewController(testLadder, 1*rate.Mbps)
		f := newFeed(c)
		f.run(700*time.Millisecond, func() Observation {
			return Observation{DrainRate: rate.Mbps, WindowBound: true, RTT: minRTT, MinRTT: minRTT}
		})
		queue := func(rtt time.Duration) func() Observation {
			return func() Observation {
				o := Observation{DrainRate: drain, RTT: rtt, MinRTT: minRTT}
				if c.congestedOnce {
					o.Encoded, o.Written = 110, 115 // 28 kb/s, a third of the drain rate
				}
				return o
			}
		}
		f.run(time.Second, queue(540*time.Millisecond))
		if !c.congestedOnce || c.capacity != drain {
			t.Fatalf("the start's first cut: capacity %v, want the drain rate %v", c.capacity, drain)
		}
		if drained {
			f.run(4*time.Second, queue(minRTT)) // then a new queue
		}
		f.run(4*time.Second, queue(900*time.Millisecond))
		if kept := c.capacity >= drain; kept == drained {
			t.Errorf("start's queue drained %v: capacity %v with %v sent, want kept at %v: %v",
				drained, c.capacity, c.sentRate(f.now.Add(-sentWindow), f.now), drain, !drained)
		}
	}
}

// TestForeignQueueStreak checks the quiet time after an undo: doubled for
// each undo in a streak; over at once when the base's shift halves (the
// other flow's queue went); and in the time the streak added, over when
// the stream sends more than the path delivers of it.
func TestForeignQueueStreak(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const d, shift = 2 * time.Second, 100 * time.Millisecond
	yes, no := func() bool { return true }, func() bool { return false }
	var f foreignQueue
	for k, want := range []time.Duration{d, 2 * d, 4 * d, 4 * d} {
		f.undo(t0, d, shift)
		if f.until.Sub(t0) != want || f.undos != min(k+1, maxUndos) {
			t.Fatalf("undo %d: quiet for %v (streak %d), want %v", k+1, f.until.Sub(t0), f.undos, want)
		}
	}
	if !f.holds(t0.Add(d/2), shift, yes) {
		t.Error("the stream's own excess ended the quiet time an undo gives without a streak")
	}
	if !f.holds(t0.Add(3*d), shift, no) || f.holds(t0.Add(4*d), shift, no) {
		t.Error("the extended quiet time did not last until its end, or outlasted it")
	}
	if !f.holds(t0.Add(3*d), shift, no) || f.holds(t0.Add(3*d), shift, yes) || f.undos != 0 {
		t.Errorf("the stream's own excess in the streak's time did not end it and the streak: %+v", f)
	}
	f.undo(t0, d, shift)
	if !f.holds(t0.Add(d/2), shift/2, no) || f.holds(t0.Add(d/2), shift/2-1, no) || f.undos != 0 {
		t.Errorf("a base that fell to under half its shift did not end the quiet time and the streak: %+v", f)
	}
}

// TestEvidenceNewestAfterCut: a drain rate above the ceiling counts only
// when a path-limited window that closed after the last cut measured it;
// an older one may be a faster path's, before it slowed.
func TestEvidenceNewestAfterCut(t *testing.T) {
	cut := time.Unix(1000, 0)
	ceiling, drain := 428*rate.Kbps, 458*rate.Kbps
	for _, tc := range []struct {
		name     string
		newestAt time.Time
		capped   bool // a loss cut set the ceiling
		want     rate.Bitrate
	}{
		{"window closed after the cut", cut.Add(30 * time.Millisecond), false, drain},
		{"window closed before the cut", cut.Add(-time.Second), false, ceiling},
		{"after a loss cut", cut.Add(30 * time.Millisecond), true, ceiling},
	} {
		c := NewController(testLadder, ceiling)
		c.capacity, c.ceiling, c.lastCut, c.low, c.high = ceiling, ceiling, cut, qLow, qHigh
		c.loss.capped = tc.capped
		c.evidence(Observation{Now: cut.Add(100 * time.Millisecond), DrainRate: drain, Newest: drain, NewestAt: tc.newestAt}, 0)
		if c.capacity != tc.want {
			t.Errorf("%s: capacity %v, want %v", tc.name, c.capacity, tc.want)
		}
		if tc.want == drain && c.ceiling != drain {
			t.Errorf("%s: ceiling %v, want %v", tc.name, c.ceiling, drain)
		}
	}
}

// TestEvidenceRiseAfterOvershoot: a probe's overshoot cut takes 163 kb/s
// while the drain rate reads 135; a window under the probe's queue then
// raises it to 183 kb/s, application-limited. That raises the capacity
// and the ceiling after an overshoot's cut, not after another cut, not
// from an aged rate, and not from a drain rate that read as much at the
// cut (an older window's).
func TestEvidenceRiseAfterOvershoot(t *testing.T) {
	cut := time.Unix(1000, 0)
	est, low, rise := 163*rate.Kbps, 135*rate.Kbps, 183*rate.Kbps
	for _, tc := range []struct {
		name      string
		overshoot bool
		atCut     rate.Bitrate
		aged      bool
		want      rate.Bitrate
	}{
		{"risen after an overshoot", true, low, false, rise},
		{"risen after another cut", false, low, false, est},
		{"aged", true, low, true, est},
		{"as high at the cut", true, rise, false, est},
	} {
		c := NewController(testLadder, est)
		c.capacity, c.ceiling, c.lastCut, c.low, c.high = est, est, cut, qLow, qHigh
		if tc.overshoot {
			c.shotAt, c.shotDrain = cut, tc.atCut
		}
		c.evidence(Observation{Now: cut.Add(500 * time.Millisecond), DrainRate: rise, AppLimited: true, Aged: tc.aged}, 0)
		if c.capacity != tc.want || c.ceiling != tc.want {
			t.Errorf("%s: capacity %v, ceiling %v, want %v", tc.name, c.capacity, c.ceiling, tc.want)
		}
	}
}

// TestEvidenceAgedDrain: after a halving from 1 Mb/s to 500 kb/s under
// BBR, every window is application-limited and the drain rate holds the
// old path's 932 kb/s, aged. Once a probe has passed the last cut's
// ceiling, the held rate raises the capacity; the cut that follows judges
// it. One that takes the capacity below drainTrust of it leaves it in
// doubt, and it then raises the capacity to agedGain times the rate sent
// at most, until a window measures the path again; one that keeps the
// capacity near it (a steady path, whose probe overshot) leaves it whole.
func TestEvidenceAgedDrain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	held, sent := 932*rate.Kbps, 380*rate.Kbps
	aged := Observation{DrainRate: held, AppLimited: true, Aged: true}
	for _, tc := range []struct {
		name   string
		cutEst rate.Bitrate // the capacity the cut after the lift took
		want   rate.Bitrate // the capacity the held rate raises it to after the cut
	}{
		{"the cut refutes it", sent, sent.Scale(agedGain)},
		{"the cut keeps it", 900 * rate.Kbps, held},
	} {
		c := NewController(testLadder, sent)
		c.capacity, c.low, c.high = sent, qLow, qHigh
		c.sent = []written{{from: t0.Add(-10 * time.Second), to: t0.Add(10 * time.Second), bytes: sent.BytesPerSecond() * 20}}
		at := func(d time.Duration, o Observation) Observation { o.Now = t0.Add(d); return o }
		c.evidence(at(100*time.Millisecond, aged), 0)
		if c.capacity != held {
			t.Fatalf("%s: capacity %v before the cut, want the held %v", tc.name, c.capacity, held)
		}
		c.lastCut, c.capacity = t0.Add(time.Second), tc.cutEst
		c.evidence(at(1100*time.Millisecond, aged), 0)
		if math.Abs(float64(c.capacity-tc.want)) > 0.01*float64(tc.want) {
			t.Errorf("%s: capacity %v after the cut, want %v", tc.name, c.capacity, tc.want)
		}
		// A window that measures the path ends the doubt.
		c.evidence(at(1200*time.Millisecond, Observation{DrainRate: 480 * rate.Kbps}), 0)
		c.evidence(at(1300*time.Millisecond, aged), 0)
		if c.capacity != held {
			t.Errorf("%s: capacity %v after a measured window, want the held %v", tc.name, c.capacity, held)
		}
	}
}

// TestControllerSlowerPathCutsAgain: cruising at 4 Mb/s on a 300 ms path,
// the path halves. The queue grows at a second per second while the drain
// rate (a windowed maximum) still reads 4 Mb/s, so that the first cut
// takes the capacity for 4 Mb/s. The queue's growth since that cut says
// the path carries half of it: the next cut comes before the usual wait
// of a feedback delay and 100 ms, which grows with the queue.
func TestControllerSlowerPathCutsAgain(t *testing.T) {
	const rtt = 300 * time.Millisecond
	drain := 4 * rate.Mbps
	c := NewController(testLadder, drain)
	f := newFeed(c)
	path := func() Observation { // what the stream writes is what the path took
		w := min(f.d.Bitrate, drain).Scale(1.03).Bytes(frame)
		return Observation{DrainRate: drain, RTT: rtt, MinRTT: rtt, Encoded: w * 100 / 103, Written: w}
	}
	f.run(10*time.Second, path)
	c.rate = min(c.rate, drain)
	start := f.now
	type cut struct {
		at   time.Time
		fb   time.Duration
		rate rate.Bitrate
	}
	var cuts []cut
	last := c.Target()
	f.run(3*time.Second, func() Observation {
		o := path()
		o.RTT += min(f.now.Sub(start), 600*time.Millisecond) // a 600 ms buffer fills
		if tg := c.Target(); tg < last.Scale(0.97) {
			cuts = append(cuts, cut{f.now, c.fb, c.rate})
		}
		last = c.Target()
		return o
	})
	if len(cuts) < 2 {
		t.Fatalf("%d cuts while the queue grew to the buffer, want two at least", len(cuts))
	}
	if gap := cuts[1].at.Sub(cuts[0].at); gap >= cuts[1].fb+100*time.Millisecond {
		t.Errorf("second cut %v after the first, want before a feedback delay (%v) and 100 ms", gap, cuts[1].fb)
	}
	if cuts[1].rate > drain/2 {
		t.Errorf("rate %v after the second cut, want below the halved path's %v", cuts[1].rate, drain/2)
	}
}

// ackFrame returns the smoothed RTT srtt after the ACKs of a frame of size
// bytes sent at once over a path of round trip rtt and rate link: each
// segment waits behind those before it, and each ACK moves the smoothed
// value an eighth of the way to its sample, as Linux and quic-go do.
func ackFrame(srtt, rtt time.Duration, link rate.Bitrate, size int) time.Duration {
	for sent := 0; sent < size; {
		sent = min(sent+mssGuess, size)
		srtt += (rtt + link.Duration(sent) - srtt) / 8
	}
	return srtt
}

// TestExcessFollowsFrameSize reads the excess on a slow path whose frames
// are one or two segments, so that the smoothed RTT rises with each
// frame's own serialization: after frames grow from 800 to 1600 bytes
// (100 to 200 kb/s at 15 fps on 250 kb/s) the larger frames' own queueing
// is not congestion (the excess stays under the band's top), while a
// queue that builds under frames of one size still is (most of it shows
// within half a second of smoothing). Held to the round trips of the
// smaller frames, the self term read the growth as 19 ms of excess: at
// 250 kb/s, recovering from 60 to 180 kb/s at 160x90, such cuts took the
// capacity to 120 kb/s.
func TestExcessFollowsFrameSize(t *testing.T) {
	const (
		link = 250 * rate.Kbps
		base = 50 * time.Millisecond
	)
	for _, tc := range []struct {
		name        string
		before, now int           // bytes a frame, over the window and in the last half second
		queue       time.Duration // built in the last half second
		least, most time.Duration // the excess read
	}{
		{"frames grew", 800, 1600, 0, 0, qHigh},
		{"frames grew a little", 800, 880, 0, 0, qLow},
		{"a queue under the same frames", 1600, 1600, 30 * time.Millisecond, 20 * time.Millisecond, 35 * time.Millisecond},
		{"a queue under grown frames", 800, 1600, 30 * time.Millisecond, 25 * time.Millisecond, 40 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(testLadder[:1], link)
			c.capacity, c.measured, c.plainAvg = link, true, float64(tc.before)
			now := time.Unix(1000, 0)
			var o Observation
			srtt := base + link.Duration(tc.before)
			for at := time.Duration(0); at < refWindow; at += time.Second / 15 {
				size, q := tc.before, time.Duration(0)
				if at >= refWindow-500*time.Millisecond {
					size, q = tc.now, tc.queue
				}
				c.plainAvg += (float64(size) - c.plainAvg) * 0.1
				c.frameAvg = c.plainAvg
				srtt = ackFrame(srtt, base+q, link, size)
				o = Observation{Now: now.Add(at), RTT: srtt, MinRTT: base, DrainRate: link}
				c.rtts = push(c.rtts, sample{o.Now, float64(o.RTT), c.plainAvg, 0}, o.Now.Add(-refWindow))
			}
			if got := c.excess(o, time.Second/15); got < tc.least || got > tc.most {
				t.Errorf("excess %v, want %v to %v", got, tc.least, tc.most)
			}
		})
	}
}

// beforeJudgement returns a controller about to cut (see answered): its
// capacity and ceiling at capacity, sending at r, the base shifted by
// shift, and a feedback delay of fb.
func beforeJudgement(capacity, r rate.Bitrate, shift, fb time.Duration) *Controller {
	c := NewController(testLadder, capacity)
	c.shift, c.low, c.high, c.fb = shift, qLow, qHigh, fb
	c.capacity, c.ceiling, c.rate = capacity, capacity, r
	return c
}

// TestAnsweredOwnOvershoot judges a cut on a path whose base has shifted
// (see shifted) and whose queue grew after it while the path carried what
// the stream sent. A probe that overshot the capacity before the cut
// (1.34 times, in a real run alone on 2 Mb/s, CUBIC, 80 ms) leaves a queue
// of its own that grows for a feedback delay after the cut and then falls:
// there it stood at 29 ms, down from 67 ms, at the judgement, and taken
// for another flow's, the cuts were undone and none came for 2 s, through
// a halving of the link. Such a queue is the stream's own. A queue still
// near its peak is another flow's even after an overshoot (a download's
// queue that a probe met), and one that fell without an overshoot before
// the cut too (a BBR download's drain phase).
func TestAnsweredOwnOvershoot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	capacity, drain := 2*rate.Mbps, 2*rate.Mbps
	for _, tc := range []struct {
		name       string
		before     rate.Bitrate  // the rate at the cut
		peak, now  time.Duration // the excess at its highest since the cut, and at the judgement
		wantUndone bool
	}{
		{"own overshoot, queue falling", 2680 * rate.Kbps, 67 * time.Millisecond, 29 * time.Millisecond, false},
		{"overshoot, queue near its peak", 2680 * rate.Kbps, 67 * time.Millisecond, 60 * time.Millisecond, true},
		{"no overshoot, queue falling", 1950 * rate.Kbps, 67 * time.Millisecond, 29 * time.Millisecond, true},
	} {
		c := beforeJudgement(capacity, tc.before, 22*time.Millisecond, 150*time.Millisecond)
		cut := t0.Add(time.Second)
		c.sent = []written{{from: t0, to: t0.Add(2 * time.Second), bytes: float64(drain) / 8 * 2}}
		c.await(cut, 18*time.Millisecond)
		c.capacity, c.rate = 1500*rate.Kbps, 1500*rate.Kbps // the cuts
		o := Observation{DrainRate: drain, RTT: 100 * time.Millisecond, MinRTT: 80 * time.Millisecond}
		o.Now = cut.Add(c.fb)
		c.answered(o, tc.peak)
		o.Now = cut.Add(c.fb + drainTime/2)
		c.answered(o, tc.now)
		if undone := c.capacity == capacity; undone != tc.wantUndone {
			t.Errorf("%s: capacity %v after the judgement, undone %v, want %v", tc.name, c.capacity, undone, tc.wantUndone)
		}
	}
}

// TestAnsweredHalvedPath: a cut judged after the path halved is not undone
// for another flow's queue when a path-limited window that closed since the
// cut delivered well below what the stream sent, though the drain rate's
// windowed maximum still holds the faster path.
func TestAnsweredHalvedPath(t *testing.T) {
	t0 := time.Unix(1000, 0)
	before := 3 * rate.Mbps
	for _, tc := range []struct {
		name       string
		newest     rate.Bitrate
		closed     time.Duration // since the cut
		wantUndone bool
	}{
		{"halved, measured since the cut", 1486 * rate.Kbps, 850 * time.Millisecond, false},
		{"no window since the cut", 1486 * rate.Kbps, -time.Second, true},
		{"the path as fast as before", 2950 * rate.Kbps, 850 * time.Millisecond, true},
		{"a share of it, beside another flow", 1900 * rate.Kbps, 850 * time.Millisecond, true},
	} {
		c := beforeJudgement(before, 2900*rate.Kbps, 16*time.Millisecond, 550*time.Millisecond)
		cut := t0.Add(time.Second)
		// A probe's small cut awaits its judgement when the path halves;
		// the halving's cut comes 0.7 s after it, and the judgement a
		// feedback delay (grown with the queue) and half drainTime after
		// the first.
		c.sent = []written{
			{from: cut, to: cut.Add(700 * time.Millisecond), bytes: 2900e3 / 8 * 0.7},
			{from: cut.Add(700 * time.Millisecond), to: cut.Add(1050 * time.Millisecond), bytes: 1200e3 / 8 * 0.35},
		}
		c.await(cut, 10*time.Millisecond)
		c.capacity, c.rate = 1577*rate.Kbps, 915*rate.Kbps // the cuts
		o := Observation{
			DrainRate: 2965 * rate.Kbps, Newest: tc.newest, NewestAt: cut.Add(tc.closed),
			RTT: 500 * time.Millisecond, MinRTT: 212 * time.Millisecond,
		}
		o.Now = cut.Add(c.fb + drainTime/2)
		c.answered(o, 183*time.Millisecond)
		if undone := c.capacity == before; undone != tc.wantUndone {
			t.Errorf("%s: capacity %v after the judgement, undone %v, want %v", tc.name, c.capacity, undone, tc.wantUndone)
		}
	}
}

// TestAnsweredDeepCut: a deep cut after the path slowed sends little
// since, so what a path-limited window delivered is judged against what
// the stream sent before the cut as well. In the path model a fall from
// 337 to 188 kb/s (BBR, the round trip from 90 to 28 ms) built 1.5 s of
// queue before the cut to 66 kb/s; judged while that queue drained, still
// above the excess at the cut, and measured against the 60 kb/s sent
// since, it was undone to 326 kb/s, and the queue grew to 2 s again.
func TestAnsweredDeepCut(t *testing.T) {
	t0 := time.Unix(1000, 0)
	before := 332 * rate.Kbps
	for _, tc := range []struct {
		name       string
		newest     rate.Bitrate
		wantUndone bool
	}{
		{"the path slowed", 180 * rate.Kbps, false},
		{"the path carries what was sent, beside another flow", 300 * rate.Kbps, true},
	} {
		c := beforeJudgement(before, 326*rate.Kbps, 6*time.Millisecond, 1500*time.Millisecond)
		cut := t0.Add(2 * time.Second)
		c.sent = []written{
			{from: t0, to: cut, bytes: 318e3 / 8 * 2},
			{from: cut, to: cut.Add(2 * time.Second), bytes: 60e3 / 8 * 2},
		}
		c.await(cut, 865*time.Millisecond)
		c.capacity, c.rate = 221*rate.Kbps, 66*rate.Kbps // the cut
		o := Observation{
			DrainRate: 181 * rate.Kbps, Newest: tc.newest, NewestAt: cut.Add(time.Second),
			RTT: time.Second, MinRTT: 70 * time.Millisecond,
		}
		o.Now = cut.Add(c.fb / 2)
		c.answered(o, 1504*time.Millisecond)
		o.Now = cut.Add(c.fb + drainTime/2)
		c.answered(o, 895*time.Millisecond)
		if undone := c.capacity == before; undone != tc.wantUndone {
			t.Errorf("%s: capacity %v after the judgement, undone %v, want %v", tc.name, c.capacity, undone, tc.wantUndone)
		}
	}
}

// TestSelfTermAfterFirstAcks: the transport's smoothed RTT is the
// handshake's until the frames' own packets are acknowledged, and the
// self term (see excess) does not take those round trips for the frames'
// own queueing. A QUIC stream at 15 fps on 3.1 Mb/s and 212 ms, whose
// frames of 21 KB queue behind each other for 20 to 40 ms, read a quarter
// of its first three seconds at the handshake's round trip: the self term
// read 3 ms, the frames' own queueing stood as 10 to 20 ms of excess, and
// the base moved by it (see shifted).
func TestSelfTermAfterFirstAcks(t *testing.T) {
	const (
		link  = 3100 * rate.Kbps
		base  = 212 * time.Millisecond
		frame = time.Second / 15
		size  = 21000
	)
	c := NewController(testLadder, 2500*rate.Kbps)
	now := time.Unix(1000, 0)
	var o Observation
	for at, k := time.Duration(0), 0; at < 3*time.Second; at, k = at+frame, k+1 {
		rtt := base // the handshake's, until the first frames' ACKs move it
		if at >= 700*time.Millisecond {
			rtt = base + 30*time.Millisecond + time.Duration(k%3-1)*8*time.Millisecond
		}
		o = Observation{Now: now.Add(at), RTT: rtt, MinRTT: base, DrainRate: link, Encoded: size, Written: size + 300}
		c.Update(o)
	}
	if ex := c.State().Excess; ex > qLow {
		t.Errorf("excess %v after 3 s of frames queueing 22 to 38 ms behind each other, want at most %v", ex, qLow)
	}
}

// TestControllerMovesUpPastRungMax: a stream at a rung's Max on a path
// three times as fast, whose drain rate is not application-limited and
// measures only what the stream writes (QUIC's, whose frames wait for its
// pacer), must move up the ladder. Its probes climb past the Max with the
// frames held at it; taken for a transport that carries no more (held),
// each probe ended within two feedback delays and the stream cruised back
// under the Max, so that its rate never stayed past the Max for upHold:
// it was still at 320x180 after 10 s.
func TestControllerMovesUpPastRungMax(t *testing.T) {
	c := NewController(media.Ladder, 700*rate.Kbps)
	f := newFeed(c)
	if got := c.Rung().Size; got != (media.Size{W: 320, H: 180}) {
		t.Fatalf("starts at %v, want 320x180", got)
	}
	d := f.run(10*time.Second, func() Observation {
		sent := min(f.d.Bitrate.Scale(1.03), 3*rate.Mbps) // what the stream writes, all the path drains
		return Observation{DrainRate: sent, RTT: 30 * time.Millisecond, MinRTT: 30 * time.Millisecond}
	})
	if d.Rung.Size == (media.Size{W: 320, H: 180}) {
		t.Errorf("still at 320x180 after 10 s on a 3 Mb/s path: rate %v, target %v (%s)", c.rate, d.Bitrate, c.phase)
	}
}
