package quic

import (
	"math"
	"time"

	"replenish/rate"
)

// decide returns the largest unsent backlog, in bytes, at which the rule
// invites a frame: half the replenish threshold (drain x replenish time),
// as Linux's write readiness and the TCP transport count it, plus what
// drains during the sender's declared lead, so that a frame that takes the
// lead to produce still arrives with half a replenish time of backlog ahead
// of it. With no drain estimate it returns math.MaxInt64: erring toward
// inviting rather than stalling. An empty backlog is always invited.
func decide(drain rate.Bitrate, replenish, lead time.Duration) int64 {
	if drain <= 0 {
		return math.MaxInt64
	}
	bytes := float64(drain) / 8 * (replenish.Seconds()/2 + lead.Seconds())
	if bytes >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(bytes)
}

// sample is what the Conn tells its drain estimator at each decision.
type sample struct {
	at         time.Time
	delivered  int64 // bytes packetized so far
	backlogged bool  // the backlog stayed above zero since the previous sample
	srtt       time.Duration
	cwnd       int64 // bytes
}

// estimate is a drain-rate estimate.
type estimate struct {
	rate       rate.Bitrate
	appLimited bool
}

// estimator turns samples into a drain rate.
type estimator interface {
	add(sample)
	estimate() estimate
}

// windowEstimator estimates the drain rate as the congestion window over
// the smoothed round trip.
type windowEstimator struct{ last sample }

func newEstimator() estimator { return &windowEstimator{} }

func (w *windowEstimator) add(s sample) { w.last = s }

func (w *windowEstimator) estimate() estimate {
	if w.last.srtt <= 0 || w.last.cwnd <= 0 {
		return estimate{}
	}
	return estimate{rate: rate.FromBytesPerSecond(float64(w.last.cwnd) / w.last.srtt.Seconds()), appLimited: true}
}
