package pathmodel

import (
	"time"

	"replenish/rate"
	"replenish/transport/drain"
	tcptransport "replenish/transport/tcp"
)

// Estimator selects how the model's drain-rate estimate treats
// application-limited windows.
type Estimator int

const (
	// Sticky is the transport's estimator (transport/drain), fed a
	// reading at every ACK and write: bytes delivered over windows of at
	// least one SRTT and drain.DefaultMinAcks ACKs, the highest of the
	// last ten SRTTs (or two windows), the newest path-limited window kept
	// as a floor, bounded by cwnd over SRTT and the pacing rate. An
	// application-limited window raises the estimate only when it is the
	// highest, so that while the flow is application-limited the estimate
	// keeps at least the last path-limited measurement.
	Sticky Estimator = iota
	// Decaying lets every window of at least one SRTT into the maximum
	// over ten SRTTs, with no floor, so that while the flow is
	// application-limited the estimate falls to the flow's own rate within
	// ten SRTTs. A controller must hold with either.
	Decaying
)

// estWindows is how many SRTTs the windowed maximum spans.
const estWindows = 10

type rateSample struct {
	at   time.Duration
	rate float64 // bytes per second
}

// drainEstimator computes the model's drain rate from exact delivered
// bytes: the transport's own estimator (Sticky) or the decaying variant.
type drainEstimator struct {
	tr        *drain.Estimator // Sticky
	last      drain.Estimate   // Sticky: after the latest reading
	started   bool
	winStart  time.Duration
	winBytes  int64
	winApp    bool
	samples   []rateSample // descending by rate within the window
	est       float64
	lastApp   bool
	lastValid bool
}

func newDrainEstimator(kind Estimator) drainEstimator {
	if kind == Sticky {
		return drainEstimator{tr: drain.New(drain.Config{})}
	}
	return drainEstimator{}
}

// read feeds the transport's estimator a reading of the TCP sender at now,
// as the transport reads TCP_INFO (transport/tcp's SampleOf): every
// segment counts as acknowledged on its own, and the slack is the
// transport's.
func (e *drainEstimator) read(now time.Duration, t *tcp) {
	if e.tr == nil {
		return
	}
	e.last = e.tr.Add(drain.Sample{
		At:         epoch.Add(now),
		Delivered:  uint64(t.deliveredBytes),
		Acks:       uint64(t.delivered),
		AckedAt:    epoch.Add(t.deliveredAt),
		InFlight:   int(t.sndNxt - t.deliveredBytes),
		Backlogged: t.unsent() > 0,
		Recovering: t.inRecovery || t.lossState,
		SRTT:       t.srtt,
		MinRTT:     t.minRTT,
		Cwnd:       t.cc.cwnd() * mss,
		PeerWindow: -1,
		SlackTime:  tcptransport.FrameSlack,
		SlackMax:   mss,
		PacingRate: rate.FromBytesPerSecond(t.cc.pacingRate(t)),
	})
}

// estimate returns the drain rate and its source for the invitation rule,
// and whether it comes from application-limited windows.
func (e *drainEstimator) estimate(t *tcp) (rate.Bitrate, drain.Source, bool) {
	if e.tr != nil {
		return e.last.Rate, e.last.Source, e.last.AppLimited
	}
	if r := e.rate(); r > 0 {
		return r, drain.SourceMeasured, e.lastApp
	}
	if r, ok := drain.WindowRate(t.cc.cwnd()*mss, -1, t.srtt); ok {
		return r, drain.SourceWindow, false
	}
	return 0, drain.SourceNone, false
}

// onAck takes the TCP sender's state after an ACK of a segment that was
// (or was not) sent while application-limited.
func (e *drainEstimator) onAck(now time.Duration, t *tcp, app bool) {
	if e.tr != nil {
		e.read(now, t)
		return
	}
	delivered, srtt := t.deliveredBytes, t.srtt
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
	e.insert(now, r, estWindows*srtt)
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
