//go:build cgo

package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"replenish/framer"
	"replenish/media"
	"replenish/media/vpx"
)

// vp8Sender streams real VP8 from package media/vpx over fs: the synthetic
// picture with the capture time in its pixels, at fps, in three temporal
// layers with each frame's layer in its payload descriptors, answering
// keyframe requests, and reporting its timings like the real sender.
func vp8Sender(ctx context.Context, fs *fakeSender, name string, size media.Size, fps int) error {
	return vp8SenderStamped(ctx, fs, name, size, fps, true)
}

// vp8SenderStamped is vp8Sender; without stamp, the band that holds the
// pixel timestamp is gray, as in a stream from another publisher.
func vp8SenderStamped(ctx context.Context, fs *fakeSender, name string, size media.Size, fps int, stamp bool) error {
	enc, err := vpx.NewEncoder(media.EncoderConfig{Size: size, FPS: fps, Scalability: media.L1T3})
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
		if !stamp {
			clear(frame.Y[:size.W*media.StampBand(size)])
		}
		ef, err := enc.Encode(frame, fs.wantKey.Swap(false))
		if err != nil {
			return err
		}
		writeStart := time.Now()
		pkts, rtpTS, err := fs.pk.PacketizeLayer(ef.Data, capture, framer.Layer(ef.Layer))
		if err != nil {
			return err
		}
		if err := fs.write(pkts...); err != nil {
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
	Transport       string   `json:"transport"`
	Mode            string   `json:"mode"`
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
	// DisplayedByLayer counts frames displayed by temporal layer.
	DisplayedByLayer []int `json:"displayedByLayer"`
}

// g2gSlack is how far below zero a glass-to-glass time on one host may
// read: the page's and the sender's clock offsets are estimates.
const g2gSlack = 50.0 // ms

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
	// One stream over each transport.
	names := []string{"over-tcp", "over-quic"}
	transports := map[string]string{"over-tcp": "tcp", "over-quic": "quic"}
	senders := map[string]*fakeSender{"over-tcp": dialSender(t, ts, ""), "over-quic": dialQUICSender(t, ts, "")}
	sctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for name, fs := range senders {
		fs.sendSDESMode(name, "replenish=15ms")
		running.Go(func() {
			if err := vp8Sender(sctx, fs, name, size, fps); err != nil {
				t.Errorf("sender %s: %v", name, err)
			}
		})
	}
	defer running.Wait()
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
	tags, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.panel .tag')].filter((e) => !e.hidden).map((e) => e.textContent).sort()`))
	if want := []string{"quic", "replenish=15ms", "replenish=15ms", "tcp"}; err != nil || !slices.Equal(tags, want) {
		t.Errorf("labels beside the names %q (%v), want %q", tags, err, want)
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
		// On loopback the page keeps up: it shows every layer.
		if len(c.DisplayedByLayer) != 4 || c.DisplayedByLayer[0]+c.DisplayedByLayer[1]+c.DisplayedByLayer[2] != c.FramesDisplayed ||
			c.DisplayedByLayer[1] == 0 || c.DisplayedByLayer[2] == 0 {
			t.Errorf("%s: displayed by layer %v of %d frames, want all three layers", c.Name, c.DisplayedByLayer, c.FramesDisplayed)
		}
		if c.Transport != transports[c.Name] || c.Mode != "replenish=15ms" {
			t.Errorf("%s: shown as %q, %q; want %q, replenish=15ms", c.Name, c.Transport, c.Mode, transports[c.Name])
		}
		// On one host the glass-to-glass latency is a few ms and the
		// clock offsets the page and the sender estimate are off by up to
		// half their probes' round trips, so a loaded machine can show a
		// small negative value; the bounds only catch a wrong clock or unit.
		if c.LastG2G == nil {
			t.Errorf("%s: no glass-to-glass", c.Name)
		} else if g := *c.LastG2G; g < -g2gSlack || g > 10_000 {
			t.Errorf("%s: last glass-to-glass %.1f ms", c.Name, g)
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
		// The page reports each frame's layer: the viewer counts them.
		if l := cs.FramesDisplayedByLayer; l[0]+l[1]+l[2] != cs.FramesDisplayed || l[1] == 0 || l[2] == 0 || l[3] != 0 {
			t.Errorf("stream %d: displayed by layer %v of %d frames", cs.Stream, l, cs.FramesDisplayed)
		}
	}
	if client.Mode != "replenish=15ms" {
		t.Errorf("the page's connection mode %q, want replenish=15ms", client.Mode)
	}
	for _, name := range names {
		s, _ := ts.stats(t).stream(name)
		if !known(s.Parts.Encode.P50) || !known(s.Parts.Network.P50) || s.Width != size.W {
			t.Errorf("stream %s: %+v", name, s)
		}
	}
}
