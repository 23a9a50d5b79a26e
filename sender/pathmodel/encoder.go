package pathmodel

import (
	"math"
	"math/rand/v2"
	"time"

	"replenish/media"
	"replenish/rate"
)

// EncoderModel describes how the model's encoder responds to its target.
// Zero values mean the defaults, which come from libvpx measured here (VP8
// realtime CBR as media configures it, on the synthetic source).
type EncoderModel struct {
	// Noise is the standard deviation of a frame's log size around the
	// rate-controlled mean of its temporal layer; 0 means 0.1, the high
	// end of what real runs with L1T3 show on the synthetic source (0.096
	// at 500 kb/s, 0.06 at 2 Mb/s, 0.056 at 10 Mb/s, 0.021 at 20 Mb/s).
	// Camera content with motion runs higher.
	Noise float64
	// Layers is each frame's size, relative to the mean, over the
	// temporal-layer period that starts at a keyframe; nil means every
	// frame the mean: media/vpx gives each L1T3 layer the share of its
	// frames (25/25/50), and real runs measure each layer's mean size at
	// 1.00 of the rolling mean from 500 kb/s to 20 Mb/s. (At 640x360 and
	// 400 kb/s the upper layers reach the coarsest quantizer and TL0's
	// frames are 1.37 of the mean; the model leaves that out.)
	// []float64{1.6, 0.8, 0.8, 0.8} models libwebrtc's 40/20/40 split.
	Layers []float64
	// KeyRatio is a keyframe's size in nominal frames (target/fps); 0
	// means 3 (libvpx caps it at 4 with the 300% intra limit; camera
	// content reaches the cap, the synthetic source stays near 1).
	KeyRatio float64
	// UpLag is the time constant with which the output closes the last
	// part of a raised target; 0 means 700 ms. Measured: after a doubling
	// the output is at 85% of the new target at once and at 95% after
	// about a second; after a halving it is on the new target within two
	// frames (after deeper falls, see cutDip).
	UpLag time.Duration
	// NoCutDip leaves out the output's dip below a target that fell far
	// (see cutDip), which libvpx's output shows in the real runs: an
	// encoder that follows a fall at once, for a test that isolates it.
	NoCutDip bool
	// Saturation returns the most a rung's encoder can produce for the
	// content, whatever the target; nil means 2 bits per pixel per frame
	// (measured: 49 Mb/s at 1280x720, 30 fps, where the quantizer reaches
	// its minimum).
	Saturation func(media.Rung) rate.Bitrate
	// Output is the output's share of a steady target; 0 means 0.965
	// (measured: libvpx CBR in real sweep runs, median over 0.5 s windows
	// where the target held within 5%: 0.959 to 0.973 from 500 kb/s to
	// 20 Mb/s, 0.983 at 100 kb/s).
	Output float64
	// EncodeTime returns the time one frame takes to encode at a rung; nil
	// means 0.2 ms plus 16 ns a pixel (measured on one core here: 0.3 ms
	// at 160x90, 0.8 ms at 320x180, 3 ms at 640x360, 15 ms at 1280x720).
	EncodeTime func(media.Rung) time.Duration
}

// upJump is the part of a raised target the output reaches at once;
// floorShare is the smallest frame, in frames at the rung's Min.
const (
	upJump     = 0.85
	floorShare = 0.8
)

// After a target that falls k times from one frame to the next, libvpx's
// output runs short of the new target, more so the deeper the fall. Over
// the frames of real runs (the sweep, the scenario set, two draws), at the
// median, as a share of the new target over the first quarter second and
// the next: 0.97 and 1.00 after a fall of 1.3 to 2 times, 0.72 and 0.94
// after 2 to 3 times, 0.48 and 0.63 after three times or more; after the
// deeper falls, 0.86 to 0.95 for the second that follows (CBR's buffer,
// filled at the old rate, drains at the new one). The model's dip below the steady output is
// cutDipK·(k−1)², at most cutDipMax, and decays with cutDipTau.
const (
	cutDipK   = 0.3
	cutDipMax = 0.6
	cutDipTau = 350 * time.Millisecond
)

// cutDip returns the dip after a fall of the target by k times.
func cutDip(k float64) float64 {
	if k <= 1 {
		return 0
	}
	return min(cutDipK*(k-1)*(k-1), cutDipMax)
}

func (m EncoderModel) withDefaults() EncoderModel {
	if m.Noise == 0 {
		m.Noise = 0.1
	}
	if m.Layers == nil {
		m.Layers = []float64{1}
	}
	if m.KeyRatio == 0 {
		m.KeyRatio = 3
	}
	if m.Output == 0 {
		m.Output = 0.965
	}
	if m.UpLag == 0 {
		m.UpLag = 700 * time.Millisecond
	}
	if m.Saturation == nil {
		m.Saturation = func(r media.Rung) rate.Bitrate {
			return rate.Bitrate(2 * float64(r.Size.Pixels()) * float64(r.Rate(30)))
		}
	}
	if m.EncodeTime == nil {
		m.EncodeTime = func(r media.Rung) time.Duration {
			return 200*time.Microsecond + time.Duration(16*r.Size.Pixels())
		}
	}
	return m
}

// encoder is the model's VP8 encoder: rate control that follows its target
// (down at once, or short of it for a while after a deep fall: cutDip;
// up mostly at once and the rest over about a second), never
// above the rung's saturation; frames never smaller than the coarsest
// quantizer makes them at the rung's own frame rate; frame sizes by
// temporal layer, with noise; each frame as long as the interval the
// sender tells it, whatever the gap before it (vpx.Encoder.Encode);
// keyframes at the start, on request and on a size change.
type encoder struct {
	m       EncoderModel
	rng     *rand.Rand
	srcFPS  int
	target  rate.Bitrate
	goal    float64 // the last goal, bits per second
	slack   float64 // how far the output lags a raised goal
	dip     float64 // the share of the goal the output runs short after a deep fall (cutDip)
	size    media.Size
	n       int // frames since the last keyframe
	started bool
}

// setBitrate sets the target, as Encoder.SetBitrate does.
func (e *encoder) setBitrate(b rate.Bitrate) { e.target = b }

// encode returns the encoded size in bytes of a frame at rung r that
// stands for d of the stream (the interval the sender tells the encoder),
// whether it is a keyframe, and how long the encode takes.
func (e *encoder) encode(r media.Rung, d time.Duration, forceKey bool) (int, bool, time.Duration) {
	reinit := !e.started || r.Size != e.size
	key := forceKey || reinit
	goal := min(float64(e.target), float64(e.m.Saturation(r)))
	if reinit {
		e.goal, e.slack = goal, 0
	}
	switch {
	case goal > e.goal:
		e.slack += (1 - upJump) * (goal - e.goal)
	case goal < e.goal:
		e.slack *= goal / e.goal
		if !e.m.NoCutDip {
			e.dip = max(e.dip, cutDip(e.goal/goal))
		}
	}
	e.slack *= math.Exp(-d.Seconds() / e.m.UpLag.Seconds())
	e.goal = goal
	eff := (goal - e.slack) * (1 - e.dip)
	e.dip *= math.Exp(-d.Seconds() / cutDipTau.Seconds())
	e.started, e.size = true, r.Size
	noise := math.Exp(e.rng.NormFloat64()*e.m.Noise - e.m.Noise*e.m.Noise/2)
	if key {
		e.n = 0
	}
	layer := e.m.Layers[e.n%len(e.m.Layers)]
	e.n++
	bits := eff * e.m.Output * d.Seconds() * layer * noise
	if key {
		bits = eff * d.Seconds() * e.m.KeyRatio * noise
	}
	// At its coarsest quantizer the encoder makes a frame of about the
	// rung's Min over one frame interval (measured: at Min the output is
	// within 15% of it), whatever the target; from a source faster than
	// the rung's reference rate, about the same frame (media.Rung.MinAt).
	bits = max(bits, floorShare*float64(r.MinAt(e.srcFPS))*r.Interval(e.srcFPS).Seconds()*noise)
	et := e.m.EncodeTime(r)
	et = time.Duration(float64(et) * (0.9 + 0.2*e.rng.Float64()))
	return max(int(bits/8), 1), key, et
}
