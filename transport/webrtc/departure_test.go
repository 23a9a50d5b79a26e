package webrtc

import (
	"testing"
	"time"

	"replenish/transport"
)

const wireSSRC = 0xabc

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// addFrame follows a frame of packets first..last (payload 100 bytes each)
// written at ms and returns it.
func addFrame(tr *tracker, id uint64, first, last uint16, ms int) *inFlight {
	n := int(last-first) + 1
	f := tr.add(transport.SendRecord{ID: id, Bytes: n * 112, WriteStart: at(ms)}, last, n*100)
	tr.written(f, at(ms+1))
	return f
}

func sendRange(tr *tracker, first, last uint16, ms int) {
	for s := first; ; s++ {
		tr.sent(wireSSRC, s, 100, 112, at(ms), true)
		if s == last {
			return
		}
	}
}

func TestTrackerStampsLastPacket(t *testing.T) {
	finished := 0
	tr := newTracker(8, func() { finished++ })
	tr.setSSRC(wireSSRC)
	addFrame(tr, 7, 65534, 1, 0) // across the sequence number wrap
	if got := tr.unsent(); got != 400 {
		t.Fatalf("unsent %d, want 400", got)
	}
	sendRange(tr, 65534, 0, 10)
	if recs := tr.take(); len(recs) != 0 || finished != 0 {
		t.Fatalf("records %+v before the last packet left", recs)
	}
	tr.sent(wireSSRC+1, 1, 100, 112, at(11), true) // another stream's: not ours
	tr.sent(wireSSRC, 1, 100, 112, at(12), true)
	recs := tr.take()
	if len(recs) != 1 || recs[0].ID != 7 || !recs[0].LeftHost.Equal(at(12)) || recs[0].SourceDelay() != 12*time.Millisecond {
		t.Fatalf("records %+v, want frame 7 left at 12 ms", recs)
	}
	if finished != 1 || tr.unsent() != 0 {
		t.Errorf("finished %d, unsent %d: want 1 and 0", finished, tr.unsent())
	}
}

func TestTrackerCountsRetransmissions(t *testing.T) {
	tr := newTracker(8, nil)
	tr.setSSRC(wireSSRC)
	addFrame(tr, 0, 10, 12, 0)
	sendRange(tr, 10, 11, 1)
	tr.sent(wireSSRC, 10, 100, 112, at(2), true) // NACKed, sent again
	if n, b, _ := tr.counts(); n != 1 || b != 112 {
		t.Fatalf("retransmits %d (%d bytes), want 1 (112)", n, b)
	}
	if got := tr.unsent(); got != 100 {
		t.Errorf("unsent %d, want 100: a retransmission does not drain the backlog", got)
	}
	tr.sent(wireSSRC, 12, 100, 112, at(3), true)
	if recs := tr.take(); len(recs) != 1 || !recs[0].LeftHost.Equal(at(3)) {
		t.Errorf("records %+v", recs)
	}
	tr.sent(wireSSRC, 12, 100, 112, at(4), true) // the last packet again: no second record
	if recs := tr.take(); len(recs) != 0 {
		t.Errorf("a retransmitted last packet made records %+v", recs)
	}
}

// TestTrackerDepartureBeforeWriteReturns covers a pacer that sends the
// last packet before WriteFrame has returned: the record waits for the
// write's end.
func TestTrackerDepartureBeforeWriteReturns(t *testing.T) {
	tr := newTracker(8, nil)
	tr.setSSRC(wireSSRC)
	f := tr.add(transport.SendRecord{ID: 1, WriteStart: at(0)}, 5, 100)
	tr.sent(wireSSRC, 5, 100, 112, at(1), true)
	if recs := tr.take(); len(recs) != 0 {
		t.Fatalf("a record %+v before the write returned", recs)
	}
	tr.written(f, at(2))
	recs := tr.take()
	if len(recs) != 1 || !recs[0].WriteEnd.Equal(at(2)) || !recs[0].LeftHost.Equal(at(1)) {
		t.Fatalf("records %+v", recs)
	}
}

func TestTrackerEvictsOldest(t *testing.T) {
	tr := newTracker(3, nil)
	tr.setSSRC(wireSSRC)
	for i := range 5 {
		addFrame(tr, uint64(i), uint16(10*i), uint16(10*i+1), i)
	}
	recs := tr.take()
	if len(recs) != 2 || recs[0].ID != 0 || recs[1].ID != 1 || !recs[0].LeftHost.IsZero() {
		t.Fatalf("records %+v, want frames 0 and 1 without departure", recs)
	}
	if _, _, unstamped := tr.counts(); unstamped != 2 {
		t.Errorf("unstamped %d, want 2", unstamped)
	}
	sendRange(tr, 0, 41, 10) // the evicted frames' packets leave too
	if recs := tr.take(); len(recs) != 3 || recs[0].ID != 2 || recs[2].ID != 4 {
		t.Errorf("records %+v, want frames 2 to 4", recs)
	}
	if len(tr.pending) != 0 || len(tr.order) != 0 {
		t.Errorf("pending %d, order %d: want both empty", len(tr.pending), len(tr.order))
	}
}

func TestTrackerFailedWriteHasNoDeparture(t *testing.T) {
	tr := newTracker(8, nil)
	tr.setSSRC(wireSSRC)
	addFrame(tr, 3, 1, 1, 0)
	tr.sent(wireSSRC, 1, 100, 112, at(1), false)
	recs := tr.take()
	if len(recs) != 1 || !recs[0].LeftHost.IsZero() {
		t.Fatalf("records %+v, want one without departure", recs)
	}
	if _, _, unstamped := tr.counts(); unstamped != 1 {
		t.Errorf("unstamped %d, want 1", unstamped)
	}
}

// TestTrackerStaysBounded writes many frames whose packets never leave:
// the tracker holds at most its limit.
func TestTrackerStaysBounded(t *testing.T) {
	tr := newTracker(4, nil)
	tr.setSSRC(wireSSRC)
	for i := range 1000 {
		addFrame(tr, uint64(i), uint16(i), uint16(i), i)
		if i%2 == 0 { // every other frame leaves, out of order with the rest
			tr.sent(wireSSRC, uint16(i), 100, 112, at(i), true)
		}
		tr.take()
	}
	if len(tr.pending) > 4 || len(tr.order) > 8 {
		t.Errorf("pending %d, order %d: want at most 4 and 8", len(tr.pending), len(tr.order))
	}
}
