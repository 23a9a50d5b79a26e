package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"replenish/experiments/demo"
	"replenish/experiments/emu"
	"replenish/experiments/scenario"
	"replenish/experiments/workload"
	"replenish/viewer"
)

// demoOptions are the demo command's flags.
type demoOptions struct {
	Spec    scenario.Flags // the path and the senders' largest resolution
	Streams scenario.Streams
	HTTP    string
	BinDir  string
}

func parseDemoFlags(args []string, out io.Writer) (demoOptions, scenario.Path, []scenario.Stream, error) {
	o := demoOptions{Spec: scenario.Defaults(), Streams: slices.Clone(demo.DefaultStreams), HTTP: "127.0.0.1:8080"}
	o.Spec.Rate, o.Spec.RTT, o.Spec.MaxRes, o.Spec.Workload = "2mbit", 80*time.Millisecond, "640x360", scenario.KindVideo
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `usage: go run ./experiments demo [flags]

A live demo of source buffer management: an emulated path (two network
namespaces; needs root), a viewer on its receiving side and one sender per
stream on its sending side, all through the path's one bottleneck; by
default two over TCP, one with SBM (replenish=15ms) and one without
(default). --modes puts other transports beside them, e.g.
--modes replenish=15ms,default,quic:replenish=15ms,webrtc. Open the
printed URL: the page plays the streams side by side with their
latencies. Change the path while it runs from the page's path panel or by
typing here:

  rate 500kbit    set the bottleneck rate
  rtt 200ms       set the round-trip time
  reset           back to the starting rate and RTT
  status          print the path and the streams
  quit            stop (as does Ctrl-C)

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Spec.Rate, "rate", o.Spec.Rate, "bottleneck `rate` at the start")
	fs.DurationVar(&o.Spec.RTT, "rtt", o.Spec.RTT, "round-trip `time` at the start")
	fs.DurationVar(&o.Spec.Queue, "queue", o.Spec.Queue, "bottleneck queue as `time` at the starting rate (a fixed byte limit, never under 8 packets)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "loopback `host:port` for the page")
	fs.Var(&o.Streams, "modes", "comma `list` of senders, one stream each: [TRANSPORT:]MODE (TCP when left out) or webrtc, e.g. replenish=15ms,default,quic:replenish=15ms,webrtc")
	fs.StringVar(&o.Spec.MaxRes, "max-res", o.Spec.MaxRes, "largest resolution `WxH` the senders may send")
	fs.StringVar(&o.Spec.CC, "cc", o.Spec.CC, "TCP congestion `control`")
	fs.StringVar(&o.Spec.Sndbuf, "sndbuf", o.Spec.Sndbuf, "initial TCP send buffer on the sender side, `bytes` (0 keeps Linux's)")
	fs.StringVar(&o.BinDir, "bindir", "", "`directory` with prebuilt sender and viewer binaries (default: go build them)")
	if err := fs.Parse(args); err != nil {
		return o, scenario.Path{}, nil, err
	}
	if fs.NArg() > 0 {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: unexpected arguments %q", scenario.ErrSpec, fs.Args())
	}
	specs, _, err := o.Spec.Runs()
	if err != nil {
		return o, scenario.Path{}, nil, err
	}
	if len(o.Streams) == 0 {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: --modes: no senders", scenario.ErrSpec)
	}
	if _, _, err := net.SplitHostPort(o.HTTP); err != nil {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: --http %q: %v", scenario.ErrSpec, o.HTTP, err)
	}
	if !viewer.IsLoopback(o.HTTP) {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: --http %q: the demo serves on loopback only", scenario.ErrSpec, o.HTTP)
	}
	return o, specs[0].Path, o.Streams, nil
}

// demoMain is the demo command.
func demoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, path, streams, err := parseDemoFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "demo: needs root: the emulated path creates network namespaces")
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := emu.PrioritizeProcess(); err != nil {
		log.Warn("could not raise this process's priority", "err", err)
	}
	tmp, err := os.MkdirTemp("", "replenish-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if o.BinDir == "" {
		fmt.Fprintln(stderr, "building the sender and the viewer")
	}
	progs, err := workload.FindPrograms(ctx, true, o.BinDir, tmp)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	// Listen first: a busy port should fail before any namespace exists.
	ln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	defer ln.Close()
	cfg := demo.Config{Path: path, Streams: streams, MaxRes: o.Spec.MaxRes, Programs: progs, Page: ln, Dir: tmp,
		Stdin: os.Stdin, Stdout: stdout, Log: log}
	if err := demo.Run(ctx, cfg); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "demo stopped; the namespaces are removed")
	return 0
}
