package records

import (
	"time"

	"replenish/transport"
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
	Width         int    `json:"width"`
	Height        int    `json:"height"`
	Key           bool   `json:"key,omitempty"`
	TargetBps     int64  `json:"target_bps"` // the encoder's target
	DrainBps      int64  `json:"drain_bps"`  // the invitation's drain-rate estimate; 0: none
	AppLimited    bool   `json:"app_limited,omitempty"`
	Skipped       int    `json:"skipped,omitempty"` // raw frames discarded before this one
	Retransmits   int    `json:"retransmits"`       // the connection's, before the write
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
