package quic

import (
	"sync"
	"time"
)

// ackLog follows, from quic-go's recovery events, how far the Conn's
// packetized bytes (Conn.packed) have been acknowledged, for
// transport.HeadWatch. A 1-RTT packet sent while the count had grown since
// the last one is noted with the count then (quic-go packs a packet, the
// write limiter counting its stream bytes, and then records it, on one
// goroutine, so the count covers that packet and no later one). Each noted
// packet an ACK frame covers is marked acknowledged at the frame's arrival
// less the delay the peer says it held it (its ack delay: a receiver
// acknowledges every other packet at once but may hold one for up to
// max_ack_delay, 25 ms by default); it is marked then, not when the
// packets before it are, because a receiver stops repeating a range once
// it knows the sender saw it. Once every noted packet up to one is
// acknowledged or declared lost (its repair carries no new bytes), the
// bytes up to that packet's count are acknowledged, at the latest of
// their packets' times. Bytes lost and repaired count as acknowledged once
// the packets after them are, early by the repair; such a frame's
// successor reads a shorter wait. It is safe for concurrent use.
type ackLog struct {
	mu      sync.Mutex
	pkts    []notedPacket // sent and not yet acknowledged, ascending packet numbers
	head    int
	noted   int64 // the count last noted
	onAcked func(upTo int64, at time.Time)
}

type notedPacket struct {
	pn      int64
	packed  int64
	lost    bool
	ackedAt time.Time // zero until an ACK frame covers it
}

// maxNoted bounds the packets an ackLog holds: well over a congestion
// window of full packets at the rates the sender reaches.
const maxNoted = 4096

// setOnAcked sets the function acked reports to.
func (l *ackLog) setOnAcked(f func(upTo int64, at time.Time)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onAcked = f
}

// ackRange is an acknowledged range of packet numbers, inclusive.
type ackRange struct{ smallest, largest int64 }

// sent notes packet pn, sent while the packetized count was packed.
func (l *ackLog) sent(pn, packed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if packed <= l.noted {
		return
	}
	l.noted = packed
	if len(l.pkts)-l.head >= maxNoted {
		l.head++ // forget the oldest: its bytes count as acknowledged with the next
	}
	if l.head > 0 && l.head >= len(l.pkts)/2 {
		n := copy(l.pkts, l.pkts[l.head:])
		l.pkts, l.head = l.pkts[:n], 0
	}
	l.pkts = append(l.pkts, notedPacket{pn: pn, packed: packed})
}

// lost marks packet pn declared lost, and reports the bytes that
// acknowledges in full.
func (l *ackLog) lost(pn int64) {
	l.mu.Lock()
	for i := l.head; i < len(l.pkts); i++ {
		if l.pkts[i].pn == pn {
			l.pkts[i].lost = true
			break
		}
	}
	l.reportUnlock()
}

// acked takes an ACK frame's ranges, received at at, and reports the bytes
// that acknowledges in full. It looks at the noted packets up to the
// largest acknowledged only: without a hole those are the ones it
// acknowledges, which the head then drops, so an ACK costs what it
// acknowledges, not the packets in flight.
func (l *ackLog) acked(ranges []ackRange, at time.Time) {
	var largest int64 = -1
	for _, r := range ranges {
		largest = max(largest, r.largest)
	}
	l.mu.Lock()
	for i := l.head; i < len(l.pkts) && l.pkts[i].pn <= largest; i++ {
		if p := &l.pkts[i]; !p.lost && p.ackedAt.IsZero() && covered(ranges, p.pn) {
			p.ackedAt = at
		}
	}
	l.reportUnlock()
}

// reportUnlock drops the noted packets at the head that are acknowledged
// or lost, unlocks l.mu, and reports the bytes up to the last of them
// acknowledged, if any, to onAcked.
func (l *ackLog) reportUnlock() {
	upTo := int64(-1)
	var at time.Time
	for l.head < len(l.pkts) {
		p := l.pkts[l.head]
		if !p.lost && p.ackedAt.IsZero() {
			break
		}
		if !p.lost {
			upTo = p.packed
			if p.ackedAt.After(at) {
				at = p.ackedAt
			}
		}
		l.head++
	}
	f := l.onAcked
	l.mu.Unlock()
	if upTo >= 0 && f != nil {
		f(upTo, at)
	}
}

func covered(ranges []ackRange, pn int64) bool {
	for _, r := range ranges {
		if pn >= r.smallest && pn <= r.largest {
			return true
		}
	}
	return false
}
