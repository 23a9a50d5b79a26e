package media

import (
	"errors"
	"testing"
	"time"

	"replenish/rate"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		err  error
	}{
		{"640x360", Size{640, 360}, nil},
		{" 1280x720 ", Size{1280, 720}, nil},
		{"160x90", Size{160, 90}, nil},
		{"80x12", Size{80, 12}, nil},
		{"640", Size{}, ErrSize},
		{"640X360", Size{}, ErrSize},
		{"x360", Size{}, ErrSize},
		{"640x", Size{}, ErrSize},
		{"640x360x2", Size{}, ErrSize},
		{"-640x360", Size{}, ErrSize},
		{"641x360", Size{}, ErrSize},
		{"640x361", Size{}, ErrSize},
		{"78x90", Size{}, ErrSize},
		{"640x94", Size{}, ErrSize},
		{"16384x9216", Size{}, ErrSize},
		{"0x0", Size{}, ErrSize},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) || got != tt.want {
				t.Fatalf("ParseSize(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.err)
			}
			if err == nil && got.String() != tt.want.String() {
				t.Fatalf("String() = %q", got.String())
			}
		})
	}
	if s := (Size{640, 360}).String(); s != "640x360" {
		t.Fatalf("String() = %q", s)
	}
}

func TestLadder(t *testing.T) {
	for i, r := range Ladder {
		if err := r.Size.Check(); err != nil {
			t.Errorf("rung %v: %v", r.Size, err)
		}
		if r.FPS < 0 || r.FPS > 120 {
			t.Errorf("rung %v: %d fps", r.Size, r.FPS)
		}
		if r.Min <= 0 || r.Min >= r.Max || r.Min < MinBitrate || r.Max > MaxBitrate {
			t.Errorf("rung %v: range %v..%v", r.Size, r.Min, r.Max)
		}
		if d := r.Default(); d <= r.Min || d >= r.Max {
			t.Errorf("rung %v: default %v outside %v..%v", r.Size, d, r.Min, r.Max)
		}
		if RungOf(r.Size) != r {
			t.Errorf("RungOf(%v) = %v", r.Size, RungOf(r.Size))
		}
		if i == 0 {
			continue
		}
		p := Ladder[i-1]
		if r.Size.W <= p.Size.W || r.Size.H <= p.Size.H {
			t.Errorf("rung %v not above %v", r.Size, p.Size)
		}
		// Adjacent ranges overlap, so a controller can switch with hysteresis.
		if r.Min >= p.Max || r.Min <= p.Min || r.Max <= p.Max {
			t.Errorf("rung %v (%v..%v) does not overlap %v (%v..%v) properly", r.Size, r.Min, r.Max, p.Size, p.Min, p.Max)
		}
	}
	// The design's fixed points: 20 Mb/s at the top, and nothing above
	// 320x180 asked to go as low as 100 kb/s.
	if top := Ladder[len(Ladder)-1]; top.Max < 20*rate.Mbps {
		t.Errorf("top rung Max %v", top.Max)
	}
	for _, r := range Ladder {
		if r.Size.W > 320 && r.Min <= 100*rate.Kbps {
			t.Errorf("rung %v Min %v", r.Size, r.Min)
		}
	}
	// The lowest rung at its Min, with what each frame adds on the wire
	// (an RTP packet's 28-byte header, 4-byte VP8 descriptor and 2 bytes
	// of framing per 1166 bytes of video, a 66-byte timing report, 52
	// bytes of TCP/IP headers per segment), leaves at least 30% of a
	// 100 kb/s link free.
	low := Ladder[0]
	fps := low.Rate(30)
	video := low.Min.Bytes(time.Second) / fps
	pkts := (video + 1165) / 1166
	written := video + 34*pkts + 66
	wire := written + 52*((written+1447)/1448)
	if got := rate.Bitrate(8 * wire * fps); got > 70*rate.Kbps {
		t.Errorf("lowest rung %v at %d fps and %v: %v on the wire, want at most 70 kb/s", low.Size, fps, low.Min, got)
	}
}

// TestRungRate checks a rung's frame rate and interval against the
// source's.
func TestRungRate(t *testing.T) {
	tests := []struct {
		r      Rung
		src    int
		rate   int
		period time.Duration
	}{
		{Rung{FPS: 15}, 30, 15, time.Second / 15},
		{Rung{FPS: 15}, 10, 10, time.Second / 10},
		{Rung{}, 30, 30, time.Second / 30},
		{Rung{FPS: 30}, 30, 30, time.Second / 30},
		{Rung{FPS: 15}, 0, 0, 0},
		// The cap in whole source intervals: a frame can only be taken
		// when the source renders one.
		{Rung{FPS: 15}, 20, 10, time.Second / 10},
		{Rung{FPS: 15}, 25, 12, 2 * time.Second / 25},
		{Rung{FPS: 15}, 24, 12, 2 * time.Second / 24},
		{Rung{FPS: 15}, 60, 15, 4 * time.Second / 60},
		{Rung{FPS: 15}, 16, 8, 2 * time.Second / 16},
	}
	for _, tt := range tests {
		if got := tt.r.Rate(tt.src); got != tt.rate {
			t.Errorf("%+v.Rate(%d) = %d, want %d", tt.r, tt.src, got, tt.rate)
		}
		if got := tt.r.Interval(tt.src); got != tt.period {
			t.Errorf("%+v.Interval(%d) = %v, want %v", tt.r, tt.src, got, tt.period)
		}
	}
}

// TestRungMinAt checks a rung's Min for sources faster and slower than
// its reference rate.
func TestRungMinAt(t *testing.T) {
	mid, low := Rung{Min: 150 * rate.Kbps}, Rung{FPS: 15, Min: 40 * rate.Kbps}
	tests := []struct {
		r    Rung
		src  int
		want rate.Bitrate
	}{
		{mid, 30, 150 * rate.Kbps},
		{mid, 60, 261165},  // 150 kb/s × 2^0.8
		{mid, 120, 454715}, // × 4^0.8
		{mid, 50, 225720},  // × (50/30)^0.8
		{mid, 15, 150 * rate.Kbps},
		{low, 60, 40 * rate.Kbps},
		{low, 20, 40 * rate.Kbps},
		{Rung{FPS: 60, Min: 100 * rate.Kbps}, 120, 100 * rate.Kbps},
		{mid, 0, 150 * rate.Kbps},
	}
	for _, tt := range tests {
		if got := tt.r.MinAt(tt.src); got != tt.want {
			t.Errorf("%+v.MinAt(%d) = %v, want %v", tt.r, tt.src, got, tt.want)
		}
	}
}

// TestRungIntervalAt checks the frame interval below a rung's Min: spread
// by Min over the target, in whole source intervals, at most MaxStretch
// times the rung's own.
func TestRungIntervalAt(t *testing.T) {
	low := Rung{FPS: 15, Min: 40 * rate.Kbps}
	mid := Rung{Min: 150 * rate.Kbps}
	tests := []struct {
		r    Rung
		src  int
		b    rate.Bitrate
		want time.Duration
	}{
		{low, 30, 40 * rate.Kbps, time.Second / 15},     // at Min: the rung's own
		{low, 30, 100 * rate.Kbps, time.Second / 15},    // above
		{low, 30, 0, time.Second / 15},                  // unknown
		{low, 30, 39 * rate.Kbps, 3 * time.Second / 30}, // just below: the next source interval, 10 fps
		{low, 30, 20 * rate.Kbps, 4 * time.Second / 30}, // half: 7.5 fps
		{low, 30, 40 * rate.Kbps / 3, time.Second / 5},  // MaxStretch: 5 fps, not rounded past it
		{low, 30, 5 * rate.Kbps, time.Second / 5},       // capped
		{low, 25, 30 * rate.Kbps, 3 * time.Second / 25}, // 88.9 ms at 25 fps: three source intervals
		{low, 10, 30 * rate.Kbps, 2 * time.Second / 10}, // the source below the rung's rate
		{Rung{Min: 400 * rate.Kbps}, 30, 200 * rate.Kbps, 2 * time.Second / 30},
		{low, 0, 20 * rate.Kbps, 0},
		// A source faster than the rung's reference rate: Min per frame
		// at that rate (MinAt).
		{mid, 60, 300 * rate.Kbps, time.Second / 60},     // at MinAt: 60 fps
		{mid, 60, 200 * rate.Kbps, 2 * time.Second / 60}, // 30 fps, 833 bytes a frame
		{mid, 60, 150 * rate.Kbps, 2 * time.Second / 60}, // at Min: 30 fps
		{mid, 120, 150 * rate.Kbps, 3 * time.Second / 120},
		{mid, 24, 150 * rate.Kbps, time.Second / 24}, // slower than the reference: Min
		{low, 60, 40 * rate.Kbps, time.Second / 15},  // capped at its reference
	}
	for _, tt := range tests {
		if got := tt.r.IntervalAt(tt.src, tt.b); got != tt.want {
			t.Errorf("%+v.IntervalAt(%d, %v) = %v, want %v", tt.r, tt.src, tt.b, got, tt.want)
		}
	}
}

func TestRungFor(t *testing.T) {
	tests := []struct {
		max  Size
		want []Size
	}{
		{Size{1280, 720}, []Size{{160, 90}, {320, 180}, {640, 360}, {1280, 720}}},
		{Size{1920, 1080}, []Size{{160, 90}, {320, 180}, {640, 360}, {1280, 720}}},
		{Size{640, 360}, []Size{{160, 90}, {320, 180}, {640, 360}}},
		{Size{960, 540}, []Size{{160, 90}, {320, 180}, {640, 360}}},
		{Size{640, 480}, []Size{{160, 90}, {320, 180}, {640, 360}}},
		{Size{160, 90}, []Size{{160, 90}}},
		{Size{100, 60}, []Size{{160, 90}}},
	}
	for _, tt := range tests {
		t.Run(tt.max.String(), func(t *testing.T) {
			got := RungFor(tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("RungFor(%v) = %v", tt.max, got)
			}
			for i := range got {
				if got[i].Size != tt.want[i] {
					t.Fatalf("RungFor(%v) = %v", tt.max, got)
				}
			}
			got[0].Min = 1 // a fresh slice: the ladder is untouched
			if Ladder[0].Min == 1 {
				t.Fatal("RungFor returned the ladder itself")
			}
		})
	}
}
