//go:build cgo

package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"replenish/media"
	"replenish/media/vpx"
	"replenish/sender"
)

// nativeCounters mirrors window.replenish.streams[id].native.
type nativeCounters struct {
	On              bool     `json:"on"`
	Connected       bool     `json:"connected"`
	FramesDisplayed int      `json:"framesDisplayed"`
	Misreads        int      `json:"misreads"`
	LastG2G         *float64 `json:"lastG2G"`
	Width           int      `json:"width"`
	Height          int      `json:"height"`
	NoStamp         bool     `json:"noStamp"`
	Error           string   `json:"error"`
}

// pageStream is window.replenish.streams[id] with its native player.
type pageStream struct {
	pageCounters
	NoStamp bool           `json:"noStamp"`
	Native  nativeCounters `json:"native"`
}

// pageStreams reads the page's per-stream counters, by stream name.
func pageStreams(t *testing.T, ctx context.Context) map[string]pageStream {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.replenish.streams)`))
	if err != nil {
		t.Fatalf("reading the page's counters: %v", err)
	}
	var byID map[string]pageStream
	if err := json.Unmarshal([]byte(raw), &byID); err != nil {
		t.Fatalf("the page's counters %s: %v", raw, err)
	}
	out := make(map[string]pageStream, len(byID))
	for _, s := range byID {
		out[s.Name] = s
	}
	return out
}

// waitPage polls expr in the page until it is true, failing the test
// after a minute.
func waitPage(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		screenshot(ctx, "viewer-native.png")
		t.Fatalf("waiting for %s: %v; page streams %+v", what, err, pageStreams(t, ctx))
	}
}

// screenshot saves the page as name in $REPLENISH_SCREENSHOT_DIR, if set.
func screenshot(ctx context.Context, name string) {
	if dir := os.Getenv("REPLENISH_SCREENSHOT_DIR"); dir != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(dir, name), png, 0o644)
		}
	}
}

// The real sender with real VP8 publishes over WHIP; the page plays it
// both ways, WebCodecs and, once switched on, the browser's own WebRTC
// player (WHEP), and reads the timestamps from both; the viewer keeps the
// native series apart. A stream without the pixel timestamp plays without
// glass-to-glass numbers, and the page says so.
func TestBrowserNativePlayer(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, nil)
	startWHIPSender(t, ts, "over-webrtc", "", nil, sender.NewEncoderOf(vpx.NewEncoder))
	blank := dialSender(t, ts, "")
	sctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer running.Wait()
	defer stop()
	blank.sendSDESMode("no-stamp", "default")
	running.Go(func() {
		if err := vp8SenderStamped(sctx, blank, "no-stamp", media.Size{W: 320, H: 180}, 30, false); err != nil {
			t.Errorf("sender no-stamp: %v", err)
		}
	})

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url("/"))); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	const byName = `Object.values(window.replenish.streams).find((s) => s.name === %q)`
	waitPage(t, ctx, "the WebCodecs view of both streams", fmt.Sprintf(`(() => {
		const w = %s, b = %s;
		return !!w && !!b && w.framesDisplayed >= 30 && b.noStamp;
	})()`, fmt.Sprintf(byName, "over-webrtc"), fmt.Sprintf(byName, "no-stamp")))
	// Switch the native player of the WHIP stream on.
	click := fmt.Sprintf(`[...document.querySelectorAll('.panel')].find((p) => p.querySelector('.name').textContent.startsWith(%q)).querySelector('.native-toggle').click()`, "over-webrtc")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](click)); err != nil {
		t.Fatal(err)
	}
	const want = 90 // frames the native player presented: three seconds
	waitPage(t, ctx, "the native player's frames", fmt.Sprintf(`(() => {
		const w = %s;
		return w.native.framesDisplayed >= %d;
	})()`, fmt.Sprintf(byName, "over-webrtc"), want))

	screenshot(ctx, "viewer-native.png")
	streams := pageStreams(t, ctx)
	w, b := streams["over-webrtc"], streams["no-stamp"]
	t.Logf("over-webrtc: %+v", w)
	t.Logf("no-stamp: %+v", b)
	// The sender's rung follows GCC's estimate, which a loaded machine
	// keeps low: any rung up to the sender's 320x180 will do.
	if n := w.Native; !n.On || !n.Connected || n.Misreads*20 > n.FramesDisplayed || n.Width <= 0 || n.Width > 320 ||
		n.LastG2G == nil || *n.LastG2G < -g2gSlack || *n.LastG2G > 10_000 || n.NoStamp {
		t.Errorf("native player %+v: want it on and connected, at most 320 wide, at most 5%% misreads and a glass-to-glass time", n)
	}
	if w.Transport != "webrtc" || w.Mode != "gcc" || w.Misreads*20 > w.FramesDisplayed || w.DecoderErrors != 0 || w.NoStamp {
		t.Errorf("WebCodecs view of the WHIP stream: %+v", w)
	}
	if b.FramesDisplayed == 0 || !b.NoStamp || b.LastG2G != nil || b.Misreads != b.FramesDisplayed {
		t.Errorf("the stream without a stamp: %+v; want frames shown, all misread, no glass-to-glass", b)
	}
	notes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.panel .note')].map((e) => e.textContent)`))
	if err != nil || len(notes) != 2 || (notes[0] == "") == (notes[1] == "") {
		t.Errorf("notes under the streams %q (%v): want one, for the stream without a stamp", notes, err)
	}

	// The viewer has the native series, apart from the WebCodecs one.
	var cs ClientStreamStats
	eventually(t, "the native reports in /api/stats", func() bool {
		st := ts.stats(t)
		s, _ := st.stream("over-webrtc")
		for _, c := range st.Clients {
			for _, x := range c.Streams {
				if x.Stream == s.ID {
					cs = x
				}
			}
		}
		return cs.Native.FramesDisplayed >= want && cs.Native.G2G.N > 0 && s.NativePlayers == 1
	})
	t.Logf("the WHIP stream as the page saw it: %+v", cs)
	if !known(cs.Native.G2G.P50) || cs.Native.G2G.P50 < 0 || !known(cs.G2G.P50) || cs.Native.TimestampMisreads*20 > cs.Native.FramesDisplayed {
		t.Errorf("client stream stats %+v", cs)
	}

	// Switched off, the page deletes its WHEP session.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](click)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the native player deleted", func() bool {
		s, _ := ts.stats(t).stream("over-webrtc")
		ts.mu.Lock()
		remembered := len(ts.ended) // a session that ended without its DELETE
		ts.mu.Unlock()
		return s.NativePlayers == 0 && remembered == 0
	})
}
