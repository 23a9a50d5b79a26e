package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"replenish/experiments/loopback"
	"replenish/media"
	"replenish/transport"
)

// Targets for glass-to-glass on loopback at 640x360 and 30 fps.
const (
	loopbackP50Max     = 50  // ms
	loopbackP95Max     = 100 // ms
	loopbackMisreadMax = 1   // percent, exclusive
)

func loopbackMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loopback", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: go run ./experiments loopback [flags]

Runs a viewer, a sender and headless Chromium on this machine's loopback
interface and measures glass-to-glass latency from the pixels the page
displays (the capture time read back from each drawn frame, against the
time it was drawn), over a window after a warm-up.

flags:
`)
		fs.PrintDefaults()
	}
	var cfg loopback.Config
	fs.DurationVar(&cfg.Duration, "duration", 20e9, "measured window")
	fs.DurationVar(&cfg.Warmup, "warmup", 5e9, "time before the window starts")
	maxRes := fs.String("max-res", "640x360", "largest resolution, `WxH`")
	fs.IntVar(&cfg.FPS, "fps", 30, "source frame rate")
	fs.TextVar(&cfg.Mode, "mode", transport.DefaultMode, "send buffer `mode`")
	out := fs.String("out", "", "also write the result as JSON to this `file`")
	verbose := fs.Bool("v", false, "log the viewer's and sender's messages")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	var err error
	if cfg.MaxSize, err = media.ParseSize(*maxRes); err != nil || cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.FPS < 1 || cfg.FPS > 120 {
		fmt.Fprintf(stderr, "loopback: bad flags: -max-res %q (%v), -duration %v, -warmup %v, -fps %d\n", *maxRes, err, cfg.Duration, cfg.Warmup, cfg.FPS)
		return 2
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	fmt.Fprintf(stderr, "loopback: warming up %v, then measuring %v\n", cfg.Warmup, cfg.Duration)
	r, err := loopback.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "loopback: %v\n", err)
		if r == nil {
			return 1
		}
	}
	met := r.FramesDisplayed > 0 && r.G2G.N > 0 && r.G2G.P50 <= loopbackP50Max && r.G2G.P95 <= loopbackP95Max && r.MisreadPct < loopbackMisreadMax
	fmt.Fprintf(stdout, "loopback %s at %s, %d fps: %.0f s measured after %.0f s warm-up\n", r.Mode, r.Size, r.FPS, r.DurationS, r.WarmupS)
	fmt.Fprintf(stdout, "  frames received %d, displayed %d (%.1f fps), misreads %d (%.2f%%)\n", r.FramesReceived, r.FramesDisplayed, r.DisplayedFPS, r.Misreads, r.MisreadPct)
	fmt.Fprintf(stdout, "  glass-to-glass        p50 %6.1f  p95 %6.1f  p99 %6.1f ms  (targets p50 <= %d, p95 <= %d, misreads < %d%%: %s)\n",
		r.G2G.P50, r.G2G.P95, r.G2G.P99, loopbackP50Max, loopbackP95Max, loopbackMisreadMax, map[bool]string{true: "met", false: "NOT met"}[met])
	fmt.Fprintf(stdout, "  capture to received   p50 %6.1f  p95 %6.1f  p99 %6.1f ms\n", r.CaptureToReceived.P50, r.CaptureToReceived.P95, r.CaptureToReceived.P99)
	fmt.Fprintf(stdout, "  decode                p50 %6.1f  p95 %6.1f ms;  draw p50 %.1f  p95 %.1f ms\n", r.Decode.P50, r.Decode.P95, r.Draw.P50, r.Draw.P95)
	fmt.Fprintf(stdout, "  sender source delay   p50 %6.2f  p95 %6.2f ms\n", r.SourceDelay.P50, r.SourceDelay.P95)
	for _, c := range r.APIStatsAtEnd.Clients {
		fmt.Fprintf(stdout, "  /api/stats at the end: displayed %d, misreads %d since the page opened; g2g over the last 10 s p50 %.1f  p95 %.1f  p99 %.1f ms\n",
			c.FramesDisplayed, c.TimestampMisreads, float64(c.G2G.P50), float64(c.G2G.P95), float64(c.G2G.P99))
	}
	if *out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "loopback: %v\n", err)
			return 1
		}
	}
	return 0
}
