package media

import (
	"errors"
	"testing"

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
