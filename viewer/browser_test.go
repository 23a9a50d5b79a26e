package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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

// TestBrowserStampReader checks the page's stamp reader against the stamp
// package media paints, at every rung's width. The page's reading after VP8
// is TestBrowserPage's.
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

// TestBrowserFrameHeader checks the page's frame header parser against
// FrameHeader.Append: every field, temporal layers included, and a header
// that is not version 1 refused.
func TestBrowserFrameHeader(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, nil)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url("/"))); err != nil {
		t.Fatal(err)
	}
	type parsed struct {
		Key, OffsetKnown, Layered, LayerSync      bool
		TID, Stream, Frame, RTPTimestamp          int64
		Width, Height                             int
		CaptureMs, ReceivedMs, OffsetMs, DataSize float64
	}
	base := FrameHeader{
		Stream: 3, Frame: 1<<32 - 1, RTPTimestamp: 0xDEADBEEF, Width: 1280, Height: 720, SSRC: 9,
		Capture: time.UnixMicro(1_764_000_000_123_000), Received: time.UnixMicro(1_764_000_000_150_500),
		ClockOffset: -2500 * time.Microsecond,
	}
	var cases []FrameHeader
	for i, l := range []struct {
		layered bool
		tid     uint8
		sync    bool
	}{{false, 0, false}, {true, 0, false}, {true, 1, true}, {true, 2, true}, {true, 2, false}, {true, 3, true}} {
		h := base
		h.Key, h.OffsetKnown = i%2 == 0, i%3 == 0
		h.Layered, h.TID, h.LayerSync = l.layered, l.tid, l.sync
		cases = append(cases, h)
	}
	for i, h := range cases {
		data := jsBytes(append(h.Append(nil), 1, 2, 3, 4, 5))
		expr := fmt.Sprintf(`(() => {
			const f = window.replenish.parseFrame(new Uint8Array(%s).buffer);
			return {key: f.key, offsetKnown: f.offsetKnown, layered: f.layered, layerSync: f.layerSync, tid: f.tid,
				stream: f.stream, frame: f.frame, rtpTimestamp: f.rtpTimestamp, width: f.width, height: f.height,
				captureMs: f.captureMs, receivedMs: f.receivedMs, offsetMs: f.offsetMs, dataSize: f.data.length};
		})()`, data)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[parsed](expr))
		if err != nil {
			t.Fatal(err)
		}
		want := parsed{
			Key: h.Key, OffsetKnown: h.OffsetKnown, Layered: h.Layered, LayerSync: h.LayerSync, TID: int64(h.TID),
			Stream: int64(h.Stream), Frame: int64(h.Frame), RTPTimestamp: int64(h.RTPTimestamp), Width: h.Width, Height: h.Height,
			CaptureMs: float64(h.Capture.UnixMicro()) / 1000, ReceivedMs: float64(h.Received.UnixMicro()) / 1000,
			OffsetMs: float64(h.ClockOffset.Microseconds()) / 1000, DataSize: 5,
		}
		if got != want {
			t.Errorf("header %d: page read %+v, want %+v", i, got, want)
		}
	}
	v2 := cases[0].Append(nil)
	v2[0] = 2
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`window.replenish.parseFrame(new Uint8Array(%s).buffer) === null`, jsBytes(v2)))); err != nil || !got {
		t.Errorf("version 2 header parsed: %v, %v", got, err)
	}
}

// jsBytes returns b as a JavaScript array literal of numbers.
func jsBytes(b []byte) string {
	n := make([]int, len(b))
	for i, v := range b {
		n[i] = int(v)
	}
	out, _ := json.Marshal(n)
	return string(out)
}
