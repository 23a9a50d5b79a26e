package webrtc

import (
	"sync"
	"time"

	"replenish/rate"
)

// The feedback horizon.
//
// pion's GCC matches each transport-wide congestion control (TWCC)
// feedback with the packets it reports on through a history of the
// packets it sent, and that history holds the last 250 packets only
// (pion/interceptor internal/cc FeedbackAdapter; v0.1.51, not
// configurable). Feedback about a packet sent 250 packets or more before
// the newest is dropped without a word; a feedback that reports only such
// packets changes nothing: neither the delay-based nor the loss-based
// estimate moves, and the target stays frozen where it was.
//
// The packets that leave between a packet's departure and the arrival of
// the feedback about it are the sending rate times the feedback delay: one
// round trip, the bottleneck's queue, and the receiver's feedback interval
// (pion's default 100 ms). At 10 Mb/s (about 1000 packets a second) the
// 250 are used up by 40 ms of round trip and a 110 ms queue, or by a
// 172 ms round trip alone. Once the estimate overshoots the link and the
// queue builds, GCC stops seeing the queue it built: the estimate freezes
// above the link, the queue stays full, and the stream freezes with it.
//
// The horizon keeps the sender within what GCC can see: from each TWCC
// feedback it takes the feedback delay of the oldest packet reported (its
// departure to now) and limits the rate to horizonPackets packets per
// feedback delay. Below that rate every feedback falls within GCC's
// history, so GCC follows the queue again; a full queue lengthens the
// feedback delay and lowers the limit further, which drains the queue: a
// frozen estimate thaws.
//
// The horizon is a target for the encoder, computed from the last
// feedback, and so it lags when the path's rate falls; what guarantees
// that GCC keeps its sight is the feedback window at the pacer (see
// window), which the horizon keeps from filling on a steady path.

// Horizon parameters.
const (
	// pionFeedbackHistory is how many sent packets pion's GCC remembers
	// for matching feedback (see above).
	pionFeedbackHistory = 250
	// horizonPackets is how many packets may leave between a packet's
	// departure and the feedback about it: pion's history less a margin
	// for what goes out on top of the encoder's rate (retransmissions, a
	// keyframe's burst through the pacer).
	horizonPackets = pionFeedbackHistory - 50
	// horizonSlots is how many departures the horizon remembers, by
	// transport-wide sequence number: a second at 20 Mb/s. A power of two.
	horizonSlots = 2048
	// horizonRise is the fraction of the way to a higher limit taken at
	// each feedback (a lower one takes effect at once).
	horizonRise = 0.25
	// minFeedbackDelay bounds the delay a feedback is taken to measure
	// from below.
	minFeedbackDelay = time.Millisecond
)

// horizon limits the sending rate so that pion's GCC can match its
// feedback. sent is called as packets leave the pacer, feedback as TWCC
// feedback arrives, and limit by the sending loop; all take the time
// from their caller. It is safe for concurrent use.
type horizon struct {
	mu       sync.Mutex // guards following fields
	slots    [horizonSlots]departure
	newest   uint16 // transport-wide sequence number of the newest departure
	started  bool   // newest is set
	meanBits float64
	rate     rate.Bitrate // the limit; 0 until the first feedback
}

// departure is when the packet with transport-wide sequence number seq
// left; at is zero in a slot not used yet.
type departure struct {
	seq uint16
	at  time.Time
}

// sent records that the packet with transport-wide sequence number seq,
// wire bytes long (header and payload), left at at.
func (h *horizon) sent(seq uint16, wire int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.slots[seq%horizonSlots] = departure{seq: seq, at: at}
	if !h.started || int16(seq-h.newest) > 0 {
		h.newest, h.started = seq, true
	}
	bits := float64(8 * wire)
	if h.meanBits == 0 {
		h.meanBits = bits
	} else {
		h.meanBits += (bits - h.meanBits) / 16
	}
}

// feedback takes a TWCC feedback that reports on count packets from
// transport-wide sequence number base on, received at now.
func (h *horizon) feedback(base, count uint16, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	behind := h.newest - base // packets sent since base, base included
	if count == 0 || !h.started || int16(behind) < 0 {
		return // nothing sent yet, or news of packets never sent
	}
	var left time.Time
	switch d := h.slots[base%horizonSlots]; {
	case int(behind) >= horizonSlots:
		// base left before the oldest departure remembered.
		left = h.slots[(h.newest+1)%horizonSlots].at
	case d.seq == base:
		left = d.at
	}
	if left.IsZero() {
		return // a packet that did not go through the pacer
	}
	delay := max(now.Sub(left), minFeedbackDelay)
	r := rate.Bitrate(horizonPackets * h.meanBits / delay.Seconds())
	switch {
	case h.rate == 0 || r < h.rate:
		h.rate = r
	default:
		h.rate += rate.Bitrate(float64(r-h.rate) * horizonRise)
	}
}

// limit returns the highest rate at which GCC's feedback stays within its
// history, or 0 before the first feedback.
func (h *horizon) limit() rate.Bitrate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rate
}
