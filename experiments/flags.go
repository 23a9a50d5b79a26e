package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"replenish/experiments/emu"
	"replenish/media"
	"replenish/rate"
)

// Defaults of the run flags.
const (
	defaultRate     = "2mbit"
	defaultRTT      = 172 * time.Millisecond
	defaultQueue    = 200 * time.Millisecond
	defaultModes    = "default,replenish=15ms"
	defaultWorkload = "bulk"
	defaultDuration = 40 * time.Second
	defaultWarmup   = 5 * time.Second
	defaultCC       = "cubic"
	defaultSndbuf   = "8MiB"
	defaultDrain    = 30 * time.Second
)

// Run lengths with --quick.
const (
	quickWarmup   = 2 * time.Second
	quickDuration = 8 * time.Second
)

// specFlags are the flags that describe runs, shared by the run command
// and the lines of a matrix file. The values are kept as given and checked
// by specs.
type specFlags struct {
	Rate     string
	RTT      time.Duration
	Queue    time.Duration
	Loss     float64
	Schedule string
	Modes    string
	Workload string
	Duration time.Duration
	Warmup   time.Duration
	CC       string
	Sndbuf   string
	MTU      int
	Drain    time.Duration
	Browser  bool
	MaxRes   string
	Bitrate  string
	Scenario string
}

// defaultSpecFlags returns the flags' defaults.
func defaultSpecFlags() specFlags {
	return specFlags{
		Rate: defaultRate, RTT: defaultRTT, Queue: defaultQueue, Modes: defaultModes,
		Workload: defaultWorkload, Duration: defaultDuration, Warmup: defaultWarmup, CC: defaultCC,
		Sndbuf: defaultSndbuf, Drain: defaultDrain,
	}
}

// register defines the flags on fs with the current values of f as their
// defaults.
func (f *specFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Rate, "rate", f.Rate, "bottleneck `rate` of the forward path (e.g. 100kbit, 2mbit, 86mbit)")
	fs.DurationVar(&f.RTT, "rtt", f.RTT, "round-trip propagation `delay`, half each way")
	fs.DurationVar(&f.Queue, "queue", f.Queue, "bottleneck drop-tail queue as `time` at the rate (never under 8 full packets)")
	fs.Float64Var(&f.Loss, "loss", f.Loss, "random loss `probability` (0 to 1) on the forward path")
	fs.StringVar(&f.Schedule, "schedule", f.Schedule, "rate and RTT `steps` after the start, e.g. 20s=500kbit,30s=2mbit/80ms")
	fs.StringVar(&f.Modes, "modes", f.Modes, "comma `list` of send-buffer modes: default, lowat=BYTES, replenish=DURATION, each optionally +nagle (and then +nosubmss)")
	fs.StringVar(&f.Workload, "workload", f.Workload, "`workload`: video, bulk (64 KiB writes), bulk=BYTES per write, or rr (16 B + 32 B requests)")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "measured `time` after the warm-up")
	fs.DurationVar(&f.Warmup, "warmup", f.Warmup, "warm-up `time` before the measured window")
	fs.StringVar(&f.CC, "cc", f.CC, "TCP congestion `control` in both namespaces (cubic, bbr)")
	fs.StringVar(&f.Sndbuf, "sndbuf", f.Sndbuf, "initial TCP send buffer on the sender side, `bytes` (net.ipv4.tcp_wmem default; autotuning may grow it); 0 keeps Linux's 16 KiB")
	fs.IntVar(&f.MTU, "mtu", f.MTU, "MTU of the emulated path in `bytes` (576 to 1500; 0 means 1500); 1280 gives TCP an MSS of 1228, as on the published table's path")
	fs.DurationVar(&f.Drain, "drain", f.Drain, "after the window, at most this `time` for the data written in it to leave the host (what has not counts as a lower bound)")
	fs.BoolVar(&f.Browser, "browser", f.Browser, "video: also measure capture to displayed in headless Chromium")
	fs.StringVar(&f.MaxRes, "max-res", f.MaxRes, "video: largest resolution `WxH` the sender may send (default the sender's)")
	fs.StringVar(&f.Bitrate, "bitrate", f.Bitrate, "video: the sender's starting target `rate`, where default and lowat modes, which give it no view of the path, stay (default: the bottleneck rate)")
	fs.StringVar(&f.Scenario, "scenario", f.Scenario, "`title` of the table these runs form (default: made from the workload and the path)")
}

// specs checks the flags and returns one run per mode.
func (f specFlags) specs() ([]runSpec, error) {
	r, err := rate.Parse(f.Rate)
	if err != nil {
		return nil, fmt.Errorf("%w: --rate: %v", errSpec, err)
	}
	switch {
	case f.RTT < 0:
		return nil, fmt.Errorf("%w: --rtt %v is negative", errSpec, f.RTT)
	case f.Queue <= 0:
		return nil, fmt.Errorf("%w: --queue %v must be positive", errSpec, f.Queue)
	case !(f.Loss >= 0 && f.Loss < 1):
		return nil, fmt.Errorf("%w: --loss %v is not a probability below 1", errSpec, f.Loss)
	case f.Duration <= 0:
		return nil, fmt.Errorf("%w: --duration %v must be positive", errSpec, f.Duration)
	case f.Warmup < 0:
		return nil, fmt.Errorf("%w: --warmup %v is negative", errSpec, f.Warmup)
	case f.CC == "" || strings.ContainsAny(f.CC, "/. \t"):
		return nil, fmt.Errorf("%w: --cc %q", errSpec, f.CC)
	case f.MTU != 0 && (f.MTU < emu.MinMTU || f.MTU > emu.MTU):
		return nil, fmt.Errorf("%w: --mtu %d: want %d to %d", errSpec, f.MTU, emu.MinMTU, emu.MTU)
	case f.Drain < 0:
		return nil, fmt.Errorf("%w: --drain %v is negative", errSpec, f.Drain)
	}
	sndbuf, err := parseSize(f.Sndbuf)
	if err != nil || sndbuf > maxSndbuf {
		return nil, fmt.Errorf("%w: --sndbuf %q: want a byte count up to 1 GiB", errSpec, f.Sndbuf)
	}
	sched, err := parseSchedule(f.Schedule)
	if err != nil {
		return nil, err
	}
	modes, err := parseModes(f.Modes)
	if err != nil {
		return nil, err
	}
	w, err := parseWorkload(f.Workload)
	if err != nil {
		return nil, err
	}
	if f.MaxRes != "" {
		if _, err := media.ParseSize(f.MaxRes); err != nil {
			return nil, fmt.Errorf("%w: --max-res %q: %v", errSpec, f.MaxRes, err)
		}
	}
	var bitrate rate.Bitrate
	if f.Bitrate != "" {
		if bitrate, err = rate.Parse(f.Bitrate); err != nil || bitrate < minVideoBitrate || bitrate > maxVideoBitrate {
			return nil, fmt.Errorf("%w: --bitrate %q: want a rate from %v to %v", errSpec, f.Bitrate, minVideoBitrate, maxVideoBitrate)
		}
	}
	if w.Kind != kindVideo && (f.Browser || f.MaxRes != "" || f.Bitrate != "") {
		return nil, fmt.Errorf("%w: --browser, --max-res and --bitrate apply to the video workload only", errSpec)
	}
	path := pathSpec{Rate: r, RTT: f.RTT, Queue: f.Queue, Loss: f.Loss, Schedule: sched, CC: f.CC, Sndbuf: sndbuf, MTU: f.MTU}
	out := make([]runSpec, 0, len(modes))
	for _, m := range modes {
		out = append(out, runSpec{
			Path: path, Mode: m, Workload: w, Warmup: f.Warmup, Duration: f.Duration, Drain: f.Drain,
			Browser: f.Browser, MaxRes: f.MaxRes, Bitrate: bitrate, Scenario: f.Scenario,
		})
	}
	return out, nil
}

// runOptions are the run command's flags beyond those of specFlags.
type runOptions struct {
	Spec     specFlags
	Out      string
	Matrix   string
	Quick    bool
	Parallel int
	BinDir   string
	Verbose  bool
}

// parseRunFlags reads the run command's flags. Help goes to out.
func parseRunFlags(args []string, out io.Writer) (runOptions, error) {
	o := runOptions{Spec: defaultSpecFlags(), Parallel: 1}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `usage: go run ./experiments run [flags]

Runs a workload once per mode on an emulated path (two network namespaces
joined by a TUN emulator; needs root) and writes per-run records, run.json,
summary.json, summary.md, plots and index.html into --out. With --matrix the
runs come from a scenario file (or every *.txt file of a directory), one
line of the flags below per set of runs; the command line's flags are the
defaults of its lines.

flags:
`)
		fs.PrintDefaults()
	}
	o.Spec.register(fs)
	fs.StringVar(&o.Out, "out", "", "results `directory` (default results/run-YYYYMMDD-HHMMSS)")
	fs.StringVar(&o.Matrix, "matrix", "", "scenario `file` or directory of *.txt files: one line of run flags per set of runs")
	fs.BoolVar(&o.Quick, "quick", false, "shorten every run to a 2 s warm-up and an 8 s window (a smoke test)")
	fs.IntVar(&o.Parallel, "parallel", o.Parallel, "`runs` at a time, each on its own path (more than 1 only on an idle machine with cores to spare)")
	fs.StringVar(&o.BinDir, "bindir", "", "`directory` with prebuilt sender and viewer binaries (default: go build them)")
	fs.BoolVar(&o.Verbose, "v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errSpec, fs.Args())
	}
	if o.Parallel < 1 {
		return o, fmt.Errorf("%w: --parallel %d must be at least 1", errSpec, o.Parallel)
	}
	return o, nil
}

// specsOf returns the runs the options describe: those of the matrix when
// one is given, otherwise those of the flags; --quick shortens them all.
// Run IDs are made unique by a numeric suffix.
func (o runOptions) specsOf(readMatrix func(string, specFlags) ([]runSpec, error)) ([]runSpec, error) {
	var specs []runSpec
	var err error
	if o.Matrix != "" {
		specs, err = readMatrix(o.Matrix, o.Spec)
	} else {
		specs, err = o.Spec.specs()
	}
	if err != nil {
		return nil, err
	}
	if o.Quick {
		for i := range specs {
			specs[i].Warmup, specs[i].Duration = min(specs[i].Warmup, quickWarmup), min(specs[i].Duration, quickDuration)
		}
	}
	return specs, nil
}

// uniqueIDs returns the IDs of specs, adding "-2", "-3"... to repeats.
func uniqueIDs(specs []runSpec) []string {
	ids := make([]string, len(specs))
	seen := map[string]int{}
	for i, s := range specs {
		id := s.id()
		seen[id]++
		if n := seen[id]; n > 1 {
			id += "-" + strconv.Itoa(n)
		}
		ids[i] = id
	}
	return ids
}
