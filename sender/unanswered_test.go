package sender

import (
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// TestUnanswered judges a series of cuts the way the fourth trace of
// TestControllerRTTStepReplay met it at its third cut: the capacity taken to
// 440 kb/s after 1.86 Mb/s had been sent, the excess 154 ms, a feedback
// delay of 0.45 s, the stream sending 300 kb/s since. A queue of its own
// would lose 1 − 300/440 of itself a second, half of it in 0.24 s once the
// cut showed: the excess standing 0.75 s after the cut is unanswered, at
// 0.6 s not yet. Nor is one the cuts did not take the rate down to half
// (however long it stands), one within the band's noise, one the cut took the rate
// only to the capacity for, a smoothed RTT that moved since the cut showed,
// or one standing in a buffer that overflowed.
func TestUnanswered(t *testing.T) {
	const frame = 33 * time.Millisecond
	t0 := time.Unix(1000, 0)
	flat := func(time.Duration) time.Duration { return 158 * time.Millisecond }
	for _, tc := range []struct {
		name       string
		after      time.Duration // since the cut
		lastCutQ   time.Duration
		capacity   rate.Bitrate
		sent       rate.Bitrate // since the cut
		srtt       func(since time.Duration) time.Duration
		lost       int64 // packets lost since the series began, of 100 sent
		unanswered bool
	}{
		{"standing past its own queue's half drain", 750 * time.Millisecond, 154 * time.Millisecond, 440 * rate.Kbps, 300 * rate.Kbps, flat, 0, true},
		{"not yet half drained", 600 * time.Millisecond, 154 * time.Millisecond, 440 * rate.Kbps, 300 * rate.Kbps, flat, 0, false},
		{"the rate not halved", 1500 * time.Millisecond, 154 * time.Millisecond, 1500 * rate.Kbps, 1200 * rate.Kbps, flat, 0, false},
		{"within the band's noise", 750 * time.Millisecond, 40 * time.Millisecond, 440 * rate.Kbps, 300 * rate.Kbps, flat, 0, false},
		{"sent at the capacity", 750 * time.Millisecond, 154 * time.Millisecond, 440 * rate.Kbps, 440 * rate.Kbps, flat, 0, false},
		{"the smoothed RTT rising", 750 * time.Millisecond, 154 * time.Millisecond, 440 * rate.Kbps, 300 * rate.Kbps,
			func(since time.Duration) time.Duration { return 158*time.Millisecond + since/5 }, 0, false},
		{"the buffer overflowed", 750 * time.Millisecond, 154 * time.Millisecond, 440 * rate.Kbps, 300 * rate.Kbps, flat, lossMin, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(media.Ladder, 2*rate.Mbps)
			c.low, c.high, c.fb = qLow, qHigh, 450*time.Millisecond
			c.capacity, c.firstSent, c.lastCutQ = tc.capacity, 1860*rate.Kbps, tc.lastCutQ
			c.lastCut = t0
			before := t0.Add(-30 * frame)
			for at := before; at.Before(t0.Add(tc.after)); at = at.Add(frame) {
				r := tc.sent
				if at.Before(t0) {
					r = c.firstSent
				}
				c.sent = append(c.sent, written{at, at.Add(frame), float64(r) * frame.Seconds() / 8})
				if !at.Before(t0) {
					c.rtts = append(c.rtts, sample{t: at, v: float64(tc.srtt(at.Sub(t0)))})
				}
			}
			o := Observation{Now: t0.Add(tc.after), Sent: 100, Lost: tc.lost}
			if got := c.unanswered(o); got != tc.unanswered {
				t.Errorf("unanswered = %v, want %v (sent %v since the cut)", got, tc.unanswered, c.sentRate(c.lastCut, o.Now))
			}
		})
	}
}
