package media

import (
	"errors"
	"testing"
)

func TestScalability(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   Scalability
		layers int
		err    error
	}{
		{"L1T1", L1T1, 1, nil},
		{"L1T3", L1T3, 3, nil},
		{"l1t3", 0, 0, ErrScalability},
		{"L1T2", 0, 0, ErrScalability},
		{"", 0, 0, ErrScalability},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseScalability(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) || got != tt.want {
				t.Fatalf("ParseScalability(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.err)
			}
			if err == nil && (got.String() != tt.in || got.Layers() != tt.layers || got.Check() != nil) {
				t.Fatalf("%v: String %q, Layers %d, Check %v", got, got.String(), got.Layers(), got.Check())
			}
		})
	}
	if err := Scalability(7).Check(); !errors.Is(err, ErrScalability) {
		t.Errorf("Check of mode 7 = %v", err)
	}
	var zero EncoderConfig
	if zero.Scalability != L1T1 {
		t.Error("the zero EncoderConfig has layers")
	}
}

// TestLayering walks L1T3's pattern through keyframes at every position of
// the period and across the TL0PicIdx wrap.
func TestLayering(t *testing.T) {
	type want struct {
		tid  uint8
		sync bool
		idx  uint8
	}
	l := NewLayeringAt(L1T3, 254)
	steps := []struct {
		key bool
		want
	}{
		{true, want{0, false, 254}}, // first frame
		{false, want{2, true, 254}},
		{false, want{1, true, 254}},
		{false, want{2, false, 254}},
		{false, want{0, false, 255}},
		{false, want{2, true, 255}},
		{true, want{0, false, 0}}, // keyframe at position 2: the period restarts, the index wraps
		{false, want{2, true, 0}},
		{true, want{0, false, 1}}, // keyframe at position 2 again
		{false, want{2, true, 1}},
		{false, want{1, true, 1}},
		{true, want{0, false, 2}}, // at position 3
		{false, want{2, true, 2}},
		{false, want{1, true, 2}},
		{false, want{2, false, 2}},
		{true, want{0, false, 3}}, // at position 0
		{true, want{0, false, 4}}, // twice
		{false, want{2, true, 4}},
	}
	for i, st := range steps {
		got := l.Next(st.key)
		if !got.Present || got.TID != st.tid || got.Sync != st.sync || got.TL0PicIdx != st.idx {
			t.Fatalf("frame %d (key %v): %+v, want %+v", i, st.key, got, st.want)
		}
	}
	// A copy saves the state.
	saved := l
	a, b := l.Next(false), saved.Next(false)
	if a != b {
		t.Fatalf("copy diverged: %+v, %+v", a, b)
	}

	// Over a long run without keyframes: the period holds, and every TL0
	// frame's index is one more than the previous one's.
	l = NewLayering(L1T3)
	first := l.Next(true)
	last := first.TL0PicIdx
	counts := [3]int{1, 0, 0}
	for i := 1; i < 1200; i++ {
		got := l.Next(false)
		if want := l1t3[i%4]; got.TID != want.TID || got.Sync != want.Sync {
			t.Fatalf("frame %d: %+v, want %+v", i, got, want)
		}
		if got.TID == 0 {
			if got.TL0PicIdx != last+1 {
				t.Fatalf("frame %d: TL0PicIdx %d after %d", i, got.TL0PicIdx, last)
			}
			last = got.TL0PicIdx
		} else if got.TL0PicIdx != last {
			t.Fatalf("frame %d: TL0PicIdx %d, last TL0 %d", i, got.TL0PicIdx, last)
		}
		counts[got.TID]++
	}
	if counts != [3]int{300, 300, 600} {
		t.Fatalf("frames per layer %v", counts)
	}

	var none Layering
	for i := range 5 {
		if got := none.Next(i == 0); got != (Layer{}) {
			t.Fatalf("L1T1 frame %d: %+v", i, got)
		}
	}
	if none.Mode() != L1T1 || l.Mode() != L1T3 {
		t.Fatal("Mode")
	}
}
