package viewer

import (
	"sync"
	"time"

	"replenish/framer"
	"replenish/metrics"
	"replenish/rate"
)

// recvRingSize is how many recent frames per stream remember their receive
// time, to measure delivery to pages.
const recvRingSize = 256

// stream is one named sender stream. It outlives its connections: a sender
// that reconnects with the same name gets the same stream, id and counters.
type stream struct {
	id uint32 // immutable

	mu               sync.Mutex // guards following fields
	name             string
	named            bool // name came from the sender's SDES
	remote           string
	transport        string      // of the current or last connection: "tcp", "quic" or "webrtc"
	mode             string      // the sender's buffer policy, from its SDES; "" unknown
	conn             *senderConn // nil while disconnected
	ssrc             uint32
	haveSSRC         bool
	nextFrame        uint32
	framesReceived   uint64
	bytes            uint64
	keyframes        uint64
	keyframeRequests uint64
	droppedPartial   uint64
	// framesLost counts frames that never arrived whole (a reset stream,
	// a gap in sequence numbers); framesUndecodable those and the frames
	// that arrived after a loss and depend on a lost frame.
	framesLost        uint64
	framesUndecodable uint64
	width, height     int
	firstFrame        time.Time // of the current connection
	disconnectedAt    time.Time
	keyLimiter        keyframeLimiter
	meter             *metrics.Window // bytes per frame, over RateWindow
	rateWindow        time.Duration

	haveReport  bool // a sender timing report has arrived
	clockOffset time.Duration
	drainRate   rate.Bitrate
	target      rate.Bitrate

	keys                               keyCache // for pages that join
	join                               *joiner
	wait, encode, sourceDelay, network *metrics.Window // ms
	captureToReceived                  *metrics.Window // ms, from abs-capture-time
	recv                               [recvRingSize]recvEntry
}

type recvEntry struct {
	frame uint32
	at    time.Time
}

func newStream(id uint32, name, remote string, cfg *Config) *stream {
	w := func() *metrics.Window { return metrics.NewWindow(cfg.ReportWindow, cfg.ReportCap) }
	return &stream{
		id:          id,
		name:        name,
		remote:      remote,
		keyLimiter:  keyframeLimiter{interval: cfg.KeyframeInterval},
		meter:       metrics.NewWindow(cfg.RateWindow, 4096),
		rateWindow:  cfg.RateWindow,
		join:        newJoiner(cfg.JoinCap),
		wait:        w(),
		encode:      w(),
		sourceDelay: w(),
		network:     w(),

		captureToReceived: w(),
	}
}

// frameLocked records frame f, complete at now, and returns the header
// that goes to pages with it.
func (st *stream) frameLocked(f *framer.Frame, now time.Time) FrameHeader {
	id := st.nextFrame
	st.nextFrame++
	st.framesReceived++
	st.bytes += uint64(len(f.Data))
	st.meter.Add(now, float64(len(f.Data)))
	if st.firstFrame.IsZero() {
		st.firstFrame = now
	}
	st.ssrc, st.haveSSRC = f.SSRC, true
	if f.Key {
		st.keyframes++
		if f.Width > 0 && f.Height > 0 {
			st.width, st.height = f.Width, f.Height
		}
	}
	st.recv[id%recvRingSize] = recvEntry{frame: id, at: now}
	if !f.Capture.IsZero() {
		st.captureToReceived.Add(now, ms(now.Sub(f.Capture.Add(st.clockOffset))))
	}
	if ft, offset, ok := st.join.received(f.Timestamp, now); ok {
		st.addPartsLocked(now, partsOf(ft, now, offset))
	}
	return FrameHeader{
		Stream:       st.id,
		Frame:        id,
		Key:          f.Key,
		RTPTimestamp: f.Timestamp,
		SSRC:         f.SSRC,
		Width:        st.width,
		Height:       st.height,
		Capture:      f.Capture,
		Received:     now,
		ClockOffset:  st.clockOffset,
		OffsetKnown:  st.haveReport,
		Layered:      f.Layer.Present,
		TID:          f.Layer.TID,
		LayerSync:    f.Layer.Sync,
	}
}

// reportLocked records a sender timing report that arrived at now.
func (st *stream) reportLocked(r *framer.SenderReport, now time.Time) {
	st.haveReport = true
	st.clockOffset = r.ClockOffset
	st.drainRate = r.DrainRate
	st.target = r.Target
	for _, ft := range r.Frames {
		if received, ok := st.join.timing(ft, r.ClockOffset); ok {
			st.addPartsLocked(now, partsOf(ft, received, r.ClockOffset))
		}
	}
}

func (st *stream) addPartsLocked(now time.Time, p frameParts) {
	for _, x := range []struct {
		w  *metrics.Window
		d  time.Duration
		ok bool
	}{
		{st.wait, p.wait, p.hasWait},
		{st.encode, p.encode, p.hasEncode},
		{st.sourceDelay, p.sourceDelay, p.hasSourceDelay},
		{st.network, p.network, p.hasNetwork},
	} {
		if x.ok {
			x.w.Add(now, ms(x.d))
		}
	}
}

// receivedAtLocked returns when frame id was complete at the viewer, if it
// is recent enough to be remembered.
func (st *stream) receivedAtLocked(id uint32) (time.Time, bool) {
	e := st.recv[id%recvRingSize]
	if e.at.IsZero() || e.frame != id {
		return time.Time{}, false
	}
	return e.at, true
}

// ratesLocked returns the bitrate and frame rate over the rate window
// ending at now (or since the connection's first frame, if that is more
// recent, but never less than one second).
func (st *stream) ratesLocked(now time.Time) (rate.Bitrate, float64) {
	sum, n := st.meter.Sum(now)
	span := st.rateWindow
	if !st.firstFrame.IsZero() {
		span = min(span, max(now.Sub(st.firstFrame), time.Second))
	}
	secs := span.Seconds()
	return rate.FromBytesPerSecond(sum / secs), float64(n) / secs
}

// keyframeLimiter allows one keyframe request per interval. It is a pure
// function of the times it is given.
type keyframeLimiter struct {
	interval time.Duration
	last     time.Time
}

// allow reports whether a request at now may go out, and if so records it.
func (l *keyframeLimiter) allow(now time.Time) bool {
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return false
	}
	l.last = now
	return true
}

// frameParts is the sender-side breakdown of one frame's latency.
type frameParts struct {
	wait, encode, sourceDelay, network             time.Duration
	hasWait, hasEncode, hasSourceDelay, hasNetwork bool
}

// partsOf joins the sender's timing of a frame with the time the viewer
// received it complete. offset is the viewer's clock minus the sender's.
// Parts whose inputs are unknown (negative durations, zero capture) are
// left out.
func partsOf(ft framer.FrameTiming, received time.Time, offset time.Duration) frameParts {
	var p frameParts
	if ft.EncodeStart >= 0 {
		p.wait, p.hasWait = ft.EncodeStart, true
		if ft.EncodeEnd >= 0 {
			p.encode, p.hasEncode = ft.EncodeEnd-ft.EncodeStart, true
		}
	}
	if ft.WriteStart >= 0 && ft.LeftHost >= 0 {
		p.sourceDelay, p.hasSourceDelay = ft.LeftHost-ft.WriteStart, true
	}
	if ft.LeftHost >= 0 && !ft.Capture.IsZero() && !received.IsZero() {
		left := ft.Capture.Add(ft.LeftHost + offset) // in the viewer's clock
		p.network, p.hasNetwork = received.Sub(left), true
	}
	return p
}

// joiner matches received frames with the sender's timing entries by RTP
// timestamp, whichever comes first. It holds at most cap unmatched entries,
// forgetting the oldest. It is not safe for concurrent use.
type joiner struct {
	m     map[uint32]joinEntry
	order []uint32 // ring of keys in insertion order
	next  int
}

type joinEntry struct {
	slot     int // index in order
	received time.Time
	timing   *framer.FrameTiming
	offset   time.Duration
}

func newJoiner(capacity int) *joiner {
	capacity = max(capacity, 1)
	return &joiner{m: make(map[uint32]joinEntry, capacity), order: make([]uint32, capacity)}
}

// received records that the frame with RTP timestamp ts was complete at
// at. If its timing was already known it returns it and forgets both.
func (j *joiner) received(ts uint32, at time.Time) (framer.FrameTiming, time.Duration, bool) {
	if e, ok := j.m[ts]; ok && e.timing != nil {
		delete(j.m, ts)
		return *e.timing, e.offset, true
	}
	j.put(ts, joinEntry{received: at})
	return framer.FrameTiming{}, 0, false
}

// timing records the sender's timing of a frame. If the frame was already
// received it returns the receive time and forgets both.
func (j *joiner) timing(ft framer.FrameTiming, offset time.Duration) (time.Time, bool) {
	if e, ok := j.m[ft.RTPTimestamp]; ok && !e.received.IsZero() {
		delete(j.m, ft.RTPTimestamp)
		return e.received, true
	}
	j.put(ft.RTPTimestamp, joinEntry{timing: &ft, offset: offset})
	return time.Time{}, false
}

func (j *joiner) put(ts uint32, e joinEntry) {
	if old, ok := j.m[j.order[j.next]]; ok && old.slot == j.next {
		delete(j.m, j.order[j.next])
	}
	e.slot = j.next
	j.order[j.next] = ts
	j.m[ts] = e
	j.next = (j.next + 1) % len(j.order)
}

// len returns the number of unmatched entries.
func (j *joiner) len() int { return len(j.m) }

// ms converts d to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
