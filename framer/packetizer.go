package framer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// RTP parameters of the media stream.
const (
	// DefaultPayloadType is the RTP payload type of VP8 unless configured
	// otherwise (the first dynamic payload type).
	DefaultPayloadType = 96
	// DefaultRTPPacketSize is the default largest RTP packet, in bytes,
	// header included.
	DefaultRTPPacketSize = 1200
	// AbsCaptureTimeID is the one-byte header extension ID that carries
	// the abs-capture-time extension.
	AbsCaptureTimeID = 1
	// AbsCaptureTimeURI names the abs-capture-time header extension.
	AbsCaptureTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"
	// ClockRate is the RTP clock rate of video, in ticks per second.
	ClockRate = 90000
)

// vp8DescriptorSize is the size of the VP8 payload descriptor the
// packetizer writes: the required octet, the X octet and a 15-bit
// PictureID.
const vp8DescriptorSize = 4

// Errors returned by the Packetizer.
var (
	ErrEmptyFrame       = errors.New("framer: empty frame")
	ErrBadCaptureTime   = errors.New("framer: capture time before the Unix epoch")
	ErrBadPacketSize    = errors.New("framer: maximum packet size out of range")
	ErrBadPayloadType   = errors.New("framer: payload type out of range")
	errPacketizeMarshal = errors.New("framer: marshalling RTP header")
)

// PacketizerConfig configures a Packetizer. The zero value of each field
// selects its default.
type PacketizerConfig struct {
	// SSRC identifies the stream in every packet. Zero is a valid SSRC.
	SSRC uint32
	// PayloadType is the RTP payload type, 0..127 (0 means 96).
	PayloadType uint8
	// MaxPacketSize is the largest RTP packet in bytes, header included
	// (0 means 1200; at most 65535, the RFC 4571 limit).
	MaxPacketSize int
}

// Packetizer splits VP8 frames into RTP packets (RFC 7741) of one stream.
// Sequence numbers continue across frames, RTP timestamps follow the
// capture times at 90 kHz, and every packet carries the capture time in the
// abs-capture-time header extension. A Packetizer is not safe for
// concurrent use.
type Packetizer struct {
	cfg       PacketizerConfig
	payloader codecs.VP8Payloader
	seq       uint16
	tsBase    uint32 // RTP timestamp of tick 0

	started       bool
	anchorCapture time.Time // capture time that maps to anchorTicks
	anchorTicks   int64
	lastCapture   time.Time // capture time of the previous frame
	lastTicks     int64     // ticks of the previous frame
}

// NewPacketizer returns a Packetizer for cfg. The first sequence number and
// RTP timestamp are random, as RFC 3550 recommends. An invalid
// configuration is reported by Packetize.
func NewPacketizer(cfg PacketizerConfig) *Packetizer {
	if cfg.PayloadType == 0 {
		cfg.PayloadType = DefaultPayloadType
	}
	if cfg.MaxPacketSize == 0 {
		cfg.MaxPacketSize = DefaultRTPPacketSize
	}
	return &Packetizer{
		cfg:       cfg,
		payloader: codecs.VP8Payloader{EnablePictureID: true},
		seq:       uint16(rand.Uint32()),
		tsBase:    rand.Uint32(),
	}
}

// Packetize splits one encoded VP8 frame, captured at capture, into
// marshalled RTP packets of at most the configured size, and returns them
// with the frame's RTP timestamp. The last packet carries the marker bit.
//
// The RTP timestamp is the capture time at 90 kHz, relative to the first
// frame of this Packetizer. It strictly increases from frame to frame: a
// frame whose capture time maps to the previous frame's tick or earlier
// gets the previous timestamp plus one. After a capture earlier than the
// previous one (the clock stepped back), later frames count on from that
// frame's timestamp.
//
// Packetize returns ErrEmptyFrame for an empty frame, ErrBadCaptureTime for
// a capture time before 1970, and ErrBadPacketSize or ErrBadPayloadType for
// an invalid configuration; on error the Packetizer's state is unchanged.
func (p *Packetizer) Packetize(frame []byte, capture time.Time) ([][]byte, uint32, error) {
	if p.cfg.PayloadType > 127 {
		return nil, 0, fmt.Errorf("%w: %d", ErrBadPayloadType, p.cfg.PayloadType)
	}
	hdr := rtp.Header{
		Version:     2,
		PayloadType: p.cfg.PayloadType,
		SSRC:        p.cfg.SSRC,
	}
	ext, err := rtp.NewAbsCaptureTimeExtension(capture).Marshal()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errPacketizeMarshal, err)
	}
	if err := hdr.SetExtensionWithProfile(AbsCaptureTimeID, ext, rtp.ExtensionProfileOneByte); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errPacketizeMarshal, err)
	}
	hdrSize := hdr.MarshalSize()
	if minSize := hdrSize + vp8DescriptorSize + 1; p.cfg.MaxPacketSize < minSize || p.cfg.MaxPacketSize > MaxPacketSize {
		return nil, 0, fmt.Errorf("%w: %d bytes (want %d to %d)", ErrBadPacketSize, p.cfg.MaxPacketSize, minSize, MaxPacketSize)
	}
	switch {
	case len(frame) == 0:
		return nil, 0, ErrEmptyFrame
	case capture.Before(time.Unix(0, 0)):
		return nil, 0, fmt.Errorf("%w: %v", ErrBadCaptureTime, capture)
	}

	ticks := p.ticks(capture)
	hdr.Timestamp = p.tsBase + uint32(ticks)

	payloads := p.payloader.Payload(uint16(p.cfg.MaxPacketSize-hdrSize), frame)
	total := 0
	for _, pl := range payloads {
		total += hdrSize + len(pl)
	}
	// One backing array for the whole frame: one allocation, not one per
	// packet.
	buf := make([]byte, total)
	pkts := make([][]byte, len(payloads))
	seq := p.seq
	for i, pl := range payloads {
		hdr.SequenceNumber = seq
		hdr.Marker = i == len(payloads)-1
		size := hdrSize + len(pl)
		out := buf[:size:size]
		buf = buf[size:]
		n, err := hdr.MarshalTo(out)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errPacketizeMarshal, err)
		}
		copy(out[n:], pl)
		pkts[i] = out
		seq++
	}
	p.seq = seq
	p.commitTicks(capture, ticks)
	return pkts, hdr.Timestamp, nil
}

// ticks returns the 90 kHz tick for a frame captured at capture: the
// capture time relative to the anchor, moved past the previous frame's tick
// if needed.
func (p *Packetizer) ticks(capture time.Time) int64 {
	if !p.started {
		return 0
	}
	t := p.anchorTicks + durationTicks(capture.Sub(p.anchorCapture))
	return max(t, p.lastTicks+1)
}

// commitTicks records that the frame captured at capture went out with
// ticks. A capture earlier than the previous one (the clock stepped back)
// becomes the new anchor, so that later frames keep their spacing; a
// capture that merely shares the previous tick does not move the anchor.
func (p *Packetizer) commitTicks(capture time.Time, ticks int64) {
	if !p.started || capture.Before(p.lastCapture) {
		p.anchorCapture, p.anchorTicks = capture, ticks
	}
	p.started = true
	p.lastCapture = capture
	p.lastTicks = ticks
}

// durationTicks converts d to 90 kHz ticks, rounding toward zero.
func durationTicks(d time.Duration) int64 {
	s := int64(d / time.Second)
	ns := int64(d % time.Second)
	return s*ClockRate + ns*ClockRate/int64(time.Second)
}
