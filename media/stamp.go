package media

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The stamp, format version 1, carries a frame's capture time in its pixels.
//
// The top 3c rows of the picture, c = W/20, hold a grid of 20 x 3 square
// cells of side c, aligned to VP8's macroblocks (or their 8x8 quadrants at
// 160 pixels wide). The cells carry 60 bits b0..b59 in row-major order; a 1
// is painted with luma 235 and a 0 with luma 16, and chroma in the whole band
// is 128. b0..b3 are the start marker 1101; b4..b43 are the capture time in
// milliseconds since the Unix epoch modulo 2^40, most significant bit first;
// b44..b59 are the CRC-16/CCITT-FALSE of that value's 5-byte big-endian
// encoding, most significant bit first.
//
// A reader takes the mean luma over each cell's central square of side c/2
// and reads a 1 when the mean exceeds 125. A wrong marker or check value is a
// misread.
const (
	stampCols  = 20
	stampRows  = 3
	stampBits  = stampCols * stampRows
	minCell    = 4
	stampHigh  = 235
	stampLow   = 16
	stampSplit = 125
	stampMark  = 0b1101
	stampMask  = 1<<40 - 1
)

// Errors returned by ReadStamp. A misread is ErrStampMarker or ErrStampCheck.
var (
	ErrStampMarker = errors.New("media: stamp start marker not found")
	ErrStampCheck  = errors.New("media: stamp check value mismatch")
	ErrStampSize   = errors.New("media: picture cannot hold a stamp")
)

// StampBand returns the height in rows of the stamp band of a picture of
// size sz: three cells of side W/20. Nothing but the stamp is drawn there.
func StampBand(sz Size) int { return stampRows * (sz.W / stampCols) }

// StampValue returns the 40-bit value a stamp carries for capture time t:
// milliseconds since the Unix epoch modulo 2^40.
func StampValue(t time.Time) uint64 { return uint64(t.UnixMilli()) & stampMask }

// stampWord returns the 60 stamp bits for value v in the low bits of a
// uint64, b0 most significant.
func stampWord(v uint64) uint64 {
	v &= stampMask
	return stampMark<<56 | v<<16 | uint64(stampCRC(v))
}

// stampCRC returns the CRC-16/CCITT-FALSE (polynomial 0x1021, initial value
// 0xFFFF, no reflection, no final xor) of v's 5-byte big-endian encoding.
func stampCRC(v uint64) uint16 {
	var b [5]byte
	for i := range b {
		b[i] = byte(v >> (8 * (4 - i)))
	}
	return crc16CCITTFalse(b[:])
}

func crc16CCITTFalse(p []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range p {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// PaintStamp paints the stamp for capture into the top band of f: the 60
// cells in luma, the band's remaining columns (when W is not a multiple of
// 20) with luma 16, and chroma 128 over the whole band. It paints nothing if
// f fails Size.Check or its planes are too short.
func PaintStamp(f *Frame, capture time.Time) {
	if f.Check() != nil {
		return
	}
	w := f.Size.W
	c := w / stampCols
	word := stampWord(StampValue(capture))
	for row := range stampRows {
		y0 := row * c
		// Paint the first line of the cell row, then copy it down.
		line := f.Y[y0*w : y0*w+w]
		for col := range stampCols {
			bit := word >> (stampBits - 1 - (row*stampCols + col)) & 1
			v := byte(stampLow)
			if bit == 1 {
				v = stampHigh
			}
			fill(line[col*c:(col+1)*c], v)
		}
		fill(line[stampCols*c:], stampLow)
		for y := y0 + 1; y < y0+c; y++ {
			copy(f.Y[y*w:y*w+w], line)
		}
	}
	cw := w / 2
	crows := min((StampBand(f.Size)+1)/2, f.Size.H/2)
	fill(f.U[:crows*cw], 128)
	fill(f.V[:crows*cw], 128)
}

// ReadStamp reads the stamp from a luma plane of the given stride and picture
// size and returns the 40-bit capture value (see StampTime). It returns
// ErrStampSize if the plane cannot hold a stamp of that size (cells narrower
// than 4 pixels, a width above MaxDimension, a band taller than the picture,
// a stride below the width or a plane too short), and ErrStampMarker or ErrStampCheck on a misread. It
// does not retain y and is safe for concurrent use.
func ReadStamp(y []byte, stride int, size Size) (v uint64, err error) {
	c := size.W / stampCols
	band := stampRows * c
	switch {
	case c < minCell || size.W > MaxDimension || size.H < band || stride < size.W || stride > len(y):
		return 0, fmt.Errorf("%w: %v, stride %d", ErrStampSize, size, stride)
	case len(y) < (band-1)*stride+size.W:
		return 0, fmt.Errorf("%w: %d bytes for %v, stride %d", ErrStampSize, len(y), size, stride)
	}
	lo, hi := c/4, c/4+c/2
	n := (hi - lo) * (hi - lo)
	var word uint64
	for row := range stampRows {
		// Sum the central squares of the whole cell row at once.
		var sums [stampCols]int
		for yy := row*c + lo; yy < row*c+hi; yy++ {
			line := y[yy*stride : yy*stride+size.W]
			for col := range stampCols {
				sums[col] += sumBytes(line[col*c+lo : col*c+hi])
			}
		}
		for col := range stampCols {
			word <<= 1
			if sums[col] > stampSplit*n {
				word |= 1
			}
		}
	}
	if word>>56 != stampMark {
		return 0, ErrStampMarker
	}
	v = word >> 16 & stampMask
	if uint16(word) != stampCRC(v) {
		return 0, ErrStampCheck
	}
	return v, nil
}

// StampTime reconstructs the full capture time from a 40-bit stamp value: the
// time v + k*2^40 milliseconds since the Unix epoch, for the integer k that
// puts it nearest to ref (the reader's idea of now in the sender's clock).
// The result is in UTC.
func StampTime(v uint64, ref time.Time) time.Time {
	const period = int64(stampMask) + 1
	r := ref.UnixMilli()
	base := r - r&stampMask // r rounded down to a multiple of the period
	t := base + int64(v&stampMask)
	switch d := t - r; {
	case d > period/2:
		t -= period
	case d < -period/2:
		t += period
	}
	return time.UnixMilli(t).UTC()
}

// sumBytes returns the sum of the bytes of b, eight at a time.
func sumBytes(b []byte) int {
	const lanes = 0x00FF00FF00FF00FF
	s := 0
	for len(b) >= 8 {
		// Four 16-bit lanes, each gaining at most 510 per step: fold
		// every 64 steps, well before a lane could overflow.
		var acc uint64
		for n := 0; n < 64 && len(b) >= 8; n++ {
			v := binary.LittleEndian.Uint64(b)
			acc += v&lanes + v>>8&lanes
			b = b[8:]
		}
		s += int(acc&0xFFFF + acc>>16&0xFFFF + acc>>32&0xFFFF + acc>>48)
	}
	for _, p := range b {
		s += int(p)
	}
	return s
}

// fill sets every byte of b to v.
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
