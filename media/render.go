package media

import (
	"math"
	"strconv"
	"sync"
	"time"
)

// Picture parameters. The noise gives the encoder texture it must spend bits
// on at every rung's Max bitrate; noiseAmp is its peak amplitude in luma
// steps (a power of two).
const (
	noiseAmp    = 16
	waveLen     = 256
	wavePeriods = 2    // colour wave periods across the picture width
	waveSpeed   = 6000 // ms for the waves to scroll one picture width
	boxPeriodX  = 4000 // ms for the box to cross and return horizontally
	boxPeriodY  = 2700 // ms for the box to cross and return vertically
	textInk     = 235
	textPaper   = 16
)

// waves holds the background's colour waves: one period of luma, U and V
// over waveLen steps. Luma stays far enough from the ends of the range that
// noise never clips.
var waves = sync.OnceValue(func() *[3][waveLen]byte {
	var t [3][waveLen]byte
	for i := range waveLen {
		th := 2 * math.Pi * float64(i) / waveLen
		t[0][i] = byte(math.Round(115 + 60*math.Sin(th)))
		t[1][i] = byte(math.Round(128 + 48*math.Sin(th+2*math.Pi/3)))
		t[2][i] = byte(math.Round(128 + 48*math.Sin(th+4*math.Pi/3)))
	}
	return &t
})

// Render draws one picture into dst: the stamp for capture in the top band
// and, below it, scrolling colour waves, fresh noise over the lower two
// thirds of the area below the stamp band, a bouncing box, the capture time
// as HH:MM:SS.mmm (UTC), the frame number seq and name. Motion follows
// capture, and the noise is seeded from seq, so the same arguments draw the
// same picture. Render sets dst.Capture and dst.Seq and resizes dst's planes
// to dst.Size, reusing their storage when it is large enough; if dst.Size
// fails Size.Check it draws nothing. It touches no other state and is safe
// for concurrent use on distinct frames.
func Render(dst *Frame, capture time.Time, seq uint64, name string) {
	dst.Capture, dst.Seq = capture, seq
	if dst.Size.Check() != nil {
		return
	}
	dst.alloc()
	w, h := dst.Size.W, dst.Size.H
	cw := w / 2
	band := StampBand(dst.Size)
	ms := capture.UnixMilli()

	// Colour waves scrolling right: draw one luma line and one chroma line,
	// then copy them down.
	wv := waves()
	off := mod(ms*int64(w)/waveSpeed, int64(w))
	if band < h {
		line := dst.Y[band*w : band*w+w]
		for x := range w {
			line[x] = wv[0][wavePhase(x, off, w)]
		}
		for y := band + 1; y < h; y++ {
			copy(dst.Y[y*w:y*w+w], line)
		}
	}
	if cband := (band + 1) / 2; cband < h/2 {
		uline := dst.U[cband*cw : cband*cw+cw]
		vline := dst.V[cband*cw : cband*cw+cw]
		for x := range cw {
			p := wavePhase(2*x, off, w)
			uline[x], vline[x] = wv[1][p], wv[2][p]
		}
		for y := cband + 1; y < h/2; y++ {
			copy(dst.U[y*cw:y*cw+cw], uline)
			copy(dst.V[y*cw:y*cw+cw], vline)
		}
	}

	// Noise over the lower part of the picture, fresh each frame.
	addNoise(dst.Y[noiseTop(dst.Size)*w:h*w], seq)

	// The bouncing box.
	bs := max(2, (h-band)/4) &^ 1
	bx := triangle(ms, boxPeriodX, w-bs) &^ 1
	by := (band + triangle(ms, boxPeriodY, h-band-bs)) &^ 1
	fillRect(dst.Y, w, bx, by, bs, bs, 220)
	fillRect(dst.U, cw, bx/2, by/2, bs/2, bs/2, 90)
	fillRect(dst.V, cw, bx/2, by/2, bs/2, bs/2, 200)

	// Text: the clock large, then the frame number and name, on dark paper.
	k := max(1, w/160)
	ks := max(1, k/2)
	clock := capture.UTC().Format("15:04:05.000")
	label := "#" + strconv.FormatUint(seq, 10) + " " + name
	margin := k * 2
	x0, y0 := margin, band+margin
	maxChars := (w - 2*x0) / (glyphAdvance * ks)
	if len(label) > maxChars {
		label = label[:max(0, maxChars)]
	}
	pw := max(textWidth(clock, k), textWidth(label, ks)) + 2*margin
	ph := glyphHeight*(k+ks) + 3*margin
	px, py := x0-margin, y0-margin
	pw, ph = min(pw, w-px)&^1, min(ph, h-py)&^1
	fillRect(dst.Y, w, px, py, pw, ph, textPaper)
	fillRect(dst.U, cw, px/2, py/2, pw/2, ph/2, 128)
	fillRect(dst.V, cw, px/2, py/2, pw/2, ph/2, 128)
	drawText(dst.Y[:h*w], w, h, x0, y0, k, clock, textInk)
	drawText(dst.Y[:h*w], w, h, x0, y0+glyphHeight*k+margin, ks, label, textInk)

	PaintStamp(dst, capture)
}

// noiseTop returns the first row of the noisy part of a picture of size sz:
// the lower two thirds of the area below the stamp band.
func noiseTop(sz Size) int {
	band := StampBand(sz)
	return band + (sz.H-band)/3
}

// wavePhase returns the wave table index for column x of a picture w wide
// when the waves are scrolled right by off pixels.
func wavePhase(x int, off int64, w int) int {
	return int(mod((int64(x)-off)*waveLen*wavePeriods/int64(w), waveLen))
}

// addNoise adds uniform noise in [-noiseAmp, noiseAmp) to every byte of p,
// from a xorshift generator seeded with seed. The caller keeps p's values in
// [noiseAmp, 255-noiseAmp] so that nothing wraps.
func addNoise(p []byte, seed uint64) {
	s := seed*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	i := 0
	for ; i+8 <= len(p); i += 8 {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		q := p[i : i+8 : i+8]
		r := s
		for j := range q {
			q[j] += byte(r&(2*noiseAmp-1)) - noiseAmp
			r >>= 8
		}
	}
	for ; i < len(p); i++ {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		p[i] += byte(s&(2*noiseAmp-1)) - noiseAmp
	}
}

// fillRect sets the w x h rectangle at (x, y) in a plane of the given stride
// to v, clipped to the plane's rows and stride.
func fillRect(p []byte, stride, x, y, w, h int, v byte) {
	x0, x1 := max(x, 0), min(x+w, stride)
	if x0 >= x1 {
		return
	}
	for yy := max(y, 0); yy < y+h && (yy+1)*stride <= len(p); yy++ {
		fill(p[yy*stride+x0:yy*stride+x1], v)
	}
}

// triangle returns a position that moves from 0 to span and back once every
// period milliseconds.
func triangle(ms int64, period, span int) int {
	if span <= 0 {
		return 0
	}
	ph := mod(ms, int64(period))
	half := int64(period) / 2
	if ph >= half {
		ph = int64(period) - ph
	}
	return int(ph * int64(span) / half)
}

// mod returns a modulo m in [0, m).
func mod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}
