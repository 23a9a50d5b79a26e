package webrtc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
	"replenish/transport"
)

// endpoint is a WHIP endpoint for tests, backed by pion receiving
// PeerConnections configured as a viewer would be: VP8, abs-capture-time,
// TWCC feedback, NACK and PLI.
type endpoint struct {
	t     *testing.T
	srv   *httptest.Server
	token string // required as Bearer when set
	// absolute makes the Location an absolute URL.
	absolute bool

	mu      sync.Mutex // guards the fields below
	posts   []postSeen
	deletes []deleteSeen
	peers   []*receiver
	next    int
}

type postSeen struct {
	auth, contentType, stream, offer string
}

type deleteSeen struct {
	path, auth string
}

// receiver is one session's receiving side.
type receiver struct {
	pc *pion.PeerConnection

	mu    sync.Mutex // guards the fields below
	track *pion.TrackRemote
	extID int // negotiated abs-capture-time ID
	rtp   []*rtp.Packet
	rtcp  []rtcp.Packet
}

func newEndpoint(t *testing.T, token string) *endpoint {
	t.Helper()
	e := &endpoint{t: t, token: token}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /whip", e.post)
	mux.HandleFunc("DELETE /whip/session/{id}", e.delete)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.Close()
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, r := range e.peers {
			r.pc.Close()
		}
	})
	return e
}

func (e *endpoint) url() string { return e.srv.URL + "/whip" }

func (e *endpoint) post(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	e.mu.Lock()
	e.posts = append(e.posts, postSeen{
		auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"),
		stream: r.URL.Query().Get(StreamParam), offer: string(body),
	})
	e.next++
	id := e.next
	e.mu.Unlock()
	if e.token != "" && r.Header.Get("Authorization") != "Bearer "+e.token {
		http.Error(w, "wrong token", http.StatusUnauthorized)
		return
	}
	rc, answer, err := newReceiver(string(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.peers = append(e.peers, rc)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/sdp")
	loc := fmt.Sprintf("/whip/session/%d", id) // a relative reference
	if e.absolute {
		loc = e.srv.URL + loc
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, answer)
}

// delete ends a session: its receiving PeerConnection closes.
func (e *endpoint) delete(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.deletes = append(e.deletes, deleteSeen{path: r.URL.Path, auth: r.Header.Get("Authorization")})
	var rc *receiver
	if id, err := strconv.Atoi(r.PathValue("id")); err == nil && id >= 1 && id <= len(e.peers) {
		rc = e.peers[id-1]
	}
	e.mu.Unlock()
	if rc != nil {
		rc.pc.Close()
	}
}

func (e *endpoint) seen() ([]postSeen, []deleteSeen) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]postSeen(nil), e.posts...), append([]deleteSeen(nil), e.deletes...)
}

func (e *endpoint) receiver(t *testing.T) *receiver {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.peers) != 1 {
		t.Fatalf("%d receiving peer connections, want 1", len(e.peers))
	}
	return e.peers[0]
}

// newReceiver answers offer as a viewer would.
func newReceiver(offer string) (*receiver, string, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(rtc.VP8, pion.RTPCodecTypeVideo); err != nil {
		return nil, "", err
	}
	ext := pion.RTPHeaderExtensionCapability{URI: framer.AbsCaptureTimeURI}
	if err := m.RegisterHeaderExtension(ext, pion.RTPCodecTypeVideo, pion.RTPTransceiverDirectionRecvonly); err != nil {
		return nil, "", err
	}
	reg := &interceptor.Registry{}
	if err := pion.ConfigureNack(m, reg); err != nil {
		return nil, "", err
	}
	if err := pion.ConfigureRTCPReports(reg); err != nil {
		return nil, "", err
	}
	if err := pion.ConfigureTWCCSender(m, reg); err != nil {
		return nil, "", err
	}
	var s pion.SettingEngine
	s.LoggerFactory = rtc.Logs{Log: slog.New(slog.DiscardHandler)}
	s.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	s.SetIncludeLoopbackCandidate(true)
	// A retransmission the tests ask for repeats a packet that arrived,
	// which SRTP's replay protection would drop; a real one does not.
	s.DisableSRTPReplayProtection(true)
	api := pion.NewAPI(pion.WithMediaEngine(m), pion.WithInterceptorRegistry(reg), pion.WithSettingEngine(s))
	pc, err := api.NewPeerConnection(pion.Configuration{})
	if err != nil {
		return nil, "", err
	}
	rc := &receiver{pc: pc}
	pc.OnTrack(rc.onTrack)
	answer, err := answerOffer(pc, offer)
	if err != nil {
		pc.Close()
		return nil, "", err
	}
	return rc, answer, nil
}

func answerOffer(pc *pion.PeerConnection, offer string) (string, error) {
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeOffer, SDP: offer}); err != nil {
		return "", err
	}
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", err
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		return "", err
	}
	<-gathered
	return pc.LocalDescription().SDP, nil
}

func (rc *receiver) onTrack(track *pion.TrackRemote, recv *pion.RTPReceiver) {
	rc.mu.Lock()
	rc.track = track
	for _, e := range recv.GetParameters().HeaderExtensions {
		if e.URI == framer.AbsCaptureTimeURI {
			rc.extID = e.ID
		}
	}
	rc.mu.Unlock()
	go func() {
		for {
			pkts, _, err := recv.ReadRTCP()
			if err != nil {
				return
			}
			rc.mu.Lock()
			rc.rtcp = append(rc.rtcp, pkts...)
			rc.mu.Unlock()
		}
	}()
	for {
		p, _, err := track.ReadRTP()
		if err != nil {
			return
		}
		rc.mu.Lock()
		rc.rtp = append(rc.rtp, p)
		rc.mu.Unlock()
	}
}

// snapshot returns what the receiver has so far.
func (rc *receiver) snapshot() (track *pion.TrackRemote, extID int, pkts []*rtp.Packet, ctl []rtcp.Packet) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.track, rc.extID, append([]*rtp.Packet(nil), rc.rtp...), append([]rtcp.Packet(nil), rc.rtcp...)
}

// eventually polls cond until it holds or 10 s have passed: the network
// is real here, so the test waits for events, with a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settled waits for the goroutine count to fall back to base and fails
// the test with the goroutines' stacks if it does not.
func settled(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noKeepAlive is an HTTP client that leaves no idle connection (and so no
// goroutine) behind.
func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// recorder keeps what a Handler receives.
type recorder struct {
	mu      sync.Mutex
	recs    []transport.SendRecord
	packets [][]byte
}

func (r *recorder) handler() transport.Handler {
	return transport.Handler{
		Sent: func(rec transport.SendRecord) {
			r.mu.Lock()
			r.recs = append(r.recs, rec)
			r.mu.Unlock()
		},
		Packet: func(p []byte) {
			r.mu.Lock()
			r.packets = append(r.packets, append([]byte(nil), p...))
			r.mu.Unlock()
		},
	}
}

func (r *recorder) snapshot() ([]transport.SendRecord, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.SendRecord(nil), r.recs...), append([][]byte(nil), r.packets...)
}

// dial publishes to e and closes the Conn at the end of the test.
func dial(t *testing.T, e *endpoint, cfg Config) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = noKeepAlive()
	}
	c, err := Dial(ctx, e.url(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testFrame is a made-up VP8 frame: n bytes of a pattern that names the
// frame, so that the receiver can tell which frame a payload came from.
func testFrame(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
