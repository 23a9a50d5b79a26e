package media

import (
	"math"
	"time"

	"replenish/rate"
)

// Rung is one step of the resolution ladder: a picture size, the frame rate
// the sender takes pictures at, and the bitrate range it serves.
type Rung struct {
	Size Size
	// FPS caps the frame rate at this rung, in frames per second: the
	// sender takes a picture from the source no more often than this (the
	// source keeps rendering at its own clock). 0 means no cap: the
	// source's rate.
	FPS      int
	Min, Max rate.Bitrate
}

// Ladder is the resolution ladder, ascending. Adjacent ranges overlap so that
// a controller can switch with hysteresis. Do not modify it.
//
// The lowest rung runs at 15 fps: VP8 at 160x90 cannot go below about
// 60 kb/s at 30 fps (measured: the quantizer saturates at 63), and at
// 30 fps the packet overhead alone (RTP, the timing report, TCP/IP: about
// 150 bytes a frame) is 36 kb/s. At 15 fps the rung reaches 40 kb/s, about
// 58 kb/s on the wire, which leaves headroom on a 100 kb/s link. Below
// its Min the sender spreads its frames instead (IntervalAt), down to
// 5 fps: about 19 kb/s on the wire. The other rungs' Mins hold at RefFPS;
// a faster source's frames are spread below MinAt instead.
var Ladder = []Rung{
	{Size: Size{160, 90}, FPS: 15, Min: 40 * rate.Kbps, Max: 250 * rate.Kbps},
	{Size: Size{320, 180}, Min: 150 * rate.Kbps, Max: 800 * rate.Kbps},
	{Size: Size{640, 360}, Min: 400 * rate.Kbps, Max: 2500 * rate.Kbps},
	{Size: Size{1280, 720}, Min: 1200 * rate.Kbps, Max: 20 * rate.Mbps},
}

// RungFor returns the ladder up to and including the rungs no larger than
// max in either dimension, ascending. It returns the lowest rung alone if max
// is smaller than every rung. The result is a fresh slice.
func RungFor(max Size) []Rung {
	var out []Rung
	for _, r := range Ladder {
		if r.Size.W <= max.W && r.Size.H <= max.H {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		out = append(out, Ladder[0])
	}
	return out
}

// Default returns the bitrate a rung starts at when nothing better is known:
// the geometric mean of Min and Max.
func (r Rung) Default() rate.Bitrate {
	return rate.Bitrate(math.Round(math.Sqrt(float64(r.Min) * float64(r.Max))))
}

// Rate returns the frame rate at this rung for a source rendering srcFPS
// frames per second, rounded down: the source's rate over the whole
// number of source intervals between frames (see Interval).
func (r Rung) Rate(srcFPS int) int {
	if srcFPS <= 0 {
		return 0
	}
	return srcFPS / r.ticks(srcFPS)
}

// ticks returns how many source intervals apart the rung takes frames: a
// picture can only be taken when the source renders one, so the rung's
// FPS cap is rounded up to whole intervals (15 fps is every other frame
// at 30 fps, and every other at 20 fps too: 10 fps).
func (r Rung) ticks(srcFPS int) int {
	if r.FPS <= 0 || r.FPS >= srcFPS {
		return 1
	}
	return (srcFPS + r.FPS - 1) / r.FPS
}

// Interval returns the time between two frames at this rung for a source
// rendering srcFPS frames per second: one source interval, or whole ones
// up to the rung's FPS cap. A cap taken as is would not match the frames
// taken (at 15 fps from 20 fps, a frame every 66.7 ms is one every
// 50 ms) and the encoder, told each frame's interval, would miss its
// target by the difference. It returns 0 for a non-positive srcFPS.
func (r Rung) Interval(srcFPS int) time.Duration {
	if srcFPS <= 0 {
		return 0
	}
	return time.Duration(r.ticks(srcFPS)) * time.Second / time.Duration(srcFPS)
}

// MaxStretch is how many times its own interval apart the frames of a rung
// may be spread when the encoder's target is below the rung's Min (see
// IntervalAt): at the lowest rung, 15 fps down to 5 fps, so that the
// stream fits a path of about 20 kb/s on the wire; at a rung above it,
// from a 60 fps source, down to 20 fps.
const MaxStretch = 3

// RefFPS is the frame rate a rung's Min holds at when the rung has no FPS
// cap (a capped rung's Min holds at its cap).
const RefFPS = 30

// MinAt returns the rung's Min for a source rendering srcFPS frames per
// second: Min while the rung takes frames no faster than its reference
// rate (its FPS cap, or RefFPS); above it, Min scaled by the frame rate
// over that reference to the power minFPSExp. libvpx's coarsest
// quantizer makes frames of about the same size at any frame rate, about
// 13% smaller for each doubling (measured at 320x180: 650, 566, 500 and
// 450 bytes at 15, 30, 60 and 120 fps; at 640x360, 1419 and 1202 bytes at
// 30 and 60 fps). So at 60 fps the middle rungs' Mins, set at 30 fps,
// asked for frames below that floor: told 200 kb/s at 320x180 the encoder
// made 240, and the stream's queue grew behind a rate the controller
// never chose (capture to received 102 ms over the floor at the median on
// 290 kb/s, 220 ms, BBR). Scaled by the frame rate alone, Min would spread
// frames the encoder could have made: 640x360 at 60 fps and 700 kb/s went
// to 30 fps in the path model.
func (r Rung) MinAt(srcFPS int) rate.Bitrate {
	ref := RefFPS
	if r.FPS > 0 {
		ref = r.FPS
	}
	d := r.Interval(srcFPS)
	if d <= 0 || d >= time.Second/time.Duration(ref) {
		return r.Min
	}
	fps := float64(time.Second) / float64(d)
	return rate.Bitrate(math.Round(float64(r.Min) * math.Pow(fps/float64(ref), minFPSExp)))
}

// minFPSExp is how a rung's Min grows with the frame rate above its
// reference (MinAt): the encoder's smallest frame shrinks by 2^(1-0.8),
// 13%, for each doubling.
const minFPSExp = 0.8

// IntervalAt returns the time between frames at this rung for a source
// rendering srcFPS frames per second when the encoder's target is b: the
// rung's Interval while b is at least its Min (MinAt, for a source faster
// than the rung's reference rate); below, that interval stretched by that
// Min over b (at most MaxStretch times) and rounded up to whole source
// intervals, the times frames can be taken at. Each frame then keeps at
// least the bits of a frame at Min, and the frame rate falls instead of
// each frame's size: a smaller frame would be mostly packet overhead,
// which is per frame, and the coarsest quantizer's floor, where the
// encoder overshoots its target. It returns 0 for a non-positive srcFPS.
func (r Rung) IntervalAt(srcFPS int, b rate.Bitrate) time.Duration {
	d := r.Interval(srcFPS)
	lo := r.MinAt(srcFPS)
	if d <= 0 || b <= 0 || b >= lo {
		return d
	}
	src := time.Second / time.Duration(srcFPS)
	stretch := min(float64(lo)/float64(b), MaxStretch)
	// The small tolerance keeps an exact multiple (5 fps is six 30 fps
	// intervals) from rounding up to the next one.
	n := math.Ceil(float64(d)*stretch/float64(src) - 1e-6)
	return max(time.Duration(n)*time.Second/time.Duration(srcFPS), d)
}

// RungOf returns the ladder rung whose size is nearest to sz in pixel count
// (the smaller one on a tie).
func RungOf(sz Size) Rung {
	best := Ladder[0]
	bestD := math.Inf(1)
	for _, r := range Ladder {
		d := math.Abs(math.Log(float64(max(sz.Pixels(), 1)) / float64(r.Size.Pixels())))
		if d < bestD {
			best, bestD = r, d
		}
	}
	return best
}
