package pathmodel

import (
	"maps"
	"slices"
	"testing"
	"time"

	"replenish/rate"
)

// TestDelayedAck checks the receiver's policy on a 20 ms round trip (an ACK
// takes 10 ms back): quick ACKs at the start and after an idle spell longer
// than the retransmission timeout, a lone segment held for delAckTime, and
// an ACK at once for more than a full segment held, a segment that ends a
// write, a segment beyond a hole, and one that fills it.
func TestDelayedAck(t *testing.T) {
	s := &sim{sched: newSchedule(Path{Rate: rate.Mbps, RTT: 20 * time.Millisecond})}
	tp := &tcp{s: s, delAck: true, srtt: 20 * time.Millisecond, rttvar: 5 * time.Millisecond}
	s.tcp = tp
	var off int64
	add := func(n int) int64 { // a new segment of n bytes
		tp.segs = append(tp.segs, segment{seq: off, size: n})
		off += int64(n)
		tp.next++
		return tp.next - 1
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// run delivers segments in the order given at the times given, fires
	// the receiver's timers, and returns when each segment's ACK reaches
	// the sender.
	run := func(recv map[int64]time.Duration, order ...int64) map[int64]time.Duration {
		for _, id := range order {
			s.q.push(recv[id], evRecv, id)
		}
		acks := map[int64]time.Duration{}
		for {
			ev, ok := s.q.pop()
			if !ok {
				return acks
			}
			switch ev.kind {
			case evRecv:
				tp.onRecv(ev.at, ev.arg)
			case evDelAck:
				tp.onDelAck(ev.at, ev.arg)
			case evAck:
				acks[ev.arg] = ev.at
			}
		}
	}
	check := func(what string, got map[int64]time.Duration, want map[int64]time.Duration) {
		t.Helper()
		for _, id := range slices.Sorted(maps.Keys(want)) {
			if got[id] != want[id] {
				t.Errorf("%s: segment %d acknowledged at %v, want %v", what, id, got[id], want[id])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d ACKs, want %d", what, len(got), len(want))
		}
	}

	// The start: quickAcks segments acknowledged each at once, then a
	// short one held until the timer.
	recv, want, order := map[int64]time.Duration{}, map[int64]time.Duration{}, []int64{}
	for i := range quickAcks {
		id := add(300)
		recv[id], want[id] = ms(i), ms(i+10)
		order = append(order, id)
	}
	lone := add(300)
	recv[lone], want[lone] = ms(20), ms(20)+delAckTime+ms(10)
	check("start", run(recv, append(order, lone)...), want)

	// Two short segments within delAckTime: one ACK at the timer of the
	// first. A full segment and a short one: at once on the second.
	a, b := add(300), add(300)
	c, d := add(mss), add(300)
	recv = map[int64]time.Duration{a: ms(100), b: ms(120), c: ms(200), d: ms(201)}
	want = map[int64]time.Duration{a: ms(150), b: ms(150), c: ms(211), d: ms(211)}
	check("held", run(recv, a, b, c, d), want)

	// A lone segment that ends a write, full or short: at once.
	h, i := add(mss), add(300)
	tp.seg(h).push, tp.seg(i).push = true, true
	recv = map[int64]time.Duration{h: ms(220), i: ms(230)}
	want = map[int64]time.Duration{h: ms(230), i: ms(240)}
	check("pushed", run(recv, h, i), want)

	// A hole: the segment after it is acknowledged at once, and so is the
	// one that fills it, arriving last.
	e, f := add(300), add(300)
	recv = map[int64]time.Duration{e: ms(260), f: ms(250)}
	want = map[int64]time.Duration{f: ms(260), e: ms(270)}
	check("hole", run(recv, f, e), want)

	// Idle for longer than the retransmission timeout: quick ACKs again.
	g := add(300)
	recv = map[int64]time.Duration{g: ms(260) + tp.rto() + ms(1)}
	want = map[int64]time.Duration{g: recv[g] + ms(10)}
	check("after idle", run(recv, g), want)
}

// TestPushMarksWrites checks that the segment holding a write's last byte
// carries PSH, and only that one, when the receiver delays its ACKs.
func TestPushMarksWrites(t *testing.T) {
	cfg, err := Config{Path: Path{Rate: rate.Mbps, RTT: 20 * time.Millisecond, DelayedAck: true}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	tp := newSim(cfg).tcp
	from := tp.next
	tp.write(0, 2*mss+100) // three segments, the last short
	tp.write(0, mss)       // one full segment
	var got []bool
	for id := from; id < tp.next; id++ {
		got = append(got, tp.seg(id).push)
	}
	if want := []bool{false, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("PSH on the segments of two writes: %v, want %v", got, want)
	}
}
