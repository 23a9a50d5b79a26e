package fakecodec

import (
	"errors"
	"testing"
	"time"

	"replenish/framer"
	"replenish/media"
	"replenish/rate"
)

var t0 = time.Date(2026, 10, 29, 15, 57, 15, 123_456_789, time.UTC)

// TestFrames encodes a sequence with forced keyframes, a size change and a
// bitrate change, and checks each frame as a VP8 parser sees it: keyframe or
// not, the size in a keyframe's header, the length the bitrate and frame
// rate give, and the capture time carried.
func TestFrames(t *testing.T) {
	small, large := media.Size{W: 320, H: 180}, media.Size{W: 640, H: 360}
	e, err := NewEncoder(media.EncoderConfig{Size: small, Bitrate: 600 * rate.Kbps, FPS: 25})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		size    media.Size
		force   bool
		bitrate rate.Bitrate // set before the frame if not zero
		key     bool
	}{
		{name: "first frame", size: small, key: true},
		{name: "delta", size: small},
		{name: "forced", size: small, force: true, key: true},
		{name: "delta after forced", size: small},
		{name: "new bitrate", size: small, bitrate: 2 * rate.Mbps},
		{name: "size change", size: large, key: true},
		{name: "delta at new size", size: large},
		{name: "forced at new size", size: large, force: true, key: true},
		{name: "tiny bitrate", size: large, bitrate: media.MinBitrate},
	}
	br := 600 * rate.Kbps
	for i, st := range steps {
		if st.bitrate != 0 {
			if err := e.SetBitrate(st.bitrate); err != nil {
				t.Fatal(err)
			}
			br = st.bitrate
		}
		f := media.NewFrame(st.size)
		f.Capture = t0.Add(time.Duration(i) * 40 * time.Millisecond)
		ef, err := e.Encode(f, st.force)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		key, w, h, err := framer.ParseVP8Header(ef.Data)
		if err != nil {
			t.Fatalf("%s: not VP8 to a parser: %v", st.name, err)
		}
		if key != st.key || ef.Key != st.key {
			t.Errorf("%s: key %v (header %v), want %v", st.name, ef.Key, key, st.key)
		}
		if st.key && (w != st.size.W || h != st.size.H) {
			t.Errorf("%s: header size %dx%d, want %v", st.name, w, h, st.size)
		}
		if ef.Size != st.size || e.Size() != st.size {
			t.Errorf("%s: frame size %v, encoder %v, want %v", st.name, ef.Size, e.Size(), st.size)
		}
		want := max(br.Bytes(time.Second/25), minLen)
		if st.key {
			want = max(KeyFactor*br.Bytes(time.Second/25), minLen)
		}
		if len(ef.Data) != want || FrameLen(br, 25, st.key) != want {
			t.Errorf("%s: %d bytes, FrameLen %d, want %d", st.name, len(ef.Data), FrameLen(br, 25, st.key), want)
		}
		if c, err := Capture(ef.Data); err != nil || !c.Equal(f.Capture) {
			t.Errorf("%s: capture %v, %v; want %v", st.name, c, err, f.Capture)
		}
		if ef.End.Before(ef.Start) {
			t.Errorf("%s: ends %v before it starts %v", st.name, ef.End, ef.Start)
		}
	}
	if e.Bitrate() != media.MinBitrate {
		t.Errorf("Bitrate() = %v, want %v", e.Bitrate(), media.MinBitrate)
	}
}

// TestInterval makes frames whose Interval differs from the configured
// frame rate: each is the bitrate's worth over its own Interval.
func TestInterval(t *testing.T) {
	sz := media.Size{W: 160, H: 90}
	br := 200 * rate.Kbps
	e, err := NewEncoder(media.EncoderConfig{Size: sz, Bitrate: br, FPS: 30})
	if err != nil {
		t.Fatal(err)
	}
	f := media.NewFrame(sz)
	if _, err := e.Encode(f, false); err != nil { // the keyframe
		t.Fatal(err)
	}
	for _, tt := range []struct {
		iv  time.Duration
		fps int
	}{
		{0, 30},
		{time.Second / 15, 15},
		{2 * time.Second, int(time.Second / media.MaxFrameInterval)}, // capped
	} {
		iv := tt.iv
		f.Interval = iv
		ef, err := e.Encode(f, false)
		if err != nil {
			t.Fatal(err)
		}
		want := FrameLen(br, tt.fps, false)
		if len(ef.Data) != want {
			t.Errorf("Interval %v: %d bytes, want %d", iv, len(ef.Data), want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  media.EncoderConfig
		want error
	}{
		{"zero size", media.EncoderConfig{}, media.ErrSize},
		{"odd size", media.EncoderConfig{Size: media.Size{W: 641, H: 360}}, media.ErrSize},
		{"bitrate too low", media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: rate.Kbps}, media.ErrBitrate},
		{"bitrate too high", media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: rate.Gbps}, media.ErrBitrate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := NewEncoder(tt.cfg); !errors.Is(err, tt.want) || e != nil {
				t.Fatalf("NewEncoder = %v, %v; want nil, %v", e, err, tt.want)
			}
		})
	}

	sz := media.Size{W: 160, H: 90}
	e, err := NewEncoder(media.EncoderConfig{Size: sz})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Bitrate(), media.RungOf(sz).Default(); got != want {
		t.Errorf("default bitrate %v, want %v", got, want)
	}
	if err := e.SetBitrate(0); !errors.Is(err, media.ErrBitrate) {
		t.Errorf("SetBitrate(0) = %v", err)
	}
	if _, err := e.Encode(&media.Frame{Size: sz, Y: make([]byte, 10)}, false); !errors.Is(err, media.ErrFrame) {
		t.Errorf("Encode of short planes = %v, want ErrFrame", err)
	}
	if _, err := Capture([]byte{0, 0, 0}); !errors.Is(err, ErrNotFake) {
		t.Errorf("Capture of 3 bytes = %v, want ErrNotFake", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := e.Encode(media.NewFrame(sz), false); !errors.Is(err, media.ErrClosed) {
		t.Errorf("Encode after Close = %v", err)
	}
	if err := e.SetBitrate(rate.Mbps); !errors.Is(err, media.ErrClosed) {
		t.Errorf("SetBitrate after Close = %v", err)
	}
}

// TestLayers checks that with L1T3 the frames follow media.Layering's
// pattern, which keyframes (forced, or after a size change) restart, and
// that without layers every frame has the zero Layer.
func TestLayers(t *testing.T) {
	small, large := media.Size{W: 320, H: 180}, media.Size{W: 640, H: 360}
	e, err := NewEncoder(media.EncoderConfig{Size: small, Scalability: media.L1T3})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewEncoder(media.EncoderConfig{Size: small})
	if err != nil {
		t.Fatal(err)
	}
	force := map[int]bool{6: true, 11: true, 12: true}
	var ref media.Layering
	for i := range 24 {
		sz := small
		if i >= 17 {
			sz = large
		}
		f := media.NewFrame(sz)
		f.Capture = t0.Add(time.Duration(i) * 40 * time.Millisecond)
		ef, err := e.Encode(f, force[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 0 || i == 17 || force[i]; ef.Key != want {
			t.Fatalf("frame %d: key %v, want %v", i, ef.Key, want)
		}
		if i == 0 {
			ref = media.NewLayeringAt(media.L1T3, ef.Layer.TL0PicIdx)
		}
		if want := ref.Next(ef.Key); ef.Layer != want {
			t.Fatalf("frame %d: layer %+v, want %+v", i, ef.Layer, want)
		}
		if ef, err := plain.Encode(f, force[i]); err != nil || ef.Layer != (media.Layer{}) {
			t.Fatalf("frame %d without layers: %+v, %v", i, ef.Layer, err)
		}
	}
	if _, err := NewEncoder(media.EncoderConfig{Size: small, Scalability: 5}); !errors.Is(err, media.ErrScalability) {
		t.Fatalf("unknown mode: %v", err)
	}
}
