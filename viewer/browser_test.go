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
