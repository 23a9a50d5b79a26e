package viewer

import (
	"context"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"

	"replenish/framer"
	"replenish/transport"
	"replenish/transport/tcp"
)

// dialSlowPage dials a page whose socket has a small receive buffer, so
// that a page that reads slowly holds little in flight and the rest waits
// on the viewer's side.
func dialSlowPage(t *testing.T, ts *testServer) *page {
	t.Helper()
	p, _, err := dialPage(t, ts, nil, func(d *websocket.Dialer) {
		nd := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<10) })
			if err != nil {
				return err
			}
			return serr
		}}
		d.NetDialContext = nd.DialContext
	})
	if err != nil {
		t.Fatalf("dialing /ws: %v", err)
	}
	return p
}

// pageUnsent returns the bytes the viewer has written to page id's socket
// that have not been sent.
func pageUnsent(t *testing.T, s *Server, id uint32) int {
	t.Helper()
	for _, c := range s.clientList() {
		if c.id == id {
			i, err := tcp.ReadInfo(tcpConnOf(c.conn.NetConn()))
			if err != nil {
				t.Fatal(err)
			}
			return i.NotsentBytes
		}
	}
	t.Fatalf("page %d is not connected", id)
	return 0
}

// newestFrame returns the id of the newest frame the viewer has of stream
// name.
func newestFrame(s *Server, name string) uint32 {
	st := s.streamByName(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.nextFrame - 1
}

// TestSlowPageGetsFreshFrames checks the page writer against a page that
// reads slower than the stream comes: with source buffer management the
// viewer's unsent backlog to the page stays within a few frames (the
// rule's limit, half the replenish time at the drain rate it measures,
// plus the frame just written), the page gets frames oldest first, and the
// frames it cannot take are dropped, to a keyframe (the stream has no
// layers). Without it (the default mode) the frames queue in the socket by
// megabytes and the page falls ever further behind: the same check, out
// of bounds.
func TestSlowPageGetsFreshFrames(t *testing.T) {
	const (
		frameSize = 16_000 // bytes
		reads     = 150
		// maxUnsent bounds the viewer's unsent backlog to the page. On
		// loopback a page that reads in bursts makes the drain estimate
		// (and so the rule's limit) jump for a few round trips, so the
		// bound allows a few frames.
		maxUnsent = 8 * frameSize
	)
	for _, managed := range []bool{true, false} {
		name := "replenish"
		if !managed {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, func(c *Config) {
				c.KeyframeInterval = 20 * time.Millisecond
				c.WriteTimeout = time.Minute
				if !managed {
					c.PageMode = transport.Mode{Policy: transport.Default}
				}
			})
			p := dialSlowPage(t, ts)
			id := p.hello(t)
			fs := dialSender(t, ts, "s")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() { done <- fs.stream(ctx, 3*time.Millisecond, frameSize) }()
			defer func() { cancel(); <-done }()

			var last FrameHeader
			unsent, lag, gaps := 0, uint32(0), 0
			for i := range reads {
				h, _ := p.nextFrame(t)
				lag = max(lag, newestFrame(ts.Server, "s")-h.Frame)
				unsent = max(unsent, pageUnsent(t, ts.Server, id))
				if i > 0 && h.Frame <= last.Frame {
					t.Fatalf("frame %d after frame %d: not oldest first", h.Frame, last.Frame)
				}
				if i > 0 && h.Frame != last.Frame+1 {
					gaps++
					if !h.Key {
						t.Fatalf("frame %d after frame %d is a delta: a gap must resume at a keyframe", h.Frame, last.Frame)
					}
				}
				last = h
				time.Sleep(8 * time.Millisecond) // the page is slow
			}
			var dropped uint64
			for _, c := range ts.Stats().Clients {
				if c.ID == id {
					dropped = c.FramesDropped
				}
			}
			t.Logf("%s: largest unsent %d bytes, largest lag behind the newest frame %d frames, %d gaps, %d frames dropped",
				name, unsent, lag, gaps, dropped)
			switch {
			case managed && (unsent > maxUnsent || gaps == 0 || dropped == 0):
				t.Errorf("a managed page: unsent up to %d bytes (at most %d), %d gaps, %d dropped; want gaps and drops",
					unsent, maxUnsent, gaps, dropped)
			case !managed && unsent <= maxUnsent:
				t.Errorf("an unmanaged page's socket held at most %d unsent bytes: the test cannot tell the two apart", unsent)
			}
		})
	}
}

// sendLayered sends one frame of fake VP8 with a temporal layer.
func (fs *fakeSender) sendLayered(key bool, size int, l framer.Layer) error {
	pkts, _, err := fs.pk.PacketizeLayer(fakeVP8(key, 320, 180, size), time.Now(), l)
	if err != nil {
		return err
	}
	return fs.write(pkts...)
}

// l1t3Stream sends n frames of the L1T3 pattern (TL0, TL2, TL1, TL2 with
// the first two upper frames layer sync frames), starting with a keyframe
// when key is set and at the TL0PICIDX after idx; it returns the last
// TL0PICIDX.
func (fs *fakeSender) l1t3Stream(t *testing.T, n int, key bool, idx uint8) uint8 {
	t.Helper()
	for i := range n {
		l := framer.Layer{Present: true}
		switch i % 4 {
		case 0:
			idx++
		case 1:
			l.TID, l.Sync = 2, true
		case 2:
			l.TID, l.Sync = 1, true
		case 3:
			l.TID = 2
		}
		l.TL0PicIdx = idx
		if err := fs.sendLayered(key && i == 0, 500, l); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// TestPageJoinsAtLatestKeyframe checks that a page that opens while a
// stream runs starts at once from the stream's latest keyframe, without a
// keyframe request: the keyframe and the base-layer frames since, marked
// catch-up, then the live frames.
func TestPageJoinsAtLatestKeyframe(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialSender(t, ts, "s")
	idx := fs.l1t3Stream(t, 12, true, 0)
	eventually(t, "the viewer to have the frames", func() bool { s, _ := ts.stats(t).stream("s"); return s.FramesReceived == 12 })

	p := mustDialPage(t, ts)
	id := p.hello(t)
	fs.l1t3Stream(t, 1, false, idx) // the next TL0 frame, live
	var got []uint32
	var catchUp []bool
	for range 4 {
		h, _ := p.nextFrame(t)
		got = append(got, h.Frame)
		catchUp = append(catchUp, h.CatchUp)
		if len(got) == 1 && !h.Key {
			t.Fatalf("the page's first frame %+v is not a keyframe", h)
		}
	}
	if want := []uint32{0, 4, 8, 12}; !slices.Equal(got, want) {
		t.Errorf("the page got frames %v, want %v: the keyframe, the TL0 frames since, the live one", got, want)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(catchUp, want) {
		t.Errorf("catch-up flags %v, want %v", catchUp, want)
	}
	if n := fs.plis.Load(); n != 0 {
		t.Errorf("%d keyframe requests: a joining page needs none", n)
	}
	for _, c := range ts.Stats().Clients {
		if c.ID == id && (c.CatchUpFrames != 3 || c.KeyframesRequested != 0 || c.FramesSentByLayer[0] != 4) {
			t.Errorf("page stats %+v, want 3 catch-up frames, 4 of TL0 sent, no keyframe requests", c.PageFrames)
		}
	}
}

// TestPageLayersReported checks that the layer a page reports of each
// displayed frame is counted, and that a layer out of range is refused.
func TestPageLayersReported(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialSender(t, ts, "s")
	fs.l1t3Stream(t, 1, true, 0)
	p := mustDialPage(t, ts)
	id := p.hello(t)
	eventually(t, "the stream", func() bool { _, ok := ts.stats(t).stream("s"); return ok })
	s, _ := ts.stats(t).stream("s")
	var frames []map[string]any
	for i, tid := range []any{0, 2, 1, 2, 0, nil} {
		f := map[string]any{"stream": s.ID, "frame": i, "ok": false, "display_ms": 1e12}
		if tid != nil {
			f["tid"] = tid
		}
		frames = append(frames, f)
	}
	p.sendJSON(t, map[string]any{"type": "report", "frames": frames})
	var layers [maxTID + 1]uint64
	eventually(t, "the report", func() bool {
		for _, c := range ts.stats(t).Clients {
			if c.ID == id && c.FramesDisplayed == 6 {
				layers = c.FramesDisplayedByLayer
				return true
			}
		}
		return false
	})
	if want := [maxTID + 1]uint64{3, 1, 2, 0}; layers != want {
		t.Errorf("displayed by layer %v, want %v", layers, want)
	}
	p.sendJSON(t, map[string]any{"type": "report", "frames": []map[string]any{{"stream": s.ID, "frame": 9, "ok": false, "display_ms": 1e12, "tid": 4}}})
	p.closed(t)
}

// TestLongCatchUpAsksForKeyframe checks that a page joining a stream whose
// latest keyframe is more base-layer frames behind than its queue holds
// starts from the cache at once and asks for a keyframe, which replaces
// what is left of the catch-up when it comes.
func TestLongCatchUpAsksForKeyframe(t *testing.T) {
	cfg := Config{ClientQueue: 4, ReportWindow: time.Second, ReportCap: 4}
	frames := framesOf(t, "K 2s 1s 2 0 2s 1s 2 0 2s 1s 2 0 2s 1s 2 0 2s 1s 2 0 K")
	for _, tc := range []struct {
		name    string
		cached  int  // frames the stream has had before the page joins
		wantKey bool // the join asks for a keyframe
	}{
		{"four base-layer frames to catch up", 12, false},
		{"six", 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stream{id: 1}
			for _, f := range frames[:tc.cached] {
				st.keys.add(f, 128, 1<<20)
			}
			live := frames[tc.cached]
			st.keys.add(live, 128, 1<<20)
			c := newClient(1, "x", nil)
			if got := c.offer(live, st, &cfg); got != tc.wantKey {
				t.Fatalf("join asked for a keyframe: %v, want %v", got, tc.wantKey)
			}
			first, catchUp := c.nextFrameLocked(true)
			if first == nil || !first.key || !catchUp {
				t.Fatalf("first frame %+v (catch-up %v), want the cached keyframe", first, catchUp)
			}
			key := frames[len(frames)-1]
			c.offer(key, st, &cfg)
			if f, catchUp := c.nextFrameLocked(true); f != key || catchUp {
				t.Fatalf("after a new keyframe the page got %+v (catch-up %v), want the keyframe", f, catchUp)
			}
		})
	}
}
