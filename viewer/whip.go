package viewer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pion/sdp/v3"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
)

// The WHIP endpoint (RFC 9725): publishers POST an SDP offer to /whip
// (the stream's name as the query parameter "stream") and DELETE the
// session's Location to end it. Each session is one sender connection
// over transport "webrtc", on the per-connection loop TCP and QUIC
// senders use.
//
// Goroutines: a WHIP session has four of the viewer's (the connection
// loop, its feedback writer, and the link's RTP and RTCP readers) and a
// WHEP session two (its writer and its RTCP reader), besides those pion
// runs for each PeerConnection (ICE, DTLS, SRTP, interceptors); the
// sessions are capped (Config.MaxWHIP, MaxWHEP), and every goroutine ends
// with its session.

// WHIP and WHEP limits and names.
const (
	// MaxSDPSize is the largest SDP offer the viewer reads, in bytes.
	MaxSDPSize = 64 << 10
	// WHIPStreamParam is the query parameter of a WHIP POST that names
	// the stream.
	WHIPStreamParam = "stream"
	// WHIPSessionPath and WHEPSessionPath prefix the Locations of the
	// sessions the viewer creates; a session is ended by a DELETE there.
	WHIPSessionPath = "/whip/session/"
	WHEPSessionPath = "/whep/session/"

	sdpType = "application/sdp"
)

// Reasons a WHIP or WHEP request is refused, in the responses' bodies.
var (
	errBadOffer   = errors.New("viewer: unusable SDP offer")
	errNotRunning = errors.New("viewer: not running")
	errTooMany    = errors.New("viewer: too many sessions")
	// errDeleted ends a session whose Location was deleted: an orderly
	// end, like a sender closing its connection.
	errDeleted = fmt.Errorf("viewer: the session was deleted: %w", io.EOF)
)

// serveWHIP answers a publisher's POST /whip: it checks the request,
// answers the offer, and starts the session's connection loop.
func (s *Server) serveWHIP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get(WHIPStreamParam)
	if name != "" {
		if err := framer.ValidateStreamName(name); err != nil {
			http.Error(w, fmt.Sprintf("viewer: the %q parameter: %v", WHIPStreamParam, err), http.StatusBadRequest)
			return
		}
	}
	offer, ok := readOffer(w, r, true)
	if !ok {
		return
	}
	if err := s.reserveWHIP(); err != nil {
		refuse(w, err)
		return
	}
	reserved := true
	defer func() {
		if reserved {
			s.releaseWHIP("")
		}
	}()
	log := s.log.With("sender", r.RemoteAddr, "transport", transportWebRTC)
	link, ans, err := s.newWHIP(r.Context(), offer, r.RemoteAddr)
	if err != nil {
		log.Info("WHIP offer refused", "err", err)
		rtcError(w, err)
		return
	}
	id, err := s.startWHIP(link, name, log)
	if err != nil {
		link.close(err)
		link.wait()
		log.Warn("sender refused", "err", err)
		if errors.Is(err, errNameTaken) {
			http.Error(w, err.Error(), http.StatusConflict)
		} else {
			refuse(w, err)
		}
		return
	}
	reserved = false // the session's goroutine releases it
	log.Info("WHIP session", "session", id, "stream", name)
	sessionCreated(w, WHIPSessionPath+id, ans)
}

// readOffer reads and checks the SDP offer of a WHIP (publish) or WHEP
// request, and answers a bad one: 415 for another content type, 400 for
// one that is too large, does not parse, or offers no VP8 video in the
// direction wanted.
func readOffer(w http.ResponseWriter, r *http.Request, publish bool) (string, bool) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != sdpType {
		http.Error(w, "viewer: the offer must have Content-Type "+sdpType, http.StatusUnsupportedMediaType)
		return "", false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSDPSize))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("viewer: the offer is larger than %d bytes", MaxSDPSize), http.StatusBadRequest)
		return "", false
	case err != nil:
		http.Error(w, "viewer: reading the offer: "+err.Error(), http.StatusBadRequest)
		return "", false
	}
	if err := checkOffer(body, publish); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return "", false
	}
	return string(body), true
}

// checkOffer checks that offer parses as SDP and has a video section with
// VP8 that sends (publish) or receives.
func checkOffer(offer []byte, publish bool) error {
	var d sdp.SessionDescription
	if err := d.Unmarshal(offer); err != nil {
		return fmt.Errorf("%w: %w", errBadOffer, err)
	}
	want, dir := "sendonly", "send"
	if !publish {
		want, dir = "recvonly", "receive"
	}
	for _, m := range d.MediaDescriptions {
		if m.MediaName.Media != "video" || m.MediaName.Port.Value == 0 {
			continue
		}
		vp8 := false
		direction := "sendrecv"
		for _, a := range m.Attributes {
			switch a.Key {
			case "rtpmap":
				vp8 = vp8 || strings.Contains(strings.ToUpper(a.Value), " VP8/90000")
			case "sendonly", "recvonly", "sendrecv", "inactive":
				direction = a.Key
			}
		}
		if vp8 && (direction == want || direction == "sendrecv") {
			return nil
		}
	}
	return fmt.Errorf("%w: no video section offers to %s VP8", errBadOffer, dir)
}

// newWHIP builds the PeerConnection of a WHIP session and answers offer.
func (s *Server) newWHIP(ctx context.Context, offer, remote string) (*whipLink, string, error) {
	api, err := newRTCAPI(true, s.log)
	if err != nil {
		return nil, "", fmt.Errorf("viewer: WebRTC: %w", err)
	}
	pc, err := api.NewPeerConnection(pion.Configuration{})
	if err != nil {
		return nil, "", fmt.Errorf("viewer: WebRTC: %w", err)
	}
	link := newWHIPLink(pc, remote, s.cfg.ReorderWait, s.log.With("sender", remote))
	ans, err := answer(ctx, pc, offer, nil)
	if err == nil && !receivesVideo(pc) {
		err = fmt.Errorf("%w: no video section offers to send VP8", errBadOffer)
	}
	if err != nil {
		link.close(err)
		link.wait()
		return nil, "", err
	}
	return link, ans, nil
}

// receivesVideo reports whether pc, answered, receives a video track.
func receivesVideo(pc *pion.PeerConnection) bool {
	for _, t := range pc.GetTransceivers() {
		d := t.Direction()
		if t.Kind() == pion.RTPCodecTypeVideo && t.Receiver() != nil &&
			(d == pion.RTPTransceiverDirectionRecvonly || d == pion.RTPTransceiverDirectionSendrecv) {
			return true
		}
	}
	return false
}

// startWHIP makes the session's stream (named name, if given) and starts
// its connection loop. It returns the session's id, or an error wrapping
// errTooManyStreams, errNameTaken or errNotRunning.
func (s *Server) startWHIP(link *whipLink, name string, log *slog.Logger) (string, error) {
	if !s.track() {
		return "", errNotRunning
	}
	sc := newSenderConn(link)
	st, err := s.attachNew(sc)
	if err != nil {
		s.conns.Done()
		return "", err
	}
	if name != "" {
		if st, err = s.nameStream(sc, st, name, s.now()); err != nil {
			s.mu.Lock()
			removed := s.leaveLocked(st, s.now())
			s.mu.Unlock()
			if removed {
				s.forgetStream(st.id)
			}
			s.streamsChanged()
			s.conns.Done()
			return "", err
		}
	}
	id := newSessionID()
	s.mu.Lock()
	s.whip[id] = sc
	ctx := s.ctx
	s.mu.Unlock()
	go func() {
		defer s.conns.Done()
		s.runSender(ctx, sc, st, log)
		link.wait()
		late, dup, skipped := link.dropped()
		log.Debug("WHIP session ended", "session", id, "late_packets", late, "duplicate_packets", dup, "packets_given_up", skipped)
		s.releaseWHIP(id)
	}()
	return id, nil
}

// reserveWHIP counts a WHIP session about to be made; it returns an error
// wrapping errTooMany when MaxWHIP are open (or being negotiated), and
// errNotRunning when Run is not serving. (MaxStreams is attachNew's.)
func (s *Server) reserveWHIP() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.closing {
		return errNotRunning
	}
	if s.whipCount >= s.cfg.MaxWHIP {
		return fmt.Errorf("%w: %d WHIP sessions open", errTooMany, s.cfg.MaxWHIP)
	}
	s.whipCount++
	return nil
}

// releaseWHIP forgets a reserved WHIP session. One that got an id and
// that a DELETE has not already taken out ended on its own, and is
// remembered as ended (see endedTTL), as in removeWHEP.
func (s *Server) releaseWHIP(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.whipCount--
	if id == "" {
		return
	}
	if _, ok := s.whip[id]; ok {
		delete(s.whip, id)
		s.rememberEndedLocked(id)
	}
}

// A WHIP or WHEP session whose connection has ended on its own (the peer
// closed its PeerConnection before deleting the session, as WHIP clients
// commonly do, or it failed) is remembered for endedTTL, at most maxEnded
// of them, so that its DELETE still succeeds, once.
const (
	endedTTL = 30 * time.Second
	maxEnded = 64
)

type endedSession struct {
	id string
	at time.Time
}

// rememberEndedLocked remembers session id as ended on its own. s.mu must
// be held.
func (s *Server) rememberEndedLocked(id string) {
	if len(s.ended) >= maxEnded {
		s.ended = slices.Delete(s.ended, 0, 1)
	}
	s.ended = append(s.ended, endedSession{id: id, at: s.now()})
}

// takeEndedLocked reports whether session id ended on its own recently,
// and forgets it. s.mu must be held.
func (s *Server) takeEndedLocked(id string) bool {
	now := s.now()
	i := slices.IndexFunc(s.ended, func(e endedSession) bool { return e.id == id && now.Sub(e.at) <= endedTTL })
	if i >= 0 {
		s.ended = slices.Delete(s.ended, i, i+1)
	}
	return i >= 0
}

// deleteWHIP ends the WHIP session named in the path: 200, also for a
// session that has just ended on its own, or 404 for a session the
// viewer does not have.
func (s *Server) deleteWHIP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	sc := s.whip[id]
	// Gone from the map at once, not when the session's loop has wound
	// down: a second DELETE meanwhile gets 404, as for any deleted session.
	delete(s.whip, id)
	ended := sc == nil && s.takeEndedLocked(id)
	s.mu.Unlock()
	switch {
	case sc != nil:
		sc.closeWith(errDeleted)
	case !ended:
		http.Error(w, "viewer: no such WHIP session", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// sessionCreated answers a WHIP or WHEP POST: 201 Created with the SDP
// answer and the session's Location.
func sessionCreated(w http.ResponseWriter, location, answer string) {
	h := w.Header()
	h.Set("Content-Type", sdpType)
	h.Set("Location", location)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, answer)
}

// refuse answers a request the viewer has no room for: 503 with
// Retry-After.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// rtcError answers a request whose offer could not be answered: 400 for
// an unusable offer, 500 otherwise.
func rtcError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, errBadOffer) {
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

// methodNotAllowed answers a WHIP or WHEP path with a method it does not
// take (such as PATCH: the viewer does no trickle ICE).
func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		http.Error(w, "viewer: method not allowed", http.StatusMethodNotAllowed)
	}
}

// newSessionID returns 128 random bits in hex.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
