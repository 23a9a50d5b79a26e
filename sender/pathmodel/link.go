package pathmodel

import (
	"math"
	"time"

	"replenish/rate"
)

// rateSeg is one piece of a piecewise-constant schedule: from At on, the
// bottleneck runs at Rate.
type rateSeg struct {
	at   time.Duration
	rate rate.Bitrate
}

// delaySeg is one piece of the base round trip's schedule.
type delaySeg struct {
	at  time.Duration
	rtt time.Duration
}

// schedule is the path's rate and round trip over time, from its Path and
// Steps.
type schedule struct {
	rates  []rateSeg  // ascending by at; rates[0].at == 0
	delays []delaySeg // ascending by at; delays[0].at == 0
}

func newSchedule(p Path) schedule {
	s := schedule{
		rates:  []rateSeg{{0, p.Rate}},
		delays: []delaySeg{{0, p.RTT}},
	}
	for _, st := range p.Steps {
		if st.Rate > 0 {
			s.rates = append(s.rates, rateSeg{st.At, st.Rate})
		}
		if st.RTT > 0 {
			s.delays = append(s.delays, delaySeg{st.At, st.RTT})
		}
	}
	return s
}

// rateAt returns the bottleneck rate at t.
func (s *schedule) rateAt(t time.Duration) rate.Bitrate {
	r := s.rates[0].rate
	for _, seg := range s.rates[1:] {
		if seg.at > t {
			break
		}
		r = seg.rate
	}
	return r
}

// rttAt returns the base round trip at t.
func (s *schedule) rttAt(t time.Duration) time.Duration {
	d := s.delays[0].rtt
	for _, seg := range s.delays[1:] {
		if seg.at > t {
			break
		}
		d = seg.rtt
	}
	return d
}

// owdAt returns the one-way propagation delay at t: half the round trip.
func (s *schedule) owdAt(t time.Duration) time.Duration { return s.rttAt(t) / 2 }

// finish returns when a transmission of n bytes that starts at t ends, with
// the rate following the schedule.
func (s *schedule) finish(t time.Duration, n int) time.Duration {
	bits := float64(8 * n)
	for i, seg := range s.rates {
		end := time.Duration(math.MaxInt64)
		if i+1 < len(s.rates) {
			end = s.rates[i+1].at
		}
		if end <= t {
			continue
		}
		start := max(t, seg.at)
		need := time.Duration(math.Ceil(bits / float64(seg.rate) * float64(time.Second)))
		if end == time.Duration(math.MaxInt64) || start+need <= end {
			return start + need
		}
		bits -= float64(seg.rate) * (end - start).Seconds()
		t = end
	}
	return t // not reached: the last segment is unbounded
}

// bits returns how many bits the bottleneck can carry in [a, b).
func (s *schedule) bits(a, b time.Duration) float64 {
	var sum float64
	for i, seg := range s.rates {
		end := time.Duration(math.MaxInt64)
		if i+1 < len(s.rates) {
			end = s.rates[i+1].at
		}
		lo, hi := max(a, seg.at), min(b, end)
		if hi > lo {
			sum += float64(seg.rate) * (hi - lo).Seconds()
		}
	}
	return sum
}

// queued is a packet in the bottleneck queue (or in service).
type queued struct {
	depart time.Duration // when its last bit leaves
	size   int
}

// link is the bottleneck: a FIFO served at the schedule's rate with a
// drop-tail limit in bytes. A packet is dropped if the bytes queued ahead
// of it (the one in service included) plus its own exceed the limit.
type link struct {
	sched  *schedule
	limit  int           // bytes
	free   time.Duration // when the last accepted packet leaves
	q      []queued      // FIFO; q[head:] are still queued
	head   int
	qBytes int
}

// send offers a packet of n bytes arriving at t. It returns when the
// packet's last bit leaves the bottleneck and when it began service, or
// dropped true if the queue had no room.
func (l *link) send(t time.Duration, n int) (start, depart time.Duration, dropped bool) {
	for l.head < len(l.q) && l.q[l.head].depart <= t {
		l.qBytes -= l.q[l.head].size
		l.head++
	}
	if l.head > 1024 && l.head*2 > len(l.q) {
		l.q = append(l.q[:0], l.q[l.head:]...)
		l.head = 0
	}
	if l.qBytes+n > l.limit {
		return 0, 0, true
	}
	start = max(t, l.free)
	depart = l.sched.finish(start, n)
	l.free = depart
	l.q = append(l.q, queued{depart, n})
	l.qBytes += n
	return start, depart, false
}
