package viewer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
)

// player is a WHEP client for tests: a pion PeerConnection receiving one
// VP8 track, reassembled into frames.
type player struct {
	pc       *pion.PeerConnection
	location string

	mu     sync.Mutex // guards following fields
	ssrc   uint32
	frames []*framer.Frame
}

// playWHEP makes a receive-only offer, POSTs it to /whep/<name> and, on
// 201, completes the connection. It returns the player (nil unless 201)
// and the status.
func playWHEP(t *testing.T, ts *testServer, name, token string) (*player, int) {
	t.Helper()
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(rtc.VP8, pion.RTPCodecTypeVideo); err != nil {
		t.Fatal(err)
	}
	reg := &interceptor.Registry{}
	if err := pion.ConfigureNack(m, reg); err != nil {
		t.Fatal(err)
	}
	var se pion.SettingEngine
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	pc, err := pion.NewAPI(pion.WithMediaEngine(m), pion.WithInterceptorRegistry(reg), pion.WithSettingEngine(se)).NewPeerConnection(pion.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	p := &player{pc: pc}
	pc.OnTrack(p.read)
	sdp := gatheredOffer(t, pc, pion.RTPTransceiverDirectionRecvonly)
	req, _ := http.NewRequest("POST", ts.url("/whep/"+url.PathEscape(name)), strings.NewReader(sdp))
	req.Header.Set("Content-Type", "application/sdp")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ans, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/sdp" {
		t.Errorf("answer's content type %q", ct)
	}
	p.location = resp.Header.Get("Location")
	if !strings.HasPrefix(p.location, WHEPSessionPath) {
		t.Errorf("Location %q, want %s...", p.location, WHEPSessionPath)
	}
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: string(ans)}); err != nil {
		t.Fatalf("the answer: %v", err)
	}
	return p, resp.StatusCode
}

// read reassembles the track's frames until the connection ends.
func (p *player) read(track *pion.TrackRemote, _ *pion.RTPReceiver) {
	p.mu.Lock()
	p.ssrc = uint32(track.SSRC())
	p.mu.Unlock()
	asm := framer.NewAssembler(0)
	for {
		pkt, _, err := track.ReadRTP()
		if err != nil {
			return
		}
		b, err := pkt.Marshal()
		if err != nil {
			return
		}
		if f, err := asm.Push(b); err == nil && f != nil {
			p.mu.Lock()
			p.frames = append(p.frames, f)
			p.mu.Unlock()
		}
	}
}

func (p *player) received() []*framer.Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*framer.Frame(nil), p.frames...)
}

// A native player gets a TCP sender's frames over WHEP, from a keyframe
// on, byte for byte, with RTP timestamps that stay continuous when the
// sender reconnects; its keyframe requests reach the sender; a DELETE
// ends it.
func TestWHEPPlayer(t *testing.T) {
	const token = "whep-token"
	ts := startServer(t, func(c *Config) { c.Token = token })
	fs := dialSender(t, ts, "cam one")
	send := func(key bool, size int) {
		t.Helper()
		if _, err := fs.sendFrame(fakeVP8(key, 320, 180, size), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	send(true, 3000)
	eventually(t, "the stream", func() bool {
		s, _ := authStats(t, ts, token).stream("cam one")
		return s.FramesReceived > 0
	})

	p, code := playWHEP(t, ts, "cam one", token)
	if code != http.StatusCreated {
		t.Fatalf("WHEP POST: %d, want 201", code)
	}
	// Once connected, the viewer asks for a keyframe; the player's frames
	// start at the next one.
	eventually(t, "the viewer's keyframe request for the player", func() bool { return fs.plis.Load() > 0 })
	sizes := []int{2001, 2002, 3001, 2003, 2004}
	for _, n := range sizes {
		send(n == 3001, n)
	}
	eventually(t, "three frames at the player", func() bool { return len(p.received()) >= 3 })
	for i, f := range p.received() {
		if want := fakeVP8(sizes[i+2] == 3001, 320, 180, sizes[i+2]); !bytes.Equal(f.Data, want) || f.Key != (i == 0) {
			t.Fatalf("frame %d at the player: %d bytes, key %v; want the frames from the keyframe on, as sent", i, len(f.Data), f.Key)
		}
	}
	if s, _ := authStats(t, ts, token).stream("cam one"); s.NativePlayers != 1 {
		t.Errorf("native_players %d, want 1", s.NativePlayers)
	}

	// The sender reconnects with another SSRC and streams on: the
	// player's timestamps go on from where they were.
	fs.conn.Close()
	eventually(t, "the sender disconnected", func() bool {
		s, _ := authStats(t, ts, token).stream("cam one")
		return !s.Connected
	})
	fs2 := dialSender(t, ts, "cam one")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { fs2.stream(ctx, 20*time.Millisecond, 3000) })
	eventually(t, "20 more frames at the player", func() bool { return len(p.received()) >= 23 })
	frames := p.received()
	for i := 1; i < len(frames); i++ {
		if d := frames[i].Timestamp - frames[i-1].Timestamp; d == 0 || d > framer.ClockRate {
			t.Fatalf("frame %d: RTP timestamp from %d to %d", i, frames[i-1].Timestamp, frames[i].Timestamp)
		}
	}

	// The player's PLI reaches the sender (rate-limited: send until one
	// goes through).
	plis := fs2.plis.Load()
	p.mu.Lock()
	ssrc := p.ssrc
	p.mu.Unlock()
	eventually(t, "the player's PLI at the sender", func() bool {
		p.pc.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: ssrc}})
		return fs2.plis.Load() > plis
	})

	if code := whipRequest(t, ts, "DELETE", p.location, token, "", ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d, want 200", code)
	}
	eventually(t, "no native player", func() bool {
		s, _ := authStats(t, ts, token).stream("cam one")
		return s.NativePlayers == 0
	})
	if code := whipRequest(t, ts, "DELETE", p.location, token, "", ""); code != http.StatusNotFound {
		t.Errorf("second DELETE: %d, want 404", code)
	}
}

// Bad WHEP requests get their 4xx, and players beyond the caps a 503.
func TestWHEPRefusals(t *testing.T) {
	const token = "whep-token"
	ts := startServer(t, func(c *Config) { c.Token = token; c.MaxWHEPPerStream = 1; c.MaxWHEP = 2 })
	for _, name := range []string{"a", "b", "c"} {
		fs := dialSender(t, ts, name)
		if _, err := fs.sendFrame(fakeVP8(true, 320, 180, 1000), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three streams", func() bool { return len(authStats(t, ts, token).Streams) == 3 })

	recvOffer := pionOffer(t, pion.RTPTransceiverDirectionRecvonly, false)
	for _, tc := range []struct {
		name, method, path, token, contentType, body string
		want                                         int
	}{
		{"no token", "POST", "/whep/a", "", "application/sdp", recvOffer, http.StatusUnauthorized},
		{"wrong token", "POST", "/whep/a", "nope", "application/sdp", recvOffer, http.StatusUnauthorized},
		{"no such stream", "POST", "/whep/z", token, "application/sdp", recvOffer, http.StatusNotFound},
		{"wrong content type", "POST", "/whep/a", token, "text/plain", recvOffer, http.StatusUnsupportedMediaType},
		{"garbage", "POST", "/whep/a", token, "application/sdp", "v=garbage", http.StatusBadRequest},
		{"send-only offer", "POST", "/whep/a", token, "application/sdp", pionOffer(t, pion.RTPTransceiverDirectionSendonly, false), http.StatusBadRequest},
		{"GET", "GET", "/whep/a", token, "", "", http.StatusMethodNotAllowed},
		{"DELETE of no session", "DELETE", WHEPSessionPath + "00", token, "", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := whipRequest(t, ts, tc.method, tc.path, tc.token, tc.contentType, tc.body); code != tc.want {
				t.Fatalf("status %d, want %d", code, tc.want)
			}
		})
	}
	if _, code := playWHEP(t, ts, "a", token); code != http.StatusCreated {
		t.Fatalf("first player of a: %d", code)
	}
	if _, code := playWHEP(t, ts, "a", token); code != http.StatusServiceUnavailable {
		t.Errorf("second player of a: %d, want 503 (MaxWHEPPerStream 1)", code)
	}
	if _, code := playWHEP(t, ts, "b", token); code != http.StatusCreated {
		t.Fatalf("first player of b: %d", code)
	}
	if code := whipRequest(t, ts, "POST", "/whep/c", token, "application/sdp", recvOffer); code != http.StatusServiceUnavailable {
		t.Errorf("third player: %d, want 503 (MaxWHEP 2)", code)
	}
}

// WHIP and WHEP sessions whose peers never connect (the answer is never
// applied) are dropped after StallTimeout, and leave no goroutine behind.
// The timeout is a second: the TCP sender must not stall out before it has
// sent its frame on a loaded machine (at 300 ms it did).
func TestRTCSessionsThatNeverConnect(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.StallTimeout = time.Second })
	fs := dialSender(t, ts, "tcp")
	if _, err := fs.sendFrame(fakeVP8(true, 320, 180, 1000), time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the TCP stream", func() bool { _, ok := ts.stats(t).stream("tcp"); return ok })
	// The offering peers are made first: their goroutines stay until
	// the test ends.
	publish := pionOffer(t, pion.RTPTransceiverDirectionSendonly, false)
	play := pionOffer(t, pion.RTPTransceiverDirectionRecvonly, false)
	base := runtime.NumGoroutine()

	if code := whipRequest(t, ts, "POST", "/whip?stream=silent", "", "application/sdp", publish); code != http.StatusCreated {
		t.Fatalf("WHIP POST: %d", code)
	}
	if code := whipRequest(t, ts, "POST", "/whep/tcp", "", "application/sdp", play); code != http.StatusCreated {
		t.Fatalf("WHEP POST: %d", code)
	}
	if s, _ := ts.stats(t).stream("tcp"); s.NativePlayers != 1 {
		t.Errorf("native_players %d, want 1", s.NativePlayers)
	}
	eventually(t, "both sessions dropped", func() bool {
		st := ts.stats(t)
		silent, _ := st.stream("silent")
		tcp, _ := st.stream("tcp")
		ts.mu.Lock()
		n := ts.whipCount + len(ts.whip) + len(ts.whep)
		ts.mu.Unlock()
		return !silent.Connected && tcp.NativePlayers == 0 && n == 0
	})
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the sessions:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
