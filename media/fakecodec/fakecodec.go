// Package fakecodec is a stand-in VP8 encoder for tests that need frames on
// the wire but no picture in them, and no cgo. Its frames have a real VP8
// uncompressed header (RFC 6386 section 9.1: the frame tag and, for a
// keyframe, the start code and the picture size), so that packetizers,
// assemblers and viewers take them as VP8; after the header each carries the
// picture's capture time, then filler. No decoder can show them.
//
// A frame's size follows the target bitrate and the nominal frame rate
// (Bitrate / FPS), a keyframe KeyFactor times that, so that tests of rate
// and pacing see plausible sizes. Keyframes come where a real encoder puts
// them: on the first frame, when forced, and after a size change. With
// temporal layers (media.EncoderConfig.Scalability) each frame's Layer
// follows media.Layering's pattern, restarted at every keyframe, as the
// libvpx encoder's does; the sizes do not depend on the layer.
package fakecodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"replenish/media"
	"replenish/rate"
)

// KeyFactor is a keyframe's size in nominal frames.
const KeyFactor = 3

// Header layout (RFC 6386 section 9.1), then the capture time.
const (
	tagLen      = 3                       // frame tag
	keyHeadLen  = 10                      // frame tag, start code, width and height
	captureLen  = 8                       // capture time, Unix ns, big-endian
	maxFirstLen = 1<<19 - 1               // the tag's 19-bit first partition size
	minLen      = keyHeadLen + captureLen // the smallest frame made
)

// ErrNotFake is returned by Capture for data that is not a frame of this
// package.
var ErrNotFake = errors.New("fakecodec: not a fake VP8 frame")

// Encoder makes fake VP8 frames. It implements the encoder interface the
// sender uses. It is not safe for concurrent use.
type Encoder struct {
	size    media.Size
	bitrate rate.Bitrate
	fps     int
	layers  media.Layering
	started bool // a frame has been made at the current size
	closed  bool
}

// NewEncoder returns an encoder for cfg, with the defaults of
// media.EncoderConfig. It returns an error wrapping media.ErrSize,
// media.ErrBitrate or media.ErrScalability if the configuration is
// unusable.
func NewEncoder(cfg media.EncoderConfig) (*Encoder, error) {
	if err := cfg.Size.Check(); err != nil {
		return nil, err
	}
	if err := cfg.Scalability.Check(); err != nil {
		return nil, err
	}
	if cfg.FPS <= 0 {
		cfg.FPS = 30
	}
	if cfg.Bitrate == 0 {
		cfg.Bitrate = media.RungOf(cfg.Size).Default()
	}
	if err := media.CheckBitrate(cfg.Bitrate); err != nil {
		return nil, err
	}
	return &Encoder{size: cfg.Size, bitrate: cfg.Bitrate, fps: cfg.FPS, layers: media.NewLayering(cfg.Scalability)}, nil
}

// Size returns the picture size of the last frame, or the configured one
// before any.
func (e *Encoder) Size() media.Size { return e.size }

// Bitrate returns the current target.
func (e *Encoder) Bitrate() rate.Bitrate { return e.bitrate }

// SetBitrate changes the target from the next frame on. It returns an error
// wrapping media.ErrBitrate if b is outside [media.MinBitrate,
// media.MaxBitrate], or media.ErrClosed after Close.
func (e *Encoder) SetBitrate(b rate.Bitrate) error {
	if e.closed {
		return media.ErrClosed
	}
	if err := media.CheckBitrate(b); err != nil {
		return err
	}
	e.bitrate = b
	return nil
}

// FrameLen returns the length of the frames an encoder makes at bitrate b
// and fps frames per second (0 means 30): b/fps, times KeyFactor for a
// keyframe, and never less than the header and capture time.
func FrameLen(b rate.Bitrate, fps int, key bool) int {
	if fps <= 0 {
		fps = 30
	}
	n := b.Bytes(time.Second / time.Duration(fps))
	if key {
		n *= KeyFactor
	}
	return max(n, minLen)
}

// Encode makes the frame for f: a keyframe if forceKey is set, if it is the
// first frame, or if f's size differs from the previous frame's (the
// encoder then takes the new size, keeping its bitrate), FrameLen long at
// the frame rate of f.Interval (the configured FPS if zero; at most
// media.MaxFrameInterval, as media/vpx). It does not block.
// It returns an error wrapping media.ErrSize or media.ErrFrame for a
// malformed frame, or media.ErrClosed after Close.
func (e *Encoder) Encode(f *media.Frame, forceKey bool) (media.EncodedFrame, error) {
	if e.closed {
		return media.EncodedFrame{}, media.ErrClosed
	}
	if err := f.Check(); err != nil {
		return media.EncodedFrame{}, err
	}
	start := time.Now()
	if f.Size != e.size {
		e.size, e.started = f.Size, false
	}
	key := forceKey || !e.started
	e.started = true
	fps := e.fps
	if f.Interval > 0 {
		fps = max(int(time.Second/min(f.Interval, media.MaxFrameInterval)), 1)
	}
	data := make([]byte, FrameLen(e.bitrate, fps, key))
	head := tagLen
	if key {
		head = keyHeadLen
	}
	// Frame tag: bit 0 clear for a keyframe, version 0, bit 4 show_frame,
	// bits 5..23 the first partition's length (here the rest of the frame).
	tag := uint32(min(len(data)-head, maxFirstLen))<<5 | 1<<4
	if !key {
		tag |= 1
	}
	data[0], data[1], data[2] = byte(tag), byte(tag>>8), byte(tag>>16)
	if key {
		data[3], data[4], data[5] = 0x9d, 0x01, 0x2a
		binary.LittleEndian.PutUint16(data[6:], uint16(e.size.W))
		binary.LittleEndian.PutUint16(data[8:], uint16(e.size.H))
	}
	binary.BigEndian.PutUint64(data[head:], uint64(f.Capture.UnixNano()))
	return media.EncodedFrame{Data: data, Key: key, Size: e.size, Start: start, End: time.Now(), Layer: e.layers.Next(key)}, nil
}

// Close ends the encoder: Encode and SetBitrate then return
// media.ErrClosed. Close may be called more than once.
func (e *Encoder) Close() error {
	e.closed = true
	return nil
}

// Capture returns the capture time carried by data, a frame made by an
// Encoder, to the nanosecond. It returns an error wrapping ErrNotFake if
// data is too short for one.
func Capture(data []byte) (time.Time, error) {
	head := tagLen
	if len(data) > 0 && data[0]&1 == 0 {
		head = keyHeadLen
	}
	if len(data) < head+captureLen {
		return time.Time{}, fmt.Errorf("%w: %d bytes", ErrNotFake, len(data))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(data[head:]))), nil
}
