package viewer

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"replenish/framer"
)

func TestPartsOf(t *testing.T) {
	capture := time.Unix(1_700_000_000, 0)
	timing := framer.FrameTiming{
		RTPTimestamp: 1, Capture: capture,
		EncodeStart: 3 * time.Millisecond, EncodeEnd: 9 * time.Millisecond,
		WriteStart: 10 * time.Millisecond, LeftHost: 25 * time.Millisecond,
	}
	unknown := func(f func(*framer.FrameTiming)) framer.FrameTiming { ft := timing; f(&ft); return ft }
	for _, tc := range []struct {
		name     string
		ft       framer.FrameTiming
		received time.Time
		offset   time.Duration
		want     frameParts
	}{
		{
			name: "all known, same clock", ft: timing, received: capture.Add(40 * time.Millisecond),
			want: frameParts{wait: 3 * time.Millisecond, encode: 6 * time.Millisecond, sourceDelay: 15 * time.Millisecond, network: 15 * time.Millisecond,
				hasWait: true, hasEncode: true, hasSourceDelay: true, hasNetwork: true},
		},
		{
			// The viewer's clock is 1 s ahead: the frame left at
			// capture+25ms sender time = capture+1.025s viewer time.
			name: "viewer clock ahead", ft: timing, received: capture.Add(1040 * time.Millisecond), offset: time.Second,
			want: frameParts{wait: 3 * time.Millisecond, encode: 6 * time.Millisecond, sourceDelay: 15 * time.Millisecond, network: 15 * time.Millisecond,
				hasWait: true, hasEncode: true, hasSourceDelay: true, hasNetwork: true},
		},
		{
			name: "left host unknown", ft: unknown(func(f *framer.FrameTiming) { f.LeftHost = framer.UnknownDuration }), received: capture,
			want: frameParts{wait: 3 * time.Millisecond, encode: 6 * time.Millisecond, hasWait: true, hasEncode: true},
		},
		{
			name: "encode unknown", ft: unknown(func(f *framer.FrameTiming) { f.EncodeStart = framer.UnknownDuration }), received: capture.Add(40 * time.Millisecond),
			want: frameParts{sourceDelay: 15 * time.Millisecond, network: 15 * time.Millisecond, hasSourceDelay: true, hasNetwork: true},
		},
		{
			name: "capture unknown", ft: unknown(func(f *framer.FrameTiming) { f.Capture = time.Time{} }), received: capture.Add(40 * time.Millisecond),
			want: frameParts{wait: 3 * time.Millisecond, encode: 6 * time.Millisecond, sourceDelay: 15 * time.Millisecond,
				hasWait: true, hasEncode: true, hasSourceDelay: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := partsOf(tc.ft, tc.received, tc.offset); got != tc.want {
				t.Fatalf("partsOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestJoiner(t *testing.T) {
	at := time.Unix(100, 0)
	ft := func(ts uint32) framer.FrameTiming { return framer.FrameTiming{RTPTimestamp: ts} }

	t.Run("frame first", func(t *testing.T) {
		j := newJoiner(4)
		if _, _, ok := j.received(10, at); ok {
			t.Fatal("joined with nothing")
		}
		got, ok := j.timing(ft(10), time.Second)
		if !ok || !got.Equal(at) || j.len() != 0 {
			t.Fatalf("timing: %v %v, %d left", got, ok, j.len())
		}
	})
	t.Run("timing first", func(t *testing.T) {
		j := newJoiner(4)
		if _, ok := j.timing(ft(10), time.Second); ok {
			t.Fatal("joined with nothing")
		}
		got, off, ok := j.received(10, at)
		if !ok || got.RTPTimestamp != 10 || off != time.Second || j.len() != 0 {
			t.Fatalf("received: %v %v %v, %d left", got, off, ok, j.len())
		}
	})
	t.Run("bounded, oldest forgotten", func(t *testing.T) {
		j := newJoiner(4)
		for ts := range uint32(10) {
			j.received(ts, at)
			if j.len() > 4 {
				t.Fatalf("%d entries, cap 4", j.len())
			}
		}
		if _, ok := j.timing(ft(5), 0); ok {
			t.Error("frame 5 should have been forgotten")
		}
		if _, ok := j.timing(ft(9), 0); !ok {
			t.Error("frame 9 should still be there")
		}
	})
	t.Run("joined entries free their slots", func(t *testing.T) {
		j := newJoiner(2)
		for ts := range uint32(100) {
			j.received(ts, at)
			if _, ok := j.timing(ft(ts), 0); !ok {
				t.Fatalf("frame %d not joined", ts)
			}
		}
		if j.len() != 0 {
			t.Fatalf("%d entries left", j.len())
		}
	})
}

func TestFrameHeader(t *testing.T) {
	h := FrameHeader{
		Stream: 7, Frame: 1 << 31, Key: true, RTPTimestamp: 0xDEADBEEF, Width: 1280, Height: 720, SSRC: 42,
		Capture: time.UnixMicro(1_700_000_000_123_456), Received: time.UnixMicro(1_700_000_000_200_000),
		ClockOffset: -1500 * time.Microsecond, OffsetKnown: true,
	}
	msg := append(h.Append(nil), 1, 2, 3)
	if len(msg) != FrameHeaderSize+3 {
		t.Fatalf("%d bytes, want %d", len(msg), FrameHeaderSize+3)
	}
	got, rest, err := ParseFrameHeader(msg)
	if err != nil || got != h || !bytes.Equal(rest, []byte{1, 2, 3}) {
		t.Fatalf("round trip: %+v %v %v, want %+v", got, rest, err, h)
	}
	// Temporal layers, each TID with and without layer sync.
	for tid := range uint8(4) {
		for _, sync := range []bool{false, true} {
			l := h
			l.Layered, l.TID, l.LayerSync = true, tid, sync
			b := l.Append(nil)
			if want := byte(flagKey | flagOffsetKnown | flagLayered | tid<<4); sync && b[1] != want|flagLayerSync || !sync && b[1] != want {
				t.Fatalf("TID %d sync %v: flags %08b", tid, sync, b[1])
			}
			if got, _, err := ParseFrameHeader(b); err != nil || got != l {
				t.Fatalf("layered round trip: %+v %v, want %+v", got, err, l)
			}
		}
	}
	// Layer bits without the layered bit, and the reserved bit, are
	// ignored.
	odd := bytes.Clone(msg)
	odd[1] |= 0xB8
	if got, _, err := ParseFrameHeader(odd); err != nil || got != h {
		t.Fatalf("stray flag bits: %+v %v, want %+v", got, err, h)
	}
	// A catch-up frame: the flag, in a copy of the message.
	c := withCatchUp(msg)
	if msg[1]&flagCatchUp != 0 || c[1] != msg[1]|1<<6 || !bytes.Equal(c[2:], msg[2:]) {
		t.Fatalf("catch-up copy: flags %08b from %08b", c[1], msg[1])
	}
	want := h
	want.CatchUp = true
	if got, _, err := ParseFrameHeader(c); err != nil || got != want || !bytes.Equal(want.Append(nil), c[:FrameHeaderSize]) {
		t.Fatalf("catch-up round trip: %+v %v, want %+v", got, err, want)
	}
	// A later version's longer header: the frame starts after it.
	long := append([]byte(nil), msg[:FrameHeaderSize]...)
	long[3] = FrameHeaderSize + 4
	long = append(long, 9, 9, 9, 9, 5)
	if _, rest, err := ParseFrameHeader(long); err != nil || !bytes.Equal(rest, []byte{5}) {
		t.Fatalf("longer header: %v %v", rest, err)
	}
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"empty", nil},
		{"short", msg[:FrameHeaderSize-1]},
		{"wrong version", append([]byte{2}, msg[1:]...)},
		{"header length too small", func() []byte { b := bytes.Clone(msg); b[3] = 10; return b }()},
		{"header length past the end", func() []byte { b := bytes.Clone(msg); b[2] = 1; return b }()},
		{"clock offset out of range", func() []byte { b := bytes.Clone(msg); b[40] = 0x7F; return b }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ParseFrameHeader(tc.msg); !errors.Is(err, ErrBadHeader) {
				t.Fatalf("err %v, want ErrBadHeader", err)
			}
		})
	}
}

func FuzzParseFrameHeader(f *testing.F) {
	f.Add(FrameHeader{Stream: 1, Key: true}.Append(nil))
	f.Add(FrameHeader{Stream: 1, Layered: true, TID: 2, LayerSync: true}.Append(nil))
	f.Add([]byte{1, 0, 0, 48})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, rest, err := ParseFrameHeader(b)
		if err != nil {
			return
		}
		if len(rest) > len(b)-FrameHeaderSize {
			t.Fatalf("rest of %d bytes from a %d-byte message", len(rest), len(b))
		}
		// What parses re-encodes to the same fixed fields.
		again, _, err := ParseFrameHeader(append(h.Append(nil), rest...))
		if err != nil || again != h {
			t.Fatalf("re-encoded %+v: %+v %v", h, again, err)
		}
	})
}

func FuzzPageMessage(f *testing.F) {
	f.Add([]byte(`{"type":"keyframe","stream":1}`))
	f.Add([]byte(`{"type":"report","frames":[{"stream":1,"frame":0,"ok":true,"capture_ms":1,"display_ms":2,"decode_ms":1,"draw_ms":1,"arrived_ms":1}]}`))
	f.Add([]byte(`{"type":"report","frames":[{"stream":1,"display_ms":-1}]}`))
	s, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	s.streams = []*stream{newStream(1, "s", "x", &s.cfg)}
	c := newClient(1, "x", nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := s.onPageMessage(c, b, time.Unix(1000, 0))
		if err != nil && !errors.Is(err, ErrBadPageMessage) {
			t.Fatalf("error %v does not wrap ErrBadPageMessage", err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cs := range c.streams {
			for _, v := range cs.g2g.Values(time.Unix(1000, 0)) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("g2g sample %v", v)
				}
			}
		}
	})
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestReportWindowsBounded(t *testing.T) {
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	const capacity = 8
	ts := startServerWith(t, func(c *Config) {
		c.ReportCap = capacity
		c.ClientQueue = 32 // the test's burst of frames must all reach the page
		c.ReportWindow = 10 * time.Second
	}, func(s *Server) { s.now = clock.now })
	fs := dialSender(t, ts, "s")
	page := mustDialPage(t, ts)
	id := page.hello(t)
	var rtp []uint32
	for range 20 {
		ts1, err := fs.sendFrame(fakeVP8(len(rtp) == 0, 160, 90, 100), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rtp = append(rtp, ts1)
	}
	var frames []map[string]any
	for range 20 {
		h, _ := page.nextFrame(t)
		frames = append(frames, map[string]any{"stream": h.Stream, "frame": h.Frame, "ok": true,
			"capture_ms": 1e12, "display_ms": 1e12 + 50, "decode_ms": 1, "draw_ms": 1})
	}
	page.sendJSON(t, map[string]any{"type": "report", "frames": frames})
	var timings []framer.FrameTiming
	for _, ts1 := range rtp {
		timings = append(timings, framer.FrameTiming{RTPTimestamp: ts1, Capture: time.Now(),
			EncodeStart: time.Millisecond, EncodeEnd: 2 * time.Millisecond, WriteStart: 3 * time.Millisecond, LeftHost: 4 * time.Millisecond})
	}
	fs.sendReport(framer.SenderReport{Frames: timings})

	client := func() ClientStats {
		for _, c := range ts.Stats().Clients {
			if c.ID == id {
				return c
			}
		}
		t.Fatal("page not in stats")
		return ClientStats{}
	}
	eventually(t, "all 20 reports", func() bool { return client().FramesDisplayed == 20 })
	eventually(t, "the sender's timings", func() bool { s, _ := ts.Stats().stream("s"); return known(s.Parts.Encode.P50) })
	if c := client(); c.G2G.N != capacity || c.Streams[0].G2G.N != capacity {
		t.Fatalf("g2g holds %d samples, want the cap %d", c.G2G.N, capacity)
	}

	// Ten seconds later the windows are empty: percentiles are null, the
	// counters stay.
	clock.advance(10*time.Second + time.Millisecond)
	c := client()
	if c.G2G.N != 0 || known(c.G2G.P50) || known(c.Decode.P50) || c.FramesDisplayed != 20 {
		t.Fatalf("after the window: %+v", c)
	}
	if s, _ := ts.Stats().stream("s"); known(s.Parts.Encode.P50) || s.FPS != 0 {
		t.Fatalf("stream after the window: %+v", s)
	}
}

// TestFrameQueue checks a native player's queue.
func TestFrameQueue(t *testing.T) {
	type step struct {
		key     bool
		wantKey bool // offer asks for a keyframe
	}
	k, d := step{key: true}, step{}
	dk := step{wantKey: true} // a delta that is dropped and asks for a keyframe
	for _, tc := range []struct {
		name        string
		steps       []step
		wantQueue   []uint64 // seq of queued frames (1-based step index)
		wantDropped uint64
	}{
		{"deltas before the first keyframe are skipped, uncounted", []step{dk, dk, k, d}, []uint64{3, 4}, 0},
		{"fills to depth", []step{k, d, d}, []uint64{1, 2, 3}, 0},
		{"overflow drops queue and frame", []step{k, d, d, dk}, nil, 4},
		{"then skips deltas until a keyframe", []step{k, d, d, dk, dk, dk, k, d}, []uint64{7, 8}, 6},
		{"a keyframe replaces what is queued", []step{k, d, k}, []uint64{3}, 2},
		{"a keyframe on a full queue", []step{k, d, d, k}, []uint64{4}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q frameQueue
			for i, s := range tc.steps {
				f := &outFrame{seq: uint64(i + 1), stream: 1, key: s.key}
				if _, got := q.offer(f, 3); got != s.wantKey {
					t.Fatalf("step %d: offer asked for a keyframe: %v, want %v", i+1, got, s.wantKey)
				}
			}
			var queued []uint64
			for _, f := range q.queue {
				queued = append(queued, f.seq)
			}
			if !slices.Equal(queued, tc.wantQueue) || q.dropped != tc.wantDropped {
				t.Fatalf("queue %v dropped %d, want %v and %d", queued, q.dropped, tc.wantQueue, tc.wantDropped)
			}
			for range queued {
				q.pop()
			}
			if q.sent != uint64(len(queued)) || len(q.queue) != 0 {
				t.Fatalf("sent %d, %d left", q.sent, len(q.queue))
			}
		})
	}
}

func TestNextFrameOrder(t *testing.T) {
	cfg := Config{ClientQueue: 4, ReportWindow: time.Second, ReportCap: 4}
	c := newClient(1, "x", nil)
	for i, stream := range []uint32{1, 2, 2, 1, 3} {
		c.offer(&outFrame{seq: uint64(i + 1), stream: stream, key: true}, nil, &cfg)
	}
	// Keyframes replace queued frames of the same stream: left are
	// stream 2's seq 3, stream 1's seq 4 and stream 3's seq 5.
	var got []uint64
	for f, _ := c.nextFrameLocked(true); f != nil; f, _ = c.nextFrameLocked(true) {
		got = append(got, f.seq)
	}
	if want := []uint64{3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (oldest first across streams)", got, want)
	}
}

func TestIsNormalClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"going away, wrapped", fmt.Errorf("reading: %w", &websocket.CloseError{Code: websocket.CloseGoingAway}), true},
		{"normal", &websocket.CloseError{Code: websocket.CloseNormalClosure}, true},
		{"abnormal", &websocket.CloseError{Code: websocket.CloseAbnormalClosure}, false},
		{"other error", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := isNormalClose(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
