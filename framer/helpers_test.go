package framer

import (
	"time"
)

// vp8Frame returns a synthetic VP8 frame of size bytes (at least 10 for a
// keyframe, 3 for a delta frame) whose header is well formed: a keyframe
// carries the start code and w x h, and the first partition spans the rest
// of the frame (up to its 19-bit limit). The body is a pattern that depends
// on seed.
func vp8Frame(key bool, w, h, size int, seed byte) []byte {
	f := make([]byte, size)
	hdr := vp8TagSize
	if key {
		hdr = vp8KeyHeaderLen
	}
	for i := hdr; i < size; i++ {
		f[i] = byte(i)*7 + seed
	}
	tag := uint32(min(size-hdr, 0x7FFFF)) << 5 // version 0
	if !key {
		tag |= 1
	}
	tag |= 1 << 4 // show_frame
	f[0], f[1], f[2] = byte(tag), byte(tag>>8), byte(tag>>16)
	if key {
		f[3], f[4], f[5] = 0x9d, 0x01, 0x2a
		f[6], f[7] = byte(w), byte(w>>8)
		f[8], f[9] = byte(h), byte(h>>8)
	}
	return f
}

// testEpoch is an arbitrary capture time used by tests.
var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
