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
}

type watched struct {
	end uint32
	at  time.Time
}

// maxWatched bounds the frames a HeadWatch holds unacknowledged: at 120
// frames a second, two seconds of them.
const maxWatched = 256

// Written notes a frame whose last byte is at stream offset end, written at.
func (h *HeadWatch) Written(end uint32, at time.Time) {
	if h.Len() == 0 && !h.ackedAt.IsZero() {
		h.gap, h.gapAt = h.ackedAt.Sub(at), at
	}
	h.ackedAt = time.Time{}
	if h.Len() >= maxWatched {
		h.head++ // forget the oldest: its successor is no longer paired
	}
	if h.head > 0 && h.head >= len(h.frames)/2 {
		n := copy(h.frames, h.frames[h.head:])
		h.frames, h.head = h.frames[:n], 0
	}
	h.frames = append(h.frames, watched{end, at})
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
	if h.Len() == 0 {
		if popped >= 2 {
			last := h.frames[h.head-1]
			h.gap, h.gapAt = at.Sub(last.at), last.at
		}
		h.frames, h.head = h.frames[:0], 0
		h.ackedAt = at // the successor's write will close the pair
		return
	}
	next := h.frames[h.head]
	h.gap, h.gapAt = at.Sub(next.at), next.at
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
