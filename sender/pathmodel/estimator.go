package pathmodel

import (
	"time"

	"replenish/rate"
)

// Estimator selects how the model's drain-rate estimate treats
// application-limited windows.
type Estimator int

const (
	// Sticky is the transport's estimator: bytes delivered over windows
	// of at least one SRTT; the estimate is the windowed maximum over ten
	// SRTTs, and an application-limited window enters only if it raises
	// it, so that while the flow is application-limited the estimate keeps
	// the last backlogged measurement.
	Sticky Estimator = iota
	// Decaying lets every window into the maximum, so that while the flow
	// is application-limited the estimate falls to the flow's own rate
	// within ten SRTTs. A controller must hold with either.
	Decaying
)

// estWindows is how many SRTTs the windowed maximum spans.
const estWindows = 10

type rateSample struct {
	at   time.Duration
	rate float64 // bytes per second
}

// drainEstimator computes the model's drain rate from exact delivered
// bytes, as the transport's estimator does from TCP_INFO.
type drainEstimator struct {
	kind      Estimator
	started   bool
	winStart  time.Duration
	winBytes  int64
	winApp    bool
	samples   []rateSample // descending by rate within the window
	est       float64
	lastApp   bool
	lastValid bool
}

// onAck takes the delivered-bytes counter after an ACK of a segment that
// was (or was not) sent while application-limited.
func (e *drainEstimator) onAck(now time.Duration, delivered int64, srtt time.Duration, app bool) {
	if !e.started {
		e.started, e.winStart, e.winBytes = true, now, delivered
		return
	}
	e.winApp = e.winApp || app
	if srtt <= 0 || now-e.winStart < srtt {
		return
	}
	r := float64(delivered-e.winBytes) / (now - e.winStart).Seconds()
	e.lastApp, e.lastValid = e.winApp, true
	if e.kind == Decaying || !e.winApp || r >= e.est {
		e.insert(now, r, estWindows*srtt)
	}
	e.winStart, e.winBytes, e.winApp = now, delivered, false
}

func (e *drainEstimator) insert(now time.Duration, r float64, span time.Duration) {
	keep := e.samples[:0]
	for _, s := range e.samples {
		if now-s.at <= span && s.rate > r {
			keep = append(keep, s)
		}
	}
	e.samples = append(keep, rateSample{now, r})
	e.est = e.samples[0].rate
}

// rate returns the estimate; 0 before the first window closes.
func (e *drainEstimator) rate() rate.Bitrate {
	if !e.lastValid {
		return 0
	}
	return rate.FromBytesPerSecond(e.est)
}
