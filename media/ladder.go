package media

import (
	"math"

	"replenish/rate"
)

// Rung is one step of the resolution ladder with the bitrate range it serves.
type Rung struct {
	Size     Size
	Min, Max rate.Bitrate
}

// Ladder is the resolution ladder, ascending. Adjacent ranges overlap so that
// a controller can switch with hysteresis. Do not modify it.
var Ladder = []Rung{
	{Size: Size{160, 90}, Min: 70 * rate.Kbps, Max: 250 * rate.Kbps},
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
