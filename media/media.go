// Package media produces the video that replenish sends: a synthetic source
// that renders pictures on its own clock, the pixel timestamp ("stamp") that
// carries each picture's capture time to the viewer, and the resolution
// ladder the sender climbs. It also holds what every encoder shares
// ([EncoderConfig], [EncodedFrame], the bitrate range, the temporal layer
// pattern [Layering] and the errors that are no codec library's own), so
// that code naming encoders needs no cgo.
// The VP8 encoder and decoder (libvpx through cgo) are in package media/vpx;
// package media/fakecodec has a stand-in encoder for tests.
//
// Pictures are raw I420 frames ([Frame]). The source keeps only the newest
// one; the sender takes it when its transport invites a frame and encodes it
// then, so a picture that is never invited is never encoded.
package media

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors about pictures.
var (
	// ErrSize is returned for a picture size the package cannot handle.
	ErrSize = errors.New("media: bad picture size")
	// ErrFrame is returned for a frame whose planes are too short for its
	// size.
	ErrFrame = errors.New("media: malformed frame")
)

// MaxDimension is the largest width or height the package accepts.
const MaxDimension = 8192

// Size is a picture size in pixels.
type Size struct{ W, H int }

// String formats s as "640x360".
func (s Size) String() string { return strconv.Itoa(s.W) + "x" + strconv.Itoa(s.H) }

// Pixels returns the number of luma samples in a picture of size s.
func (s Size) Pixels() int { return s.W * s.H }

// Check reports whether s is a size the package can render, encode and stamp:
// both dimensions even and at most MaxDimension, wide enough for stamp cells
// of at least 4 pixels (W >= 80) and tall enough for the stamp band. It
// returns an error wrapping ErrSize otherwise.
func (s Size) Check() error {
	switch {
	case s.W <= 0 || s.H <= 0:
		return fmt.Errorf("%w: %v is not positive", ErrSize, s)
	case s.W > MaxDimension || s.H > MaxDimension:
		return fmt.Errorf("%w: %v exceeds %d pixels", ErrSize, s, MaxDimension)
	case s.W%2 != 0 || s.H%2 != 0:
		return fmt.Errorf("%w: %v has an odd dimension", ErrSize, s)
	case s.W/stampCols < minCell:
		return fmt.Errorf("%w: %v is narrower than %d pixels", ErrSize, s, stampCols*minCell)
	case stampRows*(s.W/stampCols) > s.H:
		return fmt.Errorf("%w: %v is too short for the stamp band", ErrSize, s)
	}
	return nil
}

// ParseSize reads a size written as "640x360". It returns an error wrapping
// ErrSize for malformed text or a size that fails Check.
func ParseSize(s string) (Size, error) {
	ws, hs, ok := strings.Cut(strings.TrimSpace(s), "x")
	if !ok {
		return Size{}, fmt.Errorf("%w: %q is not WxH", ErrSize, s)
	}
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if err1 != nil || err2 != nil {
		return Size{}, fmt.Errorf("%w: %q is not WxH", ErrSize, s)
	}
	sz := Size{W: w, H: h}
	if err := sz.Check(); err != nil {
		return Size{}, err
	}
	return sz, nil
}
