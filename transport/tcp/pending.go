package tcp

import (
	"time"

	"replenish/transport"
)

// pendingQueue holds the send records of written frames until their
// departure timestamp arrives. Records are keyed by the SO_TIMESTAMPING
// OPT_ID key of the frame's last byte and kept in write order, which is key
// order in 32-bit serial-number arithmetic. It is bounded: pushing onto a
// full queue evicts the oldest record. It is not safe for concurrent use.
type pendingQueue struct {
	max  int
	head int             // index of the oldest record in recs
	recs []pendingRecord // recs[head:] are pending, oldest first
}

// pendingRecord is a send record awaiting the stamp with key key.
type pendingRecord struct {
	rec transport.SendRecord
	key uint32
}

// newPendingQueue returns an empty queue holding at most max records.
func newPendingQueue(max int) *pendingQueue {
	return &pendingQueue{max: max}
}

// Len returns how many records are pending.
func (q *pendingQueue) Len() int { return len(q.recs) - q.head }

// push appends r, whose last byte has key key. If the queue was full it
// removes and returns the oldest record, with ok true.
func (q *pendingQueue) push(r transport.SendRecord, key uint32) (evicted transport.SendRecord, ok bool) {
	if q.max <= 0 {
		return r, true
	}
	if q.Len() >= q.max {
		evicted, ok = q.recs[q.head].rec, true
		q.recs[q.head] = pendingRecord{}
		q.head++
	}
	if q.head > 0 && q.head >= len(q.recs)/2 {
		n := copy(q.recs, q.recs[q.head:])
		clear(q.recs[n:])
		q.recs = q.recs[:n]
		q.head = 0
	}
	q.recs = append(q.recs, pendingRecord{rec: r, key: key})
	return evicted, ok
}

// complete gives departure time at to every pending record whose key is at
// or before key in serial-number order, removes them and appends them to
// dst. TCP sends bytes in order, so when the byte with key key has left, all
// earlier bytes have too, even when later writes coalesced into an earlier
// write's segment and took over its stamp.
func (q *pendingQueue) complete(key uint32, at time.Time, dst []transport.SendRecord) []transport.SendRecord {
	for q.head < len(q.recs) && serialLE(q.recs[q.head].key, key) {
		r := q.recs[q.head].rec
		r.LeftHost = at
		dst = append(dst, r)
		q.recs[q.head] = pendingRecord{}
		q.head++
	}
	if q.head == len(q.recs) {
		q.recs = q.recs[:0]
		q.head = 0
	}
	return dst
}

// stamp is one transmit timestamp from the socket error queue.
type stamp struct {
	kind uint32    // SCM_TSTAMP_SND, SCM_TSTAMP_SCHED or SCM_TSTAMP_ACK (ee_info)
	key  uint32    // OPT_ID key: byte offset of the stamped skb's last byte (ee_data)
	at   time.Time // the software timestamp (scm_timestamping ts[0])
}

// serialLE reports whether a is at or before b in 32-bit serial-number
// arithmetic (RFC 1982): true when b-a, as a signed 32-bit number, is not
// negative.
func serialLE(a, b uint32) bool {
	return int32(b-a) >= 0
}
