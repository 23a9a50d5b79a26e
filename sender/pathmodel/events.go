package pathmodel

import "time"

// evKind says what an event does.
type evKind uint8

const (
	evTick     evKind = iota // the source renders a picture
	evRecv                   // a segment reaches the receiver (arg: segment id)
	evAck                    // a segment's ACK reaches the sender (arg: segment id)
	evWrite                  // an encode finishes and the frame is written
	evPace                   // the pacing gate opens
	evLoss                   // the loss-probe or retransmission timer
	evCrossEnd               // the competing flows stop writing (Path.CrossUntil)
	evDelAck                 // the receiver's delayed-ACK timer (arg: its generation)
)

// event is one scheduled happening; events at the same time run in the
// order they were scheduled.
type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	arg  int64
	flow uint8 // the TCP flow an ACK, pace or loss event is for: 0 the stream's, 1.. the competing flows'
}

// eventQueue is a binary min-heap of events by (at, seq).
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *eventQueue) push(at time.Duration, kind evKind, arg int64) { q.pushFlow(at, kind, arg, 0) }

// pushFlow schedules an event of TCP flow flow (see event.flow).
func (q *eventQueue) pushFlow(at time.Duration, kind evKind, arg int64, flow uint8) {
	q.seq++
	q.h = append(q.h, event{at, q.seq, kind, arg, flow})
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *eventQueue) pop() (event, bool) {
	if len(q.h) == 0 {
		return event{}, false
	}
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top, true
}
