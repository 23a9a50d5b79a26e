package sender

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/rate"
	"replenish/transport"
)

var _ Encoder = (*fakecodec.Encoder)(nil)

// spyEncoder is a fake encoder that records what the sender asks of it.
type spyEncoder struct {
	*fakecodec.Encoder
	setBitrate []rate.Bitrate
	closes     int
}

func (e *spyEncoder) SetBitrate(b rate.Bitrate) error {
	e.setBitrate = append(e.setBitrate, b)
	return e.Encoder.SetBitrate(b)
}

func (e *spyEncoder) Close() error {
	e.closes++
	return e.Encoder.Close()
}

// spyEncoders makes spyEncoders and keeps them with their configurations.
type spyEncoders struct {
	made []*spyEncoder
	cfgs []media.EncoderConfig
}

func (s *spyEncoders) newEncoder(cfg media.EncoderConfig) (Encoder, error) {
	e, err := fakecodec.NewEncoder(cfg)
	if err != nil {
		return nil, err
	}
	s.cfgs = append(s.cfgs, cfg)
	s.made = append(s.made, &spyEncoder{Encoder: e})
	return s.made[len(s.made)-1], nil
}

// TestEncoderSeam checks how the sender uses its encoder: made on first use
// at the frame's size, the target and the configured frame rate; kept
// across size changes (the encoder re-initialises itself); given a new
// target only for changes of 5% or more; closed once by Close.
func TestEncoderSeam(t *testing.T) {
	src := media.NewSource(media.SourceConfig{Name: "test"})
	if _, err := New(Config{Source: src}); err == nil {
		t.Fatal("New without NewEncoder: no error")
	}
	var spies spyEncoders
	s, err := New(Config{Source: src, FPS: 25, NewEncoder: spies.newEncoder})
	if err != nil {
		t.Fatal(err)
	}
	if len(spies.made) != 0 {
		t.Fatal("encoder made before the first frame")
	}
	small, large := media.Size{W: 320, H: 180}, media.Size{W: 640, H: 360}
	steps := []struct {
		name string
		size media.Size
		b    rate.Bitrate
		set  []rate.Bitrate // SetBitrate calls so far
	}{
		{"first frame", small, 500 * rate.Kbps, nil},
		{"4% up", small, 520 * rate.Kbps, nil},
		{"4% down", small, 480 * rate.Kbps, nil},
		{"6% up", small, 530 * rate.Kbps, []rate.Bitrate{530 * rate.Kbps}},
		{"new size", large, 530 * rate.Kbps, []rate.Bitrate{530 * rate.Kbps}},
		{"halved", large, 265 * rate.Kbps, []rate.Bitrate{530 * rate.Kbps, 265 * rate.Kbps}},
	}
	for _, st := range steps {
		if err := s.ensureEncoder(st.size, st.b); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(spies.made) != 1 {
			t.Fatalf("%s: %d encoders made, want 1", st.name, len(spies.made))
		}
		if got := spies.made[0].setBitrate; !slices.Equal(got, st.set) {
			t.Fatalf("%s: SetBitrate calls %v, want %v", st.name, got, st.set)
		}
	}
	if want := (media.EncoderConfig{Size: small, Bitrate: 500 * rate.Kbps, FPS: 25}); spies.cfgs[0] != want {
		t.Errorf("encoder made with %+v, want %+v", spies.cfgs[0], want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if n := spies.made[0].closes; n != 1 {
		t.Errorf("encoder closed %d times, want 1", n)
	}
}

// TestEncoderErrorEndsRun checks that an encoder that cannot be made stops
// Run with its error.
func TestEncoderErrorEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errNoCodec := errors.New("no codec here")
		src := media.NewSource(media.SourceConfig{Name: "test"})
		s, err := New(Config{Source: src, NewEncoder: func(media.EncoderConfig) (Encoder, error) { return nil, errNoCodec }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		srcDone := make(chan error, 1)
		go func() { srcDone <- src.Run(ctx) }()
		f := newFake()
		runDone := make(chan error, 1)
		go func() { runDone <- s.Run(ctx, f) }()
		f.invite <- transport.Invitation{DrainRate: rate.Mbps}
		if err := <-runDone; !errors.Is(err, errNoCodec) {
			t.Errorf("Run = %v, want the encoder's error", err)
		}
		if len(f.writes) != 0 {
			t.Errorf("%d writes without an encoder", len(f.writes))
		}
		cancel()
		<-srcDone
	})
}

// TestNewEncoderOf checks the adapter: an encoder when the constructor
// makes one, and a nil Encoder (not a nil *fakecodec.Encoder in an
// interface) with its error.
func TestNewEncoderOf(t *testing.T) {
	newEncoder := NewEncoderOf(fakecodec.NewEncoder)
	if e, err := newEncoder(media.EncoderConfig{}); !errors.Is(err, media.ErrSize) || e != nil {
		t.Errorf("bad config: %v (nil: %v), %v; want a nil Encoder and ErrSize", e, e == nil, err)
	}
	e, err := newEncoder(media.EncoderConfig{Size: media.Size{W: 160, H: 90}})
	if err != nil || e == nil {
		t.Fatalf("good config: %v, %v", e, err)
	}
	e.Close()
}
