package viewer

// The relay: what each page gets of each stream. A page's connection takes
// a frame only when its transport invites one (transport/tcp's Waiter), so
// frames wait here, per (page, stream), and on each invitation the page
// gets the freshest frame it can decode:
//
//   - A keyframe replaces everything queued before it.
//   - Base-layer frames (TL0, and every delta frame of a stream without
//     temporal layers) are never dropped on their own: each depends on the
//     one before. When more than ClientQueue of them wait, the page cannot
//     keep up even with the base layer: the queue is dropped and the page
//     waits for the next keyframe, which the viewer asks the sender for.
//   - Frames of the upper layers (TL1, TL2) wait only while nothing fresher
//     must go first: a base-layer frame queued after them makes them stale
//     and drops them, and on an invitation the page gets the freshest upper
//     frame that decodes with the ones before it dropped (a layer sync
//     frame, or one of a layer no dropped frame belongs to). In the L1T3
//     pattern (TL0, TL2, TL1, TL2) the non-sync TL2 frame depends on the
//     TL1 frame before it, so under pressure TL2 goes first, then TL1.
//   - A dropped frame of layer k breaks layers k and up: their frames are
//     dropped until a layer sync frame (RFC 7741's Y bit) of each layer,
//     lowest first. A gap in TL0PICIDX means a base-layer frame the page
//     needs never came: only a keyframe repairs that.
//
// Every drop is counted by layer. The stream keeps the same kind of queue,
// never taken from, from its latest keyframe on (keyCache), so that a page
// that joins starts at once from that keyframe and the frames it needs to
// reach the newest one.

// maxTID is the largest temporal layer index (RFC 7741's TID has two bits).
const maxTID = 3

// dropMask records what dropped frames take from a decoder: bit 0 a
// keyframe or base-layer frame (nothing decodes until a keyframe), bit k
// (1 to 3) a frame of layer k (layers k and up need a sync frame).
type dropMask uint8

const (
	dropBase   dropMask = 1
	upperMasks dropMask = 0b1110
)

// base reports whether f is a keyframe or a base-layer frame: one that
// every later frame until the next keyframe depends on.
func (f *outFrame) base() bool { return f.key || !f.layer.Present || f.layer.TID == 0 }

// tid returns the frame's temporal layer for counting: 0 for keyframes
// and frames of a stream without layers.
func (f *outFrame) tid() int {
	if f.base() {
		return 0
	}
	return int(min(f.layer.TID, maxTID))
}

// mask returns what dropping f takes from a decoder.
func (f *outFrame) mask() dropMask {
	if f.base() {
		return dropBase
	}
	return (dropMask(0xFF) << f.tid()) & upperMasks
}

// layerState is what a page's decoder holds of one stream, as far as the
// relay can tell: the zero value is a decoder that has nothing yet. It is
// a value; its methods return new states.
type layerState struct {
	started  bool     // a keyframe was taken since the page joined
	broken   bool     // a base-layer frame is missing: wait for a keyframe
	haveTL0  bool     // tl0 is known (the stream has temporal layers)
	tl0      uint8    // TL0PICIDX of the last base-layer frame taken
	needSync dropMask // upper layers that resume only at a sync frame
}

// fate is what a layerState says of the next frame.
type fate int

const (
	vTake    fate = iota // it decodes: send it
	vWaitKey             // nothing started yet: the page needs a keyframe first (not a drop)
	vLayer               // an upper-layer frame whose layer awaits a sync frame: drop it
	vBroken              // it depends on a frame the page lacks: drop it, ask for a keyframe
)

// mask returns what dropping f for v takes from a decoder: what f's
// layer takes, and everything when f showed that a base-layer frame is
// missing.
func (v fate) mask(f *outFrame) dropMask {
	if v == vBroken {
		return f.mask() | dropBase
	}
	return f.mask()
}

// accept says whether a decoder in state s can decode f next, and returns
// the state after f is taken, or after it is dropped.
func (s layerState) accept(f *outFrame) (layerState, fate) {
	l := f.layer
	switch {
	case f.key:
		return layerState{started: true, haveTL0: l.Present, tl0: l.TL0PicIdx}, vTake
	case !s.started:
		return s, vWaitKey
	case s.broken:
		return s, vBroken
	case f.base():
		if l.Present && s.haveTL0 && l.TL0PicIdx != s.tl0+1 {
			return s.lose(dropBase), vBroken // a TL0 frame went missing
		}
		if l.Present {
			s.tl0, s.haveTL0 = l.TL0PicIdx, true
		}
		return s, vTake
	case s.haveTL0 && l.TL0PicIdx != s.tl0:
		return s.lose(dropBase), vBroken // it follows a TL0 frame the page lacks
	}
	bit := dropMask(1) << f.tid()
	if l.Sync {
		// It depends only on the base layer. Its layer resumes if every
		// layer below it has.
		if s.needSync&(bit-1)&upperMasks == 0 {
			s.needSync &^= bit
		}
		return s, vTake
	}
	if s.needSync&bit != 0 {
		return s.lose(f.mask()), vLayer
	}
	return s, vTake
}

// lose returns the state after frames with mask m were dropped.
func (s layerState) lose(m dropMask) layerState {
	if m&dropBase != 0 && s.started {
		s.broken = true
	}
	s.needSync |= m & upperMasks
	return s
}

// relayEntry is one queued frame. lost holds the drops between it and the
// entry before, to apply before it.
type relayEntry struct {
	f       *outFrame
	lost    dropMask
	catchUp bool // from the stream's keyCache, sent when the page joined
}

// relay is one page's queue of one stream's frames (see the top of this
// file). It is a pure function of the frames offered and taken, and is not
// safe for concurrent use. The zero value is a page that has nothing yet.
type relay struct {
	sent     layerState   // the page's decoder after the frames taken
	q        []relayEntry // oldest first
	tailLost dropMask     // drops after q's last entry

	counts layerCounts
}

// layerCounts are a relay's totals, by temporal layer (keyframes and the
// frames of a stream without layers in 0).
type layerCounts struct {
	sent, dropped [maxTID + 1]uint64
	catchUp       uint64 // sent from the stream's keyCache
}

func (c *layerCounts) drop(f *outFrame) { c.dropped[f.tid()]++ }

// tail returns the decoder's state once every queued frame is taken.
func (r *relay) tail() layerState {
	st := r.sent
	for _, e := range r.q {
		st, _ = st.lose(e.lost).accept(e.f)
	}
	return st.lose(r.tailLost)
}

// join starts a page that has nothing of the stream from the stream's
// cache: its frames are queued, as catch-up frames but for live, the
// frame being offered.
func (r *relay) join(c *keyCache, live *outFrame) {
	for _, e := range c.r.q {
		e.catchUp = e.f != live
		r.q = append(r.q, e)
	}
	r.tailLost = c.r.tailLost
}

// offer queues f, keeping at most depth base-layer frames besides the
// catch-up ones (see the top of this file), and reports whether the
// stream's sender should be asked for a keyframe.
func (r *relay) offer(f *outFrame, depth int) (wantKey bool) {
	if f.key {
		for _, e := range r.q {
			r.counts.drop(e.f)
		}
		r.clear()
		r.q = append(r.q, relayEntry{f: f})
		return false
	}
	switch _, v := r.tail().accept(f); v {
	case vWaitKey:
		return true
	case vLayer, vBroken:
		r.counts.drop(f)
		r.tailLost |= v.mask(f)
		return v == vBroken
	}
	if f.base() {
		r.dropUppers()
		if r.baseQueued() >= depth {
			r.overflow(f)
			return true
		}
	}
	r.q = append(r.q, relayEntry{f: f, lost: r.tailLost})
	r.tailLost = 0
	if !f.base() && len(r.q)-r.lastBase()-1 > depth {
		i := r.lastBase() + 1 // the oldest of too many upper frames
		r.counts.drop(r.q[i].f)
		r.dropAt(i)
	}
	return false
}

// overflow drops the queue and f: the page cannot keep up even with the
// base layer. It then waits for a keyframe; if a keyframe was queued, the
// frames until the next one count as drops.
func (r *relay) overflow(f *outFrame) {
	for _, e := range r.q {
		r.counts.drop(e.f)
		r.sent.started = r.sent.started || e.f.key
	}
	r.counts.drop(f)
	r.clear()
	r.sent = r.sent.lose(dropBase)
}

// take removes and returns the frame to send now and whether it is a
// catch-up frame, or nil when nothing is queued. Without uppers (the
// page's leg is queueing, see gate.go) it takes only a base-layer or
// catch-up frame at the head; upper-layer frames then wait, to go when the
// gate opens or to be dropped when a base-layer frame comes after them.
func (r *relay) take(uppers bool) (*outFrame, bool) {
	for len(r.q) > 0 {
		if !uppers && !r.q[0].f.base() && !r.q[0].catchUp {
			return nil, false
		}
		i := 0
		if !r.q[0].f.base() && !r.q[0].catchUp {
			i = r.freshest()
		}
		for _, e := range r.q[:i] {
			r.counts.drop(e.f)
			r.sent = r.sent.lose(e.lost | e.f.mask())
		}
		e := r.q[i]
		copy(r.q, r.q[i+1:])
		clear(r.q[len(r.q)-i-1:])
		r.q = r.q[:len(r.q)-i-1]
		next, v := r.sent.lose(e.lost).accept(e.f)
		r.sent = next
		if v != vTake {
			// It needs a frame dropped after it was queued.
			r.counts.drop(e.f)
			continue
		}
		r.counts.sent[e.f.tid()]++
		if e.catchUp {
			r.counts.catchUp++
		}
		return e.f, e.catchUp
	}
	return nil, false
}

// freshest returns the index of the newest queued frame that decodes
// with every frame before it dropped; the queue holds only upper-layer
// frames.
func (r *relay) freshest() int {
	for i := len(r.q) - 1; i > 0; i-- {
		st := r.sent
		for _, e := range r.q[:i] {
			st = st.lose(e.lost | e.f.mask())
		}
		if _, v := st.lose(r.q[i].lost).accept(r.q[i].f); v == vTake {
			return i
		}
	}
	return 0
}

// dropUppers drops the upper-layer frames queued after the last base-layer
// frame: a base-layer frame is about to be queued behind them, fresher.
func (r *relay) dropUppers() {
	for i := len(r.q) - 1; i >= 0 && !r.q[i].f.base(); i-- {
		e := r.q[i]
		r.counts.drop(e.f)
		r.tailLost |= e.lost | e.f.mask()
		r.q[i] = relayEntry{}
		r.q = r.q[:i]
	}
}

// dropAt removes entry i, carrying its drop to the entry after it. Later
// entries that needed it are dropped when their turn comes (take).
func (r *relay) dropAt(i int) {
	m := r.q[i].lost | r.q[i].f.mask()
	copy(r.q[i:], r.q[i+1:])
	r.q[len(r.q)-1] = relayEntry{}
	r.q = r.q[:len(r.q)-1]
	if i < len(r.q) {
		r.q[i].lost |= m
	} else {
		r.tailLost |= m
	}
}

// baseQueued returns the number of queued base-layer frames, catch-up ones
// left out.
func (r *relay) baseQueued() int {
	n := 0
	for _, e := range r.q {
		if e.f.base() && !e.catchUp {
			n++
		}
	}
	return n
}

// catchUpBase returns the number of queued catch-up base-layer frames.
func (r *relay) catchUpBase() int {
	n := 0
	for _, e := range r.q {
		if e.f.base() && e.catchUp {
			n++
		}
	}
	return n
}

// lastBase returns the index of the last queued base-layer frame, or -1.
func (r *relay) lastBase() int {
	for i := len(r.q) - 1; i >= 0; i-- {
		if r.q[i].f.base() {
			return i
		}
	}
	return -1
}

// clear empties the queue.
func (r *relay) clear() {
	clear(r.q)
	r.q = r.q[:0]
	r.tailLost = 0
}

// queued returns the number of frames queued.
func (r *relay) queued() int { return len(r.q) }

// head returns the oldest queued frame, or nil.
func (r *relay) head() *outFrame {
	if len(r.q) == 0 {
		return nil
	}
	return r.q[0].f
}

// keyCache is what a stream keeps for pages that join it: its latest
// keyframe and, after it, the frames the newest frame needs (every
// base-layer frame since, and the upper-layer frames after the last), at
// most maxFrames frames and maxBytes bytes; beyond either it keeps nothing
// until the next keyframe. It is a relay that is never taken from. It is
// not safe for concurrent use.
type keyCache struct {
	r     relay
	bytes int
	valid bool
}

// add records a frame of the stream.
func (c *keyCache) add(f *outFrame, maxFrames, maxBytes int) {
	if f.key {
		c.r.clear()
		c.r.sent, c.bytes, c.valid = layerState{}, 0, true
	}
	if !c.valid {
		return
	}
	c.r.offer(f, maxFrames)
	c.bytes = 0
	for _, e := range c.r.q {
		c.bytes += len(e.f.msg)
	}
	if len(c.r.q) == 0 || len(c.r.q) > maxFrames || c.bytes > maxBytes {
		c.r.clear()
		c.bytes, c.valid = 0, false
	}
}

// frames returns how many frames a joining page would get.
func (c *keyCache) frames() int { return len(c.r.q) }

// holds reports whether f is among the frames a joining page would get.
func (c *keyCache) holds(f *outFrame) bool {
	for i := len(c.r.q) - 1; i >= 0; i-- {
		if c.r.q[i].f == f {
			return true
		}
	}
	return false
}
