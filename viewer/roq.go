package viewer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
)

// RoQ error codes the viewer sends.
const (
	roqNoError      = quic.ApplicationErrorCode(framer.RoQNoError)
	roqGeneralError = quic.ApplicationErrorCode(framer.RoQGeneralError)
	roqPacketError  = quic.ApplicationErrorCode(framer.RoQPacketError)
	roqUnknownFlow  = quic.StreamErrorCode(framer.RoQUnknownFlowID)
)

// maxSenderStreams is how many unidirectional streams a sender may have
// open, or read and not yet taken by the per-connection loop, at once. In
// the expire mode each frame has a stream: 256 is over 8 s of frames at
// 30 fps, far more than an expiry keeps in flight.
const maxSenderStreams = 256

// quicBufferFrames is, in frames of Config.MaxFrameSize, how much a QUIC
// link may hold read and not yet taken: frames that wait for an earlier
// frame's stream to end.
const quicBufferFrames = 4

// quicAuthBudget is what a QUIC link may hold read and not yet taken
// before its sender has proved the token: one packet of any size, as a TCP
// connection's reader holds at most then, rather than the quicBufferFrames
// frames (16 MiB by default) that a peer which only completed the
// handshake could otherwise make the viewer hold until AuthTimeout.
const quicAuthBudget = framer.MaxPacketSize

// errRoQ wraps the reasons a sender's QUIC framing is refused.
var errRoQ = errors.New("viewer: malformed RoQ stream")

// quicConfig is the quic-go configuration of senders' connections: no
// bidirectional streams (RoQ uses none), and stream credit given back only
// once the per-connection loop has taken a stream's packets, so that the
// streams a sender can have outstanding are bounded.
func quicConfig() *quic.Config {
	return &quic.Config{
		MaxIncomingStreams:         -1,
		MaxIncomingUniStreams:      maxSenderStreams,
		RequireStreamCreditRelease: true,
	}
}

// acceptQUIC accepts senders' QUIC connections until ctx is done or the
// listener fails.
func (s *Server) acceptQUIC(ctx context.Context, ln *quic.Listener) error {
	for {
		qc, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("viewer: accepting QUIC senders: %w", err)
		}
		release, err := s.senderLimits.admit(addrOf(qc.RemoteAddr()))
		if err != nil {
			s.refused.log(s.log, "sender", qc.RemoteAddr().String(), err, time.Now())
			qc.CloseWithError(roqGeneralError, err.Error())
			continue
		}
		if !s.track() {
			release()
			qc.CloseWithError(roqNoError, "shutting down")
			return nil
		}
		go func() {
			defer s.conns.Done()
			defer release()
			l := newQUICLink(qc, quicBufferFrames*s.cfg.MaxFrameSize)
			if s.cfg.Token == "" {
				l.authenticated() // there is nothing to prove
			}
			l.start()
			s.serveSender(ctx, l)
			l.wait()
		}()
	}
}

// quicLink is a sender's QUIC connection (RoQ). Media arrives on
// unidirectional streams the sender opens: one for the whole connection,
// or one per frame. The link reads every stream in a goroutine of its own
// and hands packets to next in stream order, which is the order the
// sender opened them in, and for the expire mode frame order. Of the
// oldest stream it hands out RTCP packets as they come and RTP packets a
// whole frame at a time (up to the packet with the marker bit), so that a
// long stream flows with no added delay while a frame whose stream is
// reset part way is discarded, never half delivered; packets of later
// streams wait until every earlier stream has ended (FIN) or been reset.
// Feedback goes on a unidirectional stream the viewer opens. Until the
// sender has proved the token (see authenticated) the link reads only the
// first stream, which carries the proof, and holds quicAuthBudget at most.
type quicLink struct {
	qc     *quic.Conn
	budget int           // bytes the link may hold read and not yet taken, once authenticated
	wake   chan struct{} // capacity 1: packets became available, a stream ended, or the link failed
	proved chan struct{} // closed by authenticated
	wg     sync.WaitGroup

	fb   *quic.SendStream // the feedback stream; writeControl's goroutine only
	fbuf []byte           // writeControl's

	mu       sync.Mutex  // guards following fields
	streams  []*inStream // accepted and not yet taken, in stream order
	buffered int         // bytes of packets held in streams
	authed   bool        // authenticated was called
	err      error       // why the link stopped; nil while it works
}

// inStream is one media stream and the packets read from it.
type inStream struct {
	s      *quic.ReceiveStream
	pkts   [][]byte  // read and not yet taken, oldest first
	avail  int       // pkts[:avail] may be taken: RTCP, and frames up to their marker
	frames int       // frames completed on this stream (marker bits read)
	end    streamEnd // how the stream ended, if it has
}

type streamEnd int

const (
	streamOpen streamEnd = iota
	streamFinished
	streamReset
)

var _ authLink = (*quicLink)(nil)

// newQUICLink returns the link of qc; start starts reading it.
func newQUICLink(qc *quic.Conn, budget int) *quicLink {
	return &quicLink{qc: qc, budget: budget, wake: make(chan struct{}, 1), proved: make(chan struct{})}
}

// authenticated lets the link read every stream and hold up to its
// budget: the sender has proved the token, or the viewer has none. Calls
// after the first do nothing.
func (l *quicLink) authenticated() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.authed {
		l.authed = true
		close(l.proved)
	}
}

// start accepts and reads the sender's streams until the connection ends.
func (l *quicLink) start() { l.wg.Go(l.accept) }

// wait waits for the link's goroutines, which end with the connection.
func (l *quicLink) wait() { l.wg.Wait() }

func (l *quicLink) accept() {
	for {
		s, err := l.qc.AcceptUniStream(l.qc.Context())
		if err != nil {
			l.fail(connectionEnded(err))
			return
		}
		in := &inStream{s: s}
		l.mu.Lock()
		l.streams = append(l.streams, in)
		l.mu.Unlock()
		l.wg.Go(func() { l.read(in) })
		// The proof of the token comes first, on a stream of its own:
		// streams after it wait unread (quic-go holds what their flow
		// control lets in) until the sender has proved it.
		select {
		case <-l.proved:
		case <-l.qc.Context().Done(): // AcceptUniStream fails
		}
	}
}

// read reads one stream to its end: the flow identifier, then packets.
func (l *quicLink) read(in *inStream) {
	r := framer.NewRoQReader(in.s)
	flow, err := r.FlowID()
	if err == nil && flow != framer.RoQSessionFlow {
		in.s.CancelRead(roqUnknownFlow) // not ours to read; nothing was taken from it
		err = io.EOF
	}
	for err == nil {
		var pkt []byte
		if pkt, err = r.ReadPacket(); err == nil && !l.add(in, bytes.Clone(pkt)) {
			return
		}
	}
	l.ended(in, err)
}

// add appends pkt to in's packets and reports whether the link can go on:
// past the byte budget, or quicAuthBudget before authenticated, it fails.
func (l *quicLink) add(in *inStream, pkt []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.authed && l.buffered+len(pkt) > quicAuthBudget {
		l.failLocked(fmt.Errorf("viewer: the sender sent more than %d bytes before proving the token", quicAuthBudget))
		return false
	}
	if l.buffered+len(pkt) > l.budget {
		l.failLocked(fmt.Errorf("viewer: the sender's streams hold more than %d bytes ahead of a frame still open", l.budget))
		return false
	}
	l.buffered += len(pkt)
	in.pkts = append(in.pkts, pkt)
	switch {
	case isMarker(pkt):
		in.frames++
		in.avail = len(in.pkts)
	case framer.IsRTCP(pkt) && in.avail == len(in.pkts)-1:
		in.avail++ // not inside a frame
	default:
		return true
	}
	l.signal()
	return true
}

// ended records how in ended: err is io.EOF for a FIN, a stream error
// for a reset, anything else fails the link.
func (l *quicLink) ended(in *inStream, err error) {
	var serr *quic.StreamError
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, io.EOF):
		in.end = streamFinished
		in.avail = len(in.pkts) // what the sender sent, whole or not
	case errors.As(err, &serr) && serr.Remote:
		in.end = streamReset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, framer.ErrEmptyPacket), errors.Is(err, framer.ErrPacketTooLarge):
		l.failLocked(fmt.Errorf("%w: %w", errRoQ, err))
		return
	default:
		l.failLocked(connectionEnded(err))
		return
	}
	l.signal()
}

func (l *quicLink) fail(err error) {
	l.mu.Lock()
	l.failLocked(err)
	l.mu.Unlock()
}

func (l *quicLink) failLocked(err error) {
	if l.err == nil {
		l.err = err
	}
	l.signal()
}

func (l *quicLink) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *quicLink) next(deadline time.Time) (arrival, error) {
	var timer *time.Timer
	for {
		l.mu.Lock()
		a, ok := l.takeLocked()
		err := l.err
		l.mu.Unlock()
		if ok {
			return a, nil
		}
		if err != nil {
			return arrival{}, err
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
		}
		select {
		case <-l.wake:
		case <-timer.C:
			return arrival{}, fmt.Errorf("quic: %w", os.ErrDeadlineExceeded)
		}
	}
}

// takeLocked takes the next packet of the oldest stream, or reports the
// loss of a frame whose stream was reset before the frame was whole, and
// gives back the credit of each stream it is done with. ok is false when
// the oldest stream has nothing to give yet.
func (l *quicLink) takeLocked() (a arrival, ok bool) {
	for len(l.streams) > 0 {
		h := l.streams[0]
		if h.avail > 0 {
			pkt := h.pkts[0]
			h.pkts[0] = nil
			h.pkts = h.pkts[1:]
			h.avail--
			l.buffered -= len(pkt)
			return arrival{pkt: pkt}, true
		}
		if h.end == streamOpen {
			return arrival{}, false
		}
		l.streams[0] = nil
		l.streams = l.streams[1:]
		h.s.ReleaseStreamCredit()
		if h.end == streamReset {
			lost := len(h.pkts) > 0 || h.frames == 0 // a partial frame, or none at all
			for _, p := range h.pkts {
				l.buffered -= len(p)
			}
			h.pkts = nil
			if lost {
				return arrival{lost: true}, true
			}
		}
	}
	return arrival{}, false
}

func (l *quicLink) writeControl(pkt []byte, deadline time.Time) error {
	l.fbuf = l.fbuf[:0]
	if l.fb == nil {
		s, err := l.qc.OpenUniStream()
		if err != nil {
			return fmt.Errorf("opening the feedback stream: %w", err)
		}
		l.fb = s
		l.fbuf, _ = framer.AppendRoQStreamHeader(l.fbuf, framer.RoQSessionFlow) // in range
	}
	var err error
	if l.fbuf, err = framer.AppendRoQPacket(l.fbuf, pkt); err != nil {
		return err
	}
	l.fb.SetWriteDeadline(deadline)
	_, err = l.fb.Write(l.fbuf)
	return err
}

// close closes the connection with ROQ_NO_ERROR for an orderly end,
// ROQ_PACKET_ERROR for malformed framing or packets, and ROQ_GENERAL_ERROR
// otherwise, with the reason.
func (l *quicLink) close(cause error) {
	code, reason := roqNoError, ""
	if cause != nil && !errors.Is(cause, io.EOF) && !errors.Is(cause, errShutdown) {
		code, reason = roqGeneralError, cause.Error()
		if errors.Is(cause, errRoQ) || errors.Is(cause, errBadMedia) {
			code = roqPacketError
		}
		if len(reason) > 200 {
			reason = reason[:200]
		}
	}
	l.qc.CloseWithError(code, reason)
}

// authBinding sends nothing: the sender's proof is bound to keying
// material exported from the connection's TLS session, which only the two
// ends know.
func (l *quicLink) authBinding(uint32, framer.AuthChallenge, time.Time) ([]byte, error) {
	tlsState := l.qc.ConnectionState().TLS
	ekm, err := tlsState.ExportKeyingMaterial(framer.AuthExporterLabel, nil, framer.AuthExporterSize)
	if err != nil {
		return nil, fmt.Errorf("exporting TLS keying material: %w", err)
	}
	return framer.QUICAuthBinding(ekm), nil
}

func (l *quicLink) remote() string    { return l.qc.RemoteAddr().String() }
func (l *quicLink) transport() string { return transportQUIC }

// connectionEnded says why the connection ended: io.EOF (wrapped) when the
// sender closed it without an error, err otherwise.
func connectionEnded(err error) error {
	var aerr *quic.ApplicationError
	if errors.As(err, &aerr) && aerr.Remote && aerr.ErrorCode == roqNoError {
		return fmt.Errorf("closed by the sender: %w", io.EOF)
	}
	return err
}

// isMarker reports whether pkt is an RTP packet with the marker bit: the
// last packet of a frame.
func isMarker(pkt []byte) bool {
	return len(pkt) >= 12 && pkt[0]>>6 == 2 && !framer.IsRTCP(pkt) && pkt[1]&0x80 != 0
}
