package sender

import (
	"time"

	"replenish/media"
	"replenish/rate"
)

// chooseRung moves down a rung once the target has been below the current
// rung's Min for downHold (at once if below downFar of it: a transient cut
// is not worth a keyframe), and up once the target has held, for upHold, at
// the current rung's Max or the next rung's default (the lesser), or at the
// next rung's Min with the encoder saturated below its target, provided the
// next rung's frames would encode within encodeBudget. Changes are at least
// rungGap apart.
func (c *Controller) chooseRung(now time.Time) bool {
	if !c.lastChange.IsZero() && now.Sub(c.lastChange) < rungGap {
		return false
	}
	t := c.Target()
	if c.rung > 0 && t < c.ladder[c.rung].Min {
		if c.downSince.IsZero() {
			c.downSince = now
		}
		if now.Sub(c.downSince) < downHold && t >= c.ladder[c.rung].Min.Scale(downFar) {
			return false
		}
		for c.rung > 0 && t < c.ladder[c.rung].Min {
			c.rung--
		}
		c.lastChange, c.upSince, c.downSince, c.encode = now, time.Time{}, time.Time{}, 0
		c.shown = min(c.shown, c.ladder[c.rung].Max)
		return true
	}
	c.downSince = time.Time{}
	if c.rung+1 < len(c.ladder) {
		cur, next := c.ladder[c.rung], c.ladder[c.rung+1]
		room := t >= min(cur.Max, next.Default()) || (c.outRatio < saturated && t >= next.Min)
		if room && c.encodeFits(cur, next) {
			if c.upSince.IsZero() {
				c.upSince = now
			}
			if now.Sub(c.upSince) >= upHold {
				c.rung++
				c.lastChange, c.upSince, c.encode, c.shown = now, time.Time{}, 0, 0
				return true
			}
			return false
		}
	}
	c.upSince = time.Time{}
	return false
}

// encodeFits says the next rung's frames would encode within encodeBudget.
// libvpx's realtime encode time grows with the pixels and with the bytes
// it writes, about 6 ms a megapixel and 0.1 ms a kilobyte on the machine
// it was measured on (188,000 frames at 320x180 to 1280x720, 1 to 170 KB),
// and the next rung's frames carry about the current's bytes (the same
// target): so the current rung's encode time is scaled by pixels plus
// bytes times pixelsPerByte, the next rung's over the current's. A frame
// of four times the pixels takes 2 to 3.2 times as long there, not four
// (5.0 and 9.5 ms at 28 KB); scaled by the pixels alone, 10 fps at 4 Mb/s
// stayed at 640x360 for 11 to 38 s in five runs of eight. Not from the
// lowest rung: media/vpx encodes it with libvpx's good-quality deadline
// (see its recodes), at over ten times the realtime encode's time a pixel:
// 3 to 5 ms at 160x90, scaled, would hold the stream there on a slower
// machine, while 320x180 encodes in under a millisecond.
func (c *Controller) encodeFits(cur, next media.Rung) bool {
	if c.encode <= 0 || cur.Size.Pixels() <= 0 || cur.Size == media.Ladder[0].Size {
		return true
	}
	b := c.frameAvg * pixelsPerByte
	scale := (float64(next.Size.Pixels()) + b) / (float64(cur.Size.Pixels()) + b)
	return time.Duration(float64(c.encode)*scale) <= encodeBudget
}

// pixelsPerByte is how many pixels of a frame cost libvpx's realtime
// encoder what a byte of its output does: 0.1 ms a kilobyte over 6 ms a
// megapixel (see encodeFits).
const pixelsPerByte = 0.1e-3 / 6e-6

// startRung returns the highest rung whose default bitrate is at most b (the
// lowest rung if none).
func (c *Controller) startRung(b rate.Bitrate) int {
	i := 0
	for j, r := range c.ladder {
		if r.Default() <= b {
			i = j
		}
	}
	return i
}

// clamp bounds a rate to what the ladder can send: from the lowest rung's
// Min at its fewest frames a second (media.MaxStretch) to the top rung's
// Max.
func (c *Controller) clamp(b rate.Bitrate) rate.Bitrate {
	lo, hi := c.ladder[0].Min/media.MaxStretch, c.ladder[len(c.ladder)-1].Max
	return min(max(b, lo), hi)
}
