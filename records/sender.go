package records

import (
	"time"

	"replenish/transport"
	"replenish/transport/drain"
)

// Frame is a "frame" line of cmd/sender's records: one frame written, with
// the stamps of its life. It is a plain struct: a field added to the
// sender's per-frame record is added here, once, with its JSON name.
type Frame struct {
	Kind          string `json:"kind"` // KindFrame
	ID            uint64 `json:"id"`
	RTPTimestamp  uint32 `json:"rtp_ts"`
	CaptureUs     int64  `json:"capture_us"`
	EncodeStartUs int64  `json:"encode_start_us"`
	EncodeEndUs   int64  `json:"encode_end_us"`
	WriteStartUs  int64  `json:"write_start_us"`
	WriteEndUs    int64  `json:"write_end_us"`
	LeftHostUs    int64  `json:"left_host_us,omitempty"` // its last byte left the host; 0: unknown
	Bytes         int    `json:"bytes"`
	Written       int    `json:"written,omitempty"` // bytes written for it (RTP and control packets); 0: not recorded
	Width         int    `json:"width"`
	Height        int    `json:"height"`
	Key           bool   `json:"key,omitempty"`
	TargetBps     int64  `json:"target_bps"` // the encoder's target
	DrainBps      int64  `json:"drain_bps"`  // the invitation's drain-rate estimate; 0: none
	AppLimited    bool   `json:"app_limited,omitempty"`
	Skipped       int    `json:"skipped,omitempty"` // raw frames discarded before this one
	Retransmits   int    `json:"retransmits"`       // the connection's, before the write
	// LeadUs is the production time the invitation allowed for, in µs.
	LeadUs int64 `json:"lead_us,omitempty"`
	// Drain is what the invitation's drain rate rests on: the drain-rate
	// estimator's latest input and output. Absent in files written before
	// it was added, and where the transport keeps no estimator (WebRTC,
	// whose drain_bps is its congestion controller's target).
	Drain *Drain `json:"drain,omitempty"`
	// Control is the rate controller's state after the update that chose
	// the frame's target. Absent in files written before it was added and
	// in modes where the controller does not act (no drain rate: default
	// and lowat; WebRTC, whose target is its congestion controller's).
	Control *Control `json:"control,omitempty"`
}

// Control is a frame's sender.ControlState. Rates are in bits per second of
// the bytes the sender writes (packets and control included), times in µs.
type Control struct {
	Phase       string `json:"phase"` // starting, recovering, cruising, probing
	RateBps     int64  `json:"rate_bps"`
	CapacityBps int64  `json:"capacity_bps"`
	ExcessUs    int64  `json:"excess_us"` // queueing above the base and the frames' own
	ShiftUs     int64  `json:"shift_us,omitempty"`
	// RTTUs is the round trip the update read: the transport's smoothed
	// RTT, or its fresher samples where they all lie below it. Absent in
	// files written before it was added.
	RTTUs int64 `json:"rtt_us,omitempty"`
	Cut   bool  `json:"cut,omitempty"` // the update made a cut (congestion, loss, or the transport's limit)
	// WaitUs is the least of the last frames' waits at the bottleneck
	// behind the frame before (transport.HeadWatch), less the shift;
	// absent where the transport does not measure it (WebRTC, QUIC's
	// expire mode, and files written before it was added) and where a
	// retransmission may have lengthened each of the last waits.
	WaitUs *int64 `json:"wait_us,omitempty"`
	// Loss is the share of packets the transport declared lost over the
	// controller's last window, LossBase the share it takes for the
	// path's own (random loss).
	Loss     float64 `json:"loss,omitempty"`
	LossBase float64 `json:"loss_base,omitempty"`
	// Overflow says a probe lost packets before its queue showed, not
	// long before: probes lead the drain rate by little.
	Overflow bool `json:"overflow,omitempty"`
}

// Drain is a frame's transport.DrainRecord: the estimator's latest sample
// (drain.Sample) and its estimate after it (drain.Estimate), with the
// stack's own delivery-rate sample. Rates are in bits per second, times in
// µs.
type Drain struct {
	// The estimate.
	RateBps    int64  `json:"rate_bps"`
	Source     string `json:"source"` // drain.Source: none, window, measured, window-capped, pacing-capped, stack
	AppLimited bool   `json:"app_limited,omitempty"`
	// Aged: the rate is held from a window older than the estimator's
	// horizon (drain.Estimate.Aged).
	Aged bool `json:"aged,omitempty"`
	// MeasuredBps is the highest window in the estimator's maximum, before
	// the bounds; BoundBps the tighter of the bounds.
	MeasuredBps int64 `json:"measured_bps,omitempty"`
	BoundBps    int64 `json:"bound_bps,omitempty"`
	// WindowBps is the window the sample closed, if any, and
	// WindowPathLimited whether the path set its pace.
	WindowBps         int64 `json:"window_bps,omitempty"`
	WindowPathLimited bool  `json:"window_path_limited,omitempty"`
	// NewestBps is the newest path-limited window, which closed at
	// NewestAtUs: while the maximum still holds a faster path's rate, the
	// path as it is now.
	NewestBps  int64 `json:"newest_bps,omitempty"`
	NewestAtUs int64 `json:"newest_at_us,omitempty"`

	// The sample.
	AtUs       int64  `json:"at_us,omitempty"`
	Delivered  uint64 `json:"delivered"` // bytes acknowledged so far
	Acks       uint64 `json:"acks"`
	InFlight   int    `json:"in_flight"`            // bytes; -1: unknown
	Backlogged bool   `json:"backlogged,omitempty"` // held unsent data since the previous sample
	Recovering bool   `json:"recovering,omitempty"` // repairing a loss
	SRTTUs     int64  `json:"srtt_us,omitempty"`
	MinRTTUs   int64  `json:"min_rtt_us,omitempty"`
	Cwnd       int    `json:"cwnd,omitempty"` // bytes
	PeerWindow int    `json:"peer_window"`    // bytes; -1: unknown
	PacingBps  int64  `json:"pacing_bps,omitempty"`

	// The stack's own delivery-rate sample (TCP: tcpi_delivery_rate).
	StackBps        int64 `json:"stack_bps,omitempty"`
	StackAppLimited bool  `json:"stack_app_limited,omitempty"`
}

// DrainOf returns the records form of d, or nil when d is empty (the
// transport keeps no estimator).
func DrainOf(d transport.DrainRecord) *Drain {
	if d == (transport.DrainRecord{}) {
		return nil
	}
	in, e := d.Input, d.Estimate
	return &Drain{
		RateBps: int64(e.Rate), Source: e.Source.String(), AppLimited: e.AppLimited, Aged: e.Aged,
		MeasuredBps: int64(e.Measured), BoundBps: int64(e.Bound), WindowBps: int64(e.Window), WindowPathLimited: e.WindowPathLimited,
		NewestBps: int64(e.Newest), NewestAtUs: Micros(e.NewestAt),
		AtUs: Micros(in.At), Delivered: in.Delivered, Acks: in.Acks, InFlight: in.InFlight,
		Backlogged: in.Backlogged, Recovering: in.Recovering, SRTTUs: in.SRTT.Microseconds(), MinRTTUs: in.MinRTT.Microseconds(),
		Cwnd: in.Cwnd, PeerWindow: in.PeerWindow, PacingBps: int64(in.PacingRate),
		StackBps: int64(d.StackRate), StackAppLimited: d.StackAppLimited,
	}
}

// Known reports whether the estimate carries a rate (its source is not
// "none").
func (d *Drain) Known() bool {
	return d != nil && d.Source != "" && d.Source != drain.SourceNone.String()
}

// Conn is the "conn" line a sending program writes when a connection ends
// (cmd/sender, bulk-send, rr-client): the transport's counters over the
// connection.
type Conn struct {
	Kind             string `json:"kind"`                // KindConn
	Transport        string `json:"transport,omitempty"` // "tcp", "quic" or "webrtc"; absent in files written before it was added
	EndUs            int64  `json:"end_us"`              // when the connection ended
	Retransmits      int    `json:"retransmits"`         // segments retransmitted (TCP), packets lost (QUIC, WebRTC)
	BytesRetrans     uint64 `json:"bytes_retrans"`
	BytesWritten     uint64 `json:"bytes_written"` // framing included
	Frames           uint64 `json:"frames"`        // writes: frames for cmd/sender
	InvitedKernel    uint64 `json:"invited_kernel"`
	InvitedTimer     uint64 `json:"invited_timer"`
	InvitedAtOnce    uint64 `json:"invited_immediate"`
	RecordsUnstamped uint64 `json:"records_unstamped"` // writes without a departure time
	// QUIC's expire mode (transport/quic Conn.Expired): frames dropped
	// before any byte was sent, frames whose stream was reset part way,
	// and the bytes sent for those. Absent for other modes.
	ExpiredDropped uint64 `json:"expired_dropped,omitempty"`
	ExpiredReset   uint64 `json:"expired_reset,omitempty"`
	BytesReset     uint64 `json:"bytes_reset,omitempty"`
}

// ConnOf returns the Conn line of a connection over the named transport
// ("tcp", "quic", "webrtc") that ended at end with the counters c.
func ConnOf(end time.Time, transportName string, c transport.Counters) Conn {
	return Conn{
		Kind: KindConn, Transport: transportName, EndUs: Micros(end),
		Retransmits: c.Retransmits, BytesRetrans: c.BytesRetrans, BytesWritten: c.BytesWritten, Frames: c.Frames,
		InvitedKernel: c.InvitedKernel, InvitedTimer: c.InvitedTimer, InvitedAtOnce: c.InvitedImmediate,
		RecordsUnstamped: c.RecordsUnstamped,
	}
}
