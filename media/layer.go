package media

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Temporal scalability: an encoder can arrange its frames in temporal
// layers, so that a relay can forward a lower frame rate to a receiver that
// cannot take the whole stream by dropping the upper layers, without a
// keyframe. Layering is the pattern, shared by every encoder so that the
// real one (media/vpx) and the stand-in (media/fakecodec) number frames
// alike; the encoder chooses its reference buffers to match.

// Scalability is an encoder's scalability mode, named as WebRTC names
// them (L spatial layers, T temporal layers).
type Scalability uint8

// Scalability modes.
const (
	// L1T1 is one layer: no temporal scalability. It is the zero value.
	L1T1 Scalability = iota
	// L1T3 is three temporal layers in a period of four frames, starting
	// at each keyframe: TL0, TL2, TL1, TL2. TL0 alone is a quarter of the
	// frame rate, TL0 and TL1 half, all three the whole.
	L1T3
)

// ErrScalability is returned for an unknown scalability mode.
var ErrScalability = errors.New("media: unknown scalability mode")

// String returns the mode's name, such as "L1T3".
func (s Scalability) String() string {
	switch s {
	case L1T1:
		return "L1T1"
	case L1T3:
		return "L1T3"
	}
	return fmt.Sprintf("Scalability(%d)", uint8(s))
}

// ParseScalability returns the mode named s ("L1T1" or "L1T3"). It returns
// an error wrapping ErrScalability for any other name.
func ParseScalability(s string) (Scalability, error) {
	for _, m := range []Scalability{L1T1, L1T3} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want L1T1 or L1T3)", ErrScalability, s)
}

// Check returns an error wrapping ErrScalability if s is not a mode this
// package defines, nil otherwise.
func (s Scalability) Check() error {
	if s > L1T3 {
		return fmt.Errorf("%w: %v", ErrScalability, s)
	}
	return nil
}

// Layers returns the number of temporal layers of the mode: 1 for L1T1
// and unknown modes, 3 for L1T3.
func (s Scalability) Layers() int {
	if s == L1T3 {
		return 3
	}
	return 1
}

// Layer is a frame's place in a temporally layered stream, as the RFC 7741
// VP8 payload descriptor carries it (TID, Y and TL0PICIDX). The zero value
// says the stream has no temporal layers.
type Layer struct {
	// Present says the stream has temporal layers: the other fields are
	// meaningful. When false they are zero.
	Present bool
	// TID is the temporal layer, 0 (the base layer, TL0) up to the mode's
	// Layers()-1. A frame references only frames of its own layer or
	// lower ones, so dropping every frame above some TID leaves a stream
	// that decodes.
	TID uint8
	// Sync is RFC 7741's Y bit: TID > 0 and the frame references no frame
	// but TL0 ones, so a receiver that was not given this layer can start
	// taking it here. It is never set on a TL0 frame; a keyframe is a
	// starting point for every layer.
	Sync bool
	// TL0PicIdx is RFC 7741's TL0PICIDX: a running index of the TL0
	// frames, one more (modulo 256) at each TL0 frame, keyframes
	// included; a frame with TID > 0 carries the index of the TL0 frame
	// it follows. A gap between consecutive TL0 frames means a TL0 frame
	// was lost, and nothing decodes correctly until the next keyframe.
	TL0PicIdx uint8
}

// Layering numbers an encoder's frames in a scalability mode's pattern. It
// restarts the pattern at every keyframe. The zero value is for L1T1 and
// gives every frame the zero Layer. A Layering is not safe for concurrent
// use; it is a small value that may be copied to save and restore its
// state.
type Layering struct {
	mode Scalability
	n    int   // the next frame's position in the period
	tl0  uint8 // TL0PicIdx of the last TL0 frame
}

// l1t3 is L1T3's period: the TID and Sync of each position after a
// keyframe. Position 1 and 2 reference only the TL0 frame before them;
// position 3 references that TL0 frame and position 2.
var l1t3 = [4]Layer{
	{Present: true, TID: 0},
	{Present: true, TID: 2, Sync: true},
	{Present: true, TID: 1, Sync: true},
	{Present: true, TID: 2},
}

// NewLayering returns a Layering for mode whose first TL0 frame gets a
// random TL0PicIdx, as RFC 7741 allows.
func NewLayering(mode Scalability) Layering {
	return NewLayeringAt(mode, uint8(rand.Uint32()))
}

// NewLayeringAt returns a Layering for mode whose first TL0 frame gets
// TL0PicIdx first.
func NewLayeringAt(mode Scalability, first uint8) Layering {
	return Layering{mode: mode, tl0: first - 1}
}

// Mode returns the scalability mode.
func (l *Layering) Mode() Scalability { return l.mode }

// Next returns the layer of the next frame, which is a keyframe if key is
// set (the pattern then restarts with it). The first frame after
// NewLayering starts the pattern whether it is a keyframe or not.
func (l *Layering) Next(key bool) Layer {
	if l.mode != L1T3 {
		return Layer{}
	}
	if key {
		l.n = 0
	}
	lay := l1t3[l.n]
	if lay.TID == 0 {
		l.tl0++
	}
	lay.TL0PicIdx = l.tl0
	l.n = (l.n + 1) % len(l1t3)
	return lay
}
