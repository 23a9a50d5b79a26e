package media

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRenderDeterministic(t *testing.T) {
	for _, r := range Ladder {
		t.Run(r.Size.String(), func(t *testing.T) {
			a, b := NewFrame(r.Size), NewFrame(r.Size)
			Render(a, t0, 7, "cam")
			fill(b.Y, 99) // stale content must be fully overwritten
			fill(b.U, 99)
			fill(b.V, 99)
			Render(b, t0, 7, "cam")
			if !bytes.Equal(a.Y, b.Y) || !bytes.Equal(a.U, b.U) || !bytes.Equal(a.V, b.V) {
				t.Fatal("same arguments drew different pictures")
			}
			if !a.Capture.Equal(t0) || a.Seq != 7 {
				t.Fatalf("capture %v seq %d", a.Capture, a.Seq)
			}
		})
	}
}

// TestRenderBand checks that nothing but the stamp is drawn in the stamp
// band, whatever the picture below.
func TestRenderBand(t *testing.T) {
	for _, r := range Ladder {
		t.Run(r.Size.String(), func(t *testing.T) {
			sz := r.Size
			f := NewFrame(sz)
			long := strings.Repeat("W", 400)
			for i := range 40 {
				c := t0.Add(time.Duration(i) * 97 * time.Millisecond)
				Render(f, c, uint64(i), long)
				s := stampFrame(sz, c)
				band := StampBand(sz)
				cb := (band + 1) / 2 * sz.W / 2
				if !bytes.Equal(f.Y[:band*sz.W], s.Y[:band*sz.W]) || !bytes.Equal(f.U[:cb], s.U[:cb]) || !bytes.Equal(f.V[:cb], s.V[:cb]) {
					t.Fatalf("frame %d: the stamp band holds more than the stamp", i)
				}
				if bad := checkStamp(f, c); bad != "" {
					t.Fatal(bad)
				}
			}
		})
	}
}

// TestRenderChanges checks the picture's moving parts: motion, fresh noise,
// the clock and the frame number.
func TestRenderChanges(t *testing.T) {
	sz := Size{640, 360}
	band := StampBand(sz)
	k := sz.W / 160
	type rect struct{ x0, y0, x1, y1 int }
	textX := [2]int{2 * k, 2*k + textWidth("00:00:00.000", k)}
	clock := rect{textX[0], band + 2*k, textX[1], band + 2*k + glyphHeight*k}
	label := rect{textX[0], clock.y1 + 2*k, textX[1], clock.y1 + 2*k + glyphHeight*k/2}
	// The noisy part below the text block.
	noise := rect{0, max(noiseTop(sz), label.y1+2*k), sz.W, sz.H}
	none := rect{}
	tests := []struct {
		name         string
		c1, c2       time.Time
		s1, s2       uint64
		name1, name2 string
		differ, same rect // luma areas that must and must not change
		chromaSame   bool
	}{
		{"noise is fresh each frame", t0, t0, 1, 2, "a", "a", noise, clock, true},
		{"clock shows milliseconds", t0, t0.Add(time.Millisecond), 1, 1, "a", "a", clock, label, false},
		{"clock shows hours", t0, t0.Add(time.Hour), 1, 1, "a", "a", clock, label, false},
		{"frame number", t0, t0, 1, 10, "a", "a", label, clock, true},
		{"name", t0, t0, 1, 1, "a", "b", label, clock, true},
		{"motion", t0, t0.Add(200 * time.Millisecond), 1, 1, "a", "a", noise, none, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := NewFrame(sz), NewFrame(sz)
			Render(a, tt.c1, tt.s1, tt.name1)
			Render(b, tt.c2, tt.s2, tt.name2)
			equal := func(r rect) bool {
				for y := r.y0; y < r.y1; y++ {
					if !bytes.Equal(a.Y[y*sz.W+r.x0:y*sz.W+r.x1], b.Y[y*sz.W+r.x0:y*sz.W+r.x1]) {
						return false
					}
				}
				return true
			}
			if equal(tt.differ) {
				t.Fatalf("area %v did not change", tt.differ)
			}
			if !equal(tt.same) {
				t.Fatalf("area %v changed", tt.same)
			}
			if tt.chromaSame && (!bytes.Equal(a.U, b.U) || !bytes.Equal(a.V, b.V)) {
				t.Fatal("chroma changed")
			}
		})
	}
}

// TestRenderRange checks that luma stays in the video range, so that noise
// never wrapped around.
func TestRenderRange(t *testing.T) {
	for _, r := range Ladder {
		f := NewFrame(r.Size)
		for i := range 20 {
			Render(f, t0.Add(time.Duration(i)*211*time.Millisecond), uint64(i), "range")
			for j, p := range f.Y {
				if p < 16 || p > 235 {
					t.Fatalf("%v frame %d: luma %d at %d,%d", r.Size, i, p, j%r.Size.W, j/r.Size.W)
				}
			}
		}
	}
}

// TestRenderSmall draws pictures barely taller than the stamp band.
func TestRenderSmall(t *testing.T) {
	for _, sz := range []Size{{80, 12}, {80, 14}, {100, 16}, {100, 18}, {160, 26}} {
		t.Run(sz.String(), func(t *testing.T) {
			f := NewFrame(sz)
			Render(f, t0, 1, "small")
			if bad := checkStamp(f, t0); bad != "" {
				t.Fatal(bad)
			}
		})
	}
}

func TestRenderBadSize(t *testing.T) {
	for _, sz := range []Size{{}, {79, 90}, {-160, 90}, {160, 23}} {
		f := &Frame{Size: sz}
		Render(f, t0, 1, "x") // must not panic
		if len(f.Y) != 0 || f.Seq != 1 {
			t.Fatalf("%v: drew %d bytes", sz, len(f.Y))
		}
	}
}

func TestRenderReusesBuffers(t *testing.T) {
	f := NewFrame(Size{640, 360})
	y := &f.Y[0]
	f.Size = Size{320, 180}
	Render(f, t0, 1, "x")
	if &f.Y[0] != y || len(f.Y) != 320*180 || len(f.U) != 160*90 {
		t.Fatal("smaller picture did not reuse the buffers")
	}
	f.Size = Size{1280, 720}
	Render(f, t0, 1, "x")
	if len(f.Y) != 1280*720 || len(f.V) != 640*360 {
		t.Fatal("larger picture did not get larger buffers")
	}
}

func BenchmarkRender(b *testing.B) {
	for _, r := range Ladder {
		b.Run(r.Size.String(), func(b *testing.B) {
			f := NewFrame(r.Size)
			i := 0
			for b.Loop() {
				Render(f, t0.Add(time.Duration(i)*time.Second/30), uint64(i), "bench")
				i++
			}
		})
	}
}
