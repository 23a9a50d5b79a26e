package drain

import (
	"time"

	"replenish/rate"
)

// Estimator turns a transport's samples into drain-rate estimates, as the
// package comment describes. Create one with New for each connection.
type Estimator struct {
	rounds, minAcks int

	started bool
	prev    Sample
	// run marks the start of the current run of backlogged intervals;
	// inRun is false once an interval was not backlogged, until the next
	// one that is.
	run   mark
	inRun bool
	// any marks the start of the current window over every interval;
	// anyBacklogged reports that every interval since was backlogged.
	any           mark
	anyBacklogged bool

	windows []window  // the maximum: decreasing in rate, oldest first
	pacing  []reading // pacing rates: decreasing, oldest first
	last    Estimate
}

// mark is the counters at one sample.
type mark struct {
	at                    time.Time
	delivered, sent, acks uint64
}

func markOf(s Sample) mark { return mark{s.At, s.Delivered, s.Sent, s.Acks} }

// window is a measured window in the maximum.
type window struct {
	end        time.Time
	rate       rate.Bitrate
	backlogged bool
}

// reading is a pacing rate at a time.
type reading struct {
	at   time.Time
	rate rate.Bitrate
}

// New returns an Estimator with cfg's parameters (zero fields mean the
// defaults).
func New(cfg Config) *Estimator {
	e := &Estimator{rounds: cfg.Rounds, minAcks: cfg.MinAcks}
	if e.rounds <= 0 {
		e.rounds = DefaultRounds
	}
	if e.minAcks <= 0 {
		e.minAcks = DefaultMinAcks
	}
	return e
}

// Estimate returns the estimate after the latest sample (the zero Estimate
// before the first).
func (e *Estimator) Estimate() Estimate { return e.last }

// Add takes the next sample and returns the estimate after it. A sample
// taken before the previous one, or whose counters went backwards (a new
// connection), starts the estimate afresh.
func (e *Estimator) Add(s Sample) Estimate {
	if e.started && (s.At.Before(e.prev.At) || s.Delivered < e.prev.Delivered ||
		s.Sent < e.prev.Sent || s.Acks < e.prev.Acks) {
		*e = Estimator{rounds: e.rounds, minAcks: e.minAcks}
	}
	var closed window
	if !e.started {
		e.started = true
		e.run, e.inRun = markOf(s), true
		e.any, e.anyBacklogged = markOf(s), true
	} else {
		closed = e.advance(s)
	}
	e.prev = s
	horizon := time.Duration(e.rounds) * s.SRTT
	e.expire(s.At, horizon)
	if !closed.end.IsZero() {
		if closed.backlogged || len(e.windows) == 0 || closed.rate > e.windows[0].rate {
			e.windows = pushMax(e.windows, closed, func(w window) rate.Bitrate { return w.rate })
		}
	}
	if s.PacingRate > 0 {
		e.pacing = pushMax(e.pacing, reading{s.At, s.PacingRate}, func(r reading) rate.Bitrate { return r.rate })
	}
	e.last = e.estimate(s, horizon)
	if !closed.end.IsZero() {
		e.last.Window, e.last.WindowBacklogged = closed.rate, closed.backlogged
	}
	return e.last
}

// advance accounts for the interval from the previous sample to s and
// returns the window it closes, if any (zero end otherwise).
func (e *Estimator) advance(s Sample) window {
	if s.Backlogged {
		if !e.inRun {
			e.run, e.inRun = markOf(e.prev), true
		}
	} else {
		e.inRun = false
		e.anyBacklogged = false
	}
	if e.inRun && e.spans(e.run, s) {
		w := window{end: s.At, rate: windowRate(e.run, s), backlogged: true}
		e.run = markOf(s)
		e.any, e.anyBacklogged = markOf(s), true
		return w
	}
	if !e.anyBacklogged && e.spans(e.any, s) {
		w := window{end: s.At, rate: windowRate(e.any, s)}
		e.any, e.anyBacklogged = markOf(s), true
		return w
	}
	return window{}
}

// spans reports whether the window from m to s is long enough to measure:
// at least one smoothed round trip and MinAcks acknowledgements.
func (e *Estimator) spans(m mark, s Sample) bool {
	d := s.At.Sub(m.at)
	return d > 0 && d >= s.SRTT && s.Acks-m.acks >= uint64(e.minAcks)
}

// windowRate is the smaller of the bytes sent and delivered from m to s,
// over the time between them.
func windowRate(m mark, s Sample) rate.Bitrate {
	n := min(s.Delivered-m.delivered, s.Sent-m.sent)
	return bytesPerSecond(float64(n) / s.At.Sub(m.at).Seconds())
}

// expire drops windows and pacing readings older than horizon before now,
// keeping the newest of each.
func (e *Estimator) expire(now time.Time, horizon time.Duration) {
	for len(e.windows) > 1 && now.Sub(e.windows[0].end) > horizon {
		e.windows = e.windows[1:]
	}
	for len(e.pacing) > 1 && now.Sub(e.pacing[0].at) > horizon {
		e.pacing = e.pacing[1:]
	}
}

// pushMax appends v to a list kept decreasing by key, dropping the entries
// it outranks, and the oldest if the list is full.
func pushMax[T any](list []T, v T, key func(T) rate.Bitrate) []T {
	for len(list) > 0 && key(list[len(list)-1]) <= key(v) {
		list = list[:len(list)-1]
	}
	if len(list) == maxEntries {
		list = append(list[:0], list[1:]...)
	}
	return append(list, v)
}

// estimate combines the maximum with the bounds at sample s.
func (e *Estimator) estimate(s Sample, horizon time.Duration) Estimate {
	var est Estimate
	winBound, haveWin := WindowRate(s.Cwnd, s.PeerWindow, s.SRTT)
	if haveWin {
		est.Bound = winBound
	}
	var paceBound rate.Bitrate
	if len(e.pacing) > 0 {
		paceBound = e.pacing[0].rate
		if !haveWin || paceBound < est.Bound {
			est.Bound = paceBound
		}
	}
	haveBound := haveWin || paceBound > 0
	if len(e.windows) == 0 {
		if haveBound {
			est.Rate, est.Source = est.Bound, SourceWindow
		}
		return est
	}
	top := e.windows[0]
	est.Measured = top.rate
	est.AppLimited = !top.backlogged || s.At.Sub(top.end) > horizon
	est.Rate, est.Source = top.rate, SourceMeasured
	if haveBound && est.Bound < top.rate {
		est.Rate, est.Source = est.Bound, SourceWindowCapped
		if paceBound > 0 && paceBound == est.Bound && (!haveWin || paceBound < winBound) {
			est.Source = SourcePacingCapped
		}
	}
	return est
}
