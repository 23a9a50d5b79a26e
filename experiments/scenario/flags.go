package scenario

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"replenish/experiments/emu"
	"replenish/media"
	"replenish/rate"
	"replenish/transport"
)

// defaultSndbuf is the default of --sndbuf, in bytes: the 8 MB send buffer
// of the published table's unmanaged sender.
const defaultSndbuf = 8 << 20

// DefaultModes are the modes a run compares unless told otherwise: no
// management, and SBM with the default replenish time.
var DefaultModes = []transport.Mode{{Policy: transport.Default}, transport.DefaultMode}

// Run lengths with --quick.
const (
	QuickWarmup   = 2 * time.Second
	QuickDuration = 8 * time.Second
)

// Flags are the flags that describe runs, shared by the run command and the
// lines of a matrix file. The modes are parsed as the flag is set; the
// other values are kept as given and checked by Runs.
type Flags struct {
	Rate     string
	RTT      time.Duration
	Queue    time.Duration
	Loss     float64
	Jitter   time.Duration
	Schedule string
	// Transports are the transports each mode runs over (default TCP).
	Transports Transports
	Modes      Modes
	Workload   string
	Duration   time.Duration
	Warmup     time.Duration
	CC         string
	Sndbuf     string
	MTU        int
	Drain      time.Duration
	Browser    bool
	Cross      int
	CrossFor   time.Duration
	MaxRes     string
	FPS        int
	Bitrate    string
	Scenario   string
	// The page's leg (PageLeg): without PageRate the page, if any, sees
	// the viewer over loopback.
	PageRate     string
	PageRTT      time.Duration
	PageQueue    time.Duration
	PageSchedule string
	PageModes    Modes
}

// Defaults returns the flags' defaults: the published table's path
// (2 Mb/s, 172 ms RTT, a 200 ms queue, CUBIC and an 8 MiB send buffer),
// bulk writes, DefaultModes, a 5 s warm-up, a 40 s window and up to 30 s of
// drain.
func Defaults() Flags {
	return Flags{
		Rate: "2mbit", RTT: 172 * time.Millisecond, Queue: 200 * time.Millisecond, Modes: slices.Clone(DefaultModes), Transports: Transports{TCP},
		Workload: KindBulk, Duration: 40 * time.Second, Warmup: 5 * time.Second, CC: "cubic",
		Sndbuf: fmt.Sprintf("%dMiB", defaultSndbuf>>20), Drain: 30 * time.Second,
		PageRTT: 40 * time.Millisecond, PageQueue: 200 * time.Millisecond, PageModes: Modes{transport.DefaultMode},
	}
}

// Register defines the flags on fs with the current values of f as their
// defaults.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Rate, "rate", f.Rate, "bottleneck `rate` of the forward path (e.g. 100kbit, 2mbit, 86mbit)")
	fs.DurationVar(&f.RTT, "rtt", f.RTT, "round-trip propagation `delay`, half each way")
	fs.DurationVar(&f.Queue, "queue", f.Queue, "bottleneck drop-tail queue as `time` at the rate (never under 8 full packets)")
	fs.Float64Var(&f.Loss, "loss", f.Loss, "random loss `probability` (0 to 1) on the forward path")
	fs.DurationVar(&f.Jitter, "jitter", f.Jitter, "delay `variation` on the forward path: each packet's one-way delay gains a uniform draw from 0 up to this, without reordering")
	fs.StringVar(&f.Schedule, "schedule", f.Schedule, "rate, RTT and outage `steps` after the start, e.g. 20s=500kbit,30s=2mbit/80ms; AT=down takes the path down (both directions lose every packet) until AT=up, e.g. 20s=down,23s=up")
	fs.Var(&f.Transports, "transport", "comma `list` of transports, each run with every mode that exists for it: tcp, quic (video: replenish, default, expire=DURATION), webrtc (video: one run, pion's GCC, whatever the modes)")
	fs.Var(&f.Modes, "modes", "comma `list` of send-buffer modes: default, lowat=BYTES (tcp), replenish=DURATION, expire=DURATION (quic), each optionally +nagle (tcp; and then +nosubmss)")
	fs.StringVar(&f.Workload, "workload", f.Workload, "`workload`: video, bulk (64 KiB writes), bulk=BYTES per write, or rr (16 B + 32 B requests)")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "measured `time` after the warm-up")
	fs.DurationVar(&f.Warmup, "warmup", f.Warmup, "warm-up `time` before the measured window")
	fs.StringVar(&f.CC, "cc", f.CC, "TCP congestion `control` in both namespaces (cubic, bbr)")
	fs.StringVar(&f.Sndbuf, "sndbuf", f.Sndbuf, "initial TCP send buffer on the sender side, `bytes` (net.ipv4.tcp_wmem default; autotuning may grow it); 0 keeps Linux's 16 KiB")
	fs.IntVar(&f.MTU, "mtu", f.MTU, "MTU of the emulated path in `bytes` (576 to 1500; 0 means 1500); 1280 gives TCP an MSS of 1228, as on the published table's path")
	fs.DurationVar(&f.Drain, "drain", f.Drain, "after the window, at most this `time` for the data written in it to leave the host (what has not counts as a lower bound)")
	fs.IntVar(&f.Cross, "cross", f.Cross, "video: `flows` of competing traffic sharing the path for the whole run (bulk TCP, 64 KiB writes, no SBM, the path's congestion control), 0 to 4")
	fs.DurationVar(&f.CrossFor, "cross-for", f.CrossFor, "video: the competing flows (--cross) send for this `time` from the start, then stop; 0: the whole run")
	fs.BoolVar(&f.Browser, "browser", f.Browser, "video: also measure capture to displayed in headless Chromium")
	fs.StringVar(&f.MaxRes, "max-res", f.MaxRes, "video: largest resolution `WxH` the sender may send (default the sender's)")
	fs.IntVar(&f.FPS, "fps", f.FPS, "video: the source's frame `rate` in frames per second, 1 to 120 (default the sender's, 30)")
	fs.StringVar(&f.Bitrate, "bitrate", f.Bitrate, "video: the sender's starting target `rate`, where default and lowat modes, which give it no view of the path, stay (default: the bottleneck rate)")
	fs.StringVar(&f.Scenario, "scenario", f.Scenario, "`title` of the table these runs form (default: made from the workload and the path)")
	fs.StringVar(&f.PageRate, "page-rate", f.PageRate, "video: put the page (headless Chromium; implies --browser) behind a leg of its own from the viewer, with this bottleneck `rate`")
	fs.DurationVar(&f.PageRTT, "page-rtt", f.PageRTT, "the page leg's round-trip `delay`")
	fs.DurationVar(&f.PageQueue, "page-queue", f.PageQueue, "the page leg's drop-tail queue as `time` at its rate")
	fs.StringVar(&f.PageSchedule, "page-schedule", f.PageSchedule, "the page leg's rate and RTT `steps` after the start, as --schedule")
	fs.Var(&f.PageModes, "page-modes", "comma `list` of the viewer's buffer policies toward the page, one run each: replenish=DURATION, default")
}

// maxJitter caps --jitter: more is not a path but an outage.
const maxJitter = time.Second

// Runs checks the flags and returns one run per transport and mode, and a
// note for each combination of the two that does not exist (see
// Supports), which is skipped. It is an error when every combination is.
func (f Flags) Runs() (runs []Run, skipped []string, err error) {
	proto, err := f.proto()
	if err != nil {
		return nil, nil, err
	}
	if len(f.Modes) == 0 {
		return nil, nil, fmt.Errorf("%w: no modes", ErrSpec)
	}
	transports := f.Transports
	if len(transports) == 0 {
		transports = Transports{TCP}
	}
	runs, skipped = runsOver(transports, proto, f.Modes)
	runs = withPageModes(runs, f.PageModes)
	if len(runs) == 0 {
		return nil, skipped, fmt.Errorf("%w: no run: %s", ErrSpec, strings.Join(skipped, "; "))
	}
	return runs, skipped, nil
}

// proto checks the flags other than the transports and the modes, and
// returns the run they describe, without a transport and a mode.
func (f Flags) proto() (Run, error) {
	r, err := rate.Parse(f.Rate)
	if err != nil {
		return Run{}, fmt.Errorf("%w: --rate: %v", ErrSpec, err)
	}
	if err := f.checkNumbers(); err != nil {
		return Run{}, err
	}
	sndbuf, err := ParseSize(f.Sndbuf)
	if err != nil || sndbuf > maxSndbuf {
		return Run{}, fmt.Errorf("%w: --sndbuf %q: want a byte count up to 1 GiB", ErrSpec, f.Sndbuf)
	}
	sched, err := ParseSchedule(f.Schedule)
	if err != nil {
		return Run{}, err
	}
	w, err := ParseWorkload(f.Workload)
	if err != nil {
		return Run{}, err
	}
	if f.MaxRes != "" {
		if _, err := media.ParseSize(f.MaxRes); err != nil {
			return Run{}, fmt.Errorf("%w: --max-res %q: %v", ErrSpec, f.MaxRes, err)
		}
	}
	var bitrate rate.Bitrate
	if f.Bitrate != "" {
		if bitrate, err = rate.Parse(f.Bitrate); err != nil || bitrate < minVideoBitrate || bitrate > maxVideoBitrate {
			return Run{}, fmt.Errorf("%w: --bitrate %q: want a rate from %v to %v", ErrSpec, f.Bitrate, minVideoBitrate, maxVideoBitrate)
		}
	}
	if w.Kind != KindVideo && (f.Browser || f.MaxRes != "" || f.FPS != 0 || f.Bitrate != "" || f.Cross != 0) {
		return Run{}, fmt.Errorf("%w: --browser, --max-res, --fps, --bitrate and --cross apply to the video workload only", ErrSpec)
	}
	if f.FPS < 0 || f.FPS > MaxFPS {
		return Run{}, fmt.Errorf("%w: --fps %d: want 1 to %d frames a second", ErrSpec, f.FPS, MaxFPS)
	}
	if f.Cross < 0 || f.Cross > MaxCross {
		return Run{}, fmt.Errorf("%w: --cross %d: want 0 to %d flows", ErrSpec, f.Cross, MaxCross)
	}
	if f.CrossFor < 0 || (f.CrossFor > 0 && f.Cross == 0) {
		return Run{}, fmt.Errorf("%w: --cross-for %v: want a positive time, with --cross", ErrSpec, f.CrossFor)
	}
	page, err := f.pageLeg(w)
	if err != nil {
		return Run{}, err
	}
	path := Path{Rate: r, RTT: f.RTT, Queue: f.Queue, Loss: f.Loss, Jitter: f.Jitter, Schedule: sched, CC: f.CC, Sndbuf: sndbuf, MTU: f.MTU}
	return Run{
		Path: path, Workload: w, Warmup: f.Warmup, Duration: f.Duration, Drain: f.Drain,
		Browser: f.Browser || page != nil, MaxRes: f.MaxRes, FPS: f.FPS, Bitrate: bitrate, Scenario: f.Scenario, Page: page,
		Cross: f.Cross, CrossFor: f.CrossFor,
	}, nil
}

// checkNumbers checks the flags that are plain numbers and durations.
func (f Flags) checkNumbers() error {
	switch {
	case f.RTT < 0:
		return fmt.Errorf("%w: --rtt %v is negative", ErrSpec, f.RTT)
	case f.Queue <= 0:
		return fmt.Errorf("%w: --queue %v must be positive", ErrSpec, f.Queue)
	case !(f.Loss >= 0 && f.Loss < 1):
		return fmt.Errorf("%w: --loss %v is not a probability below 1", ErrSpec, f.Loss)
	case f.Jitter < 0 || f.Jitter > maxJitter:
		return fmt.Errorf("%w: --jitter %v must be between 0 and %v", ErrSpec, f.Jitter, maxJitter)
	case f.Duration <= 0:
		return fmt.Errorf("%w: --duration %v must be positive", ErrSpec, f.Duration)
	case f.Warmup < 0:
		return fmt.Errorf("%w: --warmup %v is negative", ErrSpec, f.Warmup)
	case f.CC == "" || strings.ContainsAny(f.CC, "/. \t"):
		return fmt.Errorf("%w: --cc %q", ErrSpec, f.CC)
	case f.MTU != 0 && (f.MTU < emu.MinMTU || f.MTU > emu.MTU):
		return fmt.Errorf("%w: --mtu %d: want %d to %d", ErrSpec, f.MTU, emu.MinMTU, emu.MTU)
	case f.Drain < 0:
		return fmt.Errorf("%w: --drain %v is negative", ErrSpec, f.Drain)
	}
	return nil
}

// Modes is a list of modes as a flag.Value: a comma-separated list, each
// as transport.ParseMode reads it (see ParseModes).
type Modes []transport.Mode

// Set parses s with ParseModes.
func (m *Modes) Set(s string) error {
	v, err := ParseModes(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// String returns the modes as Set reads them: "default,replenish=15ms".
func (m Modes) String() string {
	s := make([]string, len(m))
	for i, mode := range m {
		s[i] = mode.String()
	}
	return strings.Join(s, ",")
}

// Quick shortens every run to at most QuickWarmup of warm-up and
// QuickDuration of window, as --quick does.
func Quick(runs []Run) {
	for i := range runs {
		runs[i].Warmup, runs[i].Duration = min(runs[i].Warmup, QuickWarmup), min(runs[i].Duration, QuickDuration)
	}
}

// UniqueIDs returns the IDs of runs, adding "-2", "-3"... to repeats.
func UniqueIDs(runs []Run) []string {
	ids := make([]string, len(runs))
	seen := map[string]int{}
	for i, s := range runs {
		id := s.ID()
		seen[id]++
		if n := seen[id]; n > 1 {
			id += "-" + strconv.Itoa(n)
		}
		ids[i] = id
	}
	return ids
}
