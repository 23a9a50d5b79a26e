package sender

import (
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// TestSelfTermAcrossShift follows the fourth trace of
// TestControllerRTTStepReplay through a round trip's step from 20 to 172 ms
// on a 2 Mb/s path. Before it, frames of 7.9 KB queued 12 to 20 ms behind
// each other over the 20 ms base; the cuts took them to 700 bytes; the base
// moved (see unanswered); and the frames are back at 7.9 KB, again 12 to 20
// ms over the new base. The round trips from before the step still tell the
// frames' own queueing, against the base they had: over the new one they
// read none, and with the small frames' round trips after the move (which
// read none either) they held the self term at zero, so that the frames'
// own queueing read as excess.
func TestSelfTermAcrossShift(t *testing.T) {
	const (
		frame     = 33 * time.Millisecond
		big       = 7900.0
		small     = 700.0
		minRTT    = 20 * time.Millisecond
		raised    = 172 * time.Millisecond
		queueing  = 16 * time.Millisecond
		wobble    = 4 * time.Millisecond
		firstCutQ = 140 * time.Millisecond
	)
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	c := NewController(media.Ladder, 2*rate.Mbps)
	c.low, c.high, c.fb = qLow, qHigh, 300*time.Millisecond
	c.selfFrom = t0
	c.capacity, c.firstCap, c.firstCeil = 440*rate.Kbps, 2*rate.Mbps, 2*rate.Mbps
	c.firstSent = 1860 * rate.Kbps
	c.cuts, c.firstCut, c.lastCut = 2, at(2.1), at(2.5)
	c.firstCutQ, c.lastCutQ = firstCutQ, firstCutQ
	c.plainAvg, c.frameAvg = big, big
	k := 0
	add := func(from, to float64, rtt time.Duration, size float64, wobbles bool) {
		for t := at(from); t.Before(at(to)); t = t.Add(frame) {
			v := rtt
			if wobbles {
				v += time.Duration(k%3-1) * wobble
			}
			k++
			c.rtts = push(c.rtts, sample{t, float64(v), size, c.shift}, t.Add(-refWindow))
			r := c.firstSent
			if !t.Before(c.lastCut) {
				r = 300 * rate.Kbps
			}
			c.sent = push(c.sent, written{t, t.Add(frame), float64(r) * frame.Seconds() / 8}, t.Add(-sentKeep))
		}
	}
	add(0, 2, minRTT+queueing, big, true) // before the step
	add(2, 3.3, raised, small, false)     // the series of cuts, the frames at a tenth
	o := Observation{Now: at(3.3), RTT: raised, MinRTT: minRTT, DrainRate: 2 * rate.Mbps}
	c.plainAvg = small
	c.shifted(o, c.excess(o, frame))
	if want := raised - minRTT; c.shift < want-time.Millisecond || c.shift > want+time.Millisecond {
		t.Fatalf("base shift %v after the excess stood unanswered, want %v", c.shift, want)
	}
	add(3.3, 3.6, raised+time.Millisecond, small, false) // climbing back
	c.plainAvg = big
	add(3.6, 4.5, raised+queueing, big, true) // back at 7.9 KB
	o = Observation{Now: at(4.5), RTT: raised + queueing, MinRTT: minRTT, DrainRate: 2 * rate.Mbps}
	if got, least := c.self(o), queueing-wobble; got < least {
		t.Errorf("self term %v with the frames back at %.0f bytes, want their own queueing, at least %v", got, big, least)
	}
	if got := c.excess(o, frame); got >= c.high {
		t.Errorf("excess %v with the frames queueing only behind each other, want under the band's top %v", got, c.high)
	}
}
