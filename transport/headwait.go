package transport

import "time"

// HeadWatch pairs each frame's write with the acknowledgement of the frame
// before it, for the wait a frame's first bytes had at the bottleneck behind
// the tail of the frame before: the predecessor's last byte left the
// bottleneck about its acknowledgement's time less the return path, and the
// frame's first byte reached the bottleneck about its write plus the forward
// path, so the frame waited
//
//	acknowledged(k-1) - written(k) - minimum round trip
//
// (negative: it met no queue of the stream's own). Where a frame is several
// round trips of the link long (a low frame rate), the smoothed round trip
// cannot tell that wait from the frame's own queueing; this can, without an
// estimate of the capacity.
//
// A frame written while the one before still had bytes waiting to leave the
// host cannot reach the bottleneck before that frame's last byte has left,
// so its reference is the later of its write and that departure
// (Departed). The sender writes with half a replenish time of backlog still
// unsent (transport/tcp's Decide, with the lead): measured from the write,
// every frame seemed to wait that long at the bottleneck, and at 15 fps on
// a 10 Mb/s path the controller cut on it as a queue. Without departures
// (transport/quic reports none) the reference is the write.
//
// A retransmission anywhere before a frame's last byte holds that frame's
// acknowledgement for a repair's round trip, so a pair whose predecessor
// was written before a retransmission reads that round trip as a wait
// (Repaired): at 3% loss on a 23 Mb/s path at 210 ms (BBR, 15 fps), most
// frames held a lost packet and read waits of 80 to 190 ms with the
// bottleneck's queue under 10 ms.
//
// Frames are named by the stream offset of their last byte, in 32-bit
// serial-number arithmetic (RFC 1982), so TCP's timestamp keys serve as
// they are. A HeadWatch holds at most maxWatched frames; it is not safe for
// concurrent use.
type HeadWatch struct {
	frames []watched // written and not yet acknowledged, oldest first
	head   int
	// ackedAt is the acknowledgement of the newest acknowledged frame
	// while its successor is still to be written; zero otherwise.
	ackedAt time.Time
	gap     time.Duration // the newest pair: acknowledged(k-1) - written(k)
	gapAt   time.Time     // written(k); zero before the first pair
	rtt     time.Duration // the newest acknowledged frame's round trip (LatestRTT)
	rttAt   time.Time     // its acknowledgement; zero before the first
	// ackedLost is the retransmission count when the frame acknowledged
	// at ackedAt was written; gapLost when the newest pair's
	// predecessor, k-1, was.
	ackedLost, gapLost int64
}

type watched struct {
	end  uint32
	at   time.Time // written
	left time.Time // its last byte left the host; zero until Departed
	lost int64     // the transport's retransmission count when written
}

// maxWatched bounds the frames a HeadWatch holds unacknowledged: at 120
// frames a second, two seconds of them.
const maxWatched = 256

// Written notes a frame whose last byte is at stream offset end, written
// at, when the transport had retransmitted lost packets (or bytes: any
// count that grows with each repair).
func (h *HeadWatch) Written(end uint32, at time.Time, lost int64) {
	if h.Len() == 0 && !h.ackedAt.IsZero() {
		h.gap, h.gapAt, h.gapLost = h.ackedAt.Sub(at), at, h.ackedLost
	}
	h.ackedAt = time.Time{}
	if h.Len() >= maxWatched {
		h.head++ // forget the oldest: its successor is no longer paired
	}
	if h.head > 0 && h.head >= len(h.frames)/2 {
		n := copy(h.frames, h.frames[h.head:])
		h.frames, h.head = h.frames[:n], 0
	}
	h.frames = append(h.frames, watched{end: end, at: at, lost: lost})
}

// Departed notes that the last byte of the frame ending at stream offset
// end left the host at at. A frame not watched (acknowledged, or
// forgotten) is ignored.
func (h *HeadWatch) Departed(end uint32, at time.Time) {
	for i := h.head; i < len(h.frames); i++ {
		if h.frames[i].end == end {
			h.frames[i].left = at
			return
		}
	}
}

// from returns when frame i's first byte could leave the host: its write,
// or the departure of the frame before it if that came later.
func (h *HeadWatch) from(i int) time.Time {
	at := h.frames[i].at
	if i > 0 && h.frames[i-1].left.After(at) {
		return h.frames[i-1].left
	}
	return at
}

// Acked notes that every byte up to and including stream offset upTo was
// acknowledged at at. The newest pair it makes is the first frame still
// unacknowledged, or, when it acknowledged them all, the last of them if
// it also acknowledged the one before (both packetized before either was
// acknowledged, as QUIC does when a frame follows closely).
func (h *HeadWatch) Acked(upTo uint32, at time.Time) {
	popped := 0
	for h.head < len(h.frames) && int32(upTo-h.frames[h.head].end) >= 0 {
		h.head++
		popped++
	}
	if popped == 0 {
		return
	}
	if left := h.frames[h.head-1].left; !left.IsZero() && !at.Before(left) {
		h.rtt, h.rttAt = at.Sub(left), at
	}
	if h.Len() == 0 {
		if popped >= 2 {
			from := h.from(h.head - 1)
			h.gap, h.gapAt, h.gapLost = at.Sub(from), h.frames[h.head-1].at, h.frames[h.head-2].lost
		}
		h.ackedAt, h.ackedLost = at, h.frames[h.head-1].lost // the successor's write will close the pair
		h.frames, h.head = h.frames[:0], 0
		return
	}
	from := h.from(h.head)
	h.gap, h.gapAt, h.gapLost = at.Sub(from), h.frames[h.head].at, h.frames[h.head-1].lost
}

// Repaired reports whether the retransmission count lost, read after the
// newest pair's acknowledgement, has grown since that pair's predecessor
// was written: a repair may then have held the acknowledgement a round
// trip, and the pair's gap says only that the wait was no longer.
func (h *HeadWatch) Repaired(lost int64) bool { return lost != h.gapLost }

// LatestRTT returns the round trip of the newest frame acknowledged in
// full whose departure was noted: its acknowledgement less the departure of
// its last byte, and that acknowledgement; ok false before the first. It
// is one sample, newer than the kernel's smoothed RTT at low packet rates,
// where an eighth per ACK takes seconds to follow a queue that has gone
// (Observation.LatestRTT). A receiver's delayed ACK adds to it, never
// takes from it.
func (h *HeadWatch) LatestRTT() (rtt time.Duration, acked time.Time, ok bool) {
	return h.rtt, h.rttAt, !h.rttAt.IsZero()
}

// Len returns how many frames wait for their acknowledgement.
func (h *HeadWatch) Len() int { return len(h.frames) - h.head }

// Newest returns the newest pair: the acknowledgement of a frame's
// predecessor less the frame's write, and that write; ok false before the
// first pair. The wait at the bottleneck is gap less the minimum round
// trip.
func (h *HeadWatch) Newest() (gap time.Duration, written time.Time, ok bool) {
	return h.gap, h.gapAt, !h.gapAt.IsZero()
}
