//go:build cgo

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"replenish/internal/headless"
	"replenish/internal/rig"
	"replenish/media"
	"replenish/media/vpx"
	"replenish/metrics"
	"replenish/sender"
	"replenish/transport/tcp"
	"replenish/viewer"
)

// newVP8 makes the senders' encoders: real VP8, for the browser to decode
// and the stamps to survive.
var newVP8 = sender.NewEncoderOf(vpx.NewEncoder)

// eventually polls cond every 50 ms until it holds or 30 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func streamNamed(st viewer.Stats, name string) (viewer.StreamStats, bool) {
	for _, s := range st.Streams {
		if s.Name == name {
			return s, true
		}
	}
	return viewer.StreamStats{}, false
}

func known(f float64) bool { return !math.IsNaN(f) }

// TestLoopbackSenderToViewer runs the real sender (replenish mode, TCP) into
// the real viewer and checks what the viewer measured: frames at the
// source's rate, at the resolution asked for, with each frame's parts
// joined from the sender's timing reports, departures stamped by the kernel.
func TestLoopbackSenderToViewer(t *testing.T) {
	var mu sync.Mutex
	received := map[uint32]bool{} // RTP timestamps
	r, err := rig.Start(t.Context(), rig.Config{NewEncoder: newVP8, Name: "cam", OnRecord: func(rec viewer.Record) {
		if rec.Kind == viewer.RecordReceived {
			mu.Lock()
			received[rec.RTPTimestamp] = true
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig: %v", err)
		}
	}()
	var s viewer.StreamStats
	eventually(t, "90 frames with their parts", func() bool {
		var ok bool
		s, ok = streamNamed(r.Viewer.Stats(), "cam")
		return ok && s.FramesReceived >= 90 && known(s.Parts.SourceDelay.P50) && known(s.Parts.Network.P50)
	})
	t.Logf("stream: %d frames, %v, %.0f fps, %dx%d, parts %+v", s.FramesReceived, s.Bitrate, s.FPS, s.Width, s.Height, s.Parts)
	if !s.Connected || s.Width != 640 || s.Height != 360 || s.Keyframes < 1 {
		t.Errorf("stream %+v, want connected 640x360 with a keyframe", s)
	}
	if s.FPS < 10 || s.Bitrate <= 0 {
		t.Errorf("fps %v bitrate %v", s.FPS, s.Bitrate)
	}
	for name, q := range map[string]metrics.Percentiles{"wait": s.Parts.Wait, "encode": s.Parts.Encode, "source delay": s.Parts.SourceDelay, "network": s.Parts.Network} {
		if !known(q.P50) || q.P50 < 0 {
			t.Errorf("part %s: %+v, want a non-negative median", name, q)
		}
	}
	if !known(s.CaptureToReceived.P50) || s.CaptureToReceived.P50 <= 0 {
		t.Errorf("capture to received %+v", s.CaptureToReceived)
	}
	st := r.Sender.Status()
	if st.SourceDelayN == 0 || st.NoDeparture != 0 {
		t.Errorf("sender: %d frames with a departure time, %d without", st.SourceDelayN, st.NoDeparture)
	}
	mu.Lock()
	n := len(received)
	mu.Unlock()
	if uint64(n) != s.FramesReceived && uint64(n)+1 != s.FramesReceived && uint64(n) != s.FramesReceived+1 {
		t.Errorf("%d received records for %d frames", n, s.FramesReceived)
	}
}

// TestSenderSurvivesViewerRestart stops the viewer under a streaming sender
// and starts a new one on the same address: the sender reconnects by itself
// and the new viewer's first frame is a keyframe it can decode from.
func TestSenderSurvivesViewerRestart(t *testing.T) {
	startViewer := func(addr string) (*viewer.Server, context.CancelFunc, chan error) {
		t.Helper()
		v, err := viewer.New(viewer.Config{Listen: addr, HTTP: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- v.Run(ctx) }()
		select {
		case <-v.Ready():
		case err := <-done:
			t.Fatalf("viewer: %v", err)
		}
		return v, cancel, done
	}
	v1, stop1, done1 := startViewer("127.0.0.1:0")
	addr := func() string { m, _ := v1.Addrs(); return m.String() }()

	src := media.NewSource(media.SourceConfig{Name: "restart"})
	s, err := sender.New(sender.Config{Source: src, NewEncoder: newVP8, Name: "restart", MaxSize: media.Size{W: 320, H: 180}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { src.Run(ctx) })
	wg.Go(func() {
		s.Connect(ctx, sender.ConnectConfig{Dial: tcp.Dialer(addr, tcp.Config{})})
	})
	defer func() { cancel(); wg.Wait(); s.Close() }()

	eventually(t, "frames at the first viewer", func() bool {
		st, ok := streamNamed(v1.Stats(), "restart")
		return ok && st.FramesReceived >= 10
	})
	stop1()
	if err := <-done1; err != nil {
		t.Fatalf("first viewer: %v", err)
	}
	v2, stop2, done2 := startViewer(addr)
	defer func() { stop2(); <-done2 }()
	eventually(t, "frames at the second viewer", func() bool {
		st, ok := streamNamed(v2.Stats(), "restart")
		return ok && st.FramesReceived >= 10
	})
	st, _ := streamNamed(v2.Stats(), "restart")
	if st.Keyframes < 1 || st.Width != 320 || st.DroppedPartialFrames != 0 {
		t.Errorf("after the restart: %+v, want a keyframe at 320x180 and no partial frames", st)
	}
}

// pageStream mirrors the page's window.replenish.streams[id].
type pageStream struct {
	Name            string   `json:"name"`
	FramesDisplayed int      `json:"framesDisplayed"`
	Misreads        int      `json:"misreads"`
	StampMismatches int      `json:"stampMismatches"`
	DecoderErrors   int      `json:"decoderErrors"`
	LastG2G         *float64 `json:"lastG2G"`
	Width           int      `json:"width"`
	Height          int      `json:"height"`
}

// TestBrowserEndToEnd runs the sender and the viewer on loopback and opens
// the page in headless Chromium: frames must be displayed with readable
// pixel timestamps, and /api/stats must show them for that page.
func TestBrowserEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := headless.Path(); err != nil {
		t.Skip(err)
	}
	r, err := rig.Start(t.Context(), rig.Config{NewEncoder: newVP8, Name: "e2e", MaxSize: media.Size{W: 640, H: 360}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig: %v", err)
		}
	}()
	browser, stop, err := headless.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := chromedp.Do(browser, chromedp.Navigate(r.PageURL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	// Three seconds of frames, and the top rung: on loopback the rate
	// controller climbs there within seconds (longer under -race).
	const want = 90
	expr := fmt.Sprintf(`Object.values((window.replenish || {}).streams || {}).some((s) => s.framesDisplayed >= %d && s.width == 640)`, want)
	wctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("%d frames at 640x360 not displayed: %v", want, err)
	}
	raw, err := chromedp.Run(browser, chromedp.Evaluate[string](`JSON.stringify(window.replenish.streams)`))
	if err != nil {
		t.Fatal(err)
	}
	var streams map[string]pageStream
	if err := json.Unmarshal([]byte(raw), &streams); err != nil {
		t.Fatalf("window.replenish.streams %s: %v", raw, err)
	}
	if len(streams) != 1 {
		t.Fatalf("page streams %s, want one", raw)
	}
	for _, ps := range streams {
		t.Logf("page: %+v", ps)
		if ps.Name != "e2e" || ps.Width != 640 || ps.Height != 360 {
			t.Errorf("page stream %+v, want e2e at 640x360", ps)
		}
		if ps.Misreads*100 > ps.FramesDisplayed || ps.StampMismatches != 0 || ps.DecoderErrors != 0 {
			t.Errorf("page stream: %d misreads, %d stamp mismatches, %d decoder errors in %d frames",
				ps.Misreads, ps.StampMismatches, ps.DecoderErrors, ps.FramesDisplayed)
		}
		if ps.LastG2G == nil || *ps.LastG2G <= 0 {
			t.Errorf("page's last glass-to-glass latency %v, want a positive value", ps.LastG2G)
		}
	}

	// The same numbers through the API the scripts use.
	var client viewer.ClientStats
	eventually(t, "the page's reports in /api/stats", func() bool {
		resp, err := http.Get(r.PageURL + "api/stats")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var st viewer.Stats
		if json.Unmarshal(b, &st) != nil || len(st.Clients) != 1 {
			return false
		}
		client = st.Clients[0]
		return client.FramesDisplayed >= want && client.G2G.N > 0
	})
	t.Logf("api: %d displayed, %d misreads, g2g %+v, decode %+v", client.FramesDisplayed, client.TimestampMisreads, client.G2G, client.Decode)
	if client.TimestampMisreads*100 > client.FramesDisplayed {
		t.Errorf("%d misreads in %d frames, want under 1%%", client.TimestampMisreads, client.FramesDisplayed)
	}
	if !known(client.G2G.P50) || client.G2G.P50 <= 0 || !known(client.Decode.P50) {
		t.Errorf("g2g %+v decode %+v, want measured values", client.G2G, client.Decode)
	}
}

// TestKeyframeRequestReachesSender joins a page to a running stream: the
// viewer asks the sender for a keyframe (RTCP PLI on the media connection)
// so the page can start decoding, and the sender sends one.
func TestKeyframeRequestReachesSender(t *testing.T) {
	r, err := rig.Start(t.Context(), rig.Config{NewEncoder: newVP8, Name: "pli", MaxSize: media.Size{W: 320, H: 180}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	eventually(t, "frames after the first keyframe", func() bool {
		s, ok := streamNamed(r.Viewer.Stats(), "pli")
		return ok && s.FramesReceived >= 30
	})
	before, _ := streamNamed(r.Viewer.Stats(), "pli")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.PageURL, "http")+"ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	go func() { // keep reading, as a page does
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	var after viewer.StreamStats
	eventually(t, "a second keyframe", func() bool {
		after, _ = streamNamed(r.Viewer.Stats(), "pli")
		return after.Keyframes > before.Keyframes
	})
	if after.KeyframeRequests == 0 {
		t.Errorf("keyframe arrived without a request: %+v", after)
	}
}
