package media

import (
	"errors"
	"fmt"
	"time"

	"replenish/rate"
)

// What every encoder shares, whatever codec library is behind it: its
// configuration, its output, the range of targets it takes and the errors
// that are not the library's own. The VP8 encoder is in package media/vpx.

// Errors about encoders and decoders.
var (
	// ErrBitrate is returned for a target bitrate outside [MinBitrate,
	// MaxBitrate].
	ErrBitrate = errors.New("media: bitrate out of range")
	// ErrClosed is returned by an encoder or decoder after Close.
	ErrClosed = errors.New("media: codec closed")
)

// MinBitrate and MaxBitrate bound an encoder's target.
const (
	MinBitrate = 10 * rate.Kbps
	MaxBitrate = 100 * rate.Mbps
)

// CheckBitrate returns an error wrapping ErrBitrate if b is outside
// [MinBitrate, MaxBitrate], nil otherwise.
func CheckBitrate(b rate.Bitrate) error {
	if b < MinBitrate || b > MaxBitrate {
		return fmt.Errorf("%w: %v not in [%v, %v]", ErrBitrate, b, MinBitrate, MaxBitrate)
	}
	return nil
}

// EncoderConfig configures an encoder. Zero values mean the defaults.
type EncoderConfig struct {
	Size    Size         // picture size; required, must pass Size.Check
	Bitrate rate.Bitrate // initial target; zero means the nearest rung's Default
	FPS     int          // nominal frame rate for rate control, frames per second; 0 means 30
	// Scalability is the temporal layering; zero means L1T1 (none).
	Scalability Scalability
}

// EncodedFrame is one compressed frame.
type EncodedFrame struct {
	Data       []byte    // the compressed frame (VP8); owned by the caller
	Key        bool      // a keyframe
	Size       Size      // picture size
	Start, End time.Time // when the encode call started and returned
	Layer      Layer     // the frame's temporal layer; zero without layers
}

// MaxFrameInterval caps the duration an encoder's rate control is told a
// frame covers (4 fps), so that a frame whose Interval is long (a source at
// a very low frame rate) is not given seconds' worth of bits at once.
const MaxFrameInterval = 250 * time.Millisecond
