package drain

import (
	"math"
	"time"

	"replenish/rate"
)

// Estimator turns a transport's samples into drain-rate estimates, as the
// package comment describes. Create one with New for each connection.
type Estimator struct {
	rounds, minAcks int

	started bool
	prev    Sample
	// acked is when Delivered last grew: the sample's AckedAt, or its
	// time if unknown.
	acked time.Time
	// open reports that a window has started, at start; a window starts
	// only at a sample taken outside loss recovery, or where the one
	// before closed in a lasting recovery (see lasting).
	open  bool
	start mark
	// recovering is when the sender's current loss recovery began; zero
	// outside recovery.
	recovering time.Time
	// room is the highest rate the bottleneck could have carried without
	// running dry over the open window's intervals in which the sender was
	// not backlogged (bytes per second; +Inf if there were none).
	room float64

	live   []window  // windows of the horizon: decreasing in rate, oldest first
	floor  window    // the newest path-limited window, kept after it ages out
	held   window    // the newest window, for when every window has aged out
	pacing []reading // pacing rates of the last Rounds round trips: decreasing, oldest first
	last   Estimate
	// horizon is how long a window stays live: Rounds round trips (each
	// the smoothed RTT, at most twice the minimum), or
	// twice the newest window's span if longer (at low rates a window
	// needs more than Rounds round trips to gather MinAcks
	// acknowledgements, and must stay live until the next can close).
	horizon time.Duration
	span    time.Duration // the newest window's span
	// early is a shorter window, open only until the first
	// path-limited window closes (see earlyAcks).
	early struct {
		open     bool
		anchored bool // it began at an acknowledgement
		start    mark
		room     float64 // as room, over the early window
	}
}

// earlyAcks is the fewest acknowledgements of an early window. Until the
// first path-limited window closes, the Estimator also measures windows of
// at least one smoothed round trip and earlyAcks acknowledgements, and
// keeps one if it is path-limited. A sender that starts far above the
// path (1 Mb/s on 100 kb/s) has built a queue of seconds by the time a
// window of MinAcks closes (2 to 4 s at 100 kb/s with delayed
// acknowledgements), and until then it knows only the window's bound,
// which cwnd and a lagging smoothed RTT put at several times the path. The
// queue keeps the bottleneck busy, so the acknowledgements come at its
// rate, and a window anchored on them (Sample.AckedAt) holds whole
// intervals between them: its error is their jitter, not one in earlyAcks.
// An early window begins at an acknowledgement, and one that is not
// path-limited begins again.
const earlyAcks = 4

// mark is the counters at the start of a window.
type mark struct {
	at              time.Time
	delivered, acks uint64
}

// window is a measured window. The zero window (no end) means none.
type window struct {
	end         time.Time
	rate        rate.Bitrate
	pathLimited bool
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
	if e.started && (s.At.Before(e.prev.At) || s.Delivered < e.prev.Delivered || s.Acks < e.prev.Acks) {
		*e = Estimator{rounds: e.rounds, minAcks: e.minAcks}
	}
	e.acked = e.ackTime(s)
	switch {
	case !s.Recovering:
		e.recovering = time.Time{}
	case e.recovering.IsZero():
		e.recovering = s.At
	}
	var closed window
	if e.started {
		closed = e.advance(s)
		if early := e.advanceEarly(s); closed.end.IsZero() {
			closed = early
		}
	}
	if !e.open && (!s.Recovering || e.longRecovery(s)) {
		e.begin(s)
	}
	if !e.early.open && !s.Recovering && e.floor.end.IsZero() && closed.end.IsZero() {
		e.early.open, e.early.anchored, e.early.start = true, false, mark{e.acked, s.Delivered, s.Acks}
	}
	e.started, e.prev = true, s
	// A round trip counts at most twice the minimum: a queue the sender
	// built after the path slowed inflates the smoothed RTT, and would
	// stretch the memory of the old rate just when the cuts aim at it.
	rt := s.SRTT
	if s.MinRTT > 0 {
		rt = min(rt, 2*s.MinRTT)
	}
	e.horizon = max(time.Duration(e.rounds)*rt, 2*e.span)
	e.expire(s.At)
	if !closed.end.IsZero() {
		e.admit(closed)
	}
	if s.PacingRate > 0 {
		e.pacing = pushMax(e.pacing, reading{s.At, s.PacingRate}, func(r reading) rate.Bitrate { return r.rate })
	}
	e.last = e.estimate(s)
	if !closed.end.IsZero() {
		e.last.Window, e.last.WindowPathLimited = closed.rate, closed.pathLimited
	}
	return e.last
}

// ackTime returns when Delivered last grew, as of s: s's AckedAt if
// Delivered grew since the previous sample (at s's time if unknown, or if
// it lies outside the interval), else as it was.
func (e *Estimator) ackTime(s Sample) time.Time {
	if e.started && s.Delivered == e.prev.Delivered {
		return e.acked
	}
	t := s.AckedAt
	if t.IsZero() || t.After(s.At) {
		return s.At
	}
	if e.started && !t.After(e.acked) {
		return s.At // no later than the acknowledgement before: a stale reading
	}
	return t
}

// begin opens a window at s, from the acknowledgement that last raised
// Delivered.
func (e *Estimator) begin(s Sample) {
	e.open = true
	e.start = mark{e.acked, s.Delivered, s.Acks}
	e.room = math.Inf(1)
}

// advance accounts for the interval from the previous sample to s and
// returns the window s closes, if any.
func (e *Estimator) advance(s Sample) window {
	if !e.open {
		return window{}
	}
	e.room = min(e.room, e.roomTo(s))
	if !e.spans(s, e.start, e.minAcks) || (s.Recovering && !e.lasting(s)) {
		return window{}
	}
	n := float64(s.Delivered - e.start.delivered)
	e.span = e.acked.Sub(e.start.at)
	bps := n / e.span.Seconds()
	w := window{end: s.At, rate: bytesPerSecond(bps), pathLimited: e.room >= bps}
	e.begin(s)
	return w
}

// roomTo returns the highest rate (bytes per second) at which the
// bottleneck stayed busy from the previous sample to s: +Inf if the sender
// was backlogged throughout. Otherwise it stayed busy if what was in flight
// at the previous sample exceeded what the path holds (rate × min RTT),
// what it drains until s, and the slack (rate × Sample.SlackTime, at most
// Sample.SlackMax): so at any rate up to the one returned.
func (e *Estimator) roomTo(s Sample) float64 {
	if s.Backlogged {
		return math.Inf(1)
	}
	base := s.MinRTT
	if base <= 0 {
		base = s.SRTT
	}
	d := base + s.At.Sub(e.prev.At)
	in := float64(e.prev.InFlight)
	switch {
	case e.prev.InFlight < 0:
		return 0
	case d <= 0:
		return math.Inf(1)
	}
	// The rate r at which r·d + min(r·SlackTime, SlackMax) is what was in
	// flight: below SlackMax/SlackTime the slack grows with the rate,
	// above it it is SlackMax (and then in flight exceeds SlackMax).
	r := in / (d + s.SlackTime).Seconds()
	if slack := float64(s.SlackMax); r*s.SlackTime.Seconds() > slack {
		r = (in - slack) / d.Seconds()
	}
	return r
}

// advanceEarly accounts for the interval from the previous sample to s in
// the early window, and returns it if it closes path-limited (see
// earlyAcks). It closes once it spans a smoothed round trip and earlyAcks
// acknowledgements; if not path-limited, it begins again at s.
func (e *Estimator) advanceEarly(s Sample) window {
	w := &e.early
	if !w.open {
		return window{}
	}
	if s.Recovering || !e.floor.end.IsZero() {
		w.open = false
		return window{}
	}
	if !w.anchored {
		// It begins at the first acknowledgement after it opened: the
		// one before may precede anything in flight (the handshake's).
		w.anchored = s.Acks > w.start.acks
		w.start, w.room = mark{e.acked, s.Delivered, s.Acks}, math.Inf(1)
		return window{}
	}
	w.room = min(w.room, e.roomTo(s))
	if !e.spans(s, w.start, earlyAcks) {
		return window{}
	}
	d := e.acked.Sub(w.start.at)
	w.open = false
	bps := float64(s.Delivered-w.start.delivered) / d.Seconds()
	if w.room < bps {
		return window{}
	}
	// It stays live until a window of MinAcks can close.
	e.span = max(e.span, d*time.Duration(e.minAcks)/earlyAcks)
	return window{end: s.At, rate: bytesPerSecond(bps), pathLimited: true}
}

// spans reports whether a window begun at from, ending at s's latest
// acknowledgement, is long enough to measure: at least one smoothed round
// trip and acks acknowledgements (MinAcks, or earlyAcks for an early one).
func (e *Estimator) spans(s Sample, from mark, acks int) bool {
	d := e.acked.Sub(from.at)
	return d > 0 && d >= s.SRTT && s.Acks-from.acks >= uint64(acks)
}

// lasting reports whether the sender has been recovering for
// lastingRounds smoothed round trips, and the open window spans as many:
// random loss at a few percent keeps a sender of hundreds of packets a
// round trip recovering all along (23 Mb/s at 210 ms and 3%: the estimate
// held a window of 1.8 Mb/s for 20 s while the stream sent 19 Mb/s),
// so a window that waited for the recovery's end would never close. Its
// end then falls on the acknowledgement that last raised Delivered, and
// what the holes hold back at either end (up to a round trip's data) is
// at most one part in lastingRounds of the window.
func (e *Estimator) lasting(s Sample) bool {
	return e.longRecovery(s) && e.acked.Sub(e.start.at) >= time.Duration(lastingRounds)*s.SRTT
}

// longRecovery reports whether the sender has been recovering for
// lastingRounds smoothed round trips as of s.
func (e *Estimator) longRecovery(s Sample) bool {
	return !e.recovering.IsZero() && s.At.Sub(e.recovering) >= time.Duration(lastingRounds)*s.SRTT
}

// admit puts a closed window into the maximum; a path-limited one also
// becomes the floor. An application-limited window thereby raises the
// estimate when it is the highest, and otherwise changes nothing: the
// maximum, or the floor, is above it.
func (e *Estimator) admit(w window) {
	if w.pathLimited {
		e.floor = w
	}
	e.live = pushMax(e.live, w, func(w window) rate.Bitrate { return w.rate })
	e.held = w
}

// expire drops windows and pacing readings older than the horizon before
// now, keeping the newest pacing reading.
func (e *Estimator) expire(now time.Time) {
	for len(e.live) > 0 && now.Sub(e.live[0].end) > e.horizon {
		e.live = e.live[1:]
	}
	for len(e.pacing) > 1 && now.Sub(e.pacing[0].at) > e.horizon {
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

// reported is the window measured reports.
type reported struct {
	rate        rate.Bitrate
	pathLimited bool
	aged        bool // closed before the horizon
}

// measured returns the highest window to report before the bounds, and
// whether there is one at all.
func (e *Estimator) measured(now time.Time) (reported, bool) {
	switch {
	case len(e.live) > 0 && e.live[0].rate >= e.floor.rate:
		return reported{rate: e.live[0].rate, pathLimited: e.live[0].pathLimited}, true
	case !e.floor.end.IsZero():
		return reported{rate: e.floor.rate, pathLimited: true, aged: now.Sub(e.floor.end) > e.horizon}, true
	case !e.held.end.IsZero():
		return reported{rate: e.held.rate, pathLimited: e.held.pathLimited, aged: true}, true
	}
	return reported{}, false
}

// estimate combines the maximum with the bounds at sample s.
func (e *Estimator) estimate(s Sample) Estimate {
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
	est.Newest, est.NewestAt = e.floor.rate, e.floor.end
	m, ok := e.measured(s.At)
	if !ok {
		if haveBound {
			est.Rate, est.Source = est.Bound, SourceWindow
		}
		return est
	}
	est.Measured, est.AppLimited, est.Aged = m.rate, m.aged || !m.pathLimited, m.aged
	est.Rate, est.Source = m.rate, SourceMeasured
	if haveBound && est.Bound < m.rate {
		est.Rate, est.Source = est.Bound, SourceWindowCapped
		if paceBound > 0 && paceBound == est.Bound && (!haveWin || paceBound < winBound) {
			est.Source = SourcePacingCapped
		}
	}
	return est
}
