package media

import (
	"fmt"
	"time"
)

// Frame is a raw I420 picture. Y has stride W, U and V stride W/2; the
// chroma planes have H/2 rows.
type Frame struct {
	Size    Size
	Y, U, V []byte
	Capture time.Time // when the source captured it (painted into the stamp)
	Seq     uint64    // source frame counter
	// Interval is the frame's nominal duration in the stream it is
	// encoded into: 1/fps of the rate frames are taken at, not the gap
	// since the previous one. An encoder's rate control spends the
	// frame's share of the bitrate over Interval on it; zero means its
	// configured 1/FPS.
	Interval time.Duration
}

// NewFrame returns a frame of size sz with zeroed planes. It does not check
// sz; see Size.Check.
func NewFrame(sz Size) *Frame {
	f := &Frame{Size: sz}
	f.alloc()
	return f
}

// alloc makes the planes exactly the length f.Size needs, reusing their
// storage when it is large enough.
func (f *Frame) alloc() {
	ny, nc := planeLens(f.Size)
	f.Y = grow(f.Y, ny)
	f.U = grow(f.U, nc)
	f.V = grow(f.V, nc)
}

func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}

// planeLens returns the luma and per-chroma plane lengths for sz.
func planeLens(sz Size) (luma, chroma int) {
	if sz.W <= 0 || sz.H <= 0 {
		return 0, 0
	}
	return sz.W * sz.H, (sz.W / 2) * (sz.H / 2)
}

// Check reports whether f's size passes Size.Check and its planes are
// large enough for it. It returns an error wrapping ErrSize or ErrFrame
// otherwise.
func (f *Frame) Check() error {
	if err := f.Size.Check(); err != nil {
		return err
	}
	ny, nc := planeLens(f.Size)
	if len(f.Y) < ny || len(f.U) < nc || len(f.V) < nc {
		return fmt.Errorf("%w: planes of %d/%d/%d bytes for %v", ErrFrame, len(f.Y), len(f.U), len(f.V), f.Size)
	}
	return nil
}
