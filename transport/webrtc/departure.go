package webrtc

import (
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"

	"replenish/transport"
)

// maxInFlight bounds the frames the tracker follows: a frame that has not
// left after this many newer ones were written is reported without a
// departure.
const maxInFlight = 256

// tracker follows frames from WriteFrame to the socket: it keeps each
// frame's send record until the frame's last packet has been written to
// the network (after the pacer), counts the pacer's backlog, and tells
// retransmissions from first transmissions. It is safe for concurrent
// use: the sending goroutine adds frames, pion's pacer reports packets.
type tracker struct {
	max      int
	onFinish func() // called, without mu held, when a frame's last packet is out

	mu        sync.Mutex // guards the fields below
	ssrc      uint32     // the media SSRC on the wire; packets of others are not ours
	pending   map[uint16]*inFlight
	order     []*inFlight            // by write, oldest first; finished entries linger until popped
	done      []transport.SendRecord // finished, not yet taken; at most 4*max
	accepted  int64                  // RTP payload bytes written to the track
	departed  int64                  // of those, bytes whose first transmission left
	highest   uint16
	started   bool // highest is set
	retrans   int  // packets sent again (NACK)
	retransB  uint64
	unstamped uint64
}

// inFlight is one frame on its way out.
type inFlight struct {
	rec      transport.SendRecord
	last     uint16 // sequence number of the frame's last RTP packet
	written  bool   // WriteFrame has returned (rec.WriteEnd is set)
	departed bool   // the last packet left (rec.LeftHost is set if it left well)
	finished bool   // its record is in done
}

func newTracker(maxFrames int, onFinish func()) *tracker {
	return &tracker{max: maxFrames, onFinish: onFinish, pending: make(map[uint16]*inFlight)}
}

// setSSRC names the media SSRC on the wire.
func (t *tracker) setSSRC(ssrc uint32) {
	t.mu.Lock()
	t.ssrc = ssrc
	t.mu.Unlock()
}

// add starts following a frame whose last RTP packet has sequence number
// last and whose packets carry payload bytes of RTP payload. Call it before
// writing the packets; then call written.
func (t *tracker) add(rec transport.SendRecord, last uint16, payload int) *inFlight {
	f := &inFlight{rec: rec, last: last}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.pending[last]; ok { // 65536 packets ago: long gone
		t.finishLocked(old)
	}
	t.pending[last] = f
	t.order = append(t.order, f)
	t.accepted += int64(payload)
	for len(t.pending) > t.max {
		t.finishLocked(t.oldestLocked())
	}
	t.popFinishedLocked()
	if len(t.order) > 2*t.max { // departures out of order: compact
		live := t.order[:0]
		for _, g := range t.order {
			if !g.finished {
				live = append(live, g)
			}
		}
		clear(t.order[len(live):])
		t.order = live
	}
	return f
}

// written records that WriteFrame returned at end.
func (t *tracker) written(f *inFlight, end time.Time) {
	t.mu.Lock()
	f.rec.WriteEnd = end
	f.written = true
	finish := f.departed && !f.finished
	if finish {
		t.finishLocked(f)
	}
	t.mu.Unlock()
	if finish && t.onFinish != nil {
		t.onFinish()
	}
}

// sent accounts for one RTP packet written towards the socket at at; ok
// says the write succeeded. A packet whose sequence number is not newer
// than every one before it is a retransmission: the pacer sends first
// transmissions in order.
func (t *tracker) sent(ssrc uint32, seq uint16, payload, wire int, at time.Time, ok bool) {
	t.mu.Lock()
	if ssrc != t.ssrc {
		t.mu.Unlock()
		return
	}
	if t.started && int16(seq-t.highest) <= 0 {
		t.retrans++
		t.retransB += uint64(wire)
		t.mu.Unlock()
		return
	}
	t.started, t.highest = true, seq
	t.departed += int64(payload)
	f, last := t.pending[seq]
	finish := false
	if last && !f.departed {
		f.departed = true
		if ok {
			f.rec.LeftHost = at
		}
		finish = f.written
		if finish {
			t.finishLocked(f)
		}
	}
	t.mu.Unlock()
	if finish && t.onFinish != nil {
		t.onFinish()
	}
}

// finishLocked moves f's record to done.
func (t *tracker) finishLocked(f *inFlight) {
	if f.finished {
		return
	}
	f.finished = true
	if t.pending[f.last] == f {
		delete(t.pending, f.last)
	}
	if f.rec.LeftHost.IsZero() {
		t.unstamped++
	}
	if len(t.done) >= 4*t.max { // nobody takes them: keep the newest
		copy(t.done, t.done[1:])
		t.done = t.done[:len(t.done)-1]
	}
	t.done = append(t.done, f.rec)
	t.popFinishedLocked()
}

// oldestLocked returns the oldest frame not finished; there is one when
// pending is not empty.
func (t *tracker) oldestLocked() *inFlight {
	t.popFinishedLocked()
	return t.order[0]
}

func (t *tracker) popFinishedLocked() {
	for len(t.order) > 0 && t.order[0].finished {
		t.order[0] = nil
		t.order = t.order[1:]
	}
}

// take returns the records finished since the last call.
func (t *tracker) take() []transport.SendRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	recs := t.done
	t.done = nil
	return recs
}

// unsent returns the pacer's backlog: RTP payload bytes written to the
// track whose first transmission has not left.
func (t *tracker) unsent() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.accepted - t.departed
}

// counts returns the retransmitted packets and their bytes, and the
// records finished without a departure.
func (t *tracker) counts() (retrans int, retransBytes, unstamped uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retrans, t.retransB, t.unstamped
}

// departures is the interceptor at the network end of pion's chain (the
// first one registered, so that every other interceptor, the pacer
// included, writes through it): it reports each RTP packet to the tracker
// as the packet goes to the socket, and its transport-wide sequence
// number to the horizon and the window.
type departures struct {
	interceptor.NoOp
	t *tracker
	h *horizon
	w *window
}

// NewInterceptor returns the interceptor; a registry built for one
// PeerConnection calls it once.
func (d *departures) NewInterceptor(string) (interceptor.Interceptor, error) { return d, nil }

// BindLocalStream wraps the writer that encrypts and sends.
func (d *departures) BindLocalStream(info *interceptor.StreamInfo, w interceptor.RTPWriter) interceptor.RTPWriter {
	var twccID uint8
	for _, e := range info.RTPHeaderExtensions {
		if e.URI == sdp.TransportCCURI && e.ID > 0 && e.ID < 256 {
			twccID = uint8(e.ID)
		}
	}
	return interceptor.RTPWriterFunc(func(h *rtp.Header, payload []byte, a interceptor.Attributes) (int, error) {
		n, err := w.Write(h, payload, a)
		now, wire := time.Now(), h.MarshalSize()+len(payload)
		d.t.sent(h.SSRC, h.SequenceNumber, len(payload), wire, now, err == nil)
		var tcc rtp.TransportCCExtension
		if twccID != 0 && err == nil && tcc.Unmarshal(h.GetExtension(twccID)) == nil {
			d.h.sent(tcc.TransportSequence, wire, now)
			d.w.sent(tcc.TransportSequence, now)
		}
		return n, err
	})
}
