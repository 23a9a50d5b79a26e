package media

import (
	"errors"
	"testing"
	"time"
)

func TestCRC16CheckValue(t *testing.T) {
	if got := crc16CCITTFalse([]byte("123456789")); got != 0x29B1 {
		t.Fatalf("CRC-16/CCITT-FALSE(\"123456789\") = %#04x, want 0x29b1", got)
	}
}

// stampFrame returns a frame of size sz holding only the stamp for capture.
func stampFrame(sz Size, capture time.Time) *Frame {
	f := NewFrame(sz)
	PaintStamp(f, capture)
	return f
}

func TestStampRoundTrip(t *testing.T) {
	sizes := []Size{{80, 12}, {100, 60}, {162, 90}, {170, 100}}
	for _, r := range Ladder {
		sizes = append(sizes, r.Size)
	}
	captures := []time.Time{
		t0,
		time.UnixMilli(0),
		time.UnixMilli(1<<40 - 1),
		time.UnixMilli(1 << 40),
		time.UnixMilli(0x5555555555),
		time.UnixMilli(0xAAAAAAAAAA),
	}
	for _, sz := range sizes {
		for _, c := range captures {
			t.Run(sz.String()+"/"+c.UTC().Format(time.RFC3339Nano), func(t *testing.T) {
				f := stampFrame(sz, c)
				v, err := ReadStamp(f.Y, sz.W, sz)
				if err != nil {
					t.Fatal(err)
				}
				if want := StampValue(c); v != want {
					t.Fatalf("read %#x, want %#x", v, want)
				}
				if got := StampTime(v, c.Add(time.Hour)); got.UnixMilli() != c.UnixMilli() {
					t.Fatalf("StampTime = %v, want %v", got, c)
				}
			})
		}
	}
}

// TestStampLayout checks the painted cells against the format's text: cell
// positions, bit order, luma levels and the chroma of the band.
func TestStampLayout(t *testing.T) {
	sz := Size{320, 180}
	c := sz.W / 20
	capture := time.UnixMilli(0x123456789A)
	f := stampFrame(sz, capture)
	// b0..b3 = 1101, b4..b43 = 0x123456789A, b44..b59 = CRC.
	want := []byte{1, 1, 0, 1}
	for i := 39; i >= 0; i-- {
		want = append(want, byte(uint64(0x123456789A)>>i&1))
	}
	crc := crc16CCITTFalse([]byte{0x12, 0x34, 0x56, 0x78, 0x9A})
	for i := 15; i >= 0; i-- {
		want = append(want, byte(crc>>i&1))
	}
	for i, bit := range want {
		col, row := i%20, i/20
		wantY := byte(16)
		if bit == 1 {
			wantY = 235
		}
		for _, p := range [][2]int{{0, 0}, {c - 1, c - 1}, {c / 2, c / 3}} {
			x, y := col*c+p[0], row*c+p[1]
			if got := f.Y[y*sz.W+x]; got != wantY {
				t.Fatalf("bit %d pixel (%d,%d) = %d, want %d", i, x, y, got, wantY)
			}
		}
	}
	for i := range (3 * c / 2) * sz.W / 2 {
		if f.U[i] != 128 || f.V[i] != 128 {
			t.Fatalf("chroma %d in the band = %d,%d, want 128", i, f.U[i], f.V[i])
		}
	}
}

func TestReadStampMisreads(t *testing.T) {
	sz := Size{640, 360}
	c := sz.W / 20
	capture := t0
	// setCell paints cell i with luma v.
	setCell := func(f *Frame, i int, v byte) {
		col, row := i%20, i/20
		for y := row * c; y < (row+1)*c; y++ {
			fill(f.Y[y*sz.W+col*c:y*sz.W+(col+1)*c], v)
		}
	}
	flip := func(i int) func(*Frame) {
		return func(f *Frame) {
			v := byte(235)
			if f.Y[(i/20*c+c/2)*sz.W+i%20*c+c/2] > 125 {
				v = 16
			}
			setCell(f, i, v)
		}
	}
	tests := []struct {
		name   string
		modify func(*Frame)
		want   error
	}{
		{"intact", func(*Frame) {}, nil},
		{"marker bit 0", flip(0), ErrStampMarker},
		{"marker bit 2", flip(2), ErrStampMarker},
		{"marker bit 3", flip(3), ErrStampMarker},
		{"time msb", flip(4), ErrStampCheck},
		{"time lsb", flip(43), ErrStampCheck},
		{"row 1 cell", flip(25), ErrStampCheck},
		{"check msb", flip(44), ErrStampCheck},
		{"check lsb", flip(59), ErrStampCheck},
		{"all black", func(f *Frame) { fill(f.Y, 16) }, ErrStampMarker},
		{"all white", func(f *Frame) { fill(f.Y, 235) }, ErrStampMarker},
		{"grey", func(f *Frame) { fill(f.Y, 125) }, ErrStampMarker},
		{"shifted down a cell", func(f *Frame) {
			copy(f.Y[c*sz.W:], f.Y[:3*c*sz.W])
		}, ErrStampCheck},
		{"shifted right a cell", func(f *Frame) {
			for y := range 3 * c {
				copy(f.Y[y*sz.W+c:(y+1)*sz.W], f.Y[y*sz.W:(y+1)*sz.W-c])
			}
		}, ErrStampMarker},
		{"edges spoiled", func(f *Frame) {
			// Only the central squares count: wreck everything else.
			for y := range 3 * c {
				for x := range sz.W {
					if ix, iy := x%c, y%c; ix < c/4 || ix >= 3*c/4 || iy < c/4 || iy >= 3*c/4 {
						f.Y[y*sz.W+x] = byte(x * y)
					}
				}
			}
		}, nil},
		{"mean just above 125", func(f *Frame) {
			// A 1 cell whose central mean is 125.25 still reads as 1.
			centre(f, sz, 0, func(i int, p *byte) { *p = 125 + byte(i%4/3) })
		}, nil},
		{"mean exactly 125", func(f *Frame) {
			centre(f, sz, 0, func(_ int, p *byte) { *p = 125 })
		}, ErrStampMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := stampFrame(sz, capture)
			tt.modify(f)
			v, err := ReadStamp(f.Y, sz.W, sz)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err == nil && v != StampValue(capture) {
				t.Fatalf("v = %#x, want %#x", v, StampValue(capture))
			}
		})
	}
}

// centre calls set for every pixel of cell i's central square.
func centre(f *Frame, sz Size, i int, set func(int, *byte)) {
	c := sz.W / 20
	col, row := i%20, i/20
	n := 0
	for y := row*c + c/4; y < row*c+3*c/4; y++ {
		for x := col*c + c/4; x < col*c+3*c/4; x++ {
			set(n, &f.Y[y*sz.W+x])
			n++
		}
	}
}

func TestReadStampSizes(t *testing.T) {
	good := stampFrame(Size{320, 180}, t0)
	tests := []struct {
		name   string
		y      []byte
		stride int
		size   Size
		want   error
	}{
		{"ok", good.Y, 320, Size{320, 180}, nil},
		{"stride larger", padStride(good.Y, 320, 180, 400), 400, Size{320, 180}, nil},
		{"only the band", good.Y[:48*320], 320, Size{320, 48}, nil},
		{"band minus one byte", good.Y[:48*320-1], 320, Size{320, 180}, ErrStampSize},
		{"cells too small", good.Y, 60, Size{60, 40}, ErrStampSize},
		{"too short for band", good.Y, 320, Size{320, 47}, ErrStampSize},
		{"stride below width", good.Y, 300, Size{320, 180}, ErrStampSize},
		{"negative width", good.Y, 320, Size{-320, 180}, ErrStampSize},
		{"negative stride", good.Y, -320, Size{320, 180}, ErrStampSize},
		{"huge width", good.Y, 1 << 40, Size{1 << 40, 1 << 40}, ErrStampSize},
		{"nil plane", nil, 320, Size{320, 180}, ErrStampSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadStamp(tt.y, tt.stride, tt.size)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func padStride(y []byte, w, h, stride int) []byte {
	out := make([]byte, stride*h)
	for r := range h {
		copy(out[r*stride:], y[r*w:(r+1)*w])
	}
	return out
}

func TestStampTime(t *testing.T) {
	const p = int64(1) << 40
	ms := func(v int64) time.Time { return time.UnixMilli(v) }
	tests := []struct {
		name string
		v    uint64
		ref  time.Time
		want time.Time
	}{
		{"same period", StampValue(t0), t0.Add(40 * time.Millisecond), t0.Truncate(time.Millisecond)},
		{"ref behind", StampValue(t0), t0.Add(-10 * time.Second), t0},
		{"epoch", 0, ms(5), ms(0)},
		{"just before wrap, ref after", uint64(p - 3), ms(p + 2), ms(p - 3)},
		{"just after wrap, ref before", 2, ms(p - 3), ms(p + 2)},
		{"at wrap", 0, ms(p - 1), ms(p)},
		{"second wrap", 10, ms(2*p - 20), ms(2*p + 10)},
		{"second period, ref after", uint64(p - 1), ms(2*p + 5), ms(2*p - 1)},
		{"before epoch", uint64(p - 1000), ms(0), ms(-1000)},
		{"half period ahead", uint64(p/2 - 1), ms(0), ms(p/2 - 1)},
		{"more than half period ahead", uint64(p/2 + 1), ms(0), ms(-p/2 + 1)},
		{"value above 40 bits is masked", uint64(p) + 7, ms(0), ms(7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StampTime(tt.v, tt.ref)
			if !got.Equal(tt.want) {
				t.Fatalf("StampTime(%#x, %d) = %d, want %d", tt.v, tt.ref.UnixMilli(), got.UnixMilli(), tt.want.UnixMilli())
			}
		})
	}
}

func TestSumBytes(t *testing.T) {
	b := make([]byte, 1200)
	for i := range b {
		b[i] = byte(255 - i%7) // near the top, to stress the lanes
	}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 63, 64, 65, 511, 512, 513, 1200} {
		want := 0
		for _, p := range b[:n] {
			want += int(p)
		}
		if got := sumBytes(b[:n]); got != want {
			t.Fatalf("sumBytes of %d bytes = %d, want %d", n, got, want)
		}
	}
}

func FuzzReadStamp(f *testing.F) {
	// Small seeds: the fuzzer's minimizer is quadratic in input length.
	for _, sz := range []Size{{80, 12}, {100, 16}, {160, 24}} {
		fr := stampFrame(sz, t0)
		f.Add(fr.Y[:StampBand(sz)*sz.W], sz.W, sz.H, sz.W)
	}
	f.Add([]byte{}, 0, 0, 0)
	f.Add(make([]byte, 100), 80, 12, 80)
	f.Fuzz(func(t *testing.T, y []byte, w, h, stride int) {
		v, err := ReadStamp(y, stride, Size{w, h})
		if err != nil {
			if v != 0 {
				t.Fatalf("value %#x returned with error %v", v, err)
			}
			return
		}
		if v > stampMask {
			t.Fatalf("value %#x exceeds 40 bits", v)
		}
		// A stamp read without error must repaint to one that reads the same.
		sz := Size{w, StampBand(Size{W: w})}
		g := NewFrame(sz)
		PaintStamp(g, time.UnixMilli(int64(v)))
		if w%2 == 0 && sz.Check() == nil {
			if v2, err := ReadStamp(g.Y, w, sz); err != nil || v2 != v {
				t.Fatalf("repainted %#x reads %#x, %v", v, v2, err)
			}
		}
	})
}

func BenchmarkReadStamp(b *testing.B) {
	for _, r := range Ladder {
		b.Run(r.Size.String(), func(b *testing.B) {
			f := NewFrame(r.Size)
			Render(f, t0, 1, "bench")
			for b.Loop() {
				if _, err := ReadStamp(f.Y, r.Size.W, r.Size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
