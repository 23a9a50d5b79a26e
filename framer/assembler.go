package framer

import (
	"errors"
	"fmt"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// DefaultMaxFrameSize is the largest VP8 frame an Assembler accepts unless
// told otherwise, in bytes.
const DefaultMaxFrameSize = 4 << 20

// Errors returned by Assembler.Push. Errors for malformed packets wrap
// ErrBadPacket, and ErrRTCPPacket or ErrBadDescriptor as well where they
// apply.
var (
	ErrBadPacket     = errors.New("framer: malformed RTP packet")
	ErrRTCPPacket    = errors.New("framer: RTCP packet where RTP was expected")
	ErrBadDescriptor = errors.New("framer: malformed VP8 payload descriptor")
	ErrFrameTooLarge = errors.New("framer: frame larger than the limit")
)

// Frame is one complete VP8 frame reassembled from RTP packets.
type Frame struct {
	SSRC      uint32
	Timestamp uint32 // RTP timestamp, 90 kHz
	// Capture is the frame's abs-capture-time, or one extrapolated from
	// the last the stream carried by the RTP timestamps, if that is at most
	// CaptureTimeMaxAge away; zero if neither.
	Capture time.Time
	Key     bool   // VP8 keyframe
	Width   int    // pixels, from the keyframe header; 0 for delta frames
	Height  int    // pixels, from the keyframe header; 0 for delta frames
	Data    []byte // the VP8 frame; owned by the caller
	Packets int    // RTP packets the frame came in
	// FirstSeq is the RTP sequence number of the frame's first packet; its
	// packets are numbered FirstSeq to FirstSeq+Packets-1 (modulo 2^16).
	FirstSeq uint16
	// Layer is the frame's temporal layer from the payload descriptor of
	// its first packet: Present only if that descriptor had both the T
	// and the L bit (TID, Y and TL0PICIDX); the zero Layer otherwise, as
	// for a stream without temporal layers.
	Layer Layer
}

// AssemblerStats counts what an Assembler has seen since it was created.
type AssemblerStats struct {
	Frames     uint64 // complete frames returned
	Dropped    uint64 // partial frames discarded: gap, timestamp or SSRC change, new start, oversize
	Oversized  uint64 // of Dropped, frames discarded for exceeding the size limit
	BadFrames  uint64 // complete frames discarded because they are not VP8
	BadPackets uint64 // packets rejected as malformed
	Skipped    uint64 // well-formed packets ignored while waiting for a frame start
}

// Assembler rebuilds VP8 frames from an in-order stream of RTP packets
// (RFC 7741), such as a stream read from TCP with RFC 4571 framing. A frame
// starts at a packet whose payload descriptor has S=1 and partition index 0
// and ends at the packet with the marker bit. A gap in sequence numbers, a
// change of timestamp or SSRC inside a frame, or a frame over the size
// limit discards the partial frame; the Assembler then waits for the next
// frame start. Each frame carries the temporal layer its first packet's
// payload descriptor gives (Frame.Layer). An Assembler is not safe for
// concurrent use.
type Assembler struct {
	maxFrameSize int
	stats        AssemblerStats

	pkt  rtp.Packet       // reused for parsing
	desc codecs.VP8Packet // reused for parsing

	// The frame being assembled; meaningful while active.
	active   bool
	ssrc     uint32
	ts       uint32
	firstSeq uint16
	lastSeq  uint16
	capture  time.Time
	layer    Layer
	packets  int
	buf      []byte
	lastLen  int // size of the previous complete frame, to size buf

	stamp captureStamp // the last capture time received
}

// captureStamp is the last abs-capture-time a stream carried, from which the
// capture times of frames without one are extrapolated (the extension's
// "timestamp interpolation"; the Packetizer leaves it out where that is
// exact).
type captureStamp struct {
	ok      bool
	ssrc    uint32
	ts      uint32
	capture time.Time
}

// resolve returns got, the capture time a frame of stream ssrc with RTP
// timestamp ts carried, and remembers it; if got is zero, the capture time
// extrapolated from the last one remembered, or zero if there is none for
// ssrc within CaptureTimeMaxAge.
func (c *captureStamp) resolve(ssrc, ts uint32, got time.Time) time.Time {
	if !got.IsZero() {
		*c = captureStamp{true, ssrc, ts, got}
		return got
	}
	d := int64(int32(ts - c.ts)) // RTP timestamps wrap
	if !c.ok || ssrc != c.ssrc || d > maxAgeTicks || d < -maxAgeTicks {
		return time.Time{}
	}
	return c.capture.Add(ticksDuration(d))
}

// maxAgeTicks is CaptureTimeMaxAge in 90 kHz ticks.
const maxAgeTicks = int64(CaptureTimeMaxAge / time.Second * ClockRate)

// NewAssembler returns an Assembler that discards frames larger than
// maxFrameSize bytes (0 means DefaultMaxFrameSize). It never holds more
// than maxFrameSize bytes of frame data.
func NewAssembler(maxFrameSize int) *Assembler {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	return &Assembler{maxFrameSize: maxFrameSize}
}

// Push adds the next RTP packet of the stream. It returns a frame when pkt
// completes one, and nil otherwise; pkt is not retained.
//
// A malformed packet (not RTP version 2, RTCP, a truncated header, payload
// descriptor or abs-capture-time extension) gives an error wrapping
// ErrBadPacket and is otherwise ignored; if it was part of the frame in
// progress, the gap in sequence numbers discards that frame at the next
// packet. Callers that share a connection between RTP and RTCP should
// demultiplex with IsRTCP first. A frame that grows past the size limit is
// discarded with an error wrapping ErrFrameTooLarge, and a complete frame
// that is not VP8 with one wrapping ErrNotVP8. Gaps and timestamp changes
// are not errors: they are counted in Stats. After any error the Assembler
// carries on with the next packet.
func (a *Assembler) Push(pkt []byte) (*Frame, error) {
	payload, err := a.parse(pkt)
	if err != nil {
		// The partial frame stays: if the bad packet belonged to it, the
		// next packet's sequence number shows the gap.
		a.stats.BadPackets++
		return nil, err
	}
	h := &a.pkt.Header
	start := a.desc.S == 1 && a.desc.PID == 0
	var capture time.Time
	if start {
		if capture, err = captureTime(h); err != nil {
			a.stats.BadPackets++
			return nil, err
		}
		capture = a.stamp.resolve(h.SSRC, h.Timestamp, capture)
	}

	if a.active && (h.SSRC != a.ssrc || h.SequenceNumber != a.lastSeq+1 || h.Timestamp != a.ts || start) {
		a.discard()
	}
	if !a.active {
		if !start {
			a.stats.Skipped++
			return nil, nil
		}
		a.active = true
		a.ssrc, a.ts, a.capture, a.firstSeq = h.SSRC, h.Timestamp, capture, h.SequenceNumber
		a.layer = layerOf(&a.desc)
		a.packets = 0
		if a.buf == nil {
			a.buf = make([]byte, 0, min(a.lastLen+a.lastLen/4, a.maxFrameSize))
		}
	}
	if len(a.buf)+len(payload) > a.maxFrameSize {
		size := len(a.buf) + len(payload)
		a.stats.Oversized++
		a.discard()
		return nil, fmt.Errorf("%w: more than %d bytes (limit %d)", ErrFrameTooLarge, size, a.maxFrameSize)
	}
	a.buf = append(a.buf, payload...)
	a.packets++
	a.lastSeq = h.SequenceNumber
	if !h.Marker {
		return nil, nil
	}

	data := a.buf
	a.buf = nil
	a.active = false
	key, w, ht, err := ParseVP8Header(data)
	if err != nil {
		a.stats.BadFrames++
		a.buf = data[:0] // reuse: nothing was handed out
		return nil, err
	}
	a.stats.Frames++
	a.lastLen = len(data)
	return &Frame{
		SSRC:      a.ssrc,
		Timestamp: a.ts,
		Capture:   a.capture,
		Key:       key,
		Width:     w,
		Height:    ht,
		Data:      data,
		Packets:   a.packets,
		FirstSeq:  a.firstSeq,
		Layer:     a.layer,
	}, nil
}

// layerOf returns the temporal layer a parsed payload descriptor carries:
// the zero Layer unless it has both TID (T) and TL0PICIDX (L).
func layerOf(d *codecs.VP8Packet) Layer {
	if d.T != 1 || d.L != 1 {
		return Layer{}
	}
	return Layer{Present: true, TID: d.TID, Sync: d.Y == 1, TL0PicIdx: d.TL0PICIDX}
}

// Stats returns the Assembler's counters.
func (a *Assembler) Stats() AssemblerStats { return a.stats }

// parse checks pkt and returns its VP8 payload, leaving the header in a.pkt
// and the descriptor in a.desc.
func (a *Assembler) parse(pkt []byte) ([]byte, error) {
	switch {
	case len(pkt) > MaxPacketSize:
		return nil, fmt.Errorf("%w: %d bytes", ErrBadPacket, len(pkt))
	case len(pkt) < 2:
		return nil, fmt.Errorf("%w: %d bytes", ErrBadPacket, len(pkt))
	case pkt[0]>>6 != 2:
		return nil, fmt.Errorf("%w: version %d", ErrBadPacket, pkt[0]>>6)
	case IsRTCP(pkt):
		return nil, fmt.Errorf("%w: %w", ErrBadPacket, ErrRTCPPacket)
	}
	if err := a.pkt.Unmarshal(pkt); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPacket, err)
	}
	payload, err := a.desc.Unmarshal(a.pkt.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %w", ErrBadPacket, ErrBadDescriptor, err)
	}
	return payload, nil
}

// discard drops the partial frame, if any.
func (a *Assembler) discard() {
	if !a.active {
		return
	}
	a.stats.Dropped++
	a.active = false
	a.buf = a.buf[:0]
}

// captureTime returns the capture time from h's abs-capture-time
// extension, or the zero Time if there is none.
func captureTime(h *rtp.Header) (time.Time, error) {
	raw := h.GetExtension(AbsCaptureTimeID)
	if raw == nil {
		return time.Time{}, nil
	}
	var ext rtp.AbsCaptureTimeExtension
	if err := ext.Unmarshal(raw); err != nil {
		return time.Time{}, fmt.Errorf("%w: abs-capture-time of %d bytes: %w", ErrBadPacket, len(raw), err)
	}
	// NTP seconds before 1970 cannot be a capture time (and would wrap in
	// the conversion).
	if ext.Timestamp>>32 < ntpUnixEpoch {
		return time.Time{}, nil
	}
	return ext.CaptureTime(), nil
}

// ntpUnixEpoch is 1970-01-01 in NTP seconds (since 1900).
const ntpUnixEpoch = 2208988800
