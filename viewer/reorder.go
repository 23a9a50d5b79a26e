package viewer

import (
	"time"

	"github.com/pion/rtp"
)

// reorder puts the RTP packets of a WebRTC publisher back in sequence
// number order, as the assembler needs them. Over UDP packets can arrive
// out of order, and a lost one comes again only when the viewer's NACK
// has asked for it, a round trip or more later. The buffer holds the
// packets behind a missing one for at most wait, counted from the arrival
// of the oldest packet held, and then goes on without it: the assembler
// sees the gap, drops the frame it was in, and the viewer counts the
// frame lost and asks for a keyframe, as it does for any gap.
//
// It holds at most size packets: a packet further ahead than that
// releases what is held in order and gives up on what is missing before
// it. A packet behind the next one to release (late, or a retransmission
// given up on) and a duplicate are dropped and counted. A new SSRC
// releases everything held and starts over.
//
// It is a pure function of the packets and times it is given and is not
// safe for concurrent use.
type reorder struct {
	wait    time.Duration
	slots   []reorderSlot // a ring indexed by sequence number modulo its length
	started bool
	ssrc    uint32
	next    uint16        // the sequence number to release next
	held    int           // packets in slots
	since   time.Time     // arrival of the oldest packet held; meaningful while held > 0
	ready   []*rtp.Packet // released in order, not yet popped

	late, duplicates, skipped uint64 // packets dropped or given up on
}

type reorderSlot struct {
	p  *rtp.Packet // nil: empty
	at time.Time
}

// newReorder returns a buffer of size packets (at least 1, at most 2^15)
// that waits at most wait for a missing packet.
func newReorder(size int, wait time.Duration) *reorder {
	size = min(max(size, 1), 1<<15)
	return &reorder{wait: wait, slots: make([]reorderSlot, size)}
}

func (r *reorder) slot(seq uint16) *reorderSlot { return &r.slots[int(seq)%len(r.slots)] }

// push adds p, which arrived at now.
func (r *reorder) push(p *rtp.Packet, now time.Time) {
	seq := p.SequenceNumber
	if r.started && p.SSRC != r.ssrc {
		r.releaseAll()
		r.started = false
	}
	if !r.started {
		r.started, r.ssrc, r.next = true, p.SSRC, seq
	}
	d := seq - r.next
	if d >= 1<<15 {
		r.late++
		return
	}
	if int(d) >= len(r.slots) {
		r.advanceTo(seq - uint16(len(r.slots)) + 1)
	}
	s := r.slot(seq)
	if s.p != nil {
		r.duplicates++
		return
	}
	*s = reorderSlot{p: p, at: now}
	if r.held == 0 {
		r.since = now
	}
	r.held++
	r.drain(false)
}

// pop returns the next packet in order, if one is ready at now: either
// the next one has arrived, or the wait for a missing one is over.
func (r *reorder) pop(now time.Time) (*rtp.Packet, bool) {
	if len(r.ready) == 0 && r.held > 0 && !now.Before(r.since.Add(r.wait)) {
		for r.slot(r.next).p == nil {
			r.skipped++
			r.next++
		}
		r.drain(true)
	}
	if len(r.ready) == 0 {
		return nil, false
	}
	p := r.ready[0]
	r.ready[0] = nil
	r.ready = r.ready[1:]
	return p, true
}

// due returns when pop will next give up on a missing packet; ok is false
// when nothing is held.
func (r *reorder) due() (t time.Time, ok bool) {
	if r.held == 0 {
		return time.Time{}, false
	}
	return r.since.Add(r.wait), true
}

// drain releases the packets that are next in order and, if the next
// sequence number moved (moved says it did before the call) while packets
// remain held, finds when the oldest of them arrived.
func (r *reorder) drain(moved bool) {
	for {
		s := r.slot(r.next)
		if s.p == nil || s.p.SequenceNumber != r.next {
			break
		}
		r.release(s)
		moved = true
	}
	if moved && r.held > 0 {
		r.since = time.Time{}
		for i := range r.slots {
			if at := r.slots[i].at; r.slots[i].p != nil && (r.since.IsZero() || at.Before(r.since)) {
				r.since = at
			}
		}
	}
}

// release moves the packet in s, the next in order, to the ready queue.
func (r *reorder) release(s *reorderSlot) {
	r.ready = append(r.ready, s.p)
	*s = reorderSlot{}
	r.held--
	r.next++
}

// advanceTo moves the next sequence number up to target, releasing the
// held packets before it in order and giving up on the missing ones.
func (r *reorder) advanceTo(target uint16) {
	for r.next != target && r.held > 0 {
		if s := r.slot(r.next); s.p != nil {
			r.release(s)
		} else {
			r.skipped++
			r.next++
		}
	}
	if r.next != target {
		r.skipped += uint64(target - r.next)
		r.next = target
	}
	r.drain(true)
}

// releaseAll releases every held packet in order.
func (r *reorder) releaseAll() {
	for r.held > 0 {
		if s := r.slot(r.next); s.p != nil {
			r.release(s)
		} else {
			r.skipped++
			r.next++
		}
	}
}
