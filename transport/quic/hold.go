package quic

import (
	"sync/atomic"
	"time"

	"replenish/rate"
)

// A path that answers nothing holds the media stream's data. quic-go sends
// stream data for as long as its congestion window has room, and nothing
// shrinks the window while acknowledgements stop: its probe timeouts only
// resend, and a window that an application-limited stream never filled
// stays at its initial 32 packets (40 KB: 3 s of a 100 kb/s path). Through
// an outage the backlog kept draining into packets that went nowhere, and
// the invitations went on: at 100 kb/s the frames of the outage's first
// seconds were delivered after it, each older than the one before was when
// it was captured. TCP stops at its retransmission timeout, which takes
// its window to one segment. So in replenish mode, once nothing has been
// acknowledged for holdLimit, the media stream's packetization stops: the
// backlog stands, nothing is invited, and the first frame after the
// outage is captured once the path is back.
//
// Held, the stream still lets keepaliveBytes of its data go every
// keepaliveEvery, in a packet of their own. quic-go's probe timeout
// doubles with each unanswered probe (at 2 Mb/s and 80 ms, probes 0.3,
// 0.9 and 2.1 s into an outage), so a path that came back waited up to
// the next probe to be noticed; the keepalive's acknowledgement comes
// within keepaliveEvery and a round trip of the path's return, and with
// it quic-go declares what went before it lost and resends it at once.
const (
	keepaliveBytes = 32
	keepaliveEvery = 100 * time.Millisecond
	// holdRecheck is how often a writer held by the hold tries again.
	holdRecheck = 10 * time.Millisecond
)

// holdLimit is how long bytes may be in flight with nothing acknowledged
// before the media stream holds its data: a probe timeout (smoothed RTT,
// four mean deviations and the viewer's maximum ACK delay), plus the time
// the bytes in flight when the wait began take at the drain rate
// (stallFloorRate until one is measured), which an acknowledgement of the
// last of them waits for. The same allowance as stallLimit's, once.
func holdLimit(srtt, rttvar time.Duration, ahead int64, drained rate.Bitrate) time.Duration {
	if drained <= 0 {
		drained = stallFloorRate
	}
	return srtt + 4*rttvar + maxAckDelay + drained.Duration(int(ahead))
}

// holdGate decides, on quic-go's goroutine, how much of the media
// stream's data may go while the path answers nothing.
type holdGate struct {
	path    *pathState
	drained func() rate.Bitrate // the measured drain rate; 0 if unknown
	keepAt  atomic.Int64        // when the last keepalive went, since path.base; 0 before
}

// held reports whether the path has answered nothing for holdLimit at now.
func (g *holdGate) held(now time.Time) bool {
	d, ahead := g.path.unanswered(now)
	if d <= 0 {
		return false
	}
	srtt, rttvar := g.path.rtt()
	return d > holdLimit(srtt, rttvar, ahead, g.drained())
}

// allow returns how many of n bytes may go at now: all of them unless
// held, then keepaliveBytes once every keepaliveEvery, and none between.
func (g *holdGate) allow(now time.Time, n int) int {
	if !g.held(now) {
		return n
	}
	at := max(int64(now.Sub(g.path.base)), 1)
	last := g.keepAt.Load()
	if last > 0 && time.Duration(at-last) < keepaliveEvery || !g.keepAt.CompareAndSwap(last, at) {
		return 0 // within the interval, or another call took this keepalive
	}
	return min(n, keepaliveBytes)
}
