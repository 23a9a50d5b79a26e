package pathmodel

import "time"

// onAck processes the ACK of segment id (each segment is acknowledged on
// its own, with SACK semantics).
func (t *tcp) onAck(now time.Duration, id int64) {
	sg := t.seg(id)
	if sg.acked {
		return
	}
	sg.acked = true
	prior := t.inflight
	if sg.inFlight {
		sg.inFlight = false
		t.inflight--
	}
	t.delivered++
	t.deliveredBytes += int64(sg.size)
	t.deliveredAt = now
	a := ackInfo{rtt: now - sg.sent, priorInflight: prior, rsAppLimited: sg.appLimited, rsPrior: sg.delivered}
	t.updateRTT(a.rtt)
	a.rsInterval = max(sg.sent-sg.firstTx, now-sg.deliveredAt)
	a.rsDelivered = t.delivered - sg.delivered
	a.rsValid = a.rsInterval > 0 && a.rsInterval >= t.minRTT
	t.firstTx = sg.sent
	if t.appLimitedUntil > 0 && t.delivered > t.appLimitedUntil {
		t.appLimitedUntil = 0
	}
	a.losses = t.detectLosses(now, sg.sent)
	t.advance(now)
	t.cc.onAck(t, now, a)
	if t.flow == 0 {
		t.s.est.onAck(now, t, sg.appLimited)
	}
	t.trySend(now)
}

// handshake seeds the RTT estimates with the connection's handshake: one
// round trip of packets without payload, the SYN-ACK's synBytes at the
// bottleneck. Linux takes it into srtt and its minimum RTT (but not into
// CUBIC's own minimum, ackMin), so on a slow link the minimum RTT the
// sender reads stays near the base while every data segment's sample
// carries its own serialization (measured on the sweep at 100 kb/s: min_rtt
// 5.4 to 5.7 ms above the base for the whole run, the segments 25 ms or
// more).
func (t *tcp) handshake(rtt time.Duration) {
	t.srtt, t.rttvar, t.minRTT = rtt, rtt/2, rtt
}

// updateRTT folds one RTT sample into srtt and rttvar (RFC 6298) and the
// minima (Linux keeps a 300 s window; the model keeps the minimum of the
// run, which runs are shorter than).
func (t *tcp) updateRTT(m time.Duration) {
	if t.ackMin == 0 || m < t.ackMin {
		t.ackMin = m
	}
	if t.srtt == 0 {
		t.srtt, t.rttvar, t.minRTT = m, m/2, m
		return
	}
	d := t.srtt - m
	if d < 0 {
		d = -d
	}
	t.rttvar = (3*t.rttvar + d) / 4
	t.srtt = (7*t.srtt + m) / 8
	t.minRTT = min(t.minRTT, m)
}

// detectLosses marks lost every segment whose latest transmission was
// dropped and was sent before sentBefore: RACK's rule, exact on a path that
// does not reorder. It returns how many it marked.
func (t *tcp) detectLosses(now, sentBefore time.Duration) int {
	n := 0
	keep := t.dropped[:0]
	for _, id := range t.dropped {
		if sg := t.seg(id); sg.sent < sentBefore {
			t.markLost(id)
			n++
		} else {
			keep = append(keep, id)
		}
	}
	t.dropped = keep
	if n > 0 {
		t.enterRecovery(now)
	}
	return n
}

func (t *tcp) markLost(id int64) {
	sg := t.seg(id)
	sg.dropped = false
	if sg.inFlight {
		sg.inFlight = false
		t.inflight--
	}
	t.retx = append(t.retx, id)
}

func (t *tcp) enterRecovery(now time.Duration) {
	if t.inRecovery {
		return
	}
	t.inRecovery = true
	t.recoveryEnd = t.next
	t.cc.onLoss(t, now)
}

// onLossTimer is the tail-loss probe (a first transmission) or the
// retransmission timeout (a retransmission) for segment id, armed when its
// transmission was dropped.
func (t *tcp) onLossTimer(now time.Duration, id int64) {
	if id < t.base || id >= t.next {
		return
	}
	sg := t.seg(id)
	if !sg.dropped || now-sg.sent < 10*time.Millisecond {
		return // already detected, or retransmitted since
	}
	keep := t.dropped[:0]
	for _, d := range t.dropped {
		if d != id {
			keep = append(keep, d)
		}
	}
	t.dropped = keep
	t.markLost(id)
	if sg.retrans > 0 && !t.lossState {
		// A retransmission lost too: the retransmission timeout. Like
		// Linux's Loss state, cwnd restarts from one segment and grows
		// in slow start while the rest is retransmitted.
		t.cc.onRTO(t, now)
		t.inRecovery, t.lossState, t.recoveryEnd = true, true, t.next
	}
	t.enterRecovery(now)
	t.trySend(now)
}

// advance moves una past acknowledged segments, hands the receiver's
// in-order progress to the frames, ends recovery, and forgets old segments.
func (t *tcp) advance(now time.Duration) {
	moved := false
	for t.una < t.next && t.seg(t.una).acked {
		sg := t.seg(t.una)
		t.recvMax = max(t.recvMax, sg.recvAt)
		t.una++
		moved = true
	}
	if !moved {
		return
	}
	switch {
	case t.flow != 0: // a competing flow: no frames to deliver
	case t.una < t.next:
		t.s.onReceived(t.seg(t.una).seq, t.recvMax)
		t.s.onAcked(t.seg(t.una).seq, now)
	default:
		t.s.onReceived(t.sndNxt, t.recvMax)
		t.s.onAcked(t.sndNxt, now)
	}
	if t.inRecovery && t.una >= t.recoveryEnd {
		t.inRecovery, t.lossState = false, false
		t.cc.onRecoveryEnd(t, now)
	}
	if n := t.una - t.base; n > 4096 && n*2 > int64(len(t.segs)) {
		t.segs = append(t.segs[:0], t.segs[n:]...)
		t.base = t.una
	}
}

// validate is Linux's tcp_cwnd_validate: it tracks whether the flow used its
// cwnd over the last window of data and, after an RTO's worth of not using
// it, lets the congestion control decay cwnd toward what was used.
func (t *tcp) validate(now time.Duration, limited bool) {
	if t.una >= t.usageSeq || limited || (!t.cwndLimited && t.inflight > t.maxOut) {
		t.cwndLimited = limited
		t.maxOut = t.inflight
		t.usageSeq = t.next
	}
	if t.isCwndLimited() {
		t.cwndUsed = 0
		t.cwndStamp = now
		return
	}
	t.cwndUsed = max(t.cwndUsed, t.inflight)
	if now-t.cwndStamp >= t.rto() {
		t.cc.onAppLimited(t, now)
		t.cwndUsed = 0
		t.cwndStamp = now
	}
}

// isCwndLimited is Linux's tcp_is_cwnd_limited.
func (t *tcp) isCwndLimited() bool {
	if t.cwndLimited {
		return true
	}
	return t.slowStart != nil && t.slowStart() && t.cc.cwnd() < 2*t.maxOut
}
