package sender

import "replenish/rate"

// paceGain is the pacing cap over the larger of the controller's capacity
// and its rate (see pacingCap).
const paceGain = 1.5

// pacingCapper is a transport whose pacing rate the sender caps (TCP:
// tcp.Conn.CapPacing, which acts only where the kernel paces anyway).
type pacingCapper interface {
	CapPacing(rate.Bitrate) error
}

// pacingCap returns the pacing rate the transport may send a frame at, or
// zero for none: paceGain times the larger of the capacity the controller
// estimates and the rate it sends at, once it has left its start (its
// first estimates come from the drain rate, which a cap would bound).
//
// A frame leaves the host at the transport's pacing rate, and the
// bottleneck's buffer takes what arrives faster than the path drains it:
// one minus the path's rate over the pacing rate, of the frame. Linux's
// BBR stays in its STARTUP state under source buffer management (the flow
// is application-limited: see experiments/README.md, "BBR's PROBE_RTT,
// not its gain cycle"), where it paces at 2.89 times its bandwidth
// estimate, so two thirds of each frame queued at once, and after a
// halving, whose faster path BBR's estimate remembers, more. At 15 fps,
// where a frame is 60 ms of the link and more, a buffer shorter than
// that lost each frame's tail. At paceGain a third of the frame queues; a
// probe raises the rate, and the cap with it. Measured in two rounds of
// seven paths against the code without it (experiments/NOTEBOOK.md, "A
// pacing cap"): BBR at 1.9 Mb/s, 3% loss and 15 fps 92.2 and 92.1% of the
// link against 88.8 and 89.4; BBR's 13 to 6.5 Mb/s halving at 15 fps with
// a 40 ms buffer 86.4 and 87.6% against 81.6 and 76.3; CUBIC (paced at
// 15 fps) at 10 Mb/s with a 50 ms buffer, capture to received p95 35 and
// 31 ms over the floor against 62 and 57.
func pacingCap(st ControlState) rate.Bitrate {
	if st.Phase == starting.String() || st.Capacity <= 0 {
		return 0
	}
	return max(st.Capacity, st.Rate).Scale(paceGain)
}
