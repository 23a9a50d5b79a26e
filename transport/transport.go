// Package transport holds the values that pass between the sender loop and
// the transports that carry its frames (TCP, QUIC and WebRTC). The sender loop
// defines the interface it drives; transports return these types.
package transport

import (
	"time"

	"replenish/rate"
	"replenish/transport/drain"
)

// Wake says what ended a wait for an invitation.
type Wake int

const (
	// WakeImmediate means the transport was already inviting when asked.
	WakeImmediate Wake = iota
	// WakeKernel means a readiness event from the kernel (or the QUIC
	// stack) ended the wait.
	WakeKernel
	// WakeTimer means the safety-net timer ended the wait. A healthy
	// transport rarely reports it.
	WakeTimer
)

func (w Wake) String() string {
	switch w {
	case WakeImmediate:
		return "immediate"
	case WakeKernel:
		return "kernel"
	case WakeTimer:
		return "timer"
	}
	return "unknown"
}

// Invitation is the transport's offer to take one more frame now. A
// transport that does not manage its source buffer (TCP's default and lowat
// modes) leaves DrainRate, AppLimited, RTT, MinRTT and Lead zero: it models
// an application that has no view of the path. Drain is filled in every
// mode, for the records.
type Invitation struct {
	At time.Time // when the transport decided to invite
	// DrainRate is the estimated rate at which the backlog drains; 0 if
	// unknown. It is Drain.Estimate.Rate, or Drain.StackRate in a
	// kernel-faithful mode.
	DrainRate rate.Bitrate
	// AppLimited reports that DrainRate does not come from a recent
	// window in which the sender stayed backlogged (drain.Estimate).
	AppLimited bool
	// Aged reports that DrainRate is held from a window older than the
	// estimator's horizon (drain.Estimate.Aged): the path may have
	// slowed since. False in a kernel-faithful mode.
	Aged bool

	Unsent    int           // bytes accepted by the transport but not yet sent
	Threshold int           // bytes: the unsent level at or below which it invites
	RTT       time.Duration // smoothed round-trip time; 0 if unknown
	MinRTT    time.Duration // smallest round trip seen; 0 if unknown
	// Lead is the production time the invitation allowed for (the
	// application's declared lead; zero in a kernel-faithful mode).
	Lead time.Duration
	Wake Wake
	// Sent and Lost count the packets the connection has sent since it
	// began (TCP: data segments, retransmissions included; QUIC: packets)
	// and those it has declared lost (TCP: segments retransmitted; QUIC:
	// packets lost). Their growth between invitations is the loss rate,
	// the congestion signal of a bottleneck buffer too short for a queue
	// to show in the round trip. Zero where RTT is.
	Sent, Lost int64

	// Target says that DrainRate is not a measurement of the path but a
	// congestion controller's target rate (WebRTC's send-side bandwidth
	// estimate), to be followed as is: the controller already probes
	// for bandwidth and backs off on queueing and loss, so the sender
	// aims its encoder at DrainRate without corrections of its own.
	// Such a transport invites every source frame.
	Target bool

	// HeadWait is how long the newest frame whose predecessor has been
	// acknowledged in full waited at the bottleneck behind that
	// predecessor's tail (HeadWatch): the acknowledgement less the
	// frame's write and MinRTT; negative when it met no queue of the
	// stream's own. HeadWaitAt is that frame's write, zero where the
	// transport does not measure it (TCP measures it from
	// SCM_TSTAMP_ACK stamps, QUIC from quic-go's packet events).
	HeadWait   time.Duration
	HeadWaitAt time.Time
	// HeadWaitRepaired says the transport retransmitted since the
	// predecessor's write (HeadWatch.Repaired): its acknowledgement may
	// have waited a repair's round trip, and HeadWait is then only a
	// bound.
	HeadWaitRepaired bool

	// LatestRTT is the newest round-trip sample and LatestRTTAt the
	// acknowledgement that gave it, zero where the transport has none:
	// TCP's newest frame acknowledged in full, from its last byte's
	// departure to its SCM_TSTAMP_ACK stamp (HeadWatch.LatestRTT); QUIC's
	// latest sample (quic-go's, less the peer's ack delay) at its newest
	// acknowledgement. RTT smooths an eighth per ACK: at a few packets a
	// second it takes seconds to follow a queue that has drained.
	LatestRTT   time.Duration
	LatestRTTAt time.Time

	// Drain records the drain-rate estimator's latest input and output.
	Drain DrainRecord
}

// DrainRecord is what a transport's drain-rate estimate rests on, as of one
// decision: what a per-frame record carries to explain a DrainRate.
type DrainRecord struct {
	Input    drain.Sample   // the estimator's latest sample
	Estimate drain.Estimate // its output after that sample
	// StackRate and StackAppLimited are the transport stack's own
	// delivery-rate sample (TCP: tcpi_delivery_rate and its app-limited
	// bit), for comparison; zero where the stack has none.
	StackRate       rate.Bitrate
	StackAppLimited bool
}

// SendRecord describes one frame written to a transport.
type SendRecord struct {
	ID         uint64    // the id the caller gave the write
	Bytes      int       // bytes written, framing included
	WriteStart time.Time // just before the write call
	WriteEnd   time.Time // when the write call returned
	LeftHost   time.Time // when the last byte left the host; zero if unknown

	// Retransmits is the connection's count of retransmitted segments so
	// far, as the transport last read it before the write: the difference
	// between two records of one connection counts the retransmits
	// between them.
	Retransmits int
}

// SourceDelay returns how long the frame waited in the sender's own buffers:
// from the start of the write until its last byte left the host. It returns
// -1 if the departure is unknown.
func (r SendRecord) SourceDelay() time.Duration {
	if r.LeftHost.IsZero() {
		return -1
	}
	return r.LeftHost.Sub(r.WriteStart)
}
