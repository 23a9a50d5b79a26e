package sender

import (
	"replenish/media"
	"replenish/rate"
)

// Encoder compresses raw frames into VP8 for the sender. The libvpx encoder
// (package media/vpx) is the real one; package media/fakecodec has one for
// tests. The sender calls an Encoder from Run's goroutine only, so it need
// not be safe for concurrent use.
type Encoder interface {
	// Encode compresses f, as a keyframe if forceKey is set, and blocks
	// until done. The first frame is a keyframe. If f's size differs from
	// the previous frame's, the encoder re-initialises itself for the new
	// size at its current bitrate and the frame is a keyframe: the sender
	// changes rungs by handing it frames of another size, never by making
	// a new encoder. Data is a complete VP8 frame the caller owns.
	Encode(f *media.Frame, forceKey bool) (media.EncodedFrame, error)
	// Bitrate returns the current target.
	Bitrate() rate.Bitrate
	// SetBitrate changes the target from the next frame on. It returns an
	// error wrapping media.ErrBitrate outside [media.MinBitrate,
	// media.MaxBitrate].
	SetBitrate(b rate.Bitrate) error
	// Close releases the encoder; Encode and SetBitrate fail after it.
	Close() error
}

// NewEncoderFunc makes an encoder for cfg; see Config.NewEncoder.
type NewEncoderFunc func(cfg media.EncoderConfig) (Encoder, error)

// NewEncoderOf adapts the constructor of a concrete encoder type, such as
// vpx.NewEncoder, to a NewEncoderFunc. On an error the result returns a nil
// Encoder, never a nil pointer of the concrete type.
func NewEncoderOf[E Encoder](newEncoder func(media.EncoderConfig) (E, error)) NewEncoderFunc {
	return func(cfg media.EncoderConfig) (Encoder, error) {
		e, err := newEncoder(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}
