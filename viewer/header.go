package viewer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Each frame goes to a page as one binary WebSocket message: a header
// followed by the VP8 frame. The header, all big-endian:
//
//	off size
//	  0  u8   version (1)
//	  1  u8   flags: bit 0 keyframe; bit 1 clock offset known; bit 2
//	          temporal layers: the stream has them, and bits 3 to 5 give
//	          the frame's; bit 3 layer sync (RFC 7741's Y: the frame
//	          depends only on base layer frames); bits 4-5 the temporal
//	          layer (TID, 0 the base layer); bit 6 catch-up: the frame
//	          is older than the stream's newest, sent after the stream's
//	          latest keyframe to a page that has just joined so that it
//	          can decode what follows: decode it whatever the decoder's
//	          queue; bit 7 zero. Bits 2 to 5 are zero when bit 2 is
//	          clear. A reader ignores flag bits it does not know, so
//	          pages from before bits 2 to 6 read these headers unchanged.
//	  2  u16  header length in bytes (48 in version 1); the VP8 frame
//	          starts there, so later versions can append fields
//	  4  u32  stream id
//	  8  u32  frame id: counts the stream's frames from 0, across
//	          reconnections
//	 12  u32  RTP timestamp (90 kHz)
//	 16  u16  width, pixels, from the stream's last keyframe (0 unknown)
//	 18  u16  height, pixels (0 unknown)
//	 20  u32  SSRC
//	 24  i64  capture time, µs since the Unix epoch, sender's clock, from
//	          abs-capture-time (0 unknown)
//	 32  i64  received complete, µs since the Unix epoch, viewer's clock
//	 40  i64  clock offset, µs: viewer's clock minus sender's, as the
//	          sender last reported it (0 unknown)
const (
	// FrameHeaderVersion is the header layout this package writes.
	FrameHeaderVersion = 1
	// FrameHeaderSize is the size of a version 1 header in bytes.
	FrameHeaderSize = 48

	flagKey         = 1 << 0
	flagOffsetKnown = 1 << 1
	flagLayered     = 1 << 2
	flagLayerSync   = 1 << 3
	tidShift        = 4 // the TID in bits 4-5
	tidMask         = 3
	flagCatchUp     = 1 << 6
)

// ErrBadHeader is returned by ParseFrameHeader for a message that does not
// start with a valid header.
var ErrBadHeader = errors.New("viewer: malformed frame header")

// FrameHeader describes one frame sent to pages. See the layout above.
type FrameHeader struct {
	Stream       uint32
	Frame        uint32
	Key          bool
	RTPTimestamp uint32
	Width        int // pixels; 0 if unknown
	Height       int // pixels; 0 if unknown
	SSRC         uint32
	Capture      time.Time     // sender's clock; zero if unknown
	Received     time.Time     // viewer's clock
	ClockOffset  time.Duration // viewer's clock minus sender's
	OffsetKnown  bool          // a sender report has given ClockOffset
	// Layered says the stream has temporal layers, and TID and LayerSync
	// are the frame's (framer.Layer's Present, TID and Sync); both are
	// zero when it is false.
	Layered   bool
	TID       uint8 // temporal layer, 0 (base) to 3
	LayerSync bool  // RFC 7741's Y bit
	// CatchUp marks a frame sent to a page that has just joined, from
	// the stream's latest keyframe up to its newest frame.
	CatchUp bool
}

// Append appends the header's wire form to b. Sizes that do not fit 16
// bits are written as 0 (unknown), and of TID only its two low bits; TID
// and LayerSync only if Layered.
func (h FrameHeader) Append(b []byte) []byte {
	var flags byte
	if h.Key {
		flags |= flagKey
	}
	if h.OffsetKnown {
		flags |= flagOffsetKnown
	}
	if h.Layered {
		flags |= flagLayered | (h.TID&tidMask)<<tidShift
		if h.LayerSync {
			flags |= flagLayerSync
		}
	}
	if h.CatchUp {
		flags |= flagCatchUp
	}
	b = append(b, FrameHeaderVersion, flags)
	b = binary.BigEndian.AppendUint16(b, FrameHeaderSize)
	b = binary.BigEndian.AppendUint32(b, h.Stream)
	b = binary.BigEndian.AppendUint32(b, h.Frame)
	b = binary.BigEndian.AppendUint32(b, h.RTPTimestamp)
	b = binary.BigEndian.AppendUint16(b, dim16(h.Width))
	b = binary.BigEndian.AppendUint16(b, dim16(h.Height))
	b = binary.BigEndian.AppendUint32(b, h.SSRC)
	b = binary.BigEndian.AppendUint64(b, uint64(unixMicro(h.Capture)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixMicro(h.Received)))
	return binary.BigEndian.AppendUint64(b, uint64(h.ClockOffset.Microseconds()))
}

// ParseFrameHeader reads the header at the start of a frame message and
// returns it with the VP8 frame that follows. It returns an error wrapping
// ErrBadHeader for a short message, an unknown version, a header length
// or a clock offset out of range.
func ParseFrameHeader(msg []byte) (FrameHeader, []byte, error) {
	if len(msg) < FrameHeaderSize {
		return FrameHeader{}, nil, fmt.Errorf("%w: %d bytes", ErrBadHeader, len(msg))
	}
	if msg[0] != FrameHeaderVersion {
		return FrameHeader{}, nil, fmt.Errorf("%w: version %d", ErrBadHeader, msg[0])
	}
	n := int(binary.BigEndian.Uint16(msg[2:]))
	if n < FrameHeaderSize || n > len(msg) {
		return FrameHeader{}, nil, fmt.Errorf("%w: header length %d in a %d-byte message", ErrBadHeader, n, len(msg))
	}
	offset := int64(binary.BigEndian.Uint64(msg[40:]))
	if offset > math.MaxInt64/int64(time.Microsecond) || offset < math.MinInt64/int64(time.Microsecond) {
		return FrameHeader{}, nil, fmt.Errorf("%w: clock offset of %d µs", ErrBadHeader, offset)
	}
	h := FrameHeader{
		Key:          msg[1]&flagKey != 0,
		OffsetKnown:  msg[1]&flagOffsetKnown != 0,
		CatchUp:      msg[1]&flagCatchUp != 0,
		Stream:       binary.BigEndian.Uint32(msg[4:]),
		Frame:        binary.BigEndian.Uint32(msg[8:]),
		RTPTimestamp: binary.BigEndian.Uint32(msg[12:]),
		Width:        int(binary.BigEndian.Uint16(msg[16:])),
		Height:       int(binary.BigEndian.Uint16(msg[18:])),
		SSRC:         binary.BigEndian.Uint32(msg[20:]),
		Capture:      fromUnixMicro(int64(binary.BigEndian.Uint64(msg[24:]))),
		Received:     fromUnixMicro(int64(binary.BigEndian.Uint64(msg[32:]))),
		ClockOffset:  time.Duration(offset) * time.Microsecond,
	}
	if msg[1]&flagLayered != 0 {
		h.Layered = true
		h.TID = msg[1] >> tidShift & tidMask
		h.LayerSync = msg[1]&flagLayerSync != 0
	}
	return h, msg[n:], nil
}

// withCatchUp returns a copy of the frame message msg (a header and a
// frame) with the header's catch-up flag set.
func withCatchUp(msg []byte) []byte {
	out := slices.Clone(msg)
	out[1] |= flagCatchUp
	return out
}

func dim16(v int) uint16 {
	if v < 0 || v > 0xFFFF {
		return 0
	}
	return uint16(v)
}

// unixMicro returns t in µs since the Unix epoch, and 0 for the zero Time.
func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromUnixMicro is the inverse of unixMicro.
func fromUnixMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}
