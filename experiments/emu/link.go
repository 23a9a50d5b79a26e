package emu

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"replenish/rate"
)

// maxHeldBytes and maxHeldPackets cap what a Link holds (queue plus packets
// in propagation) so that an unlimited rate with a long delay cannot grow
// memory without bound. Arrivals beyond either are refused and counted as
// overflows.
var (
	maxHeldBytes   = 64 << 20
	maxHeldPackets = 1 << 16
)

// Verdict is what a Link decided about an arriving packet.
type Verdict int

// Verdicts of Link.Arrive.
const (
	Accepted   Verdict = iota // queued; it will depart
	Dropped                   // refused by the full drop-tail queue
	Lost                      // removed by random loss
	Overflowed                // refused because the link holds its memory cap
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Dropped:
		return "dropped"
	case Lost:
		return "lost"
	case Overflowed:
		return "overflowed"
	}
	return "unknown"
}

// Idle is a span of time, as durations since the link started, in which
// a link's serializer had nothing to send: its queue was empty.
type Idle struct{ From, To time.Duration }

// maxIdleSpans caps the idle spans a Link keeps between two calls of
// TakeIdle; spans beyond it are counted, not kept.
const maxIdleSpans = 1 << 16

// Departure describes a packet leaving a Link.
type Departure struct {
	At      time.Duration // when it leaves: serialization done plus delay
	Arrived time.Duration // when it arrived
	Wait    time.Duration // time it waited in the queue before its serialization began
	Size    int           // bytes
	// Lost reports a packet the link lost because it went down while the
	// packet was in it (Carrier): the caller discards it and counts it
	// as Lost instead of delivering it.
	Lost bool
}

// queued is a packet in the bottleneck queue.
type queued struct {
	size    int
	arrived time.Duration
	wait    time.Duration // set when its serialization begins
}

// Link is the arithmetic of one direction of a path: a drop-tail queue in
// front of a serializer running at a rate, followed by a propagation delay.
// It holds no packets and reads no clock: callers pass the time in, as a
// duration since the link started, never decreasing (an earlier time is taken
// as the latest one seen). Packets leave in the order they were accepted, so a
// caller keeps the payloads in its own first-in first-out queue.
//
// The queue counts every byte not yet serialized, including the unsent part
// of the packet in service; a packet is dropped when it would take the queue
// above its limit. Rate and delay changes, scheduled or live, apply at their
// time: the packet in service finishes its remaining bits at the new rate,
// and a packet whose serialization ends after a delay change gets the new
// delay, but never leaves before a packet accepted earlier.
//
// A link that a step takes down (CarrierDown) loses every arrival, every
// packet whose serialization ends while it is down, and every packet in
// propagation when it went down; Depart returns those with Lost set, in
// their place in the order, so that a caller's queue of payloads stays in
// step.
//
// A Link is not safe for concurrent use.
type Link struct {
	rate       rate.Bitrate
	delay      time.Duration
	queueBytes int
	queueTime  time.Duration
	loss       float64
	rng        *rand.Rand
	jitter     time.Duration
	jitterRng  *rand.Rand // its own stream, so that the loss draws do not depend on it
	steps      []Step     // pending schedule, sorted by At

	now time.Duration // latest time seen

	queue    fifo[queued]  // the front is in service when the queue is not empty
	queued   int           // bytes in queue, whole packets
	headDone time.Duration // when the front's serialization ends at the current rate

	line      fifo[Departure] // serialized, in propagation
	lineBytes int
	lastAt    time.Duration // departure time of the latest packet into line

	maxBacklog int
	down       bool // the carrier is down: every packet is lost

	idleFrom time.Duration // when the serializer last went idle; meaningful while the queue is empty
	idle     []Idle        // idle spans ended since the last TakeIdle
	idleLost int           // idle spans beyond maxIdleSpans since the last TakeIdle
}

// NewLink returns a Link for cfg. It returns an error wrapping ErrConfig if cfg
// has a negative rate, delay or limit, a loss outside 0..1, or a schedule step
// at a negative time.
func NewLink(cfg LinkConfig) (*Link, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Link{
		rate:       cfg.Rate,
		delay:      cfg.Delay,
		queueBytes: cfg.QueueBytes,
		queueTime:  cfg.QueueTime,
		loss:       cfg.Loss,
		rng:        rand.New(rand.NewPCG(uint64(cfg.Seed), 0x656d75)),
		jitter:     cfg.Jitter,
		jitterRng:  rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6a6974)),
	}
	if l.queueBytes == 0 && l.queueTime == 0 {
		l.queueTime = DefaultQueueTime
	}
	l.Schedule(0, cfg.Schedule)
	return l, nil
}

// Schedule adds steps to the link's schedule, each at its At after now (a
// duration since the link started): the schedule of LinkConfig is the one
// added at 0. Steps need not be sorted; a step at a negative At is taken
// as at now. A step applies at its time, as a Set then would.
func (l *Link) Schedule(now time.Duration, steps []Step) {
	now = l.advance(now)
	for _, s := range steps {
		s.At = now + max(s.At, 0)
		l.steps = append(l.steps, s)
	}
	slices.SortStableFunc(l.steps, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
}

// Arrive offers a packet of size bytes at time now and returns the verdict.
// A link that is down loses it; otherwise loss is decided first (one
// random draw per arrival when Loss > 0), then the drop-tail limit, then
// the memory cap.
func (l *Link) Arrive(now time.Duration, size int) Verdict {
	now = l.advance(now)
	if l.down {
		return Lost
	}
	if l.loss > 0 && l.rng.Float64() < l.loss {
		return Lost
	}
	if l.rate > 0 && l.backlog(now)+size > l.limit() {
		return Dropped
	}
	if l.queued+l.lineBytes+size > maxHeldBytes || l.queue.Len()+l.line.Len() >= maxHeldPackets {
		return Overflowed
	}
	l.queue.Push(queued{size: size, arrived: now})
	l.queued += size
	if l.queue.Len() == 1 {
		l.endIdle(now)
		l.startFront(now)
	}
	l.maxBacklog = max(l.maxBacklog, l.backlog(now))
	return Accepted
}

// Depart removes and returns the next packet if it leaves at or before now.
// A packet the link lost while down comes back with Lost set.
func (l *Link) Depart(now time.Duration) (Departure, bool) {
	now = l.advance(now)
	if l.line.Len() == 0 || l.line.Front().At > now {
		return Departure{}, false
	}
	d := l.line.Pop()
	l.lineBytes -= d.Size
	return d, true
}

// Next returns the time at which Depart will next have a packet, if no
// arrival or change intervenes, and false when the link holds no packets. The
// time may be earlier (a scheduled step before the departure), never later.
func (l *Link) Next() (time.Duration, bool) {
	if l.line.Len() > 0 {
		return l.line.Front().At, true
	}
	if l.queue.Len() == 0 {
		return 0, false
	}
	if len(l.steps) > 0 && l.steps[0].At < l.headDone {
		return l.steps[0].At, true
	}
	return max(l.headDone+l.delay, l.lastAt), true
}

// TakeIdle returns the spans of time up to now in which the serializer of
// a rate-limited link had nothing to send, since the previous call (or
// since the link started), in time order, and how many spans it could not
// keep (more than maxIdleSpans between two calls). A span still open at now
// is returned up to now, and continues from now in the next call. While
// the rate is unlimited no span is recorded: the link is never busy.
func (l *Link) TakeIdle(now time.Duration) (spans []Idle, lost int) {
	now = l.advance(now)
	if l.queue.Len() == 0 {
		l.endIdle(now)
		l.idleFrom = now
	}
	spans, lost = l.idle, l.idleLost
	l.idle, l.idleLost = nil, 0
	return spans, lost
}

// endIdle ends, at t, the idle span that began at idleFrom (the queue is
// empty), keeping it if the link is rate-limited and the span not empty.
func (l *Link) endIdle(t time.Duration) {
	switch {
	case l.rate == 0 || t <= l.idleFrom:
	case len(l.idle) >= maxIdleSpans:
		l.idleLost++
	default:
		l.idle = append(l.idle, Idle{From: l.idleFrom, To: t})
	}
}

// Set changes the rate (0 means unlimited) and the one-way delay at time now.
// Negative values are taken as 0.
func (l *Link) Set(now time.Duration, r rate.Bitrate, delay time.Duration) {
	now = l.advance(now)
	l.setRate(now, max(r, 0))
	l.delay = max(delay, 0)
}

// Rate returns the current rate; 0 means unlimited.
func (l *Link) Rate() rate.Bitrate { return l.rate }

// Delay returns the current one-way delay.
func (l *Link) Delay() time.Duration { return l.delay }

// Down reports whether the link is down (a CarrierDown step applied and no
// CarrierUp since) at time now.
func (l *Link) Down(now time.Duration) bool {
	l.advance(now)
	return l.down
}

// Limit returns the current drop-tail limit in bytes, or 0 when the rate is
// unlimited (no queue builds).
func (l *Link) Limit() int {
	if l.rate == 0 {
		return 0
	}
	return l.limit()
}

// Backlog returns the bytes not yet serialized at time now.
func (l *Link) Backlog(now time.Duration) int {
	return l.backlog(l.advance(now))
}

// MaxBacklog returns the largest backlog seen, in bytes, just after an
// accepted arrival.
func (l *Link) MaxBacklog() int { return l.maxBacklog }

func (l *Link) limit() int {
	b := l.queueBytes
	if b == 0 {
		b = l.rate.Bytes(l.queueTime)
	}
	return max(b, 2*MTU)
}

// backlog returns the queued bytes minus the part of the front packet already
// serialized at now. The link must have been advanced to now.
func (l *Link) backlog(now time.Duration) int {
	if l.queue.Len() == 0 {
		return 0
	}
	front := l.queue.Front().size
	left := 0
	if l.rate > 0 && l.headDone > now {
		left = int(mulDivCeil(int64(l.headDone-now), int64(l.rate), 8*int64(time.Second)))
	}
	return l.queued - front + min(left, front)
}

// advance processes serialization completions and schedule steps up to now,
// in time order (a completion before a step at the same instant), and
// returns now, raised to the latest time seen.
func (l *Link) advance(now time.Duration) time.Duration {
	now = max(now, l.now)
	for {
		stepDue := len(l.steps) > 0 && l.steps[0].At <= now
		headDue := l.queue.Len() > 0 && l.headDone <= now
		switch {
		case headDue && (!stepDue || l.headDone <= l.steps[0].At):
			l.finishFront()
		case stepDue:
			s := l.steps[0]
			l.steps = l.steps[1:]
			switch {
			case s.Rate > 0:
				l.setRate(s.At, s.Rate)
			case s.Rate < 0:
				l.setRate(s.At, 0)
			}
			switch {
			case s.Delay > 0:
				l.delay = s.Delay
			case s.Delay < 0:
				l.delay = 0
			}
			l.setCarrier(s.At, s.Carrier)
		default:
			l.now = now
			return now
		}
	}
}

// startFront begins serializing the front packet at t.
func (l *Link) startFront(t time.Duration) {
	f := l.queue.Front()
	f.wait = t - f.arrived
	l.headDone = t + l.serialization(f.size)
}

// finishFront moves the front packet, whose serialization ended at
// l.headDone, into propagation.
func (l *Link) finishFront() {
	q := l.queue.Pop()
	l.queued -= q.size
	at := max(l.headDone+l.delay+l.drawJitter(), l.lastAt)
	l.line.Push(Departure{At: at, Arrived: q.arrived, Wait: q.wait, Size: q.size, Lost: l.down})
	l.lineBytes += q.size
	l.lastAt = at
	if l.queue.Len() > 0 {
		l.startFront(l.headDone)
	} else {
		l.idleFrom = l.headDone
	}
}

// drawJitter returns a packet's extra delay (see LinkConfig.Jitter).
func (l *Link) drawJitter() time.Duration {
	if l.jitter <= 0 {
		return 0
	}
	return time.Duration(l.jitterRng.Int64N(int64(l.jitter)))
}

// setCarrier applies a step's carrier change at t. Going down loses the
// packets in propagation that have not left by t; the queue keeps
// draining, into losses (finishFront), until the link comes back up.
func (l *Link) setCarrier(t time.Duration, c Carrier) {
	switch c {
	case CarrierDown:
		l.down = true
		for i := range l.line.Len() {
			if d := l.line.At(i); d.At > t {
				d.Lost = true
			}
		}
	case CarrierUp:
		l.down = false
	}
}

// setRate changes the rate at t; the packet in service, if any, serializes
// its remaining bits at the new rate.
func (l *Link) setRate(t time.Duration, r rate.Bitrate) {
	if l.queue.Len() > 0 {
		switch left := l.headDone - t; {
		case r == 0 || l.rate == 0 || left <= 0:
			l.headDone = min(l.headDone, t)
		default:
			l.headDone = t + time.Duration(mulDivCeil(int64(left), int64(l.rate), int64(r)))
		}
	}
	l.rate = r
}

// serialization returns the time the current rate takes to send size bytes,
// rounded up to the nanosecond.
func (l *Link) serialization(size int) time.Duration {
	if l.rate == 0 {
		return 0
	}
	return time.Duration(mulDivCeil(int64(size)*8, int64(time.Second), int64(l.rate)))
}

// mulDivCeil returns ceil(a*b/c) for non-negative a, b and positive c,
// without overflow in the product; it saturates at math.MaxInt64.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}
