package webrtc

import (
	"sync"
	"time"
)

// The feedback window.
//
// The horizon (horizon.go) keeps the encoder's target below the rate at
// which pion's GCC still matches its feedback, but a target is not what
// leaves: when the path's rate falls, the queue and with it the feedback
// delay grow within one feedback delay, before any limit computed from
// the last one can follow; the encoder overshoots a target that falls
// (libvpx: up to twice the target for a second at 720p); and the NACK
// responder's retransmissions come on top, bounded only by GCC's own
// target. Measured after a halving from 10 to 5 Mb/s (200 ms queue at
// 10 Mb/s, 400 ms at 5): 0.5 s after the halving the feedback fell more
// than 250 packets behind the newest, GCC froze above the old link rate
// (7.9 Mb/s, its delay and loss estimates unchanged while the viewer
// NACKed thousands of packets), pion's pacer kept sending at 1.5 times
// that, and the retransmissions (600 a second, three quarters of them
// repeats) kept the queue full and the feedback out of GCC's sight for
// 7 s at 40 ms round trip, 2.6 s at 172 ms.
//
// The window enforces GCC's condition where packets leave: the pacer
// sends a packet only while fewer than windowPackets have left since the
// newest packet a feedback reported on, so that every feedback reports on
// packets within GCC's history, whatever the path does. A queue that
// builds then builds in the pacer, where it is ours to see (the Conn's
// backlog), and GCC keeps seeing the path's delay and loss and lowers its
// estimate. Below the horizon's rate the window never fills: it changes
// nothing on a steady path.
//
// When no feedback comes at all (the path is down, or every packet in
// flight was lost), the window opens again after windowTimeout without
// progress, taking what it waited for as gone.

// Window parameters.
const (
	// windowPackets is how many packets may have left after the newest
	// one a feedback reported on: pion's history less a margin for a
	// feedback that starts before the last one ended (pion's recorder
	// reports again from a packet that arrives out of order).
	windowPackets = pionFeedbackHistory - 10
	// windowTimeout is how long a full window waits for a feedback that
	// reports on something new before it opens: longer than the gaps
	// between feedbacks while packets still arrive (the viewer reports
	// every 50 ms), short enough that the end of an outage is seen
	// within half a second.
	windowTimeout = 500 * time.Millisecond
)

// window tracks the packets that left without feedback, by transport-wide
// sequence number. sent is called as packets leave the pacer, feedback as
// TWCC feedback arrives, and room by the pacer before each packet. It is
// safe for concurrent use.
type window struct {
	limit   int
	timeout time.Duration

	mu       sync.Mutex // guards following fields
	newest   uint16     // the newest departure
	reported uint16     // the newest packet reported on, or the one before the first departure
	started  bool       // newest and reported are set
	progress time.Time  // when reported last moved (or the window last opened)
	opened   uint64     // times the window opened without feedback
}

// newWindow returns a window that lets limit packets leave without
// feedback and opens after timeout without progress.
func newWindow(limit int, timeout time.Duration) *window {
	return &window{limit: limit, timeout: timeout}
}

// sent records that the packet with transport-wide sequence number seq
// left at now.
func (w *window) sent(seq uint16, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.started:
		w.newest, w.reported, w.started, w.progress = seq, seq-1, true, now
	case int16(seq-w.newest) > 0:
		w.newest = seq
	}
}

// feedback takes a TWCC feedback that reports on count packets from
// transport-wide sequence number base on, received at now.
func (w *window) feedback(base, count uint16, now time.Time) {
	if count == 0 {
		return
	}
	last := base + count - 1
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started && int16(last-w.reported) > 0 && int16(last-w.newest) <= 0 {
		w.reported, w.progress = last, now
	}
}

// inFlightLocked returns how many packets left after the newest one
// reported on.
func (w *window) inFlightLocked() int {
	if !w.started {
		return 0
	}
	return int(w.newest - w.reported)
}

// room reports whether one more packet may leave at now. A full window
// that has waited timeout since the last progress opens: what it waited
// for counts as gone.
func (w *window) room(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlightLocked() < w.limit {
		return true
	}
	if now.Sub(w.progress) < w.timeout {
		return false
	}
	w.reported, w.progress = w.newest, now
	w.opened++
	return true
}
