package viewer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"replenish/framer"
	"replenish/internal/certs"
)

func TestNewConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr error
	}{
		{"defaults", Config{}, nil},
		{"loopback without token", Config{HTTP: "127.0.0.1:9000"}, nil},
		{"localhost without token", Config{HTTP: "localhost:9000"}, nil},
		{"ipv6 loopback without token", Config{HTTP: "[::1]:9000"}, nil},
		{"all interfaces without token", Config{HTTP: ":8080"}, ErrTokenRequired},
		{"any address without token", Config{HTTP: "0.0.0.0:8080"}, ErrTokenRequired},
		{"lan address without token", Config{HTTP: "192.0.2.1:8080"}, ErrTokenRequired},
		{"all interfaces with token", Config{HTTP: ":8080", Listen: ":7000", Token: "s3cret"}, nil},
		{"media on all interfaces without token", Config{Listen: ":7000"}, ErrTokenRequired},
		{"media on a lan address without token", Config{Listen: "192.0.2.1:7000"}, ErrTokenRequired},
		{"media on localhost without token", Config{Listen: "localhost:7000"}, nil},
		{"negative auth timeout", Config{AuthTimeout: -time.Second}, ErrConfig},
		{"negative connection cap", Config{MaxSenderConnsPerAddr: -1}, ErrConfig},
		{"no port", Config{Listen: "127.0.0.1"}, ErrConfig},
		{"bad port", Config{HTTP: "127.0.0.1:http99"}, ErrConfig},
		{"negative queue", Config{ClientQueue: -1}, ErrConfig},
		{"negative stall", Config{StallTimeout: -time.Second}, ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New: %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// The viewer's QUIC identity: a self-signed certificate unless one is
// given, named by the fingerprint it reports.
func TestCertificate(t *testing.T) {
	own, fp, err := certs.SelfSigned([]string{"viewer.example"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Certificate: &own})
	if err != nil {
		t.Fatal(err)
	}
	if s.Fingerprint() != fp || s.Stats().TLSFingerprint != fp.String() {
		t.Errorf("fingerprint %v (stats %q), want the given certificate's %v", s.Fingerprint(), s.Stats().TLSFingerprint, fp)
	}
	a, err := New(Config{Listen: "192.0.2.7:7000", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint().IsZero() || a.Fingerprint() == b.Fingerprint() {
		t.Errorf("self-signed fingerprints %v and %v: want two distinct ones", a.Fingerprint(), b.Fingerprint())
	}
	leaf, err := x509.ParseCertificate(a.cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"192.0.2.7", "127.0.0.1", "localhost"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("the self-signed certificate does not name %s: %v", host, err)
		}
	}
	if _, err := New(Config{Certificate: &tls.Certificate{}}); !errors.Is(err, ErrConfig) {
		t.Errorf("an empty certificate: %v, want ErrConfig", err)
	}
}

func TestRunTwice(t *testing.T) {
	ts := startServer(t, nil)
	if err := ts.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}
}

func TestStreamsReceivedAndCounted(t *testing.T) {
	ts := startServer(t, nil)
	const frames = 30
	names := []string{"with-sbm", "without-sbm"}
	for i, name := range names {
		fs := dialSender(t, ts, name)
		for n := range frames {
			w, h := 320*(i+1), 180*(i+1)
			if _, err := fs.sendFrame(fakeVP8(n%10 == 0, w, h, 1000+n), time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "both streams' frames", func() bool {
		st := ts.stats(t)
		for _, n := range names {
			s, ok := st.stream(n)
			if !ok || s.FramesReceived != frames {
				return false
			}
		}
		return len(st.Streams) == 2
	})
	st := ts.stats(t)
	ids := map[uint32]bool{}
	for i, name := range names {
		s, _ := st.stream(name)
		ids[s.ID] = true
		if !s.Connected || s.Keyframes != 3 || s.Width != 320*(i+1) || s.Height != 180*(i+1) {
			t.Errorf("%s: %+v, want connected, 3 keyframes, %dx%d", name, s, 320*(i+1), 180*(i+1))
		}
		wantBytes := uint64(frames*1000 + frames*(frames-1)/2)
		if s.Bytes != wantBytes || s.Bitrate <= 0 || !(s.FPS > 0) {
			t.Errorf("%s: bytes %d (want %d), bitrate %v, fps %v", name, s.Bytes, wantBytes, s.Bitrate, s.FPS)
		}
	}
	// Streams are numbered from 1 in the order the viewer takes them up,
	// which need not be the order of the dials.
	if !ids[1] || !ids[2] {
		t.Errorf("stream ids %v, want 1 and 2", ids)
	}
}

func TestGarbageSenderDropped(t *testing.T) {
	rtp := func(version byte) []byte {
		b := make([]byte, 20)
		b[0] = version << 6
		b[1] = 96
		return b
	}
	for _, tc := range []struct {
		name string
		raw  []byte // written as is
	}{
		{"zero-length frame", []byte{0, 0}},
		{"RTP version 1", framed(rtp(1))},
		{"truncated RTP header", framed([]byte{0x80, 96, 0, 1})},
		{"malformed RTCP", framed([]byte{0x80, 200, 0, 40, 1, 2, 3, 4})},
		{"bad sender report", framed(badReport())},
		{"frame that is not VP8", framed(notVP8())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the garbage may end the bad connection, not a stall.
			ts := startServer(t, func(c *Config) { c.StallTimeout = time.Hour })
			good := dialSender(t, ts, "good")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sent := make(chan int, 1)
			go func() { sent <- good.stream(ctx, 5*time.Millisecond, 500) }()
			eventually(t, "good stream", func() bool { s, ok := ts.stats(t).stream("good"); return ok && s.FramesReceived > 0 })

			bad := dialSender(t, ts, "bad")
			if _, err := bad.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "bad stream's first frame", func() bool { s, ok := ts.stats(t).stream("bad"); return ok && s.FramesReceived == 1 })
			if err := bad.writeRaw(tc.raw); err != nil {
				t.Fatal(err)
			}
			bad.closedByViewer(t)
			eventually(t, "bad stream disconnected", func() bool { s, ok := ts.stats(t).stream("bad"); return ok && !s.Connected })

			before, _ := ts.stats(t).stream("good")
			eventually(t, "good stream still flowing", func() bool {
				s, _ := ts.stats(t).stream("good")
				return s.Connected && s.FramesReceived > before.FramesReceived+5
			})
			cancel()
			<-sent
		})
	}
}

func framed(pkt []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(pkt)))
	return append(b, pkt...)
}

// badReport returns an RPLN APP packet whose data length does not match
// its frame count.
func badReport() []byte {
	data := make([]byte, 20)
	data[0], data[1] = framer.ReportVersion, 3
	b := []byte{0x80, 204, 0, byte((12+len(data))/4 - 1), 0, 0, 0, 1, 'R', 'P', 'L', 'N'}
	return append(b, data...)
}

// notVP8 returns a complete one-packet RTP frame whose payload is not VP8.
func notVP8() []byte {
	pk := framer.NewPacketizer(framer.PacketizerConfig{SSRC: 7})
	bad := []byte{0x10, 0, 0, 0xAA, 0xBB, 0xCC, 1, 0, 1, 0} // keyframe tag without the start code
	pkts, _, err := pk.Packetize(bad, time.Now())
	if err != nil || len(pkts) != 1 {
		panic("packetizing test frame")
	}
	return pkts[0]
}

func TestReconnectKeepsStream(t *testing.T) {
	ts := startServer(t, nil)
	page := mustDialPage(t, ts)
	page.hello(t)

	first := dialSender(t, ts, "cam")
	if _, err := first.sendFrame(fakeVP8(true, 320, 180, 200), time.Now()); err != nil {
		t.Fatal(err)
	}
	h1, _ := page.nextFrame(t)
	first.conn.Close()
	eventually(t, "disconnect", func() bool { s, ok := ts.stats(t).stream("cam"); return ok && !s.Connected })

	second := dialSender(t, ts, "cam")
	if _, err := second.sendFrame(fakeVP8(true, 320, 180, 200), time.Now()); err != nil {
		t.Fatal(err)
	}
	h2, _ := page.nextFrame(t)
	if h2.Stream != h1.Stream || h2.Frame != h1.Frame+1 {
		t.Fatalf("after reconnect: stream %d frame %d, want stream %d frame %d", h2.Stream, h2.Frame, h1.Stream, h1.Frame+1)
	}
	st := ts.stats(t)
	if len(st.Streams) != 1 || !st.Streams[0].Connected || st.Streams[0].FramesReceived != 2 {
		t.Fatalf("streams %+v, want one connected stream with 2 frames", st.Streams)
	}

	// The stream a connection joined by its name is the one it leaves.
	second.conn.Close()
	eventually(t, "disconnect after the reconnection", func() bool { s, ok := ts.stats(t).stream("cam"); return ok && !s.Connected })
	if st := ts.stats(t); len(st.Streams) != 1 {
		t.Fatalf("streams %+v, want one", st.Streams)
	}
}

func TestUnnamedSenderGetsAddressName(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialSender(t, ts, "")
	if _, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
		t.Fatal(err)
	}
	local := fs.conn.LocalAddr().String()
	eventually(t, "stream named after its address", func() bool {
		s, ok := ts.stats(t).stream(local)
		return ok && s.FramesReceived == 1 && s.Remote == local
	})
}

func TestStalledSenderDropped(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.StallTimeout = 200 * time.Millisecond })
	fs := dialSender(t, ts, "quiet")
	fs.closedByViewer(t)
	eventually(t, "stream disconnected", func() bool { s, ok := ts.stats(t).stream("quiet"); return ok && !s.Connected })
}

func TestStreamCap(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxStreams = 2 })
	a := dialSender(t, ts, "a")
	dialSender(t, ts, "b")
	// A stream is listed under its remote address until its sender names
	// it, so wait for both names before looking at a by name.
	eventually(t, "two named streams", func() bool {
		st := ts.stats(t)
		_, hasA := st.stream("a")
		_, hasB := st.stream("b")
		return hasA && hasB
	})
	refused := dialSender(t, ts, "c")
	refused.closedByViewer(t)

	a.conn.Close()
	eventually(t, "a disconnected", func() bool { s, ok := ts.stats(t).stream("a"); return ok && !s.Connected })
	dialSender(t, ts, "c")
	eventually(t, "c replaces a", func() bool {
		st := ts.stats(t)
		_, hasA := st.stream("a")
		c, hasC := st.stream("c")
		return !hasA && hasC && c.Connected && len(st.Streams) == 2
	})
}

// TestEmptyConnectionsLeaveNoStream: a connection that ends without
// naming its stream or sending a frame leaves no stream behind, so that
// such connections cannot fill the stream slots and evict the stream of a
// sender that is away.
func TestEmptyConnectionsLeaveNoStream(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxStreams = 2 })
	fs := dialSender(t, ts, "cam")
	if _, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame", func() bool { s, _ := ts.stats(t).stream("cam"); return s.FramesReceived == 1 })
	fs.close()
	eventually(t, "cam disconnected", func() bool { s, ok := ts.stats(t).stream("cam"); return ok && !s.Connected })

	for range 3 {
		empty := dialTCP(t, ts.media)
		empty.challenge() // past the authentication: the viewer made its stream
		empty.close()
		eventually(t, "the connection closed", func() bool { return ts.senderLimits.open() == 0 })
	}
	var names []string
	for _, s := range ts.stats(t).Streams {
		names = append(names, s.Name)
	}
	if len(names) != 1 || names[0] != "cam" {
		t.Fatalf("streams %q, want cam's only", names)
	}
}

func TestClientCap(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxClients = 1 })
	first := mustDialPage(t, ts)
	first.hello(t)
	p := mustDialPage(t, ts)
	p.conn.SetReadDeadline(time.Now().Add(waitLimit))
	_, _, err := p.conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "too many pages open (1)") {
		t.Fatalf("second page: %v; want a close 1013 saying too many pages are open", err)
	}
	first.conn.Close()
	eventually(t, "a page admitted once the first left", func() bool {
		p := mustDialPage(t, ts)
		p.conn.SetReadDeadline(time.Now().Add(waitLimit))
		_, _, err := p.conn.ReadMessage()
		return err == nil
	})
}

func TestFramesToPage(t *testing.T) {
	ts := startServer(t, nil)
	page := mustDialPage(t, ts)
	page.hello(t)
	fs := dialSender(t, ts, "s")
	capture := time.UnixMicro(1_700_000_000_123_456)

	// Deltas before the first keyframe are useless to a new page: the
	// viewer must not send this one, so the first frame the page sees is
	// the keyframe that follows.
	if _, err := fs.sendFrame(fakeVP8(false, 0, 0, 50), capture); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delta frame", func() bool { s, _ := ts.stats(t).stream("s"); return s.FramesReceived == 1 })
	before := time.Now()
	rtpTS, err := fs.sendFrame(fakeVP8(true, 640, 360, 3000), capture.Add(33*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h, vp8 := page.nextFrame(t)
	after := time.Now()
	want := fakeVP8(true, 640, 360, 3000)
	if !h.Key || h.Frame != 1 || h.RTPTimestamp != rtpTS || h.Width != 640 || h.Height != 360 || h.SSRC != fs.ssrc {
		t.Errorf("header %+v", h)
	}
	if d := h.Capture.Sub(capture.Add(33 * time.Millisecond)); d < -time.Microsecond || d > time.Microsecond {
		// abs-capture-time carries 32-bit fractions of a second.
		t.Errorf("capture %v, want %v", h.Capture, capture.Add(33*time.Millisecond))
	}
	if h.Received.Before(before.Truncate(time.Microsecond)) || h.Received.After(after) {
		t.Errorf("received %v not within [%v, %v]", h.Received, before, after)
	}
	if string(vp8) != string(want) {
		t.Errorf("frame data differs: %d bytes, want %d", len(vp8), len(want))
	}
	if _, err := fs.sendFrame(fakeVP8(false, 0, 0, 70), capture.Add(66*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if h, _ := page.nextFrame(t); h.Key || h.Frame != 2 || h.Layered {
		t.Errorf("second frame %+v, want delta frame 2 without layers", h)
	}
	// A frame's temporal layer reaches the page in its header.
	pkts, _, err := fs.pk.PacketizeLayer(fakeVP8(false, 0, 0, 80), capture.Add(99*time.Millisecond),
		framer.Layer{Present: true, TID: 2, Sync: true, TL0PicIdx: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.write(pkts...); err != nil {
		t.Fatal(err)
	}
	if h, _ := page.nextFrame(t); !h.Layered || h.TID != 2 || !h.LayerSync {
		t.Errorf("layered frame %+v, want TID 2 with layer sync", h)
	}
}

func TestStreamListMessage(t *testing.T) {
	ts := startServer(t, nil)
	page := mustDialPage(t, ts)
	page.hello(t)
	dialSender(t, ts, "listed")
	for {
		typ, data := page.next(t)
		if typ != websocket.TextMessage {
			continue
		}
		var m streamsMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Type != "streams" {
			t.Fatalf("message %q: %v", data, err)
		}
		if len(m.Streams) == 1 && m.Streams[0].Name == "listed" && m.Streams[0].Connected {
			return
		}
	}
}

func TestSlowPageDropsToKeyframe(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.ClientQueue = 3
		c.KeyframeInterval = 50 * time.Millisecond
		c.WriteTimeout = time.Minute // the slow page must outlive the test
	})
	// A page that stops reading after the hello: once the socket buffers
	// are full, the viewer's writes to it block.
	slow := mustDialPage(t, ts)
	id := slow.hello(t)
	fast := mustDialPage(t, ts)
	fast.hello(t)

	fs := dialSender(t, ts, "big")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- fs.stream(ctx, 5*time.Millisecond, 20_000) }()
	go func() { // the fast page keeps reading
		for {
			if _, _, err := fast.conn.ReadMessage(); err != nil {
				return
			}
		}
	}()

	var cs ClientStreamStats
	eventually(t, "drops for the slow page", func() bool {
		for _, c := range ts.stats(t).Clients {
			if c.ID == id && len(c.Streams) == 1 {
				cs = c.Streams[0]
			}
		}
		return cs.FramesDropped > 10
	})
	eventually(t, "keyframe requests reaching the sender", func() bool { return fs.plis.Load() > 0 })
	if s, _ := ts.stats(t).stream("big"); s.KeyframeRequests == 0 {
		t.Error("no keyframe requests counted")
	}

	// The slow page reads again: after every gap in frame ids the first
	// frame must be a keyframe, and no more than the queue's depth of
	// frames may be stale.
	var last FrameHeader
	gaps := 0
	for range 400 {
		h, _ := slow.nextFrame(t)
		if last.Frame != 0 && h.Frame != last.Frame+1 {
			gaps++
			if !h.Key {
				t.Fatalf("frame %d after frame %d is a delta: a gap must resume at a keyframe", h.Frame, last.Frame)
			}
		}
		last = h
	}
	if gaps == 0 {
		t.Error("no gap in frame ids: the slow page was never dropped to a keyframe")
	}
	cancel()
	<-done
}

func TestKeyframeRequestsRateLimited(t *testing.T) {
	const interval = 300 * time.Millisecond
	ts := startServer(t, func(c *Config) { c.KeyframeInterval = interval })
	page := mustDialPage(t, ts)
	page.hello(t)
	fs := dialSender(t, ts, "s")
	if _, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
		t.Fatal(err)
	}
	h, _ := page.nextFrame(t)

	start := time.Now()
	for range 200 {
		page.sendJSON(t, map[string]any{"type": "keyframe", "stream": h.Stream})
	}
	eventually(t, "a PLI", func() bool { return fs.plis.Load() >= 1 })
	elapsed := time.Since(start)
	time.Sleep(50 * time.Millisecond) // let stragglers arrive
	got := fs.plis.Load()
	if limit := int64(elapsed/interval) + 2; got > limit {
		t.Fatalf("%d PLIs for 200 requests in %v, want at most %d", got, elapsed, limit)
	}
	eventually(t, "requests counted", func() bool {
		s, _ := ts.stats(t).stream("s")
		return int64(s.KeyframeRequests) == fs.plis.Load()
	})
}

func TestKeyframeLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := keyframeLimiter{interval: 500 * time.Millisecond}
	for _, tc := range []struct {
		name string
		at   time.Duration
		want bool
	}{
		{"first", 0, true},
		{"too soon", 100 * time.Millisecond, false},
		{"just before", 499 * time.Millisecond, false},
		{"at interval", 500 * time.Millisecond, true},
		{"soon after second", 900 * time.Millisecond, false},
		{"later", 2 * time.Second, true},
	} {
		if got := l.allow(t0.Add(tc.at)); got != tc.want {
			t.Errorf("%s: allow at %v = %v, want %v", tc.name, tc.at, got, tc.want)
		}
	}
}

func TestMalformedPageMessageDropsOnlyThatPage(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  int
		msg  string
	}{
		{"binary message", websocket.BinaryMessage, "\x01\x02"},
		{"not JSON", websocket.TextMessage, "{nope"},
		{"unknown type", websocket.TextMessage, `{"type":"shout"}`},
		{"keyframe without stream", websocket.TextMessage, `{"type":"keyframe"}`},
		{"wrong field type", websocket.TextMessage, `{"type":"report","frames":"lots"}`},
		{"report without display time", websocket.TextMessage, `{"type":"report","frames":[{"stream":1,"frame":0,"ok":false}]}`},
		{"ok without capture", websocket.TextMessage, `{"type":"report","frames":[{"stream":1,"frame":0,"ok":true,"display_ms":1e12}]}`},
		{"negative decode time", websocket.TextMessage, `{"type":"report","frames":[{"stream":1,"frame":0,"ok":false,"display_ms":1e12,"decode_ms":-1}]}`},
		{"report without stream", websocket.TextMessage, `{"type":"report","frames":[{"frame":0,"ok":false,"display_ms":1e12}]}`},
		{"too many frames", websocket.TextMessage, `{"type":"report","frames":[` + strings.Repeat(`{"stream":1,"display_ms":1e12},`, maxReportFrames) + `{"stream":1,"display_ms":1e12}]}`},
		{"too large", websocket.TextMessage, `{"type":"keyframe","stream":1,"pad":"` + strings.Repeat("x", maxPageMessage) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil)
			fs := dialSender(t, ts, "s")
			good := mustDialPage(t, ts)
			goodID := good.hello(t)
			bad := mustDialPage(t, ts)
			bad.hello(t)
			if _, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
				t.Fatal(err)
			}
			good.nextFrame(t)
			bad.nextFrame(t)

			if err := bad.conn.WriteMessage(tc.typ, []byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			bad.closed(t)
			eventually(t, "only the good page left", func() bool {
				cl := ts.stats(t).Clients
				return len(cl) == 1 && cl[0].ID == goodID
			})
			if _, err := fs.sendFrame(fakeVP8(false, 0, 0, 100), time.Now()); err != nil {
				t.Fatal(err)
			}
			if h, _ := good.nextFrame(t); h.Frame != 1 {
				t.Fatalf("good page got frame %d, want 1", h.Frame)
			}
		})
	}
}

func TestPageReportsGiveLatency(t *testing.T) {
	var mu sync.Mutex
	var recs []Record
	ts := startServer(t, func(c *Config) {
		c.OnRecord = func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }
	})
	fs := dialSender(t, ts, "s")
	page := mustDialPage(t, ts)
	id := page.hello(t)

	// The sender's clock is 100 ms behind the viewer's.
	const offset = 100 * time.Millisecond
	fs.sendReport(framer.SenderReport{ClockOffset: offset})
	if _, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), time.Now()); err != nil {
		t.Fatal(err)
	}
	h, _ := page.nextFrame(t)
	recv := float64(h.Received.UnixMicro()) / 1000
	capture := 1_700_000_000_000.0
	page.sendJSON(t, map[string]any{"type": "report", "frames": []map[string]any{
		// g2g = display - (capture + offset) = 250 - 100 = 150 ms.
		{"stream": h.Stream, "frame": h.Frame, "ok": true, "capture_ms": capture, "arrived_ms": recv + 4,
			"display_ms": capture + 250, "decode_ms": 3, "draw_ms": 1},
		{"stream": h.Stream, "frame": h.Frame, "ok": false, "display_ms": capture + 260, "decode_ms": 5, "draw_ms": 2},
		{"stream": 999, "frame": 1, "ok": false, "display_ms": capture}, // a stream that is gone: ignored
	}})
	var c ClientStats
	eventually(t, "report counted", func() bool {
		for _, x := range ts.stats(t).Clients {
			if x.ID == id {
				c = x
			}
		}
		return c.FramesDisplayed == 2
	})
	if c.TimestampMisreads != 1 || c.G2G.N != 1 || c.G2G.P50 != 150 || c.G2G.P99 != 150 {
		t.Errorf("client %+v, want 1 misread and one g2g sample of 150 ms", c)
	}
	if c.Decode.P50 != 3 || c.Decode.P95 != 5 || c.Draw.P95 != 2 {
		t.Errorf("decode %+v draw %+v", c.Decode, c.Draw)
	}
	if len(c.Streams) != 1 || c.Streams[0].Delivery.P50 != 4 || c.Streams[0].FramesSent != 1 {
		t.Errorf("streams %+v, want delivery 4 ms and 1 frame sent", c.Streams)
	}
	if s, _ := ts.stats(t).stream("s"); s.ClockOffsetMS != 100 {
		t.Errorf("clock offset %v, want 100", s.ClockOffsetMS)
	}

	// The same, as records: the frame received, then displayed twice
	// (once read, once misread); nothing for the stream that is gone.
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Kind != RecordReceived || r.Stream != h.Stream || r.Frame != h.Frame || r.Received.UnixMicro() != h.Received.UnixMicro() || r.Name != "s" || !r.Key || r.Bytes != 100 {
		t.Errorf("received record %+v", r)
	}
	if r := recs[1]; r.Kind != RecordDisplayed || r.Client != id || r.G2G != 150*time.Millisecond || r.Misread || r.Decode != 3*time.Millisecond || r.Capture.UnixMilli() != int64(capture) {
		t.Errorf("displayed record %+v, want g2g 150ms", r)
	}
	if r := recs[2]; r.Kind != RecordDisplayed || !r.Misread || r.G2G != -1 || r.Draw != 2*time.Millisecond {
		t.Errorf("misread record %+v", r)
	}
}

func TestSenderReportParts(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialSender(t, ts, "s")
	capture := time.Now().Add(-50 * time.Millisecond)
	ts1, err := fs.sendFrame(fakeVP8(true, 160, 90, 100), capture)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "frame", func() bool { s, _ := ts.stats(t).stream("s"); return s.FramesReceived == 1 })
	fs.sendReport(framer.SenderReport{
		DrainRate: 2_000_000, Target: 1_500_000,
		Frames: []framer.FrameTiming{{
			RTPTimestamp: ts1, Capture: capture,
			EncodeStart: 2 * time.Millisecond, EncodeEnd: 7 * time.Millisecond,
			WriteStart: 8 * time.Millisecond, LeftHost: 20 * time.Millisecond, Bytes: 100,
		}},
	})
	var s StreamStats
	eventually(t, "parts", func() bool { s, _ = ts.stats(t).stream("s"); return known(s.Parts.Network.P50) })
	if s.Parts.Wait.P50 != 2 || s.Parts.Encode.P50 != 5 || s.Parts.SourceDelay.P50 != 12 {
		t.Errorf("parts %+v, want wait 2, encode 5, source delay 12", s.Parts)
	}
	// The frame left the sender 20 ms after a capture 50 ms ago, so the
	// network part is about 30 ms; the bound only rejects wrong
	// arithmetic (sign, clock, units).
	if n := float64(s.Parts.Network.P50); n < 0 || n > 50+float64(waitLimit.Milliseconds()) {
		t.Errorf("network %v ms, want a little over 30", n)
	}
	// Captured 50 ms before it was sent: received about 50 ms after capture.
	if c := s.CaptureToReceived; c.N != 1 || c.P50 < 50 || float64(c.P50) > 50+float64(waitLimit.Milliseconds()) {
		t.Errorf("capture to received %+v, want one sample a little over 50 ms", c)
	}
	if s.Sender.DrainRate == nil || *s.Sender.DrainRate != 2_000_000 || *s.Sender.Target != 1_500_000 {
		t.Errorf("sender %+v", s.Sender)
	}
}

func TestStatsJSONFields(t *testing.T) {
	ts := startServer(t, nil)
	dialSender(t, ts, "s")
	page := mustDialPage(t, ts)
	page.hello(t)
	eventually(t, "stream and page", func() bool { st := ts.stats(t); return len(st.Streams) == 1 && len(st.Clients) == 1 })
	// Make the page have a per-stream entry.
	st := ts.stats(t)
	page.sendJSON(t, map[string]any{"type": "report", "frames": []map[string]any{{"stream": st.Streams[0].ID, "frame": 0, "ok": false, "display_ms": 1e12}}})
	eventually(t, "report", func() bool { c := ts.stats(t).Clients; return len(c) == 1 && len(c[0].Streams) == 1 })

	resp, err := http.Get(ts.url("/api/stats"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["now_ms"].(float64); !ok {
		t.Errorf("now_ms missing: %v", doc)
	}
	if fp, _ := doc["tls_fingerprint"].(string); fp != ts.Fingerprint().String() {
		t.Errorf("tls_fingerprint %q, want %q", fp, ts.Fingerprint())
	}
	stream := doc["streams"].([]any)[0].(map[string]any)
	hasKeys(t, "stream", stream, "id", "name", "remote", "transport", "mode", "connected", "frames_received", "bitrate_bps", "fps",
		"width", "height", "keyframes", "keyframe_requests", "clock_offset_ms", "dropped_partial_frames", "frames_lost",
		"frames_undecodable", "sender", "parts_ms", "capture_to_received_ms")
	if stream["transport"] != "tcp" || stream["mode"] != "" {
		t.Errorf("transport %v, mode %v; want tcp and none stated", stream["transport"], stream["mode"])
	}
	hasKeys(t, "sender", stream["sender"].(map[string]any), "drain_rate_bps", "target_bps")
	parts := stream["parts_ms"].(map[string]any)
	for _, k := range []string{"wait", "encode", "source_delay", "network"} {
		q := parts[k].(map[string]any)
		exactKeys(t, k, q, "p50", "p95")
		if q["p50"] != nil {
			t.Errorf("%s p50 = %v with no samples, want null", k, q["p50"])
		}
	}
	if stream["clock_offset_ms"] != nil {
		t.Errorf("clock_offset_ms = %v before any report, want null", stream["clock_offset_ms"])
	}
	client := doc["clients"].([]any)[0].(map[string]any)
	hasKeys(t, "client", client, "id", "remote", "mode", "frames_displayed", "timestamp_misreads", "g2g_ms", "decode_ms",
		"draw_ms", "frames_dropped", "streams", "frames_sent_by_layer", "frames_dropped_by_layer", "frames_displayed_by_layer",
		"catch_up_frames", "keyframes_requested")
	if client["mode"] != "replenish=15ms" {
		t.Errorf("page connection mode %v, want replenish=15ms", client["mode"])
	}
	exactKeys(t, "client g2g", client["g2g_ms"].(map[string]any), "p50", "p95", "p99", "n")
	exactKeys(t, "stream capture to received", stream["capture_to_received_ms"].(map[string]any), "p50", "p95", "p99", "n")
	for _, k := range []string{"decode_ms", "draw_ms"} {
		exactKeys(t, "client "+k, client[k].(map[string]any), "p50", "p95")
	}
	if g := client["g2g_ms"].(map[string]any); g["p50"] != nil || g["n"] != 0.0 {
		t.Errorf("g2g with no samples = %v, want null percentiles and n 0", g)
	}
	cs := client["streams"].([]any)[0].(map[string]any)
	hasKeys(t, "client stream", cs, "stream", "frames_sent", "frames_dropped", "frames_displayed", "timestamp_misreads",
		"g2g_ms", "decode_ms", "draw_ms", "delivery_ms", "frames_sent_by_layer", "frames_dropped_by_layer",
		"frames_displayed_by_layer", "catch_up_frames", "keyframes_requested")
	for _, k := range []string{"frames_sent_by_layer", "frames_dropped_by_layer", "frames_displayed_by_layer"} {
		if v, _ := cs[k].([]any); len(v) != 4 {
			t.Errorf("%s = %v, want four counts (TID 0 to 3)", k, cs[k])
		}
	}
	if v := cs["frames_displayed_by_layer"].([]any); v[0] != 1.0 {
		t.Errorf("frames_displayed_by_layer = %v, want the one report in layer 0", v)
	}
	exactKeys(t, "client stream g2g", cs["g2g_ms"].(map[string]any), "p50", "p95", "p99", "n")
	for _, k := range []string{"decode_ms", "draw_ms", "delivery_ms"} {
		exactKeys(t, k, cs[k].(map[string]any), "p50", "p95")
	}
}

// exactKeys checks that m has the keys and no others: the API's
// distributions keep their documented shape.
func exactKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	hasKeys(t, what, m, keys...)
	if len(m) != len(keys) {
		t.Errorf("%s: %v has keys beyond %q", what, m, keys)
	}
}

func hasKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: no %q in %v", what, k, m)
		}
	}
}

func TestTime(t *testing.T) {
	ts := startServer(t, nil)
	before := time.Now()
	resp, err := http.Get(ts.url("/api/time"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		NowUS int64 `json:"now_us"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if got := time.UnixMicro(body.NowUS); got.Before(before.Truncate(time.Microsecond)) || got.After(time.Now()) {
		t.Fatalf("now_us %v outside the request", got)
	}
}

func TestClockProbe(t *testing.T) {
	ts := startServer(t, nil)
	conn, err := net.Dial("udp", ts.media)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct {
		name  string
		send  []byte
		reply bool
	}{
		{"garbage is ignored", []byte("hello"), false},
		{"a reply is ignored", framer.TimeProbe{Reply: true, Origin: time.Now()}.Marshal(), false},
		{"a request is answered", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
			send := tc.send
			if send == nil {
				send = framer.TimeProbe{Origin: origin}.Marshal()
			}
			before := time.Now().Truncate(time.Microsecond)
			if _, err := conn.Write(send); err != nil {
				t.Fatal(err)
			}
			wait := waitLimit
			if !tc.reply {
				wait = 200 * time.Millisecond // absence of a reply: a short look suffices
			}
			conn.SetReadDeadline(time.Now().Add(wait))
			buf := make([]byte, 100)
			n, err := conn.Read(buf)
			if !tc.reply {
				if err == nil {
					t.Fatalf("got a %d-byte reply, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := framer.ParseTimeProbe(buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if !p.Reply || !p.Origin.Equal(origin) || p.Receive.Before(before) || p.Transmit.Before(p.Receive) || p.Transmit.After(after) {
				t.Fatalf("reply %+v (sent at %v, back by %v)", p, before, after)
			}
		})
	}
}

func TestRunStopsWithOpenConnections(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialSender(t, ts, "s")
	page := mustDialPage(t, ts)
	page.hello(t)
	eventually(t, "stream", func() bool { return len(ts.stats(t).Streams) == 1 })
	ts.stop(t) // fails the test if Run does not return
	fs.closedByViewer(t)
	page.closed(t)
}
