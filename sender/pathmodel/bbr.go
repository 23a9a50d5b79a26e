package pathmodel

import (
	"math/rand/v2"
	"time"
)

// BBR (v1, Linux tcp_bbr.c) constants.
const (
	bbrHighGain     = 2.885
	bbrCwndGain     = 2.0
	bbrBwRounds     = 10
	bbrMinRTTWindow = 10 * time.Second
	bbrProbeRTTTime = 200 * time.Millisecond
	bbrMinCwnd      = 4
	bbrPacingMargin = 0.99
	bbrFullBwThresh = 1.25
	bbrFullBwCount  = 3
)

// bbrCycle is PROBE_BW's pacing-gain cycle.
var bbrCycle = [...]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

type bbrMode int

const (
	bbrStartup bbrMode = iota
	bbrDrain
	bbrProbeBW
	bbrProbeRTT
)

// bwSample is one entry of BBR's bandwidth filter.
type bwSample struct {
	round int64
	bw    float64 // segments per second
}

// bbr models Linux BBR v1: a windowed-max bandwidth filter over ten rounds
// (application-limited samples enter only if they raise it), a 10 s minimum
// RTT, pacing at the bandwidth times a gain (STARTUP's 2.885, then the
// PROBE_BW cycle), cwnd at twice the BDP plus quantization allowance, and
// PROBE_RTT. Like Linux it counts segments, so small segments inflate its
// byte rate.
type bbr struct {
	mode        bbrMode
	w           float64 // cwnd, segments
	priorW      float64
	bw          []bwSample
	round       int64
	nextRound   int64
	roundStart  bool
	minRTT      time.Duration
	minRTTStamp time.Duration
	pacing      float64 // bytes per second
	gain, cwndG float64
	cycle       int
	cycleStamp  time.Duration
	fullBw      float64
	fullBwN     int
	fullBwDone  bool
	probeDone   time.Duration
	probeRound  bool
	conserve    bool
}

func newBBR(rng *rand.Rand) *bbr {
	b := &bbr{w: initCwnd, gain: bbrHighGain, cwndG: bbrHighGain}
	b.cycle = len(bbrCycle) - 1 - rng.IntN(len(bbrCycle)-1)
	return b
}

func (b *bbr) cwnd() int               { return max(int(b.w), 1) }
func (b *bbr) pacingRate(*tcp) float64 { return b.pacing }
func (b *bbr) slowStart() bool         { return false }

func (b *bbr) maxBw() float64 {
	m := 0.0
	for _, s := range b.bw {
		m = max(m, s.bw)
	}
	return m
}

func (b *bbr) onTxStart(t *tcp, now time.Duration) {
	if b.pacing == 0 {
		b.initPacing(t)
	}
}

// initPacing sets the first pacing rate from the initial window and the
// RTT (1 ms before any sample), as Linux does.
func (b *bbr) initPacing(t *tcp) {
	rtt := t.srtt
	if rtt == 0 {
		rtt = time.Millisecond
	}
	b.pacing = bbrHighGain * initCwnd * mss / rtt.Seconds() * bbrPacingMargin
}

func (b *bbr) bdp(gain float64) float64 {
	if b.minRTT == 0 {
		return initCwnd
	}
	return b.maxBw() * b.minRTT.Seconds() * gain
}

func (b *bbr) onAck(t *tcp, now time.Duration, a ackInfo) {
	b.updateBw(t, a)
	b.updateCycle(t, now, a)
	b.checkFullBw(a)
	b.checkDrain(t, now)
	b.updateMinRTT(t, now, a)
	b.setPacing(t)
	b.setCwnd(t, a)
}

func (b *bbr) updateBw(t *tcp, a ackInfo) {
	b.roundStart = false
	if a.rsPrior >= b.nextRound {
		b.nextRound = t.delivered
		b.round++
		b.roundStart = true
		b.conserve = false
	}
	if !a.rsValid {
		return
	}
	bw := float64(a.rsDelivered) / a.rsInterval.Seconds()
	if a.rsAppLimited && bw < b.maxBw() {
		return
	}
	keep := b.bw[:0]
	for _, s := range b.bw {
		if s.round > b.round-bbrBwRounds && s.bw > bw {
			keep = append(keep, s)
		}
	}
	b.bw = append(keep, bwSample{b.round, bw})
}

// updateCycle advances PROBE_BW's gain cycle: each phase lasts a minimum
// RTT; the probing phase continues until inflight reaches 1.25 BDP (or a
// loss), the draining phase ends early once inflight is down to a BDP.
func (b *bbr) updateCycle(t *tcp, now time.Duration, a ackInfo) {
	if b.mode != bbrProbeBW {
		return
	}
	full := now-b.cycleStamp > b.minRTT
	g := bbrCycle[b.cycle]
	next := full
	switch {
	case g > 1:
		next = full && (a.losses > 0 || float64(a.priorInflight) >= b.bdp(g))
	case g < 1:
		next = full || float64(a.priorInflight) <= b.bdp(1)
	}
	if next {
		b.cycle = (b.cycle + 1) % len(bbrCycle)
		b.cycleStamp = now
		b.gain = bbrCycle[b.cycle]
	}
}

func (b *bbr) checkFullBw(a ackInfo) {
	if b.fullBwDone || !b.roundStart || a.rsAppLimited {
		return
	}
	if bw := b.maxBw(); bw >= b.fullBw*bbrFullBwThresh {
		b.fullBw, b.fullBwN = bw, 0
		return
	}
	b.fullBwN++
	b.fullBwDone = b.fullBwN >= bbrFullBwCount
}

func (b *bbr) checkDrain(t *tcp, now time.Duration) {
	if b.mode == bbrStartup && b.fullBwDone {
		b.mode, b.gain, b.cwndG = bbrDrain, 1/bbrHighGain, bbrHighGain
	}
	if b.mode == bbrDrain && float64(t.inflight) <= b.bdp(1) {
		b.enterProbeBW(now)
	}
}

func (b *bbr) enterProbeBW(now time.Duration) {
	b.mode, b.cwndG = bbrProbeBW, bbrCwndGain
	b.cycle = (b.cycle + 1) % len(bbrCycle)
	b.cycleStamp = now
	b.gain = bbrCycle[b.cycle]
}

// updateMinRTT keeps the 10 s minimum RTT and runs PROBE_RTT when it
// expires: cwnd at 4 segments for 200 ms and a round trip.
func (b *bbr) updateMinRTT(t *tcp, now time.Duration, a ackInfo) {
	expired := now > b.minRTTStamp+bbrMinRTTWindow
	if b.minRTT == 0 || a.rtt < b.minRTT || expired {
		b.minRTT, b.minRTTStamp = a.rtt, now
	}
	if expired && b.mode != bbrProbeRTT {
		b.mode, b.gain, b.cwndG = bbrProbeRTT, 1, 1
		b.priorW = max(b.priorW, b.w)
		b.probeDone = 0
	}
	if b.mode != bbrProbeRTT {
		return
	}
	// Linux marks the flow application-limited in PROBE_RTT, so that its
	// low rate samples do not lower the estimate.
	t.appLimitedUntil = max(t.delivered+int64(t.inflight), 1)
	switch {
	case b.probeDone == 0 && t.inflight <= bbrMinCwnd:
		b.probeDone = now + bbrProbeRTTTime
		b.probeRound = false
		b.nextRound = t.delivered
	case b.probeDone != 0:
		if b.roundStart {
			b.probeRound = true
		}
		if b.probeRound && now > b.probeDone {
			b.minRTTStamp = now
			b.w = max(b.w, b.priorW)
			b.priorW = 0
			if b.fullBwDone {
				b.enterProbeBW(now)
			} else {
				b.mode, b.gain, b.cwndG = bbrStartup, bbrHighGain, bbrHighGain
			}
		}
	}
}

func (b *bbr) setPacing(t *tcp) {
	bw := b.maxBw()
	if bw == 0 {
		if b.pacing == 0 {
			b.initPacing(t)
		}
		return
	}
	r := bw * mss * b.gain * bbrPacingMargin
	if b.fullBwDone || r > b.pacing {
		b.pacing = r
	}
}

// setCwnd moves cwnd toward twice the BDP plus an allowance for
// quantization (three TSO bursts, plus two segments while probing).
func (b *bbr) setCwnd(t *tcp, a ackInfo) {
	if a.losses > 0 {
		b.w = max(b.w-float64(a.losses), 1)
	}
	target := b.bdp(b.cwndG)
	tso := min(max(b.pacing/1000/mss, 2), 44)
	target += 3 * tso
	if b.mode == bbrProbeBW && b.cycle == 0 {
		target += 2
	}
	switch {
	case b.conserve:
		b.w = max(b.w, float64(t.inflight+1))
	case b.fullBwDone:
		b.w = min(b.w+1, target)
	case b.w < target || t.delivered < initCwnd:
		b.w++
	}
	b.w = max(b.w, bbrMinCwnd)
	if b.mode == bbrProbeRTT {
		b.w = min(b.w, bbrMinCwnd)
	}
}

func (b *bbr) onLoss(t *tcp, now time.Duration) {
	b.priorW = max(b.priorW, b.w)
	b.w = float64(t.inflight + 1)
	b.conserve = true
	b.nextRound = t.delivered
}

func (b *bbr) onRecoveryEnd(t *tcp, now time.Duration) {
	b.w = max(b.w, b.priorW)
	b.priorW = 0
	b.conserve = false
}

func (b *bbr) onRTO(t *tcp, now time.Duration) {
	b.priorW = max(b.priorW, b.w)
	b.w = 1
}

func (b *bbr) onAppLimited(t *tcp, now time.Duration) {}
