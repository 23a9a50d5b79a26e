package sender

import (
	"math"
	"testing"
	"time"

	"replenish/rate"
)

// waitSeries returns frames' least waits (ms) read at the given times (ms
// since t0), as headWait keeps them.
func waitSeries(t0 time.Time, points ...[2]float64) []sample {
	var s []sample
	for _, p := range points {
		s = append(s, sample{t: t0.Add(time.Duration(p[0] * float64(time.Millisecond))), v: p[1] * float64(time.Millisecond)})
	}
	return s
}

// TestWaitGrowth reads the queue's growth from the frames' waits since a
// cut. The ramp is a real run's (BBR, 230 kb/s halved at 202 ms, the
// lowest rung at 15 fps: the waits read after a cut at 0 ms); the steps
// are a base round trip raised by 240 ms (80 to 320 ms) as the least of
// three frames shows it, in one step or two.
func TestWaitGrowth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ramp := [][2]float64{{70, 62.9}, {200, 126.4}, {330, 182.9}, {470, 231.6}}
	tests := []struct {
		name  string
		waits [][2]float64
		from  float64 // ms
		want  float64 // s/s of sending; 0: none
	}{
		// The least step is 48.7 ms in 140 ms: w = 0.348, a queue
		// growing w/(1−w) = 0.53 s a second sent (the path carried
		// 115 kb/s of the 213 the stream had sent: 0.85).
		{"a halving's ramp", ramp, 0, 0.348 / (1 - 0.348)},
		{"too few steps since the cut", ramp, 100, 0},
		{"a base round trip's step, two steps of it", [][2]float64{{0, 63}, {33, 63}, {67, 177}, {100, 292}, {133, 288}}, 0, 0},
		{"a base round trip's step, then a queue", [][2]float64{{0, 63}, {33, 177}, {67, 292}, {100, 300}}, 0, 0.008 / 0.033 / (1 - 0.008/0.033)},
		{"faster than a queue grows", [][2]float64{{0, 0}, {100, 80}, {200, 160}, {300, 240}}, 0, 0},
		{"draining", [][2]float64{{0, 200}, {100, 180}, {200, 160}, {300, 140}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{waited: waitSeries(t0, tt.waits...)}
			got := c.waitGrowth(t0.Add(time.Duration(tt.from * float64(time.Millisecond))))
			if math.Abs(got-tt.want) > 0.01 {
				t.Errorf("waitGrowth = %.3f, want %.3f", got, tt.want)
			}
		})
	}
}

// TestSlowerPathFromWaits: after a cut, frames' waits that grow as a
// halving's queue does say the path slowed while the smoothed RTT, a few
// ACKs a second at 115 kb/s, has barely moved (the real run's: 293 to
// 365 ms over the same 0.47 s, a slope of 0.15 s/s against slopeHigh's
// 0.25), so the next cut need not wait a feedback delay. Without the
// waits, or with the waits of a base round trip's step, it waits.
func TestSlowerPathFromWaits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cut := t0.Add(200 * time.Millisecond)
	now := cut.Add(470 * time.Millisecond)
	o := Observation{Now: now}
	for _, tt := range []struct {
		name  string
		waits [][2]float64 // ms since the cut, ms
		want  bool
	}{
		{"a halving's waits", [][2]float64{{70, 62.9}, {200, 126.4}, {330, 182.9}, {470, 231.6}}, true},
		{"no waits", nil, false},
		{"a base round trip's step", [][2]float64{{70, 63}, {103, 177}, {137, 292}, {170, 288}, {203, 290}}, false},
	} {
		c := &Controller{fb: 340 * time.Millisecond, capacity: 217 * rate.Kbps, lastCut: cut}
		// 213 kb/s written over the last 3 s, a frame every 67 ms.
		for at := now.Add(-3 * time.Second); at.Before(now); at = at.Add(67 * time.Millisecond) {
			c.sent = append(c.sent, written{from: at, to: at.Add(67 * time.Millisecond), bytes: 213e3 / 8 * 0.067})
		}
		for at, v := cut, 293.0; !at.After(now); at, v = at.Add(67*time.Millisecond), v+10 {
			c.rtts = append(c.rtts, sample{t: at, v: v * float64(time.Millisecond)})
		}
		c.waited = waitSeries(cut, tt.waits...)
		if got := c.slowerPath(o); got != tt.want {
			t.Errorf("%s: slowerPath = %v, want %v", tt.name, got, tt.want)
		}
	}
}
