package viewer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"

	"replenish/framer"
)

// Reasons a sender connection ends, wrapped in the logged error.
var (
	errTooManyStreams = errors.New("viewer: too many streams")
	errStalled        = errors.New("viewer: sender stalled")
	errNameTaken      = errors.New("viewer: the stream name belongs to a connected sender")
	errReplaced       = errors.New("viewer: the sender reconnected")
	errShutdown       = errors.New("viewer: shutting down")
	errBadMedia       = errors.New("viewer: malformed media")
)

// senderConn is one connection from a sender, over either transport. Its
// reader goroutine (readSender) owns the framing, assembly and decoding
// state; its feedback goroutine (writeFeedback) writes RTCP.
type senderConn struct {
	link      senderLink
	remote    string
	transport string        // "tcp", "quic" or "webrtc"
	pli       chan struct{} // capacity 1: a keyframe request is pending
	done      chan struct{} // closed when the reader has stopped
	ssrc      atomic.Uint32 // media SSRC of the last frame
	hasSSRC   atomic.Bool
	// namedBy is the SSRC of the SDES that names the connection's stream
	// (claimed set; never for WHIP, named by its URL). A connection
	// claiming a name with the same SSRC as the name's owner is the same
	// sender reconnecting (see nameStream).
	namedBy atomic.Uint32
	claimed atomic.Bool
	cause   atomic.Pointer[error] // why another goroutine closed the link
}

// closeWith closes the connection, recording why for the reader's log.
func (sc *senderConn) closeWith(err error) {
	sc.cause.CompareAndSwap(nil, &err)
	sc.link.close(err)
}

// acceptSenders accepts sender connections until ctx is done or the
// listener fails.
func (s *Server) acceptSenders(ctx context.Context, ln net.Listener) error {
	backoff := 5 * time.Millisecond
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				s.log.Warn("accepting a sender", "err", err, "retry_in", backoff)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			return fmt.Errorf("viewer: accepting senders: %w", err)
		}
		backoff = 5 * time.Millisecond
		release, err := s.senderLimits.admit(addrOf(conn.RemoteAddr()))
		if err != nil {
			s.refused.log(s.log, "sender", conn.RemoteAddr().String(), err, time.Now())
			conn.Close()
			continue
		}
		if !s.track() {
			release()
			conn.Close()
			return nil
		}
		go func() {
			defer s.conns.Done()
			defer release()
			s.serveSender(ctx, newTCPLink(conn))
		}()
	}
}

// isTemporary reports whether an accept error is worth retrying (such as
// running out of file descriptors).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func newSenderConn(link senderLink) *senderConn {
	return &senderConn{
		link:      link,
		remote:    link.remote(),
		transport: link.transport(),
		pli:       make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
}

// serveSender runs one sender connection over TCP or QUIC until it ends,
// and logs why: first the proof of the token (authenticate), then the
// stream.
func (s *Server) serveSender(ctx context.Context, link authLink) {
	sc := newSenderConn(link)
	log := s.log.With("sender", sc.remote, "transport", sc.transport)
	stop := context.AfterFunc(ctx, func() { sc.closeWith(errShutdown) })
	err := s.authenticate(link)
	stop()
	if c := sc.cause.Load(); c != nil && errors.Is(*c, errShutdown) {
		return // Run is shutting down
	}
	var st *stream
	if err == nil {
		link.authenticated()
		st, err = s.attachNew(sc)
	}
	if err != nil {
		log.Warn("sender refused", "err", err)
		s.endLink(link, err)
		return
	}
	s.runSender(ctx, sc, st, log)
}

// endLink closes link, for the reason err. A connection refused (a failed
// proof of the token, a stream name or the stream cap) is told why where
// its transport can carry it: over TCP in an RTCP BYE (QUIC carries the
// reason in its close).
func (s *Server) endLink(link senderLink, err error) {
	if r, ok := link.(interface{ refuse(uint32, error) }); ok &&
		(errors.Is(err, errAuth) || errors.Is(err, errNameTaken) || errors.Is(err, errTooManyStreams)) {
		r.refuse(s.ssrc, err)
		return
	}
	link.close(err)
}

// runSender runs the connection loop of sc, attached to st, until it
// ends, and logs why.
func (s *Server) runSender(ctx context.Context, sc *senderConn, st *stream, log *slog.Logger) {
	log.Info("sender connected", "stream", st.id)
	link := sc.link
	stop := context.AfterFunc(ctx, func() { sc.closeWith(errShutdown) })
	defer stop()

	var feedback sync.WaitGroup
	feedback.Go(func() { s.writeFeedback(sc) })
	st, err := s.readSender(sc, st)
	close(sc.done)
	if c := sc.cause.Load(); c != nil {
		err = *c
	}
	s.endLink(link, err)
	feedback.Wait()
	s.detach(sc, st)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, errShutdown), errors.Is(err, errReplaced):
		log.Info("sender disconnected", "stream", st.id, "name", st.nameSnapshot(), "reason", err)
	default:
		log.Warn("sender dropped", "stream", st.id, "name", st.nameSnapshot(), "reason", err)
	}
}

// readSender reads what sc's sender sends until the connection fails, and
// returns the stream the connection ended on and why it ended.
func (s *Server) readSender(sc *senderConn, st *stream) (*stream, error) {
	asm := framer.NewAssembler(s.cfg.MaxFrameSize)
	var ch chain
	var dropped uint64
	for {
		in, err := sc.link.next(time.Now().Add(s.cfg.StallTimeout))
		now := s.now()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return st, fmt.Errorf("%w: nothing for %v", errStalled, s.cfg.StallTimeout)
		case err != nil:
			return st, err
		case in.lost:
			ch.lostFrame()
			s.onLost(st, 1, LostReset, now)
			continue
		case framer.IsRTCP(in.pkt):
			if st, err = s.onControl(sc, st, in.pkt, now); errors.Is(err, errNameTaken) {
				return st, err
			} else if err != nil {
				return st, fmt.Errorf("%w: RTCP: %w", errBadMedia, err)
			}
			continue
		}
		f, err := asm.Push(in.pkt)
		if d := asm.Stats().Dropped; d != dropped {
			st.mu.Lock()
			st.droppedPartial += d - dropped
			st.mu.Unlock()
			dropped = d
		}
		if err != nil {
			return st, fmt.Errorf("%w: RTP: %w", errBadMedia, err)
		}
		if f != nil {
			sc.ssrc.Store(f.SSRC)
			sc.hasSSRC.Store(true)
			v := ch.frame(f)
			if v.lost > 0 {
				s.onLost(st, v.lost, LostGap, now)
			}
			s.onFrame(st, f, v.undecodable, now)
		}
	}
}

// onControl handles one RTCP packet from a sender: the stream's name
// (SDES) and the sender's timing reports (APP "RPLN"). It returns the
// stream the connection now belongs to, which a name can change.
func (s *Server) onControl(sc *senderConn, st *stream, pkt []byte, now time.Time) (*stream, error) {
	pkts, err := framer.ParseControl(pkt)
	if err != nil {
		return st, err
	}
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.SourceDescription:
			for _, c := range p.Chunks {
				name, err := framer.StreamName(pkts, c.Source)
				if errors.Is(err, framer.ErrNoStreamName) {
					continue
				}
				if err != nil {
					return st, err
				}
				sc.namedBy.Store(c.Source)
				sc.claimed.Store(true)
				if st, err = s.nameStream(sc, st, name, now); err != nil {
					return st, err
				}
				s.setMode(sc, st, pkts, c.Source)
				break
			}
		case *rtcp.ApplicationDefined:
			r, err := framer.ParseSenderReport(p)
			if errors.Is(err, framer.ErrNotSenderReport) {
				continue
			}
			if err != nil {
				return st, err
			}
			st.mu.Lock()
			st.reportLocked(r, now)
			st.mu.Unlock()
		}
	}
	return st, nil
}

// writeFeedback sends keyframe requests to the sender until sc's reader
// stops. A write that fails or times out closes the connection.
func (s *Server) writeFeedback(sc *senderConn) {
	for {
		select {
		case <-sc.done:
			return
		case <-sc.pli:
		}
		if !sc.hasSSRC.Load() {
			continue
		}
		pli := framer.MarshalPLI(s.ssrc, sc.ssrc.Load())
		if err := sc.link.writeControl(pli, time.Now().Add(s.cfg.WriteTimeout)); err != nil {
			sc.closeWith(fmt.Errorf("writing keyframe request: %w", err))
			return
		}
	}
}

// setMode records the sender's mode from its SDES (the NOTE item for
// ssrc), if it has one and sc still owns st.
func (s *Server) setMode(sc *senderConn, st *stream, pkts []rtcp.Packet, ssrc uint32) {
	mode, err := framer.StreamMode(pkts, ssrc)
	if err != nil {
		return // none, or not text to show
	}
	st.mu.Lock()
	changed := st.conn == sc && st.mode != mode
	if changed {
		st.mode = mode
	}
	st.mu.Unlock()
	if changed {
		s.streamsChanged()
	}
}

// attachNew creates the stream for a new connection, named after its
// remote address until the sender names it. At the stream cap it evicts
// the stream that disconnected longest ago, or refuses the connection.
func (s *Server) attachNew(sc *senderConn) (*stream, error) {
	s.mu.Lock()
	var evicted *stream
	if len(s.streams) >= s.cfg.MaxStreams {
		for _, st := range s.streams {
			st.mu.Lock()
			if st.conn == nil && (evicted == nil || st.disconnectedAt.Before(evicted.disconnectedAt)) {
				evicted = st
			}
			st.mu.Unlock()
		}
		if evicted == nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %d connected", errTooManyStreams, s.cfg.MaxStreams)
		}
		s.removeStreamLocked(evicted)
	}
	s.nextStreamID++
	st := newStream(s.nextStreamID, sc.remote, sc.remote, &s.cfg)
	st.conn = sc
	st.transport = sc.transport
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	if evicted != nil {
		s.log.Info("stream evicted", "stream", evicted.id, "name", evicted.nameSnapshot())
		s.forgetStream(evicted.id)
	}
	s.streamsChanged()
	return st, nil
}

// nameStream gives sc's stream the sender's name. If a disconnected stream
// has that name, the connection joins it (a reconnecting sender keeps its
// stream and id) and sc's unnamed stream is removed. A stream whose
// connection is still open belongs to that connection: the claim is
// refused with an error wrapping errNameTaken (sc's unnamed stream is then
// removed, and sc must close), unless both name it with the same SSRC.
// That is the same sender reconnecting before the viewer saw its old
// connection fail (a path outage, or a sender that gave up on a stalled
// connection: see transport/quic's Config.StallTimeout): sc takes the
// stream over and the old connection is closed (errReplaced). It returns
// sc's stream afterwards.
func (s *Server) nameStream(sc *senderConn, cur *stream, name string, now time.Time) (*stream, error) {
	s.mu.Lock()
	cur.mu.Lock()
	mine := cur.conn == sc
	same := cur.named && cur.name == name
	cur.mu.Unlock()
	if !mine || same {
		s.mu.Unlock() // unchanged, or sc is closing
		return cur, nil
	}
	var other *stream
	for _, st := range s.streams {
		st.mu.Lock()
		match := st != cur && st.name == name
		st.mu.Unlock()
		if match {
			other = st
			break
		}
	}
	if other == nil {
		cur.mu.Lock()
		cur.name, cur.named = name, true
		cur.mu.Unlock()
		s.mu.Unlock()
		s.log.Info("stream named", "stream", cur.id, "name", name, "sender", sc.remote)
		s.streamsChanged()
		return cur, nil
	}
	other.mu.Lock()
	owner := other.conn
	replaced := owner != nil && sameSender(owner, sc)
	if owner == nil || replaced {
		other.conn = sc
		other.remote = sc.remote
		other.transport, other.mode = sc.transport, ""
		other.firstFrame = time.Time{}
	}
	other.mu.Unlock()
	removed := s.leaveLocked(cur, now) // the connection closes, or joins other
	if owner != nil && !replaced {
		s.mu.Unlock()
		if removed {
			s.forgetStream(cur.id)
		}
		s.streamsChanged()
		return cur, fmt.Errorf("%w: %q is %s's", errNameTaken, name, owner.remote)
	}
	s.mu.Unlock()
	if removed {
		s.forgetStream(cur.id)
	}
	if replaced {
		owner.closeWith(fmt.Errorf("%w from %s", errReplaced, sc.remote))
		s.log.Info("stream taken over by its sender's new connection", "stream", other.id, "name", name, "sender", sc.remote, "old", owner.remote)
	} else {
		s.log.Info("stream taken back", "stream", other.id, "name", name, "sender", sc.remote)
	}
	s.streamsChanged()
	return other, nil
}

// sameSender reports whether connections a and b named their stream with
// the same SSRC: one sender, whose SSRC outlives its connections. A
// sender picks its SSRC at random (RFC 3550 8.1), so two senders sharing
// a name and an SSRC is a one in 2^32 chance. The name was claimable by
// any sender once its owner's connection closed; this lets that one
// sender claim it up to the viewer's StallTimeout sooner.
func sameSender(a, b *senderConn) bool {
	return a.claimed.Load() && b.claimed.Load() && a.namedBy.Load() == b.namedBy.Load()
}

// leaveLocked detaches cur from its connection, which has joined another
// stream, and removes it if no sender ever named it; it reports whether
// it did. s.mu must be held.
func (s *Server) leaveLocked(cur *stream, now time.Time) bool {
	cur.mu.Lock()
	cur.conn = nil
	cur.disconnectedAt = now
	named := cur.named
	cur.mu.Unlock()
	if !named {
		s.removeStreamLocked(cur)
	}
	return !named
}

// detach marks st disconnected, unless another connection has taken it
// over. A stream that was never named and never had a frame is removed,
// as leaveLocked does: a connection that carried nothing (a port scan, a
// client that only connects) leaves no stream to take a slot under
// MaxStreams, for which a new sender would evict a real stream whose
// sender is reconnecting.
func (s *Server) detach(sc *senderConn, st *stream) {
	s.mu.Lock()
	st.mu.Lock()
	mine := st.conn == sc
	if mine {
		st.conn = nil
		st.disconnectedAt = s.now()
		st.firstFrame = time.Time{}
	}
	empty := mine && !st.named && st.framesReceived == 0
	st.mu.Unlock()
	if empty {
		s.removeStreamLocked(st)
	}
	s.mu.Unlock()
	if empty {
		s.forgetStream(st.id)
	}
	s.streamsChanged()
}

// removeStreamLocked drops st from the stream list. s.mu must be held.
func (s *Server) removeStreamLocked(st *stream) {
	s.streams = slices.DeleteFunc(s.streams, func(x *stream) bool { return x == st })
}

// streamByID returns the stream with id, or nil.
func (s *Server) streamByID(id uint32) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		if st.id == id {
			return st
		}
	}
	return nil
}

// onFrame records a complete frame and offers it to every page, unless it
// cannot be decoded (it depends on a lost frame): then it asks the sender
// for a keyframe instead.
func (s *Server) onFrame(st *stream, f *framer.Frame, undecodable bool, now time.Time) {
	st.mu.Lock()
	h := st.frameLocked(f, now)
	if undecodable {
		st.framesUndecodable++
	}
	name := st.name
	st.mu.Unlock()
	if rec := s.cfg.OnRecord; rec != nil {
		rec(Record{
			Kind: RecordReceived, Stream: h.Stream, Frame: h.Frame, Name: name,
			RTPTimestamp: h.RTPTimestamp, Capture: h.Capture, Received: h.Received,
			Bytes: len(f.Data), Key: h.Key, Width: h.Width, Height: h.Height, ClockOffset: h.ClockOffset,
			Undecodable: undecodable, Layered: h.Layered, TID: h.TID,
		})
	}
	if undecodable {
		s.requestKeyframe(st, now, "frame depends on a lost one")
		return
	}
	msg := make([]byte, 0, FrameHeaderSize+len(f.Data))
	msg = append(h.Append(msg), f.Data...)
	out := &outFrame{
		seq: s.seq.Add(1), stream: st.id, key: f.Key, msg: msg,
		data: msg[len(msg)-len(f.Data):], ssrc: f.SSRC, ts: f.Timestamp, layer: f.Layer,
	}
	st.mu.Lock()
	st.keys.add(out, s.cfg.KeyCacheFrames, s.cfg.KeyCacheBytes)
	st.mu.Unlock()
	for _, c := range s.clientList() {
		if c.offer(out, st, &s.cfg) && s.requestKeyframe(st, now, "page queue") {
			c.keyRequested(st.id)
		}
	}
	for _, sess := range s.whepFor(st.id) {
		if sess.offer(out, s.cfg.ClientQueue) {
			s.requestKeyframe(st, now, "native player queue")
		}
	}
}

// onLost records n frames of st that did not arrive whole, found at now
// for the reason given, and asks the sender for a keyframe.
func (s *Server) onLost(st *stream, n int, why LostReason, now time.Time) {
	st.mu.Lock()
	st.framesLost += uint64(n)
	st.framesUndecodable += uint64(n)
	id, name := st.id, st.name
	st.mu.Unlock()
	if rec := s.cfg.OnRecord; rec != nil {
		rec(Record{Kind: RecordLost, Stream: id, Name: name, Received: now, Lost: n, LostReason: why})
	}
	s.requestKeyframe(st, now, "frame lost")
}

// requestKeyframe asks st's sender for a keyframe, at most once per
// KeyframeInterval. It reports whether a request went out.
func (s *Server) requestKeyframe(st *stream, now time.Time, why string) bool {
	st.mu.Lock()
	sc := st.conn
	if sc == nil || !st.haveSSRC || !st.keyLimiter.allow(now) {
		st.mu.Unlock()
		return false
	}
	st.keyframeRequests++
	st.mu.Unlock()
	select {
	case sc.pli <- struct{}{}:
	default:
	}
	s.log.Debug("keyframe requested", "stream", st.id, "why", why)
	return true
}

func (st *stream) nameSnapshot() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.name
}
