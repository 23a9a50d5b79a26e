package framer

import (
	"errors"
	"fmt"
)

// Errors returned by ParseVP8Header.
var (
	ErrNotVP8 = errors.New("framer: not a VP8 frame")
)

// VP8 frame header sizes (RFC 6386 section 9.1).
const (
	vp8TagSize      = 3  // frame tag
	vp8KeyHeaderLen = 10 // frame tag, start code, width and height
)

// ParseVP8Header reads the uncompressed header of a VP8 frame (RFC 6386
// section 9.1): the 3-byte frame tag and, for a keyframe, the start code
// 9d 01 2a and the 14-bit width and height. It returns whether the frame is
// a keyframe and, for a keyframe, its size in pixels (0 for delta frames).
// It checks that the first partition fits in the frame. Malformed input
// gives an error wrapping ErrNotVP8.
func ParseVP8Header(frame []byte) (key bool, w, h int, err error) {
	if len(frame) < vp8TagSize {
		return false, 0, 0, fmt.Errorf("%w: %d bytes is shorter than the frame tag", ErrNotVP8, len(frame))
	}
	tag := uint32(frame[0]) | uint32(frame[1])<<8 | uint32(frame[2])<<16
	key = tag&1 == 0
	version := tag >> 1 & 7
	firstPart := int(tag >> 5 & 0x7FFFF)
	if version > 3 {
		return false, 0, 0, fmt.Errorf("%w: version %d", ErrNotVP8, version)
	}
	hdrLen := vp8TagSize
	if key {
		hdrLen = vp8KeyHeaderLen
		if len(frame) < hdrLen {
			return false, 0, 0, fmt.Errorf("%w: %d-byte keyframe is shorter than its header", ErrNotVP8, len(frame))
		}
		if frame[3] != 0x9d || frame[4] != 0x01 || frame[5] != 0x2a {
			return false, 0, 0, fmt.Errorf("%w: keyframe without start code", ErrNotVP8)
		}
		// The upper two bits of each are the scaling mode.
		w = int(frame[6]) | int(frame[7]&0x3F)<<8
		h = int(frame[8]) | int(frame[9]&0x3F)<<8
		if w == 0 || h == 0 {
			return false, 0, 0, fmt.Errorf("%w: keyframe size %dx%d", ErrNotVP8, w, h)
		}
	}
	if firstPart > len(frame)-hdrLen {
		return false, 0, 0, fmt.Errorf("%w: first partition of %d bytes overruns the %d-byte frame", ErrNotVP8, firstPart, len(frame))
	}
	return key, w, h, nil
}
