package viewer

import "time"

// RecordKind says what a Record describes.
type RecordKind int

const (
	// RecordReceived: the viewer has read a frame's last packet.
	RecordReceived RecordKind = iota + 1
	// RecordDisplayed: a page reported a frame drawn (by its WebCodecs
	// view, or by its native player).
	RecordDisplayed
	// RecordLost: frames of a stream did not arrive whole.
	RecordLost
)

// LostReason says how the viewer knows frames were lost.
type LostReason int

const (
	// LostReset: the sender reset the frame's QUIC stream before the
	// frame was whole (the expire mode).
	LostReset LostReason = iota + 1
	// LostGap: RTP sequence numbers skipped (a frame never sent, or one
	// the assembler discarded); counted as one frame.
	LostGap
)

// String returns "reset" or "gap".
func (r LostReason) String() string {
	switch r {
	case LostReset:
		return "reset"
	case LostGap:
		return "gap"
	}
	return "unknown"
}

// Record is one per-frame event, for experiment records (cmd/viewer
// -records). Times on the viewer's clock unless said otherwise.
type Record struct {
	Kind   RecordKind
	Stream uint32
	Frame  uint32 // the viewer's frame id within the stream; RecordLost has none

	// RecordReceived.
	Name         string
	RTPTimestamp uint32
	Capture      time.Time // sender's clock, from abs-capture-time; zero if absent
	Received     time.Time
	Bytes        int
	Key          bool
	Width        int // pixels; 0 until the first keyframe
	Height       int
	ClockOffset  time.Duration // viewer's clock minus the sender's, as last reported
	// Undecodable: the frame depends on a lost frame, so it did not go
	// to pages.
	Undecodable bool
	// Layered says the stream has temporal layers and TID is the frame's
	// (RecordReceived), or as the page reported it (RecordDisplayed).
	Layered bool
	TID     uint8

	// RecordLost (with Stream, Name, and Received: when the loss was found).
	Lost       int // frames
	LostReason LostReason

	// RecordDisplayed.
	Client uint32
	// Native: the page's native player (WHEP, a video element) presented
	// the frame, not its WebCodecs view; Frame is then 0 (unknown), and
	// Decode and Draw are unknown.
	Native    bool
	Displayed time.Time     // when the page had drawn it, on the viewer's clock
	G2G       time.Duration // glass-to-glass from the pixels; -1 on a misread
	Misread   bool
	Decode    time.Duration // -1 if unknown
	Draw      time.Duration // -1 if unknown
}
