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
	"replenish/media/vpx"
	"replenish/sender"
	"replenish/transport"
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
	fs.TextVar(&cfg.Mode, "mode", transport.DefaultMode, "send buffer `mode` (tcp and quic)")
	fs.StringVar(&cfg.Transport, "transport", "tcp", "`transport`: tcp, quic or webrtc (WHIP to the viewer)")
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
	cfg.NewEncoder = sender.NewEncoderOf(vpx.NewEncoder)
	r, err := loopback.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "loopback: %v\n", err)
		if r == nil {
			return 1
		}
	}
	r.WriteText(stdout)
	if *out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "loopback: %v\n", err)
			return 1
		}
	}
	return 0
}
