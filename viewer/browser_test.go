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

	"replenish/framer"
	"replenish/internal/headless"
	"replenish/media"
)

// newBrowser starts a headless Chromium with a fresh profile and returns a
// context for one tab. It skips the test when Chromium is not installed.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := headless.Path(); err != nil {
		t.Skip(err)
	}
	ctx, cancel, err := headless.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return ctx
}

// vp8Sender streams real VP8 from package media: the synthetic picture
// with the capture time in its pixels, at fps, answering keyframe
// requests, and reporting its timings like the real sender.
func vp8Sender(ctx context.Context, t *testing.T, addr, name string, size media.Size, fps int) error {
	fs := dialSender(t, addr, name)
	enc, err := media.NewEncoder(media.EncoderConfig{Size: size, FPS: fps})
	if err != nil {
		return err
	}
	defer enc.Close()
	frame := media.NewFrame(size)
	tick := time.NewTicker(time.Second / time.Duration(fps))
	defer tick.Stop()
	var timings []framer.FrameTiming
	for seq := uint64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		capture := time.Now()
		media.Render(frame, capture, seq, name)
		ef, err := enc.Encode(frame, fs.wantKey.Swap(false))
		if err != nil {
			return err
		}
		writeStart := time.Now()
		rtpTS, err := fs.sendFrame(ef.Data, capture)
		if err != nil {
			return nil // the viewer went away
		}
		left := time.Now()
		timings = append(timings, framer.FrameTiming{
			RTPTimestamp: rtpTS, Capture: capture,
			EncodeStart: ef.Start.Sub(capture), EncodeEnd: ef.End.Sub(capture),
			WriteStart: writeStart.Sub(capture), LeftHost: left.Sub(capture), Bytes: len(ef.Data),
		})
		if len(timings) == 10 {
			p, err := (&framer.SenderReport{Frames: timings}).Marshal(fs.ssrc)
			if err != nil {
				return err
			}
			if err := fs.write(p); err != nil {
				return nil
			}
			timings = timings[:0]
		}
	}
}

// pageCounters mirrors window.replenish.streams[id].
type pageCounters struct {
	Name            string   `json:"name"`
	FramesReceived  int      `json:"framesReceived"`
	FramesDecoded   int      `json:"framesDecoded"`
	FramesDisplayed int      `json:"framesDisplayed"`
	FramesSkipped   int      `json:"framesSkipped"`
	Misreads        int      `json:"misreads"`
	StampMismatches int      `json:"stampMismatches"`
	DecoderErrors   int      `json:"decoderErrors"`
	LastG2G         *float64 `json:"lastG2G"`
	Width           int      `json:"width"`
	Height          int      `json:"height"`
}

type pageState struct {
	Connected bool                    `json:"connected"`
	ClientID  uint32                  `json:"clientId"`
	Supported bool                    `json:"supported"`
	Streams   map[string]pageCounters `json:"streams"`
	Errors    []string                `json:"errors"`
}

func TestBrowserPage(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, nil)

	const fps = 30
	size := media.Size{W: 320, H: 180}
	names := []string{"with-sbm", "without-sbm"}
	sctx, stop := context.WithCancel(context.Background())
	var senders sync.WaitGroup
	for _, name := range names {
		senders.Go(func() {
			if err := vp8Sender(sctx, t, ts.media, name, size, fps); err != nil {
				t.Errorf("sender %s: %v", name, err)
			}
		})
	}
	defer senders.Wait()
	defer stop()

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url("/"))); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	const want = 90 // frames displayed per stream: three seconds
	expr := fmt.Sprintf(`(() => {
		const s = Object.values((window.replenish || {}).streams || {});
		return s.length === 2 && s.every((x) => x.framesDisplayed >= %d);
	})()`, want)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, pollErr := chromedp.Run(wctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`JSON.stringify(window.replenish)`))
	if err != nil {
		t.Fatalf("reading window.replenish: %v", err)
	}
	var st pageState
	var js string
	if err := json.Unmarshal(raw, &js); err != nil || json.Unmarshal([]byte(js), &st) != nil {
		t.Fatalf("window.replenish: %s", raw)
	}
	if dir := os.Getenv("REPLENISH_SCREENSHOT_DIR"); dir != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(dir, "viewer.png"), png, 0o644)
		}
	}
	if pollErr != nil {
		t.Fatalf("frames not displayed: %v; page state %+v", pollErr, st)
	}
	if !st.Supported || !st.Connected {
		t.Fatalf("page state %+v", st)
	}
	for id, c := range st.Streams {
		t.Logf("stream %s (%s): %+v", id, c.Name, c)
		if c.Misreads*20 > c.FramesDisplayed {
			t.Errorf("%s: %d misreads in %d frames displayed, want at most 5%%", c.Name, c.Misreads, c.FramesDisplayed)
		}
		if c.StampMismatches != 0 || c.DecoderErrors != 0 {
			t.Errorf("%s: %d stamps disagree with the RTP capture time, %d decoder errors", c.Name, c.StampMismatches, c.DecoderErrors)
		}
		if c.Width != size.W || c.Height != size.H {
			t.Errorf("%s: drawn at %dx%d, want %v", c.Name, c.Width, c.Height, size)
		}
		// On one host the glass-to-glass latency is tens of ms; the bound
		// only catches a wrong clock or unit.
		if c.LastG2G == nil || *c.LastG2G < 0 || *c.LastG2G > 10_000 {
			t.Errorf("%s: last glass-to-glass %v ms", c.Name, c.LastG2G)
		}
	}

	// The viewer has the page's reports, per stream.
	var client ClientStats
	eventually(t, "the page's reports in /api/stats", func() bool {
		for _, c := range ts.stats(t).Clients {
			if c.ID == st.ClientID {
				client = c
			}
		}
		return client.FramesDisplayed >= 2*want && len(client.Streams) == 2
	})
	t.Logf("client stats: %+v", client)
	if !known(client.G2G.P50) || client.G2G.N == 0 || client.G2G.P50 < 0 || !known(client.Decode.P50) || !known(client.Draw.P50) {
		t.Errorf("client stats %+v", client)
	}
	if client.TimestampMisreads*20 > client.FramesDisplayed {
		t.Errorf("%d misreads in %d frames", client.TimestampMisreads, client.FramesDisplayed)
	}
	for _, cs := range client.Streams {
		if cs.FramesDisplayed == 0 || !known(cs.G2G.P50) || !known(cs.Delivery.P50) {
			t.Errorf("stream %d as the page saw it: %+v", cs.Stream, cs)
		}
	}
	for _, name := range names {
		s, _ := ts.stats(t).stream(name)
		if !known(s.Parts.Encode.P50) || !known(s.Parts.Network.P50) || s.Width != size.W {
			t.Errorf("stream %s: %+v", name, s)
		}
	}
}

// TestBrowserStampReader checks the page's stamp reader against the stamp
// package media paints, at every rung's width, after VP8 at a low bitrate.
func TestBrowserStampReader(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, nil)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url("/"))); err != nil {
		t.Fatal(err)
	}
	// CRC-16/CCITT-FALSE check value.
	crc, err := chromedp.Run(ctx, chromedp.Evaluate[int](`ReplenishStamp.crc16([..."123456789"].map((c) => c.charCodeAt(0)))`))
	if err != nil || crc != 0x29B1 {
		t.Fatalf("crc16 check value %#x, %v; want 0x29b1", crc, err)
	}
	for _, tc := range []struct {
		name string
		size media.Size
	}{
		{"160x90", media.Size{W: 160, H: 90}},
		{"320x180", media.Size{W: 320, H: 180}},
		{"640x360", media.Size{W: 640, H: 360}},
		{"1280x720", media.Size{W: 1280, H: 720}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Paint with media, decode the luma, hand the page RGB gray.
			capture := time.UnixMilli(1_764_000_000_123)
			f := media.NewFrame(tc.size)
			media.Render(f, capture, 1, "x")
			band := media.StampBand(tc.size)
			rgba := make([]int, 0, tc.size.W*band*4)
			for _, y := range f.Y[:tc.size.W*band] {
				rgba = append(rgba, int(y), int(y), int(y), 255)
			}
			data, _ := json.Marshal(rgba)
			ref := capture.Add(123 * time.Second).UnixMilli()
			expr := fmt.Sprintf(`ReplenishStamp.read(%s, %d, %d, %d)`, data, tc.size.W, tc.size.W, ref)
			got, err := chromedp.Run(ctx, chromedp.Evaluate[*float64](expr))
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || int64(*got) != capture.UnixMilli() {
				t.Fatalf("page read %v, want %d", got, capture.UnixMilli())
			}
			// A corrupted cell is a misread, never a wrong time; so is a
			// reference more than an hour away.
			c := tc.size.W / 20
			for y := c; y < 2*c; y++ { // invert cell 7 of row 1
				for x := 7 * c; x < 8*c; x++ {
					for k := range 3 {
						rgba[(y*tc.size.W+x)*4+k] = 255 - rgba[(y*tc.size.W+x)*4+k]
					}
				}
			}
			bad, _ := json.Marshal(rgba)
			for _, e := range []string{
				fmt.Sprintf(`ReplenishStamp.read(%s, %d, %d, %d)`, bad, tc.size.W, tc.size.W, ref),
				fmt.Sprintf(`ReplenishStamp.read(%s, %d, %d, %d)`, data, tc.size.W, tc.size.W, ref+2*3600*1000),
			} {
				if got, err := chromedp.Run(ctx, chromedp.Evaluate[*float64](e)); err != nil || got != nil {
					t.Fatalf("misread as %v (%v), want null", got, err)
				}
			}
		})
	}
}
