package webrtc

import (
	"testing"
	"time"

	"replenish/rate"
)

// The limit is horizonPackets packets of the mean size per feedback delay
// (the oldest packet reported: departure to now); it falls at once and
// rises a quarter of the way per feedback.
func TestHorizonLimit(t *testing.T) {
	var h horizon
	if h.limit() != 0 {
		t.Fatal("a limit before any feedback")
	}
	h.feedback(0, 10, at(100)) // nothing sent yet
	for s := range uint16(100) {
		h.sent(s, 1000, at(int(s)))
	}
	h.feedback(0, 10, at(200)) // packet 0 left at 0 ms: 200 ms ago
	want := rate.Bitrate(horizonPackets * 8000 / 0.2)
	if got := h.limit(); got != want {
		t.Fatalf("limit %v after a 200 ms feedback delay, want %v", got, want)
	}
	h.feedback(50, 10, at(150)) // 100 ms: the limit doubles, a quarter of the way
	if got, want := h.limit(), want+want/4; got != want {
		t.Errorf("limit %v after a shorter delay, want %v", got, want)
	}
	h.feedback(10, 10, at(410)) // 400 ms: at once
	if got, want := h.limit(), rate.Bitrate(horizonPackets*8000/0.4); got != want {
		t.Errorf("limit %v after a longer delay, want %v", got, want)
	}
	before := h.limit()
	h.feedback(200, 10, at(500)) // news of packets never sent
	if h.limit() != before {
		t.Errorf("feedback ahead of the departures moved the limit to %v", h.limit())
	}
}

// A feedback about a packet older than every departure remembered is
// taken from the oldest one remembered.
func TestHorizonOlderThanRemembered(t *testing.T) {
	var h horizon
	for i := range 2 * horizonSlots {
		h.sent(uint16(60000+i), 1000, at(i)) // across the wrap
	}
	oldest := 2*horizonSlots - horizonSlots // the departure time of the oldest slot, ms
	now := 2*horizonSlots + 100
	h.feedback(60000, 10, at(now))
	want := rate.Bitrate(horizonPackets * 8000 / (time.Duration(now-oldest) * time.Millisecond).Seconds())
	if got := h.limit(); got != want {
		t.Errorf("limit %v, want %v", got, want)
	}
}

// pathSim is a bottleneck in virtual time: a drop-tail queue served at
// rate, oneWay each way, and a receiver that reports what arrived every
// interval (the base of a report is the first packet after the previous
// one's, as pion's TWCC recorder does).
type pathSim struct {
	rate             rate.Bitrate
	oneWay, queueMax time.Duration
	interval         time.Duration
	wire             int // bytes per packet

	linkFree  time.Duration   // when the link finishes what it holds
	arrivals  []time.Duration // arrival at the receiver, by sequence number
	reported  int             // packets reported so far
	nextFB    time.Duration
	feedbacks []simFeedback // sent, not yet at the sender
	dropped   int
}

type simFeedback struct {
	base, count int
	at          time.Duration // arrival at the sender
}

// send puts packet seq (the next one) on the path at now.
func (p *pathSim) send(now time.Duration) {
	start := max(now, p.linkFree)
	if start-now > p.queueMax {
		p.dropped++
		p.arrivals = append(p.arrivals, -1)
		return
	}
	p.linkFree = start + p.rate.Duration(p.wire)
	p.arrivals = append(p.arrivals, p.linkFree+p.oneWay)
}

// report sends the receiver's feedback due by now.
func (p *pathSim) report(now time.Duration) {
	if now < p.nextFB {
		return
	}
	p.nextFB = now + p.interval
	end := p.reported
	for i := p.reported; i < len(p.arrivals); i++ {
		if a := p.arrivals[i]; a >= 0 && a <= now {
			end = i + 1
		}
	}
	if end > p.reported {
		p.feedbacks = append(p.feedbacks, simFeedback{base: p.reported, count: end - p.reported, at: now + p.oneWay})
		p.reported = end
	}
}

// With the estimate frozen above the link (11.66 Mb/s on 10 Mb/s, as pion's
// GCC froze once its feedback fell outside its history), the horizon,
// heeded from 3 s on, when the queue is full, drains the queue and brings
// every feedback back within pion's history: GCC sees again. Without the
// horizon the queue stays full and every feedback reports on packets more
// than 250 behind.
func TestHorizonThawsFrozenEstimate(t *testing.T) {
	for _, rtt := range []time.Duration{40 * time.Millisecond, 172 * time.Millisecond} {
		frozen := rate.Bitrate(11_660_000)
		p := &pathSim{rate: 10 * rate.Mbps, oneWay: rtt / 2, queueMax: 200 * time.Millisecond, interval: 100 * time.Millisecond, wire: 1240}
		var h horizon
		var credit float64 // bits the sender may send
		worst := 0         // packets sent past a feedback's base, from 8 s on
		const step = 100 * time.Microsecond
		for now := time.Duration(0); now < 20*time.Second; now += step {
			r := frozen
			if l := h.limit(); now >= 3*time.Second && l > 0 && l < r {
				r = l
			}
			credit += float64(r) * step.Seconds()
			for ; credit >= float64(8*p.wire); credit -= float64(8 * p.wire) {
				h.sent(uint16(len(p.arrivals)), p.wire, at(0).Add(now))
				p.send(now)
			}
			p.report(now)
			for len(p.feedbacks) > 0 && p.feedbacks[0].at <= now {
				fb := p.feedbacks[0]
				p.feedbacks = p.feedbacks[1:]
				h.feedback(uint16(fb.base), uint16(fb.count), at(0).Add(now))
				if behind := len(p.arrivals) - fb.base; now >= 8*time.Second {
					worst = max(worst, behind)
				}
			}
		}
		t.Logf("%v: worst %d dropped %d", rtt, worst, p.dropped)
		if worst >= pionFeedbackHistory {
			t.Errorf("%v round trip: a feedback came %d packets behind the newest (pion's GCC keeps %d)", rtt, worst, pionFeedbackHistory)
		}
	}
}
