package transport

import (
	"testing"
	"time"
)

func TestHeadWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type op struct {
		ack, left bool
		off       uint32
		at        int // ms after t0
	}
	w := func(end uint32, at int) op { return op{off: end, at: at} }
	a := func(upTo uint32, at int) op { return op{ack: true, off: upTo, at: at} }
	l := func(end uint32, at int) op { return op{left: true, off: end, at: at} }
	cases := []struct {
		name    string
		ops     []op
		ok      bool
		gap     time.Duration
		written int
	}{
		{"one frame, not acknowledged", []op{w(99, 0)}, false, 0, 0},
		{"one frame, acknowledged", []op{w(99, 0), a(99, 20)}, false, 0, 0},
		// The predecessor was acknowledged before the frame was
		// written: the frame met no queue of the stream's own.
		{"acknowledged before the next write", []op{w(99, 0), a(99, 20), w(199, 33)}, true, -13 * time.Millisecond, 33},
		// Written while the predecessor's tail was still unacknowledged.
		{"acknowledged after the next write", []op{w(99, 0), w(199, 33), a(99, 60)}, true, 27 * time.Millisecond, 33},
		{"part of the predecessor acknowledged", []op{w(99, 0), w(199, 33), a(98, 60)}, false, 0, 0},
		// One acknowledgement for two frames: the pair is the newest
		// frame still waiting and the acknowledgement.
		{"two frames in one acknowledgement", []op{w(99, 0), w(199, 33), w(299, 66), a(199, 90)}, true, 24 * time.Millisecond, 66},
		{"the last two in one acknowledgement", []op{w(99, 0), w(199, 33), a(199, 60)}, true, 27 * time.Millisecond, 33},
		{"all acknowledged, then a write", []op{w(99, 0), w(199, 33), a(199, 50), w(299, 66)}, true, -16 * time.Millisecond, 66},
		{"newest pair wins", []op{w(99, 0), w(199, 33), a(99, 60), w(299, 66), a(199, 70)}, true, 4 * time.Millisecond, 66},
		{"an old acknowledgement changes nothing", []op{w(99, 0), w(199, 33), a(99, 60), a(50, 80)}, true, 27 * time.Millisecond, 33},
		// The predecessor's tail left the host after the write (the
		// frame was written with backlog unsent): the wait counts from
		// that departure, not from the write.
		{"written before the predecessor left", []op{w(99, 0), w(199, 33), l(99, 40), a(99, 60)}, true, 20 * time.Millisecond, 33},
		{"predecessor left before the write", []op{w(99, 0), l(99, 10), w(199, 33), a(99, 60)}, true, 27 * time.Millisecond, 33},
		{"the last two in one acknowledgement, late departure", []op{w(99, 0), w(199, 33), l(99, 45), a(199, 60)}, true, 15 * time.Millisecond, 33},
		{"departure of an acknowledged frame", []op{w(99, 0), a(99, 20), l(99, 25), w(199, 33)}, true, -13 * time.Millisecond, 33},
		// Offsets in serial-number arithmetic: the stream passes 2^32.
		{"across the wrap", []op{w(1<<32-10, 0), w(89, 33), a(1<<32-10, 45)}, true, 12 * time.Millisecond, 33},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h HeadWatch
			for _, o := range tc.ops {
				switch {
				case o.ack:
					h.Acked(o.off, ms(o.at))
				case o.left:
					h.Departed(o.off, ms(o.at))
				default:
					h.Written(o.off, ms(o.at), 0)
				}
			}
			gap, written, ok := h.Newest()
			if ok != tc.ok || (ok && (gap != tc.gap || !written.Equal(ms(tc.written)))) {
				t.Errorf("Newest() = %v, %v, %v; want %v, %v, %v", gap, written.Sub(t0), ok, tc.gap, time.Duration(tc.written)*time.Millisecond, tc.ok)
			}
		})
	}
}

// TestHeadWatchLatestRTT: the round trip of the newest frame acknowledged
// in full, from its last byte's departure; none for a frame whose
// departure was not noted.
func TestHeadWatchLatestRTT(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var h HeadWatch
	if _, _, ok := h.LatestRTT(); ok {
		t.Fatal("LatestRTT ok before any acknowledgement")
	}
	h.Written(99, ms(0), 0)
	h.Acked(99, ms(30))
	if _, _, ok := h.LatestRTT(); ok {
		t.Error("LatestRTT ok for a frame whose departure was not noted")
	}
	h.Written(199, ms(33), 0)
	h.Departed(199, ms(35))
	h.Written(299, ms(66), 0)
	h.Departed(299, ms(70))
	h.Acked(150, ms(80)) // part of the frame: no sample
	if _, _, ok := h.LatestRTT(); ok {
		t.Error("LatestRTT ok for a frame acknowledged in part")
	}
	// Both frames in one acknowledgement: the newest of them counts.
	h.Acked(299, ms(300))
	if rtt, at, ok := h.LatestRTT(); !ok || rtt != 230*time.Millisecond || !at.Equal(ms(300)) {
		t.Errorf("LatestRTT() = %v, %v, %v; want 230ms at 300ms, true", rtt, at.Sub(t0), ok)
	}
	// A later frame's sample replaces it, even when shorter.
	h.Written(399, ms(310), 0)
	h.Departed(399, ms(311))
	h.Acked(399, ms(400))
	if rtt, _, ok := h.LatestRTT(); !ok || rtt != 89*time.Millisecond {
		t.Errorf("LatestRTT() = %v, %v; want 89ms, true", rtt, ok)
	}
}

// TestHeadWatchRepaired: a pair is repaired when the retransmission count
// has grown since its predecessor's write, whichever way the pair formed.
func TestHeadWatchRepaired(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cases := []struct {
		name  string
		setup func(h *HeadWatch)
	}{
		{"acknowledged after the next write", func(h *HeadWatch) {
			h.Written(99, ms(0), 5)
			h.Written(199, ms(33), 7)
			h.Acked(99, ms(60))
		}},
		{"the last two in one acknowledgement", func(h *HeadWatch) {
			h.Written(99, ms(0), 5)
			h.Written(199, ms(33), 7)
			h.Acked(199, ms(60))
		}},
		{"acknowledged before the next write", func(h *HeadWatch) {
			h.Written(99, ms(0), 5)
			h.Acked(99, ms(20))
			h.Written(199, ms(33), 7)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h HeadWatch
			tc.setup(&h)
			if _, _, ok := h.Newest(); !ok {
				t.Fatal("no pair")
			}
			// The predecessor was written at count 5: a count of 7 read
			// now says a retransmission came since, even if before the
			// frame's own write.
			if h.Repaired(5) {
				t.Error("Repaired(5) = true with no retransmission since the predecessor's write")
			}
			for _, n := range []int64{6, 7} {
				if !h.Repaired(n) {
					t.Errorf("Repaired(%d) = false, want true: the count grew since the predecessor's write", n)
				}
			}
		})
	}
}

// TestHeadWatchBounded: frames never acknowledged (a peer that stopped
// reading) do not grow the watch, and an acknowledgement after the loss of
// the oldest still pairs the frames it knows.
func TestHeadWatchBounded(t *testing.T) {
	var h HeadWatch
	t0 := time.Unix(1000, 0)
	n := 10 * maxWatched
	for i := range n {
		h.Written(uint32(100*(i+1)-1), t0.Add(time.Duration(i)*time.Millisecond), 0)
		if h.Len() > maxWatched {
			t.Fatalf("after %d writes: %d frames held, want at most %d", i+1, h.Len(), maxWatched)
		}
	}
	if cap(h.frames) > 4*maxWatched {
		t.Errorf("backing array of %d frames, want at most %d", cap(h.frames), 4*maxWatched)
	}
	last := uint32(100*n - 1)
	h.Acked(last-100, t0.Add(time.Duration(n)*time.Millisecond))
	gap, written, ok := h.Newest()
	if want := t0.Add(time.Duration(n-1) * time.Millisecond); !ok || !written.Equal(want) || gap != time.Millisecond {
		t.Errorf("Newest() = %v, %v, %v; want 1ms, the last write, true", gap, written, ok)
	}
	if h.Len() != 1 {
		t.Errorf("%d frames held after the acknowledgement, want 1", h.Len())
	}
}
