package emu

import (
	"math/bits"
	"time"

	"replenish/metrics"
)

// Counters counts what happened in one direction over some span of time.
type Counters struct {
	Span      time.Duration // the time the counters cover
	Packets   int64         // packets delivered
	Bytes     int64         // IP bytes delivered
	Drops     int64         // arrivals refused by the full drop-tail queue
	Losses    int64         // arrivals removed by random loss
	Overflows int64         // arrivals refused because the emulator held its memory cap
	// Queue is the time delivered packets waited in the bottleneck queue
	// before their serialization began, in ms. Its percentiles are within
	// 1.6% (they come from a log-linear histogram); Max is exact.
	Queue metrics.Percentiles
	// Late is how long after its computed departure the mover wrote each
	// delivered packet, in ms: the emulator's own timing error.
	Late metrics.Percentiles
}

// Rate returns the delivered bytes over the span, in bits per second.
func (c Counters) Rate() float64 {
	if c.Span <= 0 {
		return 0
	}
	return float64(c.Bytes) * 8 / c.Span.Seconds()
}

// histogram is a log-linear histogram of non-negative durations in
// nanoseconds: exact below 2^subBits ns, then 2^subBits buckets per power of
// two.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    int64
}

const (
	subBits     = 5
	histMaxBits = 44 // values from 2^44 ns (about 4.9 hours) share the last bucket
	histBuckets = (histMaxBits - subBits + 1) << subBits
)

func bucketOf(v int64) int {
	if v < 1<<subBits {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - subBits - 1
	i := (e+1)<<subBits + int(v>>e) - 1<<subBits
	return min(i, histBuckets-1)
}

// bucketMid returns the middle of bucket i, rounded down.
func bucketMid(i int) int64 {
	if i < 2<<subBits {
		return int64(i)
	}
	e := i>>subBits - 1
	lo := int64(i&(1<<subBits-1)|1<<subBits) << e
	return lo + (int64(1)<<e)/2
}

func (h *histogram) add(v time.Duration) {
	h.counts[bucketOf(int64(v))]++
	h.n++
	h.max = max(h.max, int64(v))
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max))
		}
	}
	return time.Duration(h.max)
}

// percentiles summarises the histogram in ms; the values are 0 when it is
// empty (no packet waited), not unknown.
func (h *histogram) percentiles() metrics.Percentiles {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return metrics.Percentiles{
		N:       int(h.n),
		P50:     ms(h.quantile(0.50)),
		P95:     ms(h.quantile(0.95)),
		P99:     ms(h.quantile(0.99)),
		Max:     ms(time.Duration(h.max)),
		Figures: metrics.All,
	}
}

// tally is the raw material of Counters.
type tally struct {
	packets, bytes, drops, losses, overflows int64
	queue, late                              histogram
}

func (t *tally) merge(o *tally) {
	t.packets += o.packets
	t.bytes += o.bytes
	t.drops += o.drops
	t.losses += o.losses
	t.overflows += o.overflows
	t.queue.merge(&o.queue)
	t.late.merge(&o.late)
}

func (t *tally) counters(span time.Duration) Counters {
	return Counters{
		Span:      span,
		Packets:   t.packets,
		Bytes:     t.bytes,
		Drops:     t.drops,
		Losses:    t.losses,
		Overflows: t.overflows,
		Queue:     t.queue.percentiles(),
		Late:      t.late.percentiles(),
	}
}

// meterSlots is the number of slots a meter's window is divided into.
const meterSlots = 10

// meter counts one direction's events, over the whole run and over a sliding
// window made of meterSlots slots. Times are durations since the path
// started. It is not safe for concurrent use.
type meter struct {
	slot  time.Duration // window / meterSlots
	since time.Duration // when total was last reset
	total tally
	slots [meterSlots]struct {
		epoch int64 // which slot of time it holds: t / slot
		tally
	}
}

func newMeter(window time.Duration) *meter {
	m := &meter{slot: max(window/meterSlots, 1)}
	for i := range m.slots {
		m.slots[i].epoch = -1
	}
	return m
}

// at returns the tally of the window slot for time t, resetting a slot that
// held older times; it returns nil for a time older than the window.
func (m *meter) at(t time.Duration) *tally {
	e := int64(max(t, 0) / m.slot)
	s := &m.slots[e%meterSlots]
	switch {
	case s.epoch == e:
	case s.epoch < e:
		s.epoch = e
		s.tally = tally{}
	default:
		return nil
	}
	return &s.tally
}

// verdict counts an arrival that was not accepted.
func (m *meter) verdict(t time.Duration, v Verdict) {
	for _, c := range []*tally{&m.total, m.at(t)} {
		if c == nil {
			continue
		}
		switch v {
		case Dropped:
			c.drops++
		case Lost:
			c.losses++
		case Overflowed:
			c.overflows++
		}
	}
}

// deliver counts a departure written at time now.
func (m *meter) deliver(d Departure, now time.Duration) {
	for _, c := range []*tally{&m.total, m.at(d.At)} {
		if c == nil {
			continue
		}
		c.packets++
		c.bytes += int64(d.Size)
		c.queue.add(d.Wait)
		c.late.add(max(now-d.At, 0))
	}
}

// resetTotal restarts the totals at time now; the window is kept.
func (m *meter) resetTotal(now time.Duration) {
	m.total = tally{}
	m.since = now
}

// counters returns the totals (since the path started or the last
// resetTotal) and the window ending at now.
func (m *meter) counters(now time.Duration) (total, window Counters) {
	e := int64(max(now, 0) / m.slot)
	var w tally
	for i := range m.slots {
		if s := &m.slots[i]; s.epoch > e-meterSlots && s.epoch <= e {
			w.merge(&s.tally)
		}
	}
	span := min(now, (meterSlots-1)*m.slot+now-time.Duration(e)*m.slot)
	return m.total.counters(max(now-m.since, 0)), w.counters(span)
}
