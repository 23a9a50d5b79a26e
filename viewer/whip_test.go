package viewer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"replenish/internal/rtc"
	"strings"
	"sync"
	"testing"
	"time"

	pion "github.com/pion/webrtc/v4"

	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/sender"
	"replenish/transport/webrtc"
)

// exchange is one HTTP request a WHIP client made and the answer it got.
type exchange struct {
	method, path, auth    string
	status                int
	contentType, location string
}

// whipRecorder is an http.RoundTripper that keeps the WHIP exchanges going
// through it, and leaves no idle connection behind.
type whipRecorder struct {
	rt http.RoundTripper

	mu   sync.Mutex
	seen []exchange
}

func newWHIPRecorder() *whipRecorder {
	return &whipRecorder{rt: &http.Transport{DisableKeepAlives: true}}
}

func (r *whipRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	e := exchange{method: req.Method, path: req.URL.Path, auth: req.Header.Get("Authorization")}
	if err == nil {
		e.status, e.contentType, e.location = resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location")
	}
	r.mu.Lock()
	r.seen = append(r.seen, e)
	r.mu.Unlock()
	return resp, err
}

func (r *whipRecorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.seen...)
}

// startWHIPSender runs the real sender over transport/webrtc to the
// viewer's WHIP endpoint, probing the viewer's clock on its media port,
// until the returned stop is called; stop returns once the sender has
// closed its connection. newEnc nil means the fake encoder.
func startWHIPSender(t *testing.T, ts *testServer, name, token string, client *http.Client, newEnc sender.NewEncoderFunc) (stop func()) {
	t.Helper()
	if newEnc == nil {
		newEnc = sender.NewEncoderOf(fakecodec.NewEncoder)
	}
	src := media.NewSource(media.SourceConfig{FPS: 30, Name: name})
	s, err := sender.New(sender.Config{Source: src, Name: name, Mode: "gcc", MaxSize: media.Size{W: 320, H: 180},
		NewEncoder: newEnc, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	// No test logger for transport/webrtc: pion's goroutines may log
	// after its Conn.Close has returned, and so after the test.
	dial := webrtc.Dialer(ts.url("/whip"), webrtc.Config{Token: token, Name: name, HTTPClient: client})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { src.Run(ctx) })
	wg.Go(func() {
		defer s.Close()
		s.Connect(ctx, sender.ConnectConfig{Dial: dial, ProbeAddr: ts.media})
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// The real sender publishes to the viewer over WHIP: the POST gets 201
// with an SDP answer and a session Location, the frames count in
// /api/stats under transport "webrtc" with capture-to-received numbers
// from abs-capture-time and the clock offset from the sender's reports,
// a page's keyframe request reaches the sender as a PLI, and a DELETE
// ends the session (the viewer's, which the sender follows with a new
// session, and the sender's own at the end).
func TestWHIPSenderToViewer(t *testing.T) {
	const token = "whip-token"
	ts := startServer(t, func(c *Config) { c.Token = token })
	rec := newWHIPRecorder()
	stop := startWHIPSender(t, ts, "over-webrtc", token, &http.Client{Transport: rec}, nil)

	var st StreamStats
	eventually(t, "60 frames over WebRTC", func() bool {
		st, _ = authStats(t, ts, token).stream("over-webrtc")
		return st.FramesReceived >= 60 && st.ClockOffsetMS.Known()
	})
	if st.Transport != "webrtc" || st.Mode != "gcc" || !st.Connected || st.FramesUndecodable != 0 {
		t.Errorf("stream %+v, want a connected webrtc stream in mode gcc with nothing undecodable", st)
	}
	if c := st.CaptureToReceived; c.N == 0 || !known(c.P50) || c.P50 < 0 || c.P50 > 1000 {
		t.Errorf("capture to received %+v, want samples from abs-capture-time", c)
	}
	post := rec.exchanges()[0]
	if post.method != "POST" || post.status != http.StatusCreated || post.contentType != "application/sdp" ||
		!strings.HasPrefix(post.location, WHIPSessionPath) || post.auth != "Bearer "+token {
		t.Errorf("the WHIP POST: %+v", post)
	}

	// A page asks for a keyframe: it comes.
	keys := st.Keyframes
	p, _, err := dialPage(t, ts, http.Header{"Authorization": {"Bearer " + token}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.hello(t)
	p.sendJSON(t, map[string]any{"type": "keyframe", "stream": st.ID})
	eventually(t, "a keyframe after the page's request", func() bool {
		st, _ = authStats(t, ts, token).stream("over-webrtc")
		return st.Keyframes > keys
	})

	// A DELETE ends the live session; the sender publishes again.
	if code := whipRequest(t, ts, "DELETE", post.location, token, "", ""); code != http.StatusOK {
		t.Fatalf("DELETE of the live session: %d, want 200", code)
	}
	var again exchange
	eventually(t, "the sender's next session", func() bool {
		for _, e := range rec.exchanges()[1:] {
			if e.method == "POST" && e.status == http.StatusCreated {
				again = e
				return true
			}
		}
		return false
	})
	if again.location == post.location {
		t.Errorf("the next session has the deleted one's Location %s", post.location)
	}
	// A deleted session is gone: the sender's own DELETE of it (before it
	// published again) and another one get 404.
	for _, e := range rec.exchanges() {
		if e.method == "DELETE" && e.path == post.location && e.status != http.StatusNotFound {
			t.Errorf("the sender's DELETE of the deleted session: %d, want 404", e.status)
		}
	}
	if code := whipRequest(t, ts, "DELETE", post.location, token, "", ""); code != http.StatusNotFound {
		t.Errorf("a second DELETE of the session: %d, want 404", code)
	}

	// The sender's own DELETE at the end.
	stop()
	all := rec.exchanges()
	del := all[len(all)-1]
	if del.method != "DELETE" || del.path != again.location || del.status != http.StatusOK {
		t.Errorf("the last WHIP request %+v, want a DELETE of %s answered 200", del, again.location)
	}
	eventually(t, "the stream disconnected", func() bool {
		st, _ = authStats(t, ts, token).stream("over-webrtc")
		return !st.Connected
	})
	if code := whipRequest(t, ts, "DELETE", again.location, token, "", ""); code != http.StatusNotFound {
		t.Errorf("a second DELETE of the session: %d, want 404", code)
	}
}

// authStats fetches /api/stats with the token as a bearer token.
func authStats(t *testing.T, ts *testServer, token string) Stats {
	t.Helper()
	return ts.statsWith(t, http.Header{"Authorization": {"Bearer " + token}})
}

// whipRequest sends one request to the viewer and returns its status.
func whipRequest(t *testing.T, ts *testServer, method, path, token, contentType, body string) int {
	t.Helper()
	code, _ := whipResponse(t, ts, method, path, token, contentType, body)
	return code
}

// whipResponse is whipRequest returning the response's headers too.
func whipResponse(t *testing.T, ts *testServer, method, path, token, contentType, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, ts.url(path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

// pionOffer returns a complete SDP offer (ICE gathered) from a pion peer
// connection with one video transceiver of direction dir, offering VP8,
// or H264 only when h264.
func pionOffer(t *testing.T, dir pion.RTPTransceiverDirection, h264 bool) string {
	t.Helper()
	codec := rtc.VP8
	if h264 {
		codec.RTPCodecCapability = pion.RTPCodecCapability{MimeType: pion.MimeTypeH264, ClockRate: 90000,
			SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}
		codec.PayloadType = 102
	}
	return gatheredOffer(t, loopbackPeer(t, codec), dir)
}

// loopbackPeer returns a peer connection, closed when the test ends, that
// offers codec and gathers only loopback UDP candidates, without
// interceptors.
func loopbackPeer(t *testing.T, codec pion.RTPCodecParameters) *pion.PeerConnection {
	t.Helper()
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(codec, pion.RTPCodecTypeVideo); err != nil {
		t.Fatal(err)
	}
	var se pion.SettingEngine
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	pc, err := pion.NewAPI(pion.WithMediaEngine(m), pion.WithSettingEngine(se)).NewPeerConnection(pion.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// gatheredOffer adds a video transceiver of direction dir to pc and
// returns pc's offer once its ICE candidates are gathered (no trickle).
func gatheredOffer(t *testing.T, pc *pion.PeerConnection, dir pion.RTPTransceiverDirection) string {
	t.Helper()
	if _, err := pc.AddTransceiverFromKind(pion.RTPCodecTypeVideo, pion.RTPTransceiverInit{Direction: dir}); err != nil {
		t.Fatal(err)
	}
	return offerOf(t, pc)
}

// offerOf returns pc's offer once its ICE candidates are gathered.
func offerOf(t *testing.T, pc *pion.PeerConnection) string {
	t.Helper()
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	return pc.LocalDescription().SDP
}

// Bad WHIP requests get their 4xx and change nothing else: a TCP stream
// keeps flowing and no stream is made.
func TestWHIPBadInput(t *testing.T) {
	const token = "whip-token"
	ts := startServer(t, func(c *Config) { c.Token = token })
	fs := dialSender(t, ts, "steady")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { fs.stream(ctx, 10*time.Millisecond, 1000) })
	eventually(t, "the TCP stream's first frames", func() bool {
		s, _ := authStats(t, ts, token).stream("steady")
		return s.FramesReceived >= 5
	})

	good := pionOffer(t, pion.RTPTransceiverDirectionSendonly, false)
	for _, tc := range []struct {
		name, method, path, token, contentType, body string
		want                                         int
	}{
		{"no token", "POST", "/whip", "", "application/sdp", good, http.StatusUnauthorized},
		{"wrong token", "POST", "/whip", "nope", "application/sdp", good, http.StatusUnauthorized},
		{"token in the query only", "POST", "/whip?token=" + token, "", "application/sdp", good, http.StatusUnauthorized},
		{"no content type", "POST", "/whip", token, "", good, http.StatusUnsupportedMediaType},
		{"wrong content type", "POST", "/whip", token, "text/plain", good, http.StatusUnsupportedMediaType},
		{"garbage", "POST", "/whip", token, "application/sdp", "this is not SDP\x00\xff", http.StatusBadRequest},
		{"empty", "POST", "/whip", token, "application/sdp", "", http.StatusBadRequest},
		{"oversized", "POST", "/whip", token, "application/sdp", good + strings.Repeat("a=x-pad:0123456789\r\n", 4000), http.StatusBadRequest},
		{"receive-only offer", "POST", "/whip", token, "application/sdp", pionOffer(t, pion.RTPTransceiverDirectionRecvonly, false), http.StatusBadRequest},
		{"H264 only", "POST", "/whip", token, "application/sdp", pionOffer(t, pion.RTPTransceiverDirectionSendonly, true), http.StatusBadRequest},
		{"SDP without ICE credentials", "POST", "/whip", token, "application/sdp", stripLines(good, "a=ice-"), http.StatusBadRequest},
		{"bad stream name", "POST", "/whip?stream=%01bad", token, "application/sdp", good, http.StatusBadRequest},
		{"GET", "GET", "/whip", token, "", "", http.StatusMethodNotAllowed},
		{"PUT", "PUT", "/whip", token, "application/sdp", good, http.StatusMethodNotAllowed},
		{"PATCH of a session (trickle ICE)", "PATCH", WHIPSessionPath + "0123", token, "application/trickle-ice-sdpfrag", "a=end-of-candidates\r\n", http.StatusMethodNotAllowed},
		{"DELETE of no session", "DELETE", WHIPSessionPath + "0123", token, "", "", http.StatusNotFound},
		{"DELETE without token", "DELETE", WHIPSessionPath + "0123", "", "", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr := whipResponse(t, ts, tc.method, tc.path, tc.token, tc.contentType, tc.body)
			if code != tc.want {
				t.Fatalf("status %d, want %d", code, tc.want)
			}
			if code == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 with WWW-Authenticate %q, want Bearer", hdr.Get("WWW-Authenticate"))
			}
		})
	}

	before, _ := authStats(t, ts, token).stream("steady")
	eventually(t, "more frames of the TCP stream", func() bool {
		s, _ := authStats(t, ts, token).stream("steady")
		return s.FramesReceived >= before.FramesReceived+10
	})
	st := authStats(t, ts, token)
	if len(st.Streams) != 1 || !st.Streams[0].Connected || st.Streams[0].Transport != "tcp" || st.Streams[0].FramesUndecodable != 0 {
		t.Errorf("streams after the bad requests: %+v", st.Streams)
	}
	ts.mu.Lock()
	n := ts.whipCount
	ts.mu.Unlock()
	if n != 0 {
		t.Errorf("%d WHIP sessions counted after refusals", n)
	}
}

// stripLines removes the lines of sdp that start with prefix.
func stripLines(sdp, prefix string) string {
	var out []string
	for _, l := range strings.Split(sdp, "\r\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\r\n")
}

// Publishers beyond MaxWHIP, or beyond MaxStreams connected streams, are
// refused with 503 and Retry-After; the publisher or sender already
// connected keeps going.
func TestWHIPTooManyPublishers(t *testing.T) {
	refused := func(t *testing.T, ts *testServer) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		conn, err := webrtc.Dial(ctx, ts.url("/whip"), webrtc.Config{Name: "second", HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		if err == nil {
			conn.Close()
			t.Fatal("another publisher was taken")
		}
		var se *webrtc.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable {
			t.Fatalf("%v, want a 503", err)
		}
		code, hdr := whipResponse(t, ts, "POST", "/whip", "", "application/sdp", pionOffer(t, pion.RTPTransceiverDirectionSendonly, false))
		if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", code, hdr.Get("Retry-After"))
		}
		if n := len(ts.stats(t).Streams); n != 1 {
			t.Errorf("%d streams, want 1", n)
		}
	}
	flowing := func(t *testing.T, ts *testServer, name string) {
		t.Helper()
		s, _ := ts.stats(t).stream(name)
		eventually(t, "more frames of "+name, func() bool {
			n, _ := ts.stats(t).stream(name)
			return n.FramesReceived >= s.FramesReceived+10 && n.Connected
		})
	}
	t.Run("MaxWHIP", func(t *testing.T) {
		ts := startServer(t, func(c *Config) { c.MaxWHIP = 1 })
		startWHIPSender(t, ts, "first", "", nil, nil)
		eventually(t, "the first publisher's frames", func() bool {
			s, _ := ts.stats(t).stream("first")
			return s.FramesReceived >= 10
		})
		refused(t, ts)
		flowing(t, ts, "first")
	})
	t.Run("MaxStreams", func(t *testing.T) {
		ts := startServer(t, func(c *Config) { c.MaxStreams = 1 })
		fs := dialSender(t, ts, "tcp")
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { fs.stream(ctx, 10*time.Millisecond, 1000) })
		eventually(t, "the TCP sender's frames", func() bool {
			s, _ := ts.stats(t).stream("tcp")
			return s.FramesReceived >= 5
		})
		refused(t, ts)
		flowing(t, ts, "tcp")
	})
}

// A publisher that closes its PeerConnection before it deletes the
// session, as WHIP clients commonly do, still gets 200 for that DELETE,
// once, even when the viewer has already seen the connection end.
func TestWHIPDeleteAfterClose(t *testing.T) {
	ts := startServer(t, nil)
	pc := loopbackPeer(t, rtc.VP8)
	connected := make(chan struct{})
	var once sync.Once
	pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		if s == pion.PeerConnectionStateConnected {
			once.Do(func() { close(connected) })
		}
	})
	sdp := gatheredOffer(t, pc, pion.RTPTransceiverDirectionSendonly)
	resp, err := http.Post(ts.url("/whip?stream=closer"), "application/sdp", strings.NewReader(sdp))
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	location := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(location, WHIPSessionPath) {
		t.Fatalf("POST: %d, Location %q", resp.StatusCode, location)
	}
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: string(ans)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-connected:
	case <-time.After(waitLimit):
		t.Fatal("the publisher did not connect")
	}
	pc.Close()
	eventually(t, "the viewer to see the connection end", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.whip) == 0 && ts.whipCount == 0
	})
	if code := whipRequest(t, ts, "DELETE", location, "", "", ""); code != http.StatusOK {
		t.Errorf("DELETE after the connection ended: %d, want 200", code)
	}
	if code := whipRequest(t, ts, "DELETE", location, "", "", ""); code != http.StatusNotFound {
		t.Errorf("a second DELETE: %d, want 404", code)
	}
}

// Sessions that ended on their own are remembered for endedTTL, at most
// maxEnded of them (virtual time).
func TestEndedSessions(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	s.now = func() time.Time { return now }
	take := func(id string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.takeEndedLocked(id)
	}
	s.mu.Lock()
	s.rememberEndedLocked("a")
	s.mu.Unlock()
	now = now.Add(endedTTL + time.Millisecond)
	if take("a") {
		t.Error("a session that ended over endedTTL ago was still remembered")
	}
	s.mu.Lock()
	for i := range maxEnded + 1 {
		s.rememberEndedLocked(fmt.Sprint(i))
	}
	n := len(s.ended)
	s.mu.Unlock()
	if n != maxEnded {
		t.Errorf("%d sessions remembered, want at most %d", n, maxEnded)
	}
	if take("0") || !take("1") || !take(fmt.Sprint(maxEnded)) {
		t.Error("not the newest sessions remembered")
	}
}

// TestDeleteRacesOwnEnd: a player closes its connection as it deletes its
// session, and the close wins: the session is winding down on its own when
// the DELETE comes. The DELETE is still the session's: 200, and the session
// is not remembered as ended on its own, so a second DELETE is 404. The
// same for a WHIP session a DELETE took out before its loop released it.
func TestDeleteRacesOwnEnd(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	del := func(id string) int {
		r := httptest.NewRequest(http.MethodDelete, "/whep/session/"+id, nil)
		r.SetPathValue("id", id)
		w := httptest.NewRecorder()
		s.deleteWHEP(w, r)
		return w.Code
	}
	sess := &whepSession{id: "p1", done: make(chan struct{})}
	s.mu.Lock()
	s.whep[sess.id] = sess
	s.mu.Unlock()
	sess.end(errors.New("the connection closed")) // the close, first
	if code := del(sess.id); code != http.StatusOK {
		t.Errorf("DELETE while the session winds down: %d, want 200", code)
	}
	s.removeWHEP(sess.id, false) // its loop, done
	s.mu.Lock()
	ended, players := len(s.ended), len(s.whep)
	s.mu.Unlock()
	if ended != 0 || players != 0 {
		t.Errorf("after the DELETE: %d sessions remembered as ended on their own, %d players; want 0, 0", ended, players)
	}
	if code := del(sess.id); code != http.StatusNotFound {
		t.Errorf("a second DELETE: %d, want 404", code)
	}

	// WHIP: in the map (not deleted), a session that ended is remembered;
	// out of it (a DELETE took it out), it is not.
	s.mu.Lock()
	s.whipCount = 2
	s.whip["w1"] = nil
	s.mu.Unlock()
	s.releaseWHIP("w1")
	s.releaseWHIP("w2")
	s.mu.Lock()
	w1, w2 := s.takeEndedLocked("w1"), s.takeEndedLocked("w2")
	s.mu.Unlock()
	if !w1 || w2 {
		t.Errorf("WHIP sessions remembered as ended: ended on its own %v, deleted %v; want true, false", w1, w2)
	}
}

// FuzzCheckOffer feeds the offer check (and through it pion's SDP parser)
// arbitrary bodies: it returns an error or nil, and never panics.
func FuzzCheckOffer(f *testing.F) {
	f.Add([]byte(sampleOffer), true)
	f.Add([]byte(sampleOffer), false)
	f.Add([]byte("v=0\r\n"), true)
	f.Add([]byte("m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n"), true)
	f.Fuzz(func(t *testing.T, offer []byte, publish bool) {
		if err := checkOffer(offer, publish); err != nil && !errors.Is(err, errBadOffer) {
			t.Fatalf("error %v does not wrap errBadOffer", err)
		}
	})
}

// sampleOffer is a WHIP offer as transport/webrtc makes it, shortened.
const sampleOffer = "v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\n" +
	"a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=rtcp-mux\r\n" +
	"a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 nack\r\na=rtcp-fb:96 nack pli\r\na=sendonly\r\n" +
	"a=candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host\r\na=end-of-candidates\r\n"
