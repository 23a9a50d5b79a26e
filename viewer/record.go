package viewer

import "time"

// RecordKind says what a Record describes.
type RecordKind int

const (
	// RecordReceived: the viewer has read a frame's last packet.
	RecordReceived RecordKind = iota + 1
	// RecordDisplayed: a page reported a frame drawn.
	RecordDisplayed
)

// Record is one per-frame event, for experiment records (cmd/viewer
// -records). Times on the viewer's clock unless said otherwise.
type Record struct {
	Kind   RecordKind
	Stream uint32
	Frame  uint32 // the viewer's frame id within the stream

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

	// RecordDisplayed.
	Client    uint32
	Displayed time.Time     // when the page had drawn it, on the viewer's clock
	G2G       time.Duration // glass-to-glass from the pixels; -1 on a misread
	Misread   bool
	Decode    time.Duration // -1 if unknown
	Draw      time.Duration // -1 if unknown
}
