package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/certs"
)

// known reports whether a percentile of the stats has a value.
func known(v float64) bool { return !math.IsNaN(v) }

// waitLimit bounds every wait for a condition in these tests. It is a
// deadlock guard, not a performance threshold.
const waitLimit = 15 * time.Second

// testServer is a viewer running on loopback ports for one test.
type testServer struct {
	*Server
	media, http string // host:port
	cancel      context.CancelFunc
	done        chan error
	stopOnce    sync.Once
}

// startServer starts a viewer on 127.0.0.1:0 ports; edit adjusts the
// configuration. The server stops, and Run must return nil, at cleanup.
func startServer(t *testing.T, edit func(*Config)) *testServer {
	t.Helper()
	return startServerWith(t, edit, nil)
}

// startServerWith is startServer with a hook to adjust the Server (its
// clock) before Run.
func startServerWith(t *testing.T, edit func(*Config), prep func(*Server)) *testServer {
	t.Helper()
	cfg := Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Logger: testLogger(t)}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if prep != nil {
		prep(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-ts.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("viewer did not start listening")
	}
	m, h := s.Addrs()
	ts.media, ts.http = m.String(), h.String()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop cancels Run and checks that it returns nil; only the first call
// does anything.
func (ts *testServer) stop(t *testing.T) {
	t.Helper()
	ts.stopOnce.Do(func() {
		ts.cancel()
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
	})
}

// url returns the viewer's URL for path.
func (ts *testServer) url(path string) string { return "http://" + ts.http + path }

// stats fetches /api/stats.
func (ts *testServer) stats(t *testing.T) Stats {
	t.Helper()
	return ts.statsWith(t, nil)
}

// statsWith fetches /api/stats with the request headers hdr.
func (ts *testServer) statsWith(t *testing.T, hdr http.Header) Stats {
	t.Helper()
	req, err := http.NewRequest("GET", ts.url("/api/stats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, hdr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/stats: %v", err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decoding stats: %v", err)
	}
	return st
}

func (st Stats) stream(name string) (StreamStats, bool) {
	for _, s := range st.Streams {
		if s.Name == name {
			return s, true
		}
	}
	return StreamStats{}, false
}

// eventually polls cond until it holds, failing the test after waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLogger sends the viewer's logs to the test's output until the
// test's last cleanup, and drops them after: pion's goroutines can log
// after a PeerConnection is closed, and a write to a test that has
// finished races with the testing package's own (the race detector
// failed TestRTCSessionsThatNeverConnect on it).
func testLogger(t *testing.T) *slog.Logger {
	w := &testOutput{w: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testOutput is a test's output that drops writes once closed.
type testOutput struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (o *testOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	return o.w.Write(p)
}

func (o *testOutput) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// fakeVP8 returns a minimal frame that parses as VP8: a frame tag with an
// empty first partition and, for a keyframe, the start code and size;
// padded to size bytes.
func fakeVP8(key bool, w, h, size int) []byte {
	b := make([]byte, max(size, 10))
	if key {
		b[0] = 0x10 // keyframe, version 0, shown, empty first partition
		b[3], b[4], b[5] = 0x9d, 0x01, 0x2a
		b[6], b[7] = byte(w), byte(w>>8)
		b[8], b[9] = byte(h), byte(h>>8)
	} else {
		b[0] = 0x11 // interframe, shown
	}
	for i := 10; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// fakeSender is a sender built from framer: it packetizes frames, frames
// them for its transport (TCP, or one QUIC media stream) and counts the
// keyframe requests it receives.
type fakeSender struct {
	t     *testing.T
	conn  net.Conn       // TCP only
	r     *framer.Reader // TCP only: the viewer's packets
	qc    *quic.Conn     // QUIC only
	media io.Writer      // where framed packets go
	frame func(dst, pkt []byte) ([]byte, error)
	ssrc  uint32
	pk    *framer.Packetizer

	wmu sync.Mutex // serializes writes

	plis    atomic.Int64 // PLIs received for ssrc
	wantKey atomic.Bool  // a PLI arrived since the last keyframe
	readErr chan error   // closed when the feedback reader stops
}

// dialSender connects a fake sender to ts over TCP, proves ts's token,
// and names its stream (unless name is "").
func dialSender(t *testing.T, ts *testServer, name string) *fakeSender {
	t.Helper()
	return dialSenderAs(t, ts.media, ts.cfg.Token, name)
}

// dialSenderAs connects a fake sender to the viewer at addr over TCP,
// reads the viewer's challenge and, if it requires a token, answers it
// with token (when not "").
func dialSenderAs(t *testing.T, addr, token, name string) *fakeSender {
	t.Helper()
	fs := dialTCP(t, addr)
	c := fs.challenge()
	if c.Required && token != "" {
		fs.answer(framer.NewAuthProof(token, framer.TCPAuthBinding(c.Nonce)))
	}
	fs.startFeedback()
	if name != "" {
		fs.sendSDES(name)
	}
	return fs
}

// dialTCP connects a fake sender to the viewer at addr over TCP and reads
// nothing yet: the caller reads the challenge, then starts the feedback
// reader.
func dialTCP(t *testing.T, addr string) *fakeSender {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	fs := newFakeSender(t)
	fs.conn, fs.media, fs.frame = conn, conn, framer.AppendFramed
	fs.r = framer.NewReader(conn)
	return fs
}

// challenge reads the viewer's first packet, which must be its challenge.
func (fs *fakeSender) challenge() framer.AuthChallenge {
	fs.t.Helper()
	fs.conn.SetReadDeadline(time.Now().Add(waitLimit))
	defer fs.conn.SetReadDeadline(time.Time{})
	pkt, err := fs.r.ReadPacket()
	if err != nil {
		fs.t.Fatalf("reading the viewer's challenge: %v", err)
	}
	c, err := framer.ParseAuthChallenge(pkt)
	if err != nil {
		fs.t.Fatalf("the viewer's first packet: %v", err)
	}
	return c
}

// answer sends an answer with proof; the connection may have been closed.
func (fs *fakeSender) answer(proof framer.AuthProof) error {
	return fs.write(framer.MarshalAuthAnswer(fs.ssrc, proof))
}

// startFeedback starts reading the viewer's feedback over TCP.
func (fs *fakeSender) startFeedback() { go fs.readFeedback(fs.r.ReadPacket) }

func newFakeSender(t *testing.T) *fakeSender {
	fs := &fakeSender{t: t, ssrc: uint32(time.Now().UnixNano()), readErr: make(chan error, 1)}
	fs.pk = framer.NewPacketizer(framer.PacketizerConfig{SSRC: fs.ssrc})
	return fs
}

// useSSRC makes fs send as ssrc from now on (a sender's SSRC outlives its
// connections).
func (fs *fakeSender) useSSRC(ssrc uint32) {
	fs.ssrc = ssrc
	fs.pk = framer.NewPacketizer(framer.PacketizerConfig{SSRC: ssrc})
}

// dialQUIC opens a RoQ connection to the viewer at addr, verifying it by
// pin.
func dialQUIC(t *testing.T, addr string, pin certs.Fingerprint) (*quic.Conn, error) {
	t.Helper()
	tc, err := certs.ClientTLS(pin, nil, "", framer.RoQALPN)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return quic.DialAddr(ctx, addr, tc, &quic.Config{MaxIdleTimeout: waitLimit})
}

// dialQUICSender is dialSender over QUIC: the proof of ts's token (if it
// has one) on a stream of its own, then the media on one stream, as the
// sender's replenish and default modes send it.
func dialQUICSender(t *testing.T, ts *testServer, name string) *fakeSender {
	t.Helper()
	fs := dialQUICConn(t, ts)
	if ts.cfg.Token != "" {
		fs.quicAnswer(quicProof(t, fs.qc, ts.cfg.Token))
	}
	fs.openMedia()
	if name != "" {
		fs.sendSDES(name)
	}
	return fs
}

// dialQUICConn opens a RoQ connection to ts and reads its feedback; it
// sends nothing yet.
func dialQUICConn(t *testing.T, ts *testServer) *fakeSender {
	t.Helper()
	qc, err := dialQUIC(t, ts.media, ts.Fingerprint())
	if err != nil {
		t.Fatalf("dial %s: %v", ts.media, err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	fs := newFakeSender(t)
	fs.qc = qc
	go fs.readFeedback(quicFeedback(qc))
	return fs
}

// openMedia opens the media stream the fake sender's packets go on.
func (fs *fakeSender) openMedia() {
	fs.t.Helper()
	if err := fs.tryOpenMedia(); err != nil {
		fs.t.Fatal(err)
	}
}

// tryOpenMedia opens the media stream as openMedia does, and returns why
// it could not; fs.media stays nil then.
func (fs *fakeSender) tryOpenMedia() error {
	ms, err := fs.qc.OpenUniStream()
	if err != nil {
		return err
	}
	if _, err := ms.Write(roqHeader()); err != nil {
		return err
	}
	fs.media, fs.frame = ms, framer.AppendRoQPacket
	return nil
}

// quicProof returns the proof of token bound to qc's TLS session.
func quicProof(t *testing.T, qc *quic.Conn, token string) framer.AuthProof {
	t.Helper()
	tlsState := qc.ConnectionState().TLS
	ekm, err := tlsState.ExportKeyingMaterial(framer.AuthExporterLabel, nil, framer.AuthExporterSize)
	if err != nil {
		t.Fatal(err)
	}
	return framer.NewAuthProof(token, framer.QUICAuthBinding(ekm))
}

// quicAnswer sends an answer with proof on a stream of its own, as the
// sender does.
func (fs *fakeSender) quicAnswer(proof framer.AuthProof) {
	fs.t.Helper()
	s, err := fs.qc.OpenUniStream()
	if err != nil {
		fs.t.Fatal(err)
	}
	b, _ := framer.AppendRoQPacket(roqHeader(), framer.MarshalAuthAnswer(fs.ssrc, proof))
	if _, err := s.Write(b); err != nil {
		fs.t.Fatal(err)
	}
	s.Close()
}

// roqHeader returns what a RoQ stream of the session starts with.
func roqHeader() []byte {
	b, _ := framer.AppendRoQStreamHeader(nil, framer.RoQSessionFlow)
	return b
}

// quicFeedback returns a reader of the viewer's feedback: the packets of
// the streams it opens.
func quicFeedback(qc *quic.Conn) func() ([]byte, error) {
	var r *framer.RoQReader
	return func() ([]byte, error) {
		for {
			if r == nil {
				s, err := qc.AcceptUniStream(context.Background())
				if err != nil {
					return nil, err
				}
				r = framer.NewRoQReader(s)
				if flow, err := r.FlowID(); err != nil || flow != framer.RoQSessionFlow {
					return nil, fmt.Errorf("feedback stream: flow %d, %v", flow, err)
				}
			}
			pkt, err := r.ReadPacket()
			if errors.Is(err, io.EOF) {
				r = nil
				continue
			}
			return pkt, err
		}
	}
}

func (fs *fakeSender) readFeedback(read func() ([]byte, error)) {
	for {
		pkt, err := read()
		if err != nil {
			fs.readErr <- err
			close(fs.readErr)
			return
		}
		pkts, err := framer.ParseControl(pkt)
		if err != nil {
			fs.readErr <- fmt.Errorf("bad feedback: %w", err)
			close(fs.readErr)
			return
		}
		if framer.WantsKeyframe(pkts, fs.ssrc) {
			fs.plis.Add(1)
			fs.wantKey.Store(true)
		}
	}
}

// close closes the fake sender's connection.
func (fs *fakeSender) close() {
	if fs.qc != nil {
		fs.qc.CloseWithError(0, "")
	} else {
		fs.conn.Close()
	}
}

// closedByViewer waits until the viewer closes the connection.
func (fs *fakeSender) closedByViewer(t *testing.T) {
	t.Helper()
	select {
	case err := <-fs.readErr:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Logf("sender connection ended with %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("viewer did not close the sender's connection")
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func (fs *fakeSender) write(pkts ...[]byte) error {
	var buf []byte
	for _, p := range pkts {
		var err error
		if buf, err = fs.frame(buf, p); err != nil {
			return err
		}
	}
	return fs.writeRaw(buf)
}

// writeRaw writes bytes as they are.
func (fs *fakeSender) writeRaw(b []byte) error {
	fs.wmu.Lock()
	defer fs.wmu.Unlock()
	_, err := fs.media.Write(b)
	return err
}

func (fs *fakeSender) sendSDES(name string) {
	fs.t.Helper()
	fs.sendSDESMode(name, "")
}

// sendSDESMode sends the stream's name and the mode the sender states.
func (fs *fakeSender) sendSDESMode(name, mode string) {
	fs.t.Helper()
	p, err := framer.MarshalSDES(fs.ssrc, "test@replenish", name, mode)
	if err != nil {
		fs.t.Fatalf("MarshalSDES: %v", err)
	}
	if err := fs.write(p); err != nil {
		fs.t.Fatalf("sending SDES: %v", err)
	}
}

// sendFrame sends one VP8 frame captured at capture and returns its RTP
// timestamp.
func (fs *fakeSender) sendFrame(frame []byte, capture time.Time) (uint32, error) {
	pkts, ts, err := fs.pk.Packetize(frame, capture)
	if err != nil {
		return 0, err
	}
	return ts, fs.write(pkts...)
}

func (fs *fakeSender) sendReport(r framer.SenderReport) {
	fs.t.Helper()
	p, err := r.Marshal(fs.ssrc)
	if err != nil {
		fs.t.Fatalf("marshalling report: %v", err)
	}
	if err := fs.write(p); err != nil {
		fs.t.Fatalf("sending report: %v", err)
	}
}

// stream sends frames every interval until ctx is done: a keyframe first
// and whenever a PLI arrived, deltas otherwise. It returns how many it
// sent.
func (fs *fakeSender) stream(ctx context.Context, interval time.Duration, size int) int {
	n := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		key := n == 0 || fs.wantKey.Swap(false)
		if _, err := fs.sendFrame(fakeVP8(key, 320, 180, size), time.Now()); err != nil {
			return n
		}
		n++
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}

// page is a WebSocket client standing in for the browser page.
type page struct {
	conn *websocket.Conn
}

func dialPage(t *testing.T, ts *testServer, hdr http.Header, edit func(*websocket.Dialer)) (*page, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	if edit != nil {
		edit(&d)
	}
	u := url.URL{Scheme: "ws", Host: ts.http, Path: "/ws"}
	conn, resp, err := d.Dial(u.String(), hdr)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { conn.Close() })
	return &page{conn: conn}, resp, nil
}

func mustDialPage(t *testing.T, ts *testServer) *page {
	t.Helper()
	var hdr http.Header
	if ts.cfg.Token != "" {
		hdr = http.Header{"Authorization": {"Bearer " + ts.cfg.Token}}
	}
	p, _, err := dialPage(t, ts, hdr, nil)
	if err != nil {
		t.Fatalf("dialing /ws: %v", err)
	}
	return p
}

// next reads the next message, failing the test on error.
func (p *page) next(t *testing.T) (int, []byte) {
	t.Helper()
	p.conn.SetReadDeadline(time.Now().Add(waitLimit))
	typ, data, err := p.conn.ReadMessage()
	if err != nil {
		t.Fatalf("page read: %v", err)
	}
	return typ, data
}

// nextFrame reads messages until a frame arrives and returns its header.
func (p *page) nextFrame(t *testing.T) (FrameHeader, []byte) {
	t.Helper()
	for {
		typ, data := p.next(t)
		if typ != websocket.BinaryMessage {
			continue
		}
		h, vp8, err := ParseFrameHeader(data)
		if err != nil {
			t.Fatalf("frame header: %v", err)
		}
		return h, vp8
	}
}

// hello reads the hello message and returns the page's client id.
func (p *page) hello(t *testing.T) uint32 {
	t.Helper()
	typ, data := p.next(t)
	var m helloMessage
	if typ != websocket.TextMessage || json.Unmarshal(data, &m) != nil || m.Type != "hello" {
		t.Fatalf("first message %q, want hello", data)
	}
	return m.Client
}

func (p *page) sendJSON(t *testing.T, v any) {
	t.Helper()
	if err := p.conn.WriteJSON(v); err != nil {
		t.Fatalf("page write: %v", err)
	}
}

// closed waits until the viewer closes the page's connection.
func (p *page) closed(t *testing.T) {
	t.Helper()
	p.conn.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		if _, _, err := p.conn.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("viewer did not close the page")
			}
			return
		}
	}
}
