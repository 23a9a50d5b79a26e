package viewer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
)

// The WHEP endpoint: the page (or any WHEP player) POSTs a receive-only
// SDP offer to /whep/<stream name> and gets the stream's VP8 frames over
// WebRTC, played by the browser's own stack (jitter buffer, decoder,
// renderer); a DELETE of the session's Location ends it. The viewer
// packetizes the frames it received anew (RFC 7741, pion's payloader),
// keeping the sender's RTP timestamps (made continuous across the
// sender's reconnections), and passes the player's keyframe requests to
// the stream's sender, rate-limited like the pages' requests.

// Limits of a WHEP session.
const (
	// whepPayloadSize is the largest VP8 payload of one RTP packet, in
	// bytes: packets of at most 1200 bytes.
	whepPayloadSize = framer.DefaultRTPPacketSize - 12
)

var errStreamGone = errors.New("viewer: the stream was removed")

// whepSession is one native player of one stream. Its goroutine
// (runWHEP) writes the frames and ends the session; a second goroutine
// reads the player's RTCP.
type whepSession struct {
	id     string
	stream uint32 // immutable
	pc     *pion.PeerConnection
	track  *pion.TrackLocalStaticRTP
	sender *pion.RTPSender
	log    *slog.Logger
	wake   chan struct{} // capacity 1: frames are queued
	up     chan struct{} // closed when the player has connected
	upOnce sync.Once
	done   chan struct{} // closed by end
	once   sync.Once
	cause  error // why the session ended; written before done is closed

	mu        sync.Mutex // guards following fields
	connected bool       // frames may be queued
	q         frameQueue

	out rtpOut // run's
}

// serveWHEP answers a player's POST /whep/<stream name>: 404 for a stream
// the viewer does not have, 201 with the answer, or an error as for WHIP.
func (s *Server) serveWHEP(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	st := s.streamByName(name)
	if st == nil {
		http.Error(w, fmt.Sprintf("viewer: no stream named %q", name), http.StatusNotFound)
		return
	}
	offer, ok := readOffer(w, r, false)
	if !ok {
		return
	}
	sess := &whepSession{
		id: newSessionID(), stream: st.id,
		log:  s.log.With("player", r.RemoteAddr, "stream", st.id),
		wake: make(chan struct{}, 1), up: make(chan struct{}), done: make(chan struct{}),
	}
	if err := s.addWHEP(sess); err != nil {
		refuse(w, err)
		return
	}
	ans, err := s.answerWHEP(r.Context(), sess, offer)
	if err == nil && !s.track() {
		err = errNotRunning
	}
	if err != nil {
		s.removeWHEP(sess.id, true)
		if sess.pc != nil {
			sess.pc.GracefulClose()
		}
		sess.log.Info("WHEP offer refused", "err", err)
		if errors.Is(err, errNotRunning) {
			refuse(w, err)
		} else {
			rtcError(w, err)
		}
		return
	}
	go func() {
		defer s.conns.Done()
		s.runWHEP(sess)
	}()
	sess.log.Info("WHEP session", "session", sess.id, "name", name)
	sessionCreated(w, WHEPSessionPath+sess.id, ans)
}

// answerWHEP builds the session's PeerConnection with its one VP8 track
// and answers offer.
func (s *Server) answerWHEP(ctx context.Context, sess *whepSession, offer string) (string, error) {
	api, err := newRTCAPI(false, s.log)
	if err != nil {
		return "", fmt.Errorf("viewer: WebRTC: %w", err)
	}
	if sess.pc, err = api.NewPeerConnection(pion.Configuration{}); err != nil {
		return "", fmt.Errorf("viewer: WebRTC: %w", err)
	}
	if sess.track, err = pion.NewTrackLocalStaticRTP(rtc.VP8.RTPCodecCapability, "video", "replenish"); err != nil {
		return "", fmt.Errorf("viewer: WebRTC: %w", err)
	}
	sess.pc.OnConnectionStateChange(func(st pion.PeerConnectionState) {
		sess.log.Debug("WHEP peer connection", "state", st.String())
		switch st {
		case pion.PeerConnectionStateConnected:
			sess.upOnce.Do(func() { close(sess.up) })
		case pion.PeerConnectionStateFailed, pion.PeerConnectionStateClosed:
			sess.end(fmt.Errorf("%w: %s", errRTCFailed, st))
		}
	})
	return answer(ctx, sess.pc, offer, func() error {
		sess.sender, err = sess.pc.AddTrack(sess.track)
		return err
	})
}

// addWHEP registers sess, unless MaxWHEP sessions are open, or
// MaxWHEPPerStream of its stream (errTooMany), or Run is not serving
// (errNotRunning).
func (s *Server) addWHEP(sess *whepSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.closing {
		return errNotRunning
	}
	if len(s.whep) >= s.cfg.MaxWHEP {
		return fmt.Errorf("%w: %d WHEP sessions open", errTooMany, s.cfg.MaxWHEP)
	}
	n := 0
	for _, o := range s.whep {
		if o.stream == sess.stream {
			n++
		}
	}
	if n >= s.cfg.MaxWHEPPerStream {
		return fmt.Errorf("%w: %d WHEP sessions open on this stream", errTooMany, s.cfg.MaxWHEPPerStream)
	}
	s.whep[sess.id] = sess
	return nil
}

// removeWHEP forgets session id. One a DELETE has not already taken out
// ended on its own, and unless deleted says otherwise it is remembered as
// ended (see endedTTL). A player that closes its connection as it deletes
// the session races the two: a DELETE that came while the session was
// winding down from the close is still the session's DELETE.
func (s *Server) removeWHEP(id string, deleted bool) {
	s.mu.Lock()
	if _, ok := s.whep[id]; ok {
		delete(s.whep, id)
		if !deleted {
			s.rememberEndedLocked(id)
		}
	}
	s.mu.Unlock()
}

// whepFor returns the WHEP sessions of stream id.
func (s *Server) whepFor(id uint32) []*whepSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*whepSession
	for _, sess := range s.whep {
		if sess.stream == id {
			out = append(out, sess)
		}
	}
	return out
}

// deleteWHEP ends the WHEP session named in the path: 200, also for a
// session that has just ended on its own, or 404.
func (s *Server) deleteWHEP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	sess := s.whep[id]
	// Gone from the map at once, as a deleted WHIP session is: not
	// remembered as ended on its own whatever ended it first (see
	// removeWHEP), and no longer counted as a player.
	delete(s.whep, id)
	ended := sess == nil && s.takeEndedLocked(id)
	s.mu.Unlock()
	switch {
	case sess != nil:
		sess.end(errDeleted)
	case !ended:
		http.Error(w, "viewer: no such WHEP session", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// end ends the session for cause; only the first call counts.
func (sess *whepSession) end(cause error) {
	sess.once.Do(func() {
		sess.cause = cause
		close(sess.done)
	})
}

// runWHEP sends the stream's frames to the player until the session ends
// (DELETE, the connection failed or did not come up within StallTimeout,
// the stream was removed, or the viewer shuts down), then closes it and
// forgets it.
func (s *Server) runWHEP(sess *whepSession) {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	var rtcpReader sync.WaitGroup
	rtcpReader.Go(func() { s.readWHEPFeedback(sess) })
	connect := time.NewTimer(s.cfg.StallTimeout)
	defer connect.Stop()
	up := sess.up
	for {
		select {
		case <-ctx.Done():
			sess.end(errShutdown)
		case <-connect.C:
			sess.end(fmt.Errorf("%w: the player did not connect within %v", errRTCFailed, s.cfg.StallTimeout))
		case <-up:
			up = nil
			connect.Stop()
			sess.mu.Lock()
			sess.connected = true
			sess.mu.Unlock()
			if st := s.streamByID(sess.stream); st != nil {
				s.requestKeyframe(st, s.now(), "native player")
			}
		case <-sess.wake:
			sess.send(time.Now())
		case <-sess.done:
		}
		select {
		case <-sess.done:
			sess.pc.GracefulClose()
			rtcpReader.Wait()
			s.removeWHEP(sess.id, false) // remembered only if no DELETE took it out
			sess.log.Info("WHEP session ended", "session", sess.id, "reason", sess.cause)
			return
		default:
		}
	}
}

// offer queues f for the player once it has connected, and reports
// whether the stream's sender should be asked for a keyframe.
func (sess *whepSession) offer(f *outFrame, depth int) (wantKey bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if !sess.connected {
		return false
	}
	queued, wantKey := sess.q.offer(f, depth)
	if queued {
		select {
		case sess.wake <- struct{}{}:
		default:
		}
	}
	return wantKey
}

// send writes the queued frames to the track.
func (sess *whepSession) send(now time.Time) {
	for {
		sess.mu.Lock()
		f := sess.q.pop()
		sess.mu.Unlock()
		if f == nil {
			return
		}
		for _, p := range sess.out.packets(f, now) {
			if err := sess.track.WriteRTP(p); err != nil {
				sess.log.Debug("WHEP write", "err", err)
			}
		}
	}
}

// readWHEPFeedback reads the player's RTCP (through pion's interceptors,
// which answer its NACKs) until the session closes, and passes its
// keyframe requests (PLI, FIR) to the stream's sender.
func (s *Server) readWHEPFeedback(sess *whepSession) {
	buf := make([]byte, maxRTCPRead)
	for {
		n, _, err := sess.sender.Read(buf)
		if err != nil {
			return // closed
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		if err != nil {
			continue
		}
		for _, p := range pkts {
			switch p.(type) {
			case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
				if st := s.streamByID(sess.stream); st != nil {
					s.requestKeyframe(st, s.now(), "native player")
				}
			}
		}
	}
}

// rtpOut packetizes frames for one player: its own sequence numbers, and
// the sender's RTP timestamps shifted so that they continue across a new
// sender SSRC (a reconnection) as the time between the frames. It is not
// safe for concurrent use.
type rtpOut struct {
	payloader codecs.VP8Payloader
	started   bool
	seq       uint16
	ssrc      uint32 // of the sender's last frame
	offset    uint32 // added to the sender's RTP timestamps
	lastTS    uint32 // the last timestamp sent
	lastAt    time.Time
}

// packets returns f's RTP packets, sent at now.
func (o *rtpOut) packets(f *outFrame, now time.Time) []*rtp.Packet {
	if !o.started {
		o.started, o.ssrc = true, f.ssrc
		o.payloader.EnablePictureID = true
	} else if f.ssrc != o.ssrc {
		ticks := max(1, now.Sub(o.lastAt)*framer.ClockRate/time.Second)
		o.offset = o.lastTS + uint32(ticks) - f.ts
		o.ssrc = f.ssrc
	}
	ts := f.ts + o.offset
	o.lastTS, o.lastAt = ts, now
	payloads := o.payloader.Payload(whepPayloadSize, f.data)
	out := make([]*rtp.Packet, len(payloads))
	for i, p := range payloads {
		out[i] = &rtp.Packet{
			Header: rtp.Header{
				Version: 2, PayloadType: framer.DefaultPayloadType, SequenceNumber: o.seq,
				Timestamp: ts, Marker: i == len(payloads)-1,
			},
			Payload: p,
		}
		o.seq++
	}
	return out
}

// streamByName returns the stream named name, or nil.
func (s *Server) streamByName(name string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		st.mu.Lock()
		match := st.name == name
		st.mu.Unlock()
		if match {
			return st
		}
	}
	return nil
}
