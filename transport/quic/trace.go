package quic

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// pathState is what the Conn learns from quic-go's recovery events that
// ConnectionStats does not give: the bytes in flight and when they last
// fell, the round trip as of then, whether the congestion controller is
// recovering from a loss, and when a 1-RTT packet left. It is updated on
// quic-go's goroutines and read by the Conn's (and the write limiter, which
// may not call quic-go).
type pathState struct {
	inFlight   atomic.Int64
	srtt       atomic.Int64     // quic-go's smoothed RTT, ns
	rttvar     atomic.Int64     // and its RTT variance
	now        func() time.Time // time.Now, but in tests
	base       time.Time        // the clock's origin for ackedAt (monotonic)
	ackedAt    atomic.Int64     // when bytes in flight last fell (an acknowledgement), since base; 0 before
	busySince  atomic.Int64     // when bytes in flight last rose from zero, since base
	ahead      atomic.Int64     // bytes in flight just after the later of the two
	recovering atomic.Bool
	// dropped is set when quic-go discards the Initial or Handshake keys,
	// until its next metrics: it then removes those spaces' packets from
	// bytes in flight without saying so (packets still in flight there
	// are lost ones, after a handshake that met loss), and inFlight
	// overstates them.
	dropped atomic.Bool
	sent    chan struct{} // capacity 1: a 1-RTT packet was sent
	// packed is the Conn's count of packetized bytes, once it exists;
	// acks follows its acknowledgement.
	packed atomic.Pointer[atomic.Int64]
	acks   ackLog
}

func newPathState() *pathState {
	return &pathState{now: time.Now, base: time.Now(), sent: make(chan struct{}, 1)}
}

// rtt returns quic-go's smoothed RTT and RTT variance as of its last
// metrics; zero before.
func (st *pathState) rtt() (srtt, rttvar time.Duration) {
	return time.Duration(st.srtt.Load()), time.Duration(st.rttvar.Load())
}

// acked returns when bytes in flight last fell; zero before they did.
func (st *pathState) acked() time.Time {
	d := st.ackedAt.Load()
	if d <= 0 {
		return time.Time{}
	}
	return st.base.Add(time.Duration(d))
}

// sending returns the bytes in flight, or zero while they may be what
// quic-go silently dropped with the handshake's keys (see dropped): the
// handshake's packets are out of the path then, and any 1-RTT packet sent
// after it corrects the count.
func (st *pathState) sending() int64 {
	if st.dropped.Load() {
		return 0
	}
	return st.inFlight.Load()
}

// unanswered returns how long bytes have been in flight with nothing
// acknowledged: since the later of the last acknowledgement and the
// moment bytes in flight rose from zero. It is zero while none are in
// flight (by sending). It also returns the bytes that were in flight at
// that moment: the next acknowledgement waits for them to cross the
// bottleneck, but not for what was sent since (which on a path that is
// down grows for as long as quic-go's window lets it).
func (st *pathState) unanswered(now time.Time) (time.Duration, int64) {
	if st.sending() <= 0 {
		return 0, 0
	}
	since := max(st.ackedAt.Load(), st.busySince.Load())
	return max(now.Sub(st.base)-time.Duration(since), 0), st.ahead.Load()
}

// tracer returns a quic.Config Tracer that keeps st up to date; it records
// nothing else.
func (st *pathState) tracer() func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return st }
}

// AddProducer implements qlogwriter.Trace.
func (st *pathState) AddProducer() qlogwriter.Recorder { return st }

// RecordEvent implements qlogwriter.Recorder: it keeps the values above
// and drops every other event. It does not block.
func (st *pathState) RecordEvent(ev qlogwriter.Event) {
	switch ev := ev.(type) {
	case qlog.MetricsUpdated:
		// quic-go fills every field with its current value, and
		// reports bytes in flight falling as it processes an
		// acknowledgement (or declares a packet lost, which does not
		// change the bytes delivered, so the drain estimator does not
		// take its time).
		now := max(int64(st.now().Sub(st.base)), 1)
		st.srtt.Store(int64(ev.SmoothedRTT))
		st.rttvar.Store(int64(ev.RTTVariance))
		was := st.inFlight.Swap(int64(ev.BytesInFlight))
		if st.dropped.Swap(false) {
			was = 0 // what sending reported
		}
		switch {
		case int64(ev.BytesInFlight) < was:
			st.ahead.Store(int64(ev.BytesInFlight))
			st.ackedAt.Store(now)
		case was == 0 && ev.BytesInFlight > 0:
			st.ahead.Store(int64(ev.BytesInFlight))
			st.busySince.Store(now)
		}
	case qlog.KeyDiscarded:
		if ev.KeyType == qlog.KeyTypeClientInitial || ev.KeyType == qlog.KeyTypeClientHandshake {
			st.dropped.Store(true)
		}
	case qlog.CongestionStateUpdated:
		st.recovering.Store(ev.State == qlog.CongestionStateRecovery)
	case qlog.PacketSent:
		if ev.Header.PacketType == qlog.PacketType1RTT {
			if p := st.packed.Load(); p != nil {
				st.acks.sent(int64(ev.Header.PacketNumber), p.Load())
			}
			select {
			case st.sent <- struct{}{}:
			default:
			}
		}
	case qlog.PacketLost:
		if ev.Header.PacketType == qlog.PacketType1RTT {
			st.acks.lost(int64(ev.Header.PacketNumber))
		}
	case qlog.PacketReceived:
		if ev.Header.PacketType == qlog.PacketType1RTT {
			st.received(ev.Frames)
		}
	}
}

// received hands the ACK frames among a received packet's frames to acks.
func (st *pathState) received(frames []qlog.Frame) {
	for _, f := range frames {
		a, ok := f.Frame.(*qlog.AckFrame)
		if !ok || len(a.AckRanges) == 0 {
			continue
		}
		ranges := make([]ackRange, len(a.AckRanges))
		for i, r := range a.AckRanges {
			ranges[i] = ackRange{int64(r.Smallest), int64(r.Largest)}
		}
		st.acks.acked(ranges, time.Now().Add(-max(a.DelayTime, 0)))
	}
}

// Close implements qlogwriter.Recorder.
func (st *pathState) Close() error { return nil }
