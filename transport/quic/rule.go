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
