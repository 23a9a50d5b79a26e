package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/certs"
	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/sender"
	"replenish/transport"
	roq "replenish/transport/quic"
)

// The sender, with the fake encoder, over QUIC to the viewer on loopback:
// pinned to the viewer's fingerprint, its frames arrive and /api/stats
// says how (transport, the sender's mode, the fingerprint). A keyframe
// request from a page reaches the sender over the viewer's feedback stream.
func TestQUICSenderToViewer(t *testing.T) {
	ts := startServer(t, nil)
	mode := transport.Mode{Policy: transport.Replenish, ReplenishTime: 15 * time.Millisecond}
	src := media.NewSource(media.SourceConfig{FPS: 30, Name: "over-quic"})
	s, err := sender.New(sender.Config{Source: src, Name: "over-quic", Mode: mode.String(), MaxSize: media.Size{W: 320, H: 180},
		NewEncoder: sender.NewEncoderOf(fakecodec.NewEncoder), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := certs.ClientTLS(ts.Fingerprint(), nil, "", framer.RoQALPN)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { src.Run(ctx) })
	wg.Go(func() {
		defer s.Close()
		s.Connect(ctx, sender.ConnectConfig{Dial: roq.Dialer(ts.media, roq.Config{Mode: mode, TLS: tc}), ProbeAddr: ts.media})
	})

	var st StreamStats
	eventually(t, "30 frames over QUIC", func() bool {
		st, _ = ts.stats(t).stream("over-quic")
		return st.FramesReceived >= 30
	})
	if st.Transport != "quic" || st.Mode != "replenish=15ms" || !st.Connected || st.FramesLost != 0 || st.FramesUndecodable != 0 {
		t.Errorf("stream %+v, want a connected quic stream in replenish=15ms with nothing lost", st)
	}
	doc := rawStats(t, ts)
	if fp := doc["tls_fingerprint"]; fp != ts.Fingerprint().String() || !strings.HasPrefix(ts.Fingerprint().String(), "sha256:") {
		t.Errorf("tls_fingerprint %v, want %v", fp, ts.Fingerprint())
	}

	page := mustDialPage(t, ts)
	page.hello(t)
	h, _ := page.nextFrame(t)
	keys := st.Keyframes
	page.sendJSON(t, map[string]any{"type": "keyframe", "stream": h.Stream})
	eventually(t, "a keyframe after the page's request", func() bool {
		st, _ = ts.stats(t).stream("over-quic")
		return st.Keyframes > keys
	})
}

// rawStats returns /api/stats as JSON objects, to check field names.
func rawStats(t *testing.T, ts *testServer) map[string]any {
	t.Helper()
	resp, err := http.Get(ts.url("/api/stats"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// A sender that pins another fingerprint is refused with an error that
// says so, and the viewer makes no stream of it.
func TestQUICWrongPinRefused(t *testing.T) {
	ts := startServer(t, nil)
	wrong := ts.Fingerprint()
	wrong[0] ^= 0xff
	tc, err := certs.ClientTLS(wrong, nil, "", framer.RoQALPN)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	conn, err := roq.Dialer(ts.media, roq.Config{TLS: tc})(ctx, transport.Handler{})
	if err == nil {
		conn.Close()
		t.Fatal("connected to a viewer whose certificate does not match the pin")
	}
	if !errors.Is(err, certs.ErrPinMismatch) || !strings.Contains(err.Error(), "pinned fingerprint") ||
		!strings.Contains(err.Error(), ts.Fingerprint().String()) {
		t.Errorf("error %q does not say that the viewer's certificate (%v) is not the pinned one", err, ts.Fingerprint())
	}
	if n := len(ts.stats(t).Streams); n != 0 {
		t.Errorf("%d streams after a refused connection", n)
	}
}

// A hand-driven sender over one QUIC stream: its name, mode and frames
// arrive, and a page's keyframe request comes back on the viewer's
// feedback stream.
func TestQUICOneStream(t *testing.T) {
	ts := startServer(t, nil)
	page := mustDialPage(t, ts)
	page.hello(t)
	fs := dialQUICSender(t, ts, "")
	fs.sendSDESMode("q", "default")
	for i := range 10 {
		if _, err := fs.sendFrame(fakeVP8(i == 0, 320, 180, 3000+i), time.Now()); err != nil {
			t.Fatal(err)
		}
		if h, _ := page.nextFrame(t); h.Frame != uint32(i) {
			t.Fatalf("frame %d reached the page as %d", i, h.Frame)
		}
	}
	s, _ := ts.stats(t).stream("q")
	if s.FramesReceived != 10 || s.Transport != "quic" || s.Mode != "default" || s.Keyframes != 1 || s.FramesUndecodable != 0 {
		t.Errorf("stream %+v", s)
	}
	page.sendJSON(t, map[string]any{"type": "keyframe", "stream": s.ID})
	eventually(t, "the PLI over QUIC", func() bool { return fs.plis.Load() == 1 })
}

// frameStreams is a hand-driven sender in the expire mode's manner: each
// frame on a unidirectional stream of its own.
type frameStreams struct {
	*fakeSender
	n int // frames made
}

func dialFrameStreams(t *testing.T, ts *testServer, name string) *frameStreams {
	fs := dialQUICSender(t, ts, name) // its own stream carries the name only
	if err := fs.media.(*quic.SendStream).Close(); err != nil {
		t.Fatal(err)
	}
	return &frameStreams{fakeSender: fs}
}

// open packetizes the next frame (several packets), opens its stream and
// writes the flow identifier; the caller writes the packets.
func (f *frameStreams) open(t *testing.T, key bool) (*quic.SendStream, [][]byte, uint32) {
	t.Helper()
	pkts, ts, err := f.pk.Packetize(fakeVP8(key, 320, 180, 3000+f.n), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.n++
	if len(pkts) < 2 {
		t.Fatalf("a frame in %d packets; the test needs several", len(pkts))
	}
	s, err := f.qc.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(roqHeader()); err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(pkts))
	for i, p := range pkts {
		out[i] = slices.Clone(p)
	}
	return s, out, ts
}

func writePackets(t *testing.T, s *quic.SendStream, pkts ...[]byte) {
	t.Helper()
	var b []byte
	for _, p := range pkts {
		var err error
		if b, err = framer.AppendRoQPacket(b, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Write(b); err != nil {
		t.Fatal(err)
	}
}

// send sends a frame whole on its own stream and returns its RTP timestamp.
func (f *frameStreams) send(t *testing.T, key bool) uint32 {
	t.Helper()
	ts, err := f.trySend(key)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// trySend is send that returns the error of the connection.
func (f *frameStreams) trySend(key bool) (uint32, error) {
	pkts, ts, err := f.pk.Packetize(fakeVP8(key, 320, 180, 3000+f.n), time.Now())
	if err != nil {
		return 0, err
	}
	f.n++
	s, err := f.qc.OpenUniStream()
	if err != nil {
		return 0, err
	}
	b := roqHeader()
	for _, p := range pkts {
		if b, err = framer.AppendRoQPacket(b, p); err != nil {
			return 0, err
		}
	}
	if _, err := s.Write(b); err != nil {
		return 0, err
	}
	return ts, s.Close()
}

// offered returns how many frames of stream the viewer offered its only
// page: sent, or dropped from its queue (a keyframe replaces the frames
// queued before it).
func offered(t *testing.T, ts *testServer, stream uint32) uint64 {
	t.Helper()
	for _, c := range ts.stats(t).Clients {
		for _, cs := range c.Streams {
			if cs.Stream == stream {
				return cs.FramesSent + cs.FramesDropped
			}
		}
	}
	return 0
}

// pageFrames reads frames until the one with RTP timestamp last, and
// returns the timestamps of those it got, in order.
func pageFrames(t *testing.T, p *page, last uint32) []uint32 {
	t.Helper()
	var got []uint32
	for {
		h, _ := p.nextFrame(t)
		got = append(got, h.RTPTimestamp)
		if h.RTPTimestamp == last {
			return got
		}
	}
}

// recorder keeps the viewer's records.
type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) add(rec Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// undecodable returns the RTP timestamps of the frames recorded received
// but undecodable, and the losses recorded.
func (r *recorder) undecodable() (ts []uint32, lost []Record) {
	for _, rec := range r.all() {
		switch {
		case rec.Kind == RecordReceived && rec.Undecodable:
			ts = append(ts, rec.RTPTimestamp)
		case rec.Kind == RecordLost:
			lost = append(lost, rec)
		}
	}
	return ts, lost
}

// In the expire mode's manner: a frame whose stream the sender resets part
// way never reaches the page, nor do the delta frames after it until the
// next keyframe. The viewer counts them as undecodable, records them, and
// asks the sender for a keyframe.
func TestQUICResetFrame(t *testing.T) {
	var rec recorder
	ts := startServer(t, func(c *Config) { c.OnRecord = rec.add })
	page := mustDialPage(t, ts)
	page.hello(t)
	f := dialFrameStreams(t, ts, "expire")
	k0 := f.send(t, true)
	d1 := f.send(t, false)
	// A keyframe replaces the frames still queued for a page: take these
	// before the next one comes.
	if got, want := pageFrames(t, page, d1), []uint32{k0, d1}; !slices.Equal(got, want) {
		t.Fatalf("the page got frames %v, want %v", got, want)
	}
	s, pkts, _ := f.open(t, false)
	writePackets(t, s, pkts[0])
	s.CancelWrite(1) // d2 expired
	d3 := f.send(t, false)
	d4 := f.send(t, false)
	k5 := f.send(t, true)
	d6 := f.send(t, false)
	if got, want := pageFrames(t, page, d6), []uint32{k5, d6}; !slices.Equal(got, want) {
		t.Errorf("the page got frames %v, want %v (none of the lost frame's dependants)", got, want)
	}
	st, _ := ts.stats(t).stream("expire")
	if st.FramesReceived != 6 || st.FramesLost != 1 || st.FramesUndecodable != 3 || st.KeyframeRequests == 0 {
		t.Errorf("stream %+v, want 6 received, 1 lost, 3 undecodable, a keyframe request", st)
	}
	if n := offered(t, ts, st.ID); n != 4 {
		t.Errorf("%d frames offered to the page, want 4", n)
	}
	eventually(t, "the keyframe request at the sender", func() bool { return f.plis.Load() > 0 })
	undecodable, lost := rec.undecodable()
	if !slices.Equal(undecodable, []uint32{d3, d4}) {
		t.Errorf("recorded undecodable %v, want %v", undecodable, []uint32{d3, d4})
	}
	if len(lost) != 1 || lost[0].Lost != 1 || lost[0].LostReason != LostReset || lost[0].Name != "expire" {
		t.Errorf("recorded losses %+v, want one reset frame", lost)
	}
}

// Frames reach the page in the order of their streams: a frame that
// completes before an earlier one waits for it, and a frame whose earlier
// neighbour's stream is then reset is undecodable.
func TestQUICFramesInStreamOrder(t *testing.T) {
	ts := startServer(t, nil)
	page := mustDialPage(t, ts)
	page.hello(t)
	f := dialFrameStreams(t, ts, "order")
	k0 := f.send(t, true)
	if h, _ := page.nextFrame(t); h.RTPTimestamp != k0 {
		t.Fatalf("first frame %+v", h)
	}
	s1, p1, d1 := f.open(t, false)
	writePackets(t, s1, p1[0])
	d2 := f.send(t, false)
	// d2 is whole, and must wait: absence needs only a short look.
	time.Sleep(200 * time.Millisecond)
	if st, _ := ts.stats(t).stream("order"); st.FramesReceived != 1 {
		t.Fatalf("%d frames received while the first delta is incomplete, want 1", st.FramesReceived)
	}
	writePackets(t, s1, p1[1:]...)
	s1.Close()
	if got, want := pageFrames(t, page, d2), []uint32{d1, d2}; !slices.Equal(got, want) {
		t.Fatalf("page got %v, want %v", got, want)
	}

	s3, p3, _ := f.open(t, false)
	writePackets(t, s3, p3[:len(p3)-1]...) // all but its last packet
	d4 := f.send(t, false)
	s3.CancelWrite(1)
	k5 := f.send(t, true)
	if got, want := pageFrames(t, page, k5), []uint32{k5}; !slices.Equal(got, want) {
		t.Errorf("page got %v, want %v: %d depends on the reset frame", got, want, d4)
	}
	st, _ := ts.stats(t).stream("order")
	if st.FramesReceived != 5 || st.FramesLost != 1 || st.FramesUndecodable != 2 {
		t.Errorf("stream %+v, want 5 received, 1 lost, 2 undecodable", st)
	}
	if n := offered(t, ts, st.ID); n != 4 {
		t.Errorf("%d frames offered to the page, want 4", n)
	}
}

// A gap in RTP sequence numbers (a frame never sent) is a lost frame over
// either transport, with the same consequences as a reset one.
func TestSequenceGap(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(*testing.T, *testServer, string) *fakeSender
	}{
		{"tcp", func(t *testing.T, ts *testServer, name string) *fakeSender { return dialSender(t, ts, name) }},
		{"quic", dialQUICSender},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			ts := startServer(t, func(c *Config) { c.OnRecord = rec.add })
			page := mustDialPage(t, ts)
			page.hello(t)
			fs := tc.dial(t, ts, "gap")
			send := func(key bool) uint32 {
				ts, err := fs.sendFrame(fakeVP8(key, 320, 180, 3000), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				return ts
			}
			k0, d1 := send(true), send(false)
			if got, want := pageFrames(t, page, d1), []uint32{k0, d1}; !slices.Equal(got, want) {
				t.Fatalf("page got %v, want %v", got, want)
			}
			if _, _, err := fs.pk.Packetize(fakeVP8(false, 320, 180, 3000), time.Now()); err != nil {
				t.Fatal(err) // d2: numbered, never sent
			}
			send(false)
			k4, d5 := send(true), send(false)
			if got, want := pageFrames(t, page, d5), []uint32{k4, d5}; !slices.Equal(got, want) {
				t.Errorf("page got %v, want %v", got, want)
			}
			st, _ := ts.stats(t).stream("gap")
			if st.FramesLost != 1 || st.FramesUndecodable != 2 || st.KeyframeRequests == 0 || st.Transport != tc.name {
				t.Errorf("stream %+v, want 1 lost, 2 undecodable, a keyframe request, transport %s", st, tc.name)
			}
			if n := offered(t, ts, st.ID); n != 4 {
				t.Errorf("%d frames offered to the page, want 4", n)
			}
			if _, lost := rec.undecodable(); len(lost) != 1 || lost[0].LostReason != LostGap {
				t.Errorf("recorded losses %+v, want one gap", lost)
			}
		})
	}
}

// A head stream that never ends holds the frames behind it, within
// bounds: past the byte budget, or after the stall timeout, the viewer
// drops the connection.
func TestQUICHeldFramesBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		frames int
	}{
		{"budget", func(c *Config) { c.MaxFrameSize = 4000; c.StallTimeout = time.Hour }, 20},
		{"stall", func(c *Config) { c.StallTimeout = 300 * time.Millisecond }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.edit)
			f := dialFrameStreams(t, ts, "held")
			f.send(t, true)
			eventually(t, "the keyframe", func() bool { s, _ := ts.stats(t).stream("held"); return s.FramesReceived == 1 })
			s, pkts, _ := f.open(t, false)
			writePackets(t, s, pkts[0]) // never finished
			for range tc.frames {
				if _, err := f.trySend(false); err != nil {
					break // the viewer has closed the connection
				}
			}
			f.closedByViewer(t)
			eventually(t, "stream disconnected", func() bool { s, ok := ts.stats(t).stream("held"); return ok && !s.Connected })
			if s, _ := ts.stats(t).stream("held"); s.FramesReceived != 1 {
				t.Errorf("%d frames received past the open stream, want 1", s.FramesReceived)
			}
		})
	}
}

// Malformed RoQ framing ends that sender's connection; a stream of another
// flow is left unread and the connection goes on.
func TestQUICFraming(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.StallTimeout = time.Hour })
	f := dialFrameStreams(t, ts, "flows")
	f.send(t, true)
	other, err := f.qc.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	flow7, _ := framer.AppendRoQStreamHeader(nil, 7)
	other.Write(append(flow7, bytes.Repeat([]byte{1}, 100)...)) // flow 7: not media
	other.Close()
	f.send(t, false)
	eventually(t, "both frames", func() bool { s, _ := ts.stats(t).stream("flows"); return s.FramesReceived == 2 && s.Connected })

	bad, err := f.qc.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	bad.Write(append(roqHeader(), 0)) // a zero-length packet
	bad.Close()
	f.closedByViewer(t)
	eventually(t, "stream disconnected", func() bool { s, ok := ts.stats(t).stream("flows"); return ok && !s.Connected })
}
