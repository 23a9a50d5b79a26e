package media

import (
	"image"
	"sync"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Text is drawn with basicfont's 7x13 face, scaled up by whole pixels
// (nearest neighbour). Glyph cells are glyphAdvance wide and glyphHeight tall.
const (
	glyphAdvance = 7
	glyphHeight  = 13
	glyphFirst   = 0x20
	glyphLast    = 0x7e
)

// glyphs holds one bitmap per printable ASCII character: a row mask per line,
// bit x set when pixel x of the 7-pixel cell is ink.
var glyphs = sync.OnceValue(func() *[glyphLast - glyphFirst + 1][glyphHeight]uint8 {
	var t [glyphLast - glyphFirst + 1][glyphHeight]uint8
	face := basicfont.Face7x13
	for r := rune(glyphFirst); r <= glyphLast; r++ {
		dot := fixed.P(0, face.Ascent)
		dr, mask, mp, _, ok := face.Glyph(dot, r)
		if !ok {
			continue
		}
		for y := dr.Min.Y; y < dr.Max.Y; y++ {
			for x := dr.Min.X; x < dr.Max.X; x++ {
				if y < 0 || y >= glyphHeight || x < 0 || x >= glyphAdvance {
					continue
				}
				_, _, _, a := mask.At(mp.X+x-dr.Min.X, mp.Y+y-dr.Min.Y).RGBA()
				if a >= 0x8000 {
					t[r-glyphFirst][y] |= 1 << x
				}
			}
		}
	}
	return &t
})

// textWidth returns the width in pixels of s drawn at scale k.
func textWidth(s string, k int) int { return len(s) * glyphAdvance * k }

// drawText draws the ASCII string s into the luma plane y (stride w, height
// h) with its top-left corner at (x0, y0), each font pixel a k x k block of
// luma ink. Characters outside printable ASCII draw as '?'; anything outside
// the plane is clipped.
func drawText(y []byte, w, h, x0, y0, k int, s string, ink byte) {
	t := glyphs()
	clip := image.Rect(0, 0, w, h)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < glyphFirst || c > glyphLast {
			c = '?'
		}
		g := &t[c-glyphFirst]
		cx := x0 + i*glyphAdvance*k
		for gy := range glyphHeight {
			bits := g[gy]
			if bits == 0 {
				continue
			}
			for gx := range glyphAdvance {
				if bits&(1<<gx) == 0 {
					continue
				}
				r := image.Rect(cx+gx*k, y0+gy*k, cx+(gx+1)*k, y0+(gy+1)*k).Intersect(clip)
				for py := r.Min.Y; py < r.Max.Y; py++ {
					fill(y[py*w+r.Min.X:py*w+r.Max.X], ink)
				}
			}
		}
	}
}
