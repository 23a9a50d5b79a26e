// Package loopback measures glass-to-glass latency on one machine: a viewer,
// a sender and headless Chromium on the loopback interface, with latency
// read back from the pixels the page displays.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"replenish/internal/headless"
	"replenish/internal/rig"
	"replenish/media"
	"replenish/metrics"
	"replenish/sender"
	"replenish/transport"
	"replenish/viewer"
)

// Config configures Run. Zero values mean the stated defaults.
type Config struct {
	Duration time.Duration  // measured window; zero means 20 s
	Warmup   time.Duration  // before the window; zero means 5 s
	MaxSize  media.Size     // zero means 640x360
	FPS      int            // zero means 30
	Mode     transport.Mode // the zero value is replenish with the default replenish time
	// Transport is "tcp" (the zero value), "quic" or "webrtc".
	Transport string
	Logger    *slog.Logger
	// Progress, if set, is told when the measured window starts.
	Progress func(pageURL string)
	// NewEncoder makes the sender's encoders: a real codec, since the
	// page decodes what it is sent (for VP8, sender.NewEncoderOf of
	// media/vpx's NewEncoder, which the command that links libvpx
	// passes). Required.
	NewEncoder sender.NewEncoderFunc
}

// modeText is the mode as the viewer shows it: "gcc" for WebRTC, whose
// rate pion's congestion control sets.
func modeText(cfg Config) string {
	if cfg.Transport == "webrtc" {
		return "gcc"
	}
	return cfg.Mode.String()
}

// transportName returns t, or "tcp" for the zero value.
func transportName(t string) string {
	if t == "" {
		return "tcp"
	}
	return t
}

// summarize returns the distribution of v (ms, sorted in place) to the
// microsecond.
func summarize(v []float64) metrics.Percentiles { return metrics.Summarize(v).Round(3) }

// Result is what Run measured over the window.
type Result struct {
	Transport         string              `json:"transport"`
	Mode              string              `json:"mode"`
	Size              string              `json:"max_res"`
	FPS               int                 `json:"fps"`
	WarmupS           float64             `json:"warmup_s"`
	DurationS         float64             `json:"duration_s"`
	FramesReceived    int                 `json:"frames_received"`
	FramesDisplayed   int                 `json:"frames_displayed"`
	Misreads          int                 `json:"timestamp_misreads"`
	MisreadPct        float64             `json:"misread_pct"`
	DisplayedFPS      float64             `json:"displayed_fps"`
	G2G               metrics.Percentiles `json:"g2g_ms"`
	CaptureToReceived metrics.Percentiles `json:"capture_to_received_ms"`
	Decode            metrics.Percentiles `json:"decode_ms"`
	Draw              metrics.Percentiles `json:"draw_ms"`
	SourceDelay       metrics.Percentiles `json:"sender_source_delay_ms"` // p50, p95 and n: what the sender's status gives
	APIStatsAtEnd     viewer.Stats        `json:"api_stats_at_end"`       // the last 10 s, as /api/stats saw them
}

// collector gathers the viewer's records while measuring.
type collector struct {
	mu                 sync.Mutex // guards following fields
	on                 bool
	g2g, c2r, dec, drw []float64
	displayed, misread int
	received           int
}

func (c *collector) record(r viewer.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	switch r.Kind {
	case viewer.RecordReceived:
		c.received++
		if !r.Capture.IsZero() {
			c.c2r = append(c.c2r, ms(r.Received.Sub(r.Capture.Add(r.ClockOffset))))
		}
	case viewer.RecordDisplayed:
		c.displayed++
		if r.Misread {
			c.misread++
		} else {
			c.g2g = append(c.g2g, ms(r.G2G))
		}
		if r.Decode >= 0 {
			c.dec = append(c.dec, ms(r.Decode))
		}
		if r.Draw >= 0 {
			c.drw = append(c.drw, ms(r.Draw))
		}
	}
}

// result returns what the collector gathered over cfg's window.
func (c *collector) result(cfg Config) *Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &Result{
		Mode: modeText(cfg), Transport: transportName(cfg.Transport), Size: cfg.MaxSize.String(), FPS: cfg.FPS,
		WarmupS: cfg.Warmup.Seconds(), DurationS: cfg.Duration.Seconds(),
		FramesReceived: c.received, FramesDisplayed: c.displayed, Misreads: c.misread,
		DisplayedFPS: float64(c.displayed) / cfg.Duration.Seconds(),
		G2G:          summarize(c.g2g), CaptureToReceived: summarize(c.c2r),
		Decode: summarize(c.dec), Draw: summarize(c.drw),
	}
	if res.FramesDisplayed > 0 {
		res.MisreadPct = 100 * float64(res.Misreads) / float64(res.FramesDisplayed)
	}
	return res
}

func (c *collector) set(on bool) {
	c.mu.Lock()
	c.on = on
	c.mu.Unlock()
}

// Run measures once and returns the result. It needs Chromium.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Duration == 0 {
		cfg.Duration = 20 * time.Second
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 5 * time.Second
	}
	if cfg.MaxSize == (media.Size{}) {
		cfg.MaxSize = media.Size{W: 640, H: 360}
	}
	if cfg.FPS == 0 {
		cfg.FPS = 30
	}
	if cfg.Duration < 0 || cfg.Warmup < 0 {
		return nil, errors.New("loopback: negative duration")
	}
	if cfg.NewEncoder == nil {
		return nil, errors.New("loopback: no encoder")
	}
	var col collector
	rg, err := rig.Start(ctx, rig.Config{Name: "loopback", Transport: cfg.Transport, Mode: cfg.Mode, MaxSize: cfg.MaxSize, FPS: cfg.FPS, OnRecord: col.record, Logger: cfg.Logger,
		NewEncoder: cfg.NewEncoder})
	if err != nil {
		return nil, err
	}
	defer rg.Close()
	profile, err := os.MkdirTemp("", "replenish-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	browser, stop, err := headless.Start(ctx, profile)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := chromedp.Do(browser, chromedp.Navigate(rg.PageURL)); err != nil {
		return nil, fmt.Errorf("loopback: opening %s: %w", rg.PageURL, err)
	}
	if err := sleep(ctx, cfg.Warmup); err != nil {
		return nil, err
	}
	if cfg.Progress != nil {
		cfg.Progress(rg.PageURL)
	}
	col.set(true)
	if err := sleep(ctx, cfg.Duration); err != nil {
		return nil, err
	}
	col.set(false)

	res := col.result(cfg)
	res.APIStatsAtEnd = rg.Viewer.Stats()
	st := rg.Sender.Status()
	res.SourceDelay = metrics.Unknown(metrics.Count | metrics.P50 | metrics.P95)
	if st.SourceDelayN > 0 {
		res.SourceDelay.N, res.SourceDelay.P50, res.SourceDelay.P95 = st.SourceDelayN, ms(st.SourceDelayP50), ms(st.SourceDelayP95)
	}
	if err := rg.Close(); err != nil {
		return res, err
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Targets for glass-to-glass on loopback at 640x360 and 30 fps.
const (
	TargetP50     = 50 // ms, at most
	TargetP95     = 100
	TargetMisread = 1 // percent, less than
)

// Met reports whether r meets the targets: frames displayed, and
// glass-to-glass and misreads within TargetP50, TargetP95 and
// TargetMisread.
func (r *Result) Met() bool {
	return r.FramesDisplayed > 0 && r.G2G.N > 0 && r.G2G.P50 <= TargetP50 && r.G2G.P95 <= TargetP95 && r.MisreadPct < TargetMisread
}

// WriteText writes r for a person, a line per figure.
func (r *Result) WriteText(w io.Writer) {
	met := map[bool]string{true: "met", false: "NOT met"}[r.Met()]
	fmt.Fprintf(w, "loopback %s %s at %s, %d fps: %.0f s measured after %.0f s warm-up\n", r.Transport, r.Mode, r.Size, r.FPS, r.DurationS, r.WarmupS)
	fmt.Fprintf(w, "  frames received %d, displayed %d (%.1f fps), misreads %d (%.2f%%)\n", r.FramesReceived, r.FramesDisplayed, r.DisplayedFPS, r.Misreads, r.MisreadPct)
	fmt.Fprintf(w, "  glass-to-glass        p50 %6.1f  p95 %6.1f  p99 %6.1f ms  (targets p50 <= %d, p95 <= %d, misreads < %d%%: %s)\n",
		r.G2G.P50, r.G2G.P95, r.G2G.P99, TargetP50, TargetP95, TargetMisread, met)
	fmt.Fprintf(w, "  capture to received   p50 %6.1f  p95 %6.1f  p99 %6.1f ms\n", r.CaptureToReceived.P50, r.CaptureToReceived.P95, r.CaptureToReceived.P99)
	fmt.Fprintf(w, "  decode                p50 %6.1f  p95 %6.1f ms;  draw p50 %.1f  p95 %.1f ms\n", r.Decode.P50, r.Decode.P95, r.Draw.P50, r.Draw.P95)
	fmt.Fprintf(w, "  sender source delay   p50 %6.2f  p95 %6.2f ms\n", r.SourceDelay.P50, r.SourceDelay.P95)
	for _, c := range r.APIStatsAtEnd.Clients {
		fmt.Fprintf(w, "  /api/stats at the end: displayed %d, misreads %d since the page opened; g2g over the last 10 s p50 %.1f  p95 %.1f  p99 %.1f ms\n",
			c.FramesDisplayed, c.TimestampMisreads, c.G2G.P50, c.G2G.P95, c.G2G.P99)
	}
}
