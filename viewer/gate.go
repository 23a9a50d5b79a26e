package viewer

import (
	"time"

	"replenish/rate"
	"replenish/transport/tcp"
)

// The invitation rule keeps a page's socket nearly empty, but it sees only
// the bytes not yet sent: a congestion control that fills the bottleneck's
// queue (CUBIC does, whatever the link's buffer) moves the backlog out of
// the socket into the network, where the rule cannot see it. Over a leg
// slower than the stream the page would then get every layer the socket
// takes, a drop-tail queue's worth late. So at each invitation a managed
// page's writer also asks how long a frame written now would wait behind
// the bytes ahead of it, unsent and in flight, at the connection's drain
// rate, less what the path holds without a queue (a minimum round trip's
// worth). Above the target the page gets base-layer frames only (each
// depends on the one before: they always go) and the upper layers wait for
// the next invitation or drop; the leg's queue then stays within the target
// plus a frame. Unlike the smoothed RTT, which follows a frame's tail, the
// bytes in flight are exact at the moment of the decision.

// DefaultPageDelayTarget is Config.PageDelayTarget's default.
const DefaultPageDelayTarget = 50 * time.Millisecond

// queueAhead returns how long a frame written now would wait at the leg's
// bottleneck behind the connection's unsent and in-flight bytes drained at
// drain, less what a path of round trip minRTT holds without a queue;
// false when the drain rate or the minimum round trip is unknown (zero).
func queueAhead(unsent, inFlight int, drain rate.Bitrate, minRTT time.Duration) (time.Duration, bool) {
	if drain <= 0 || minRTT <= 0 {
		return 0, false
	}
	return max(drain.Duration(max(unsent, 0)+max(inFlight, 0))-minRTT, 0), true
}

// inFlight returns the bytes sent and not yet acknowledged that TCP_INFO
// shows (retransmitted bytes counted once), or false when the kernel does
// not report byte counts.
func inFlight(info tcp.Info) (int, bool) {
	if info.BytesSent == 0 && info.BytesAcked == 0 {
		return 0, false
	}
	n := int64(info.BytesSent) - int64(info.BytesRetrans) - int64(info.BytesAcked)
	return int(max(n, 0)), true
}

// uppersAllowed applies the gate: whether upper-layer frames may go to a
// page whose connection shows TCP_INFO info and drains at drain, under
// target. An unknown estimate leaves the gate open, and so does a target of
// zero or less.
func uppersAllowed(target time.Duration, info tcp.Info, drain rate.Bitrate) bool {
	if target <= 0 {
		return true
	}
	n, ok := inFlight(info)
	if !ok {
		return true
	}
	ahead, ok := queueAhead(info.NotsentBytes, n, drain, info.MinRTT)
	return !ok || ahead <= target
}
