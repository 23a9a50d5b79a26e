package pathmodel

import (
	"time"

	"replenish/rate"
)

// Wire constants of the model.
const (
	mss         = 1448          // payload bytes of a full segment (Ethernet, TCP timestamps)
	tcpIPHeader = 52            // IPv4 and TCP headers with timestamps, per segment
	synBytes    = 60            // a SYN-ACK: IPv4 and TCP headers with MSS, SACK, timestamp and window-scale options
	hostRate    = 1 * rate.Gbps // the sender's own interface
	initCwnd    = 10            // segments
	minRTO      = 200 * time.Millisecond
	maxSegsKept = 1 << 20 // a bound on the segment history, far above any run's need
)

// segment is one TCP segment the model has sent.
type segment struct {
	seq     int64 // offset of its first payload byte
	size    int   // payload bytes
	sent    time.Duration
	recvAt  time.Duration // when its latest successful transmission reaches the receiver
	retrans int
	// Rate-sampling state at the latest transmission (Linux tcp_rate.c).
	delivered   int64 // segments delivered before it was sent
	deliveredAt time.Duration
	firstTx     time.Duration
	appLimited  bool

	acked, inFlight, dropped bool
	push                     bool // it ends a write (PSH): see receiver
}

// ackInfo is what one ACK tells the congestion control.
type ackInfo struct {
	rtt           time.Duration
	priorInflight int
	losses        int
	// The delivery-rate sample, in segments (as Linux counts).
	rsDelivered  int64
	rsInterval   time.Duration
	rsAppLimited bool
	rsValid      bool
	rsPrior      int64 // delivered count when the acked segment was sent
}

// congestion is a congestion-control model.
type congestion interface {
	cwnd() int                 // segments
	pacingRate(t *tcp) float64 // bytes per second; 0: no pacing
	onTxStart(t *tcp, now time.Duration)
	onAck(t *tcp, now time.Duration, a ackInfo)
	onLoss(t *tcp, now time.Duration)
	onRecoveryEnd(t *tcp, now time.Duration)
	onRTO(t *tcp, now time.Duration)
	onAppLimited(t *tcp, now time.Duration) // RFC 2861 decay; a no-op for BBR
}

// tcp is the model's TCP sender and the receiver's in-order delivery.
type tcp struct {
	s    *sim
	cc   congestion
	flow uint8 // 0: the stream's; 1..: a competing bulk flow's (Path.Cross)

	segs    []segment
	base    int64 // id of segs[0]
	next    int64 // id of the next new segment
	una     int64 // lowest id not yet acked
	written int64 // bytes the application wrote
	// segments transmitted (retransmissions included) and retransmitted,
	// as tcpi_data_segs_out and tcpi_total_retrans count them
	segsOut, retransOut int64
	sndNxt              int64 // bytes put into segments
	retx                []int64
	dropped             []int64 // ids whose latest transmission was dropped, not yet marked lost

	inflight        int
	delivered       int64 // segments
	deliveredBytes  int64
	deliveredAt     time.Duration
	firstTx         time.Duration
	appLimitedUntil int64

	srtt, rttvar, minRTT time.Duration
	ackMin               time.Duration // the smallest RTT of a data segment (CUBIC's delay_min)

	inRecovery  bool
	lossState   bool // recovering after a retransmission timeout
	recoveryEnd int64

	paceNext    time.Duration
	pacePending bool
	hostFree    time.Duration
	lastSend    time.Duration
	lastRecvAt  time.Duration
	lastAckAt   time.Duration
	recvMax     time.Duration // running max of recvAt over segments acked in order
	delAck      bool          // the peer delays its ACKs (Path.DelayedAck)
	rcv         receiver      // its state then
	ends        []int64       // then, the ends of writes not yet in a segment

	// Linux's cwnd-usage tracking (tcp_cwnd_validate).
	cwndLimited bool
	maxOut      int
	usageSeq    int64
	cwndUsed    int
	cwndStamp   time.Duration
	slowStart   func() bool
}

func (t *tcp) seg(id int64) *segment { return &t.segs[id-t.base] }

func (t *tcp) unsent() int { return int(t.written - t.sndNxt) }

// rto returns the retransmission timeout.
func (t *tcp) rto() time.Duration {
	if t.srtt == 0 {
		return time.Second
	}
	return max(minRTO, t.srtt+4*t.rttvar)
}

// write appends n bytes from the application and sends what it may. Like
// Linux's tcp_sendmsg, it first notes whether the flow was
// application-limited: less than a segment unsent, room in cwnd, nothing
// to retransmit.
func (t *tcp) write(now time.Duration, n int) {
	if t.unsent() < mss && t.inflight < t.cc.cwnd() && len(t.retx) == 0 {
		t.appLimitedUntil = max(t.delivered+int64(t.inflight), 1)
	}
	t.written += int64(n)
	if t.delAck {
		t.ends = append(t.ends, t.written)
	}
	t.trySend(now)
}

// trySend sends retransmissions, then new data, while cwnd and pacing allow.
func (t *tcp) trySend(now time.Duration) {
	limited := false
	for len(t.retx) > 0 || t.unsent() > 0 {
		if t.inflight >= t.cc.cwnd() {
			limited = true
			break
		}
		if t.cc.pacingRate(t) > 0 && now < t.paceNext {
			if !t.pacePending {
				t.pacePending = true
				t.s.q.pushFlow(t.paceNext, evPace, 0, t.flow)
			}
			break
		}
		var id int64
		if len(t.retx) > 0 {
			id = t.retx[0]
			t.retx = t.retx[1:]
			t.seg(id).retrans++
		} else {
			id = t.newSegment()
		}
		t.transmit(now, id)
	}
	t.validate(now, limited)
}

func (t *tcp) newSegment() int64 {
	n := min(mss, t.unsent())
	if len(t.segs) >= maxSegsKept {
		panic("pathmodel: segment history overflow")
	}
	t.segs = append(t.segs, segment{seq: t.sndNxt, size: n})
	t.sndNxt += int64(n)
	for len(t.ends) > 0 && t.ends[0] <= t.sndNxt {
		t.segs[len(t.segs)-1].push = true
		t.ends = t.ends[1:]
	}
	id := t.next
	t.next++
	return id
}

// transmit puts segment id on the wire: through the host's interface, the
// bottleneck and the propagation delay to the receiver, whose ACK returns
// after the reverse delay.
func (t *tcp) transmit(now time.Duration, id int64) {
	sg := t.seg(id)
	if t.inflight == 0 {
		t.firstTx, t.deliveredAt = now, now
		t.cc.onTxStart(t, now)
	}
	first := sg.retrans == 0
	t.segsOut++
	if !first {
		t.retransOut++
	}
	sg.sent = now
	sg.delivered, sg.deliveredAt, sg.firstTx = t.delivered, t.deliveredAt, t.firstTx
	sg.appLimited = t.appLimitedUntil > 0
	sg.inFlight = true
	t.inflight++
	t.lastSend = now
	wire := sg.size + tcpIPHeader
	leave := max(now, t.hostFree) + hostRate.Duration(wire)
	t.hostFree = leave
	if pr := t.cc.pacingRate(t); pr > 0 {
		t.paceNext = max(t.paceNext, now) + time.Duration(float64(wire)/pr*float64(time.Second))
	}
	start, depart, dropped := t.s.bottleneck(leave, wire, first, t.flow)
	if first && t.flow == 0 {
		t.s.onLeftHost(sg.seq, sg.seq+int64(sg.size), leave, start-leave, dropped)
	}
	if dropped {
		sg.dropped = true
		t.dropped = append(t.dropped, id)
		timeout := 2*t.srtt + 2*time.Millisecond
		if sg.retrans > 0 {
			timeout = t.rto() << min(sg.retrans-1, 6)
		}
		t.s.q.pushFlow(now+max(timeout, 10*time.Millisecond), evLoss, id, t.flow)
		return
	}
	sd := &t.s.sched
	recv := max(t.lastRecvAt, depart+sd.owdAt(depart)+t.s.jitter())
	t.lastRecvAt = recv
	sg.recvAt = recv
	if t.delAck {
		t.s.q.pushFlow(recv, evRecv, id, t.flow)
		return
	}
	ack := max(t.lastAckAt, recv+sd.owdAt(recv))
	t.lastAckAt = ack
	t.s.q.pushFlow(ack, evAck, id, t.flow)
}

// onPace reopens the pacing gate.
func (t *tcp) onPace(now time.Duration) {
	t.pacePending = false
	t.trySend(now)
}
