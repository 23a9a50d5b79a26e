package pathmodel

import (
	"math"
	"slices"
	"time"

	"replenish/media"
	"replenish/rate"
)

// Frame is one frame the model's sender wrote. Times count from the run's
// start; LeftHost and Received are -1 if the run ended first.
type Frame struct {
	Capture  time.Duration
	Taken    time.Duration // when the sender took the picture and began encoding
	Write    time.Duration // when the encode ended and the frame was written
	LeftHost time.Duration // when its last byte left the host
	Received time.Duration // when the receiver held all of it, in order
	Video    int           // VP8 bytes
	Bytes    int           // bytes written: RTP packets, the timing report, framing
	Wire     int           // bytes at the bottleneck, with TCP/IP headers
	Key      bool
	Rung     media.Rung
	Target   rate.Bitrate
	Skipped  int
	Encode   time.Duration
	// Queue is the bottleneck queueing its first byte met (the standing
	// queue, without the frame's own serialization); -1 if dropped.
	Queue time.Duration
}

// SourceDelay returns the time from the write to the last byte leaving
// the host, or -1.
func (f Frame) SourceDelay() time.Duration {
	if f.LeftHost < 0 {
		return -1
	}
	return f.LeftHost - f.Write
}

// CaptureToReceived returns the time from capture to the receiver holding
// the whole frame, or -1.
func (f Frame) CaptureToReceived() time.Duration {
	if f.Received < 0 {
		return -1
	}
	return f.Received - f.Capture
}

// Percentiles summarises durations by nearest rank.
type Percentiles struct {
	P50, P95, Max time.Duration
	N             int
}

func percentiles(v []time.Duration) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Percentiles{P50: rank(0.5), P95: rank(0.95), Max: s[len(s)-1], N: len(s)}
}

// Recovery is how long the sender took to settle after a step.
type Recovery struct {
	Step Step
	// Latency is the time from the step until capture-to-received over a
	// second was back within the steady-state bounds: median within the
	// floor plus 25 ms, every frame within the floor plus 80 ms; -1 if it
	// never was.
	Latency time.Duration
	// Util is the time from the step until utilization over a second
	// reached 90% of what the ladder can fill; -1 if it never did.
	Util time.Duration
}

// Result is a run's frames and summary.
type Result struct {
	Frames []Frame
	// The summary over frames captured after the warm-up. The delay
	// percentiles and rung fractions leave out frames captured in the two
	// seconds after a step (Recoveries measures those).
	Frames0 int           // index of the first measured frame
	FPS     float64       // frames received per second
	Floor   time.Duration // the floor of the first measured segment
	Ser     time.Duration // its median frame's serialization at the bottleneck
	// SourceDelay is write to last byte leaving the host.
	SourceDelay Percentiles
	// SourceExcess is the source delay less 1.2 x the segment's median
	// frame serialization and 5 ms.
	SourceExcess Percentiles
	// CaptureToReceived and Excess (capture to received less the
	// segment's floor: one-way delay, the median frame's serialization,
	// the median encode).
	CaptureToReceived Percentiles
	Excess            Percentiles
	// Queue is the standing queue each frame's first byte met.
	Queue Percentiles
	// Util is the bottleneck's use by first transmissions over the
	// measured time, less five seconds after each rate step, relative to
	// the lesser of the link rate and what the top rung can send; RawUtil
	// is relative to the link rate.
	Util, RawUtil float64
	// VideoUtil is the VP8 bytes received over the same time, relative
	// to the link rate: the experiments' utilization.
	VideoUtil float64
	// CrossUtil is the competing flows' share of the link (Path.Cross):
	// their first transmissions over the same time, relative to the link
	// rate, as RawUtil is the stream's.
	CrossUtil   float64
	Rungs       map[media.Size]float64 // fraction of measured frames
	Recoveries  []Recovery
	Drops       int
	Retransmits int
}
