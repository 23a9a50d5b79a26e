// Package scenario is the language the experiments describe their runs in:
// the flags of the run command and the lines of a matrix file, which give
// a path (rate, RTT, queue, loss, a schedule of steps), a workload (bulk,
// request/response or video), the transports (TCP, QUIC, WebRTC) and the
// send-buffer modes to compare and the run's timing; and what they
// describe, one Run per transport and mode that exists (Supports), with its
// ID and the title of the table it belongs to; and the live demo's senders
// (Stream). Everything here is pure: parsing, checking and formatting.
package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"replenish/experiments/emu"
	"replenish/rate"
	"replenish/transport"
)

// ErrSpec is wrapped by every error about a run's description: its flags, a
// line of a matrix file, a mode, a workload or a schedule.
var ErrSpec = errors.New("experiments: invalid run")

// Workload kinds.
const (
	KindBulk  = "bulk"  // a saturating sender of fixed-size writes, with a sink
	KindVideo = "video" // cmd/sender and cmd/viewer
	KindRR    = "rr"    // requests of two small writes, each answered
)

// Sizes of the request/response workload (seeds/002): a header and a body
// written separately, answered once both have arrived.
const (
	RRHeader = 16
	RRBody   = 32
)

// DefaultBulkWrite is the size of a bulk write when the workload gives none.
const DefaultBulkWrite = 64 << 10

// MaxBulkWrite caps a bulk write.
const MaxBulkWrite = 64 << 20

// Workload is what a run sends.
type Workload struct {
	Kind  string // KindBulk, KindVideo or KindRR
	Write int    // bytes per write, bulk only
}

// ParseWorkload reads "video", "rr", "bulk" (64 KiB writes) or "bulk=SIZE",
// where SIZE is a byte count such as 512, 4096, 4KiB or 64KiB.
func ParseWorkload(s string) (Workload, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	switch name {
	case KindVideo, KindRR:
		if hasArg {
			return Workload{}, fmt.Errorf("%w: workload %s takes no size", ErrSpec, name)
		}
		return Workload{Kind: name}, nil
	case KindBulk:
		w := Workload{Kind: KindBulk, Write: DefaultBulkWrite}
		if hasArg {
			n, err := ParseSize(arg)
			if err != nil {
				return Workload{}, fmt.Errorf("%w: workload %q: %v", ErrSpec, s, err)
			}
			if n < 1 || n > MaxBulkWrite {
				return Workload{}, fmt.Errorf("%w: workload %q: write size out of range (1 B to 64 MiB)", ErrSpec, s)
			}
			w.Write = n
		}
		return w, nil
	}
	return Workload{}, fmt.Errorf("%w: workload %q (want video, rr, bulk or bulk=BYTES)", ErrSpec, s)
}

// String returns the workload as run.json records it: "video", "bulk=65536"
// or "rr=16+32".
func (w Workload) String() string {
	switch w.Kind {
	case KindBulk:
		return "bulk=" + strconv.Itoa(w.Write)
	case KindRR:
		return fmt.Sprintf("rr=%d+%d", RRHeader, RRBody)
	}
	return w.Kind
}

// short returns a compact name for run IDs: "video", "bulk64KiB", "rr".
func (w Workload) short() string {
	if w.Kind == KindBulk {
		return "bulk" + strings.ReplaceAll(FormatSize(w.Write), " ", "")
	}
	return w.Kind
}

// describe returns the workload for a scenario title.
func (w Workload) describe() string {
	switch w.Kind {
	case KindBulk:
		return "bulk " + FormatSize(w.Write) + " writes"
	case KindRR:
		return fmt.Sprintf("requests of %d B + %d B writes", RRHeader, RRBody)
	}
	return "video"
}

// ParseSize reads a byte count: "512", "4096", "4KiB", "64KiB", "1MiB",
// "15000", "15kB" (decimal) or "165k", up to 256 MiB.
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	mult := 1
	switch unit {
	case "", "b":
	case "k", "kb":
		mult = 1000
	case "kib":
		mult = 1 << 10
	case "m", "mb":
		mult = 1000 * 1000
	case "mib":
		mult = 1 << 20
	default:
		return 0, fmt.Errorf("%q: unknown unit %q", s, unit)
	}
	if n > MaxBulkWrite*4/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// FormatSize formats a byte count as "512 B", "4 KiB" or "64 KiB" when it is a
// whole number of KiB or MiB, and in bytes otherwise.
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// ParseModes reads a comma-separated list of modes, each as
// transport.ParseMode reads it. Two that print the same are an error.
// Which transports a mode applies to is decided per run (Supports).
func ParseModes(s string) ([]transport.Mode, error) {
	var out []transport.Mode
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		m, err := transport.ParseMode(f)
		if err != nil {
			return nil, fmt.Errorf("%w: mode %q: %v", ErrSpec, f, err)
		}
		if seen[m.String()] {
			return nil, fmt.Errorf("%w: mode %s given twice", ErrSpec, m)
		}
		seen[m.String()] = true
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no modes", ErrSpec)
	}
	return out, nil
}

// Step is one change of a path's schedule: at At after the run starts the
// bottleneck rate becomes Rate (0 keeps it) and the round-trip time RTT (0
// keeps it), or the path goes down (Carrier emu.CarrierDown: both
// directions lose every packet) or comes back up (emu.CarrierUp). A step
// changes one or the other, never both.
type Step struct {
	At      time.Duration
	Rate    rate.Bitrate
	RTT     time.Duration
	Carrier emu.Carrier
}

// ParseSchedule reads a comma-separated list of steps "AT=RATE",
// "AT=RATE/RTT", "AT=/RTT", "AT=down" or "AT=up", as in
// "20s=500kbit,30s=2mbit/80ms" or "20s=down,23s=up". Steps must be in
// increasing time order; the path goes down only while up, comes up only
// while down, and is up again by the last step.
func ParseSchedule(s string) ([]Step, error) {
	var out []Step
	down := false
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		st, err := parseStep(f)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && st.At <= out[len(out)-1].At {
			return nil, fmt.Errorf("%w: schedule step %q is not after the one before", ErrSpec, f)
		}
		switch {
		case st.Carrier == emu.CarrierDown && down:
			return nil, fmt.Errorf("%w: schedule step %q: the path is already down", ErrSpec, f)
		case st.Carrier == emu.CarrierUp && !down:
			return nil, fmt.Errorf("%w: schedule step %q: the path is not down", ErrSpec, f)
		case st.Carrier != emu.CarrierKeep:
			down = st.Carrier == emu.CarrierDown
		}
		out = append(out, st)
	}
	if down {
		return nil, fmt.Errorf("%w: schedule %q: the path goes down and never comes back up (add AT=up)", ErrSpec, s)
	}
	return out, nil
}

// parseStep reads one step of a schedule.
func parseStep(f string) (Step, error) {
	at, change, ok := strings.Cut(f, "=")
	if !ok {
		return Step{}, fmt.Errorf("%w: schedule step %q (want AT=RATE, AT=RATE/RTT, AT=/RTT, AT=down or AT=up)", ErrSpec, f)
	}
	var st Step
	var err error
	if st.At, err = time.ParseDuration(at); err != nil || st.At < 0 {
		return Step{}, fmt.Errorf("%w: schedule step %q: time %q", ErrSpec, f, at)
	}
	switch change {
	case "down":
		st.Carrier = emu.CarrierDown
		return st, nil
	case "up":
		st.Carrier = emu.CarrierUp
		return st, nil
	}
	r, d, _ := strings.Cut(change, "/")
	if r != "" {
		if st.Rate, err = rate.Parse(r); err != nil {
			return Step{}, fmt.Errorf("%w: schedule step %q: %v", ErrSpec, f, err)
		}
	}
	if d != "" {
		if st.RTT, err = time.ParseDuration(d); err != nil || st.RTT <= 0 {
			return Step{}, fmt.Errorf("%w: schedule step %q: RTT %q", ErrSpec, f, d)
		}
	}
	if st.Rate == 0 && st.RTT == 0 {
		return Step{}, fmt.Errorf("%w: schedule step %q changes nothing", ErrSpec, f)
	}
	return st, nil
}

// FormatSchedule formats steps as ParseSchedule reads them.
func FormatSchedule(steps []Step) string {
	var b strings.Builder
	for i, st := range steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(st.At.String() + "=")
		if st.Carrier != emu.CarrierKeep {
			b.WriteString(st.Carrier.String())
			continue
		}
		if st.Rate > 0 {
			b.WriteString(FormatRate(st.Rate))
		}
		if st.RTT > 0 {
			b.WriteString("/" + st.RTT.String())
		}
	}
	return b.String()
}

// FormatRate formats r compactly for IDs and flags: "100kbit", "2mbit",
// "86mbit", "1500kbit", "12345bit".
func FormatRate(r rate.Bitrate) string {
	switch {
	case r >= rate.Mbps && r%rate.Mbps == 0:
		return fmt.Sprintf("%dmbit", r/rate.Mbps)
	case r >= rate.Kbps && r%rate.Kbps == 0:
		return fmt.Sprintf("%dkbit", r/rate.Kbps)
	}
	return fmt.Sprintf("%dbit", int64(r))
}

// minQueuePackets is the fewest full packets the bottleneck queue holds.
const minQueuePackets = 8

// Path describes the emulated path of a run.
type Path struct {
	Rate  rate.Bitrate  // bottleneck rate, forward direction
	RTT   time.Duration // round-trip propagation delay, split evenly
	Queue time.Duration // drop-tail limit as time at Rate
	Loss  float64       // random loss probability, forward direction
	// Jitter is the forward direction's delay variation: each packet's
	// one-way delay gains up to this much, without reordering
	// (emu.LinkConfig.Jitter).
	Jitter   time.Duration
	Schedule []Step // in time order
	CC       string // congestion control in both namespaces
	// Sndbuf is the initial send buffer of TCP sockets on the sender side
	// in bytes (emu.Config.SendBuffer). 0 keeps Linux's.
	Sndbuf int
	// MTU is the MTU of the path's devices in bytes; 0 means emu.MTU.
	MTU int
}

// maxSndbuf caps Path.Sndbuf.
const maxSndbuf = 1 << 30

// QueueBytes returns the drop-tail limit in bytes for rate r and queue time
// q: what r drains in q, never under minQueuePackets full packets.
func QueueBytes(r rate.Bitrate, q time.Duration) int {
	return max(r.Bytes(q), minQueuePackets*emu.MTU)
}

// EmuConfig returns the emulator's configuration for the path: the
// bottleneck, its queue, the loss and the jitter in the forward direction,
// and the RTT split between the two directions' delays. The queue limit is
// computed from the initial rate and kept when the rate changes. The
// schedule is not part of it: a run starts it at its own time zero
// (EmuSchedule).
func (p Path) EmuConfig() emu.Config {
	fwd, rev := emu.SplitRTT(p.RTT)
	return emu.Config{
		Forward:    emu.LinkConfig{Rate: p.Rate, Delay: fwd, QueueBytes: QueueBytes(p.Rate, p.Queue), Loss: p.Loss, Jitter: p.Jitter, Seed: 1},
		Reverse:    emu.LinkConfig{Delay: rev},
		CC:         p.CC,
		MTU:        p.MTU,
		SendBuffer: p.Sndbuf,
	}
}

// EmuSchedule returns the schedule as the emulator's steps of each
// direction: a rate change in the forward one, an RTT change split between
// the two, an outage's down and up in both.
func (p Path) EmuSchedule() (forward, reverse []emu.Step) {
	for _, st := range p.Schedule {
		if st.Carrier != emu.CarrierKeep {
			forward = append(forward, emu.Step{At: st.At, Carrier: st.Carrier})
			reverse = append(reverse, emu.Step{At: st.At, Carrier: st.Carrier})
			continue
		}
		f := emu.Step{At: st.At, Rate: st.Rate}
		if st.RTT > 0 {
			var r time.Duration
			f.Delay, r = emu.SplitRTT(st.RTT)
			reverse = append(reverse, emu.Step{At: st.At, Delay: r})
		}
		forward = append(forward, f)
	}
	return forward, reverse
}

// Outage is a span of a run, in times since its start, in which its path
// was down.
type Outage struct{ Down, Up time.Duration }

// Outages returns the schedule's outages in time order. A schedule that
// ParseSchedule accepted brings the path up after each.
func (p Path) Outages() []Outage {
	var out []Outage
	for _, st := range p.Schedule {
		switch st.Carrier {
		case emu.CarrierDown:
			out = append(out, Outage{Down: st.At})
		case emu.CarrierUp:
			if n := len(out); n > 0 && out[n-1].Up == 0 {
				out[n-1].Up = st.At
			}
		}
	}
	return out
}

// MeanRate returns the time-weighted mean bottleneck rate over [from, to]
// (times since the run's start) given the schedule, in bits per second.
func (p Path) MeanRate(from, to time.Duration) float64 {
	if to <= from {
		return float64(p.RateAt(from))
	}
	var sum float64
	t := from
	cur := p.RateAt(from)
	for _, st := range p.Schedule {
		if st.At <= from || st.Rate == 0 {
			continue
		}
		if st.At >= to {
			break
		}
		sum += float64(cur) * (st.At - t).Seconds()
		t, cur = st.At, st.Rate
	}
	sum += float64(cur) * (to - t).Seconds()
	return sum / (to - from).Seconds()
}

// RateAt returns the bottleneck rate the schedule sets at time t since
// the run's start.
func (p Path) RateAt(t time.Duration) rate.Bitrate {
	r := p.Rate
	for _, st := range p.Schedule {
		if st.At <= t && st.Rate > 0 {
			r = st.Rate
		}
	}
	return r
}

// RTTAt returns the round-trip time the schedule sets at time t since the
// run's start.
func (p Path) RTTAt(t time.Duration) time.Duration {
	d := p.RTT
	for _, st := range p.Schedule {
		if st.At <= t && st.RTT > 0 {
			d = st.RTT
		}
	}
	return d
}

// Run describes one run: a workload in one mode over one transport on one
// path. Its JSON form (Go's field names) is kept in a run's raw/input.json.
type Run struct {
	Path Path
	// Transport is TCP, QUIC or WebRTC; "" (in input.json files written
	// before transports) means TCP.
	Transport string
	// Mode is the send-buffer mode; a WebRTC run's is Default, and its
	// name GCC (ModeName).
	Mode     transport.Mode
	Workload Workload
	Warmup   time.Duration
	Duration time.Duration // the measured window after the warm-up
	Drain    time.Duration // at most this long after the window for its data to leave
	Browser  bool          // video: measure capture to displayed in headless Chromium
	// Cross is how many competing flows share the path with the video for
	// the whole run: bulk TCP senders of 64 KiB writes without SBM, the
	// path's congestion control, from the sender's side to a sink on the
	// receiver's (MaxCross at most).
	Cross int `json:",omitempty"`
	// CrossFor, if positive, is how long from the start the competing
	// flows send; then they stop, and the video has the path alone.
	CrossFor time.Duration `json:",omitempty"`
	MaxRes   string        // video: largest resolution, "" for the sender's default
	// FPS is the video source's frame rate; 0 for the sender's default
	// (30), MaxFPS at most.
	FPS int `json:",omitempty"`
	// Bitrate is the video sender's starting target, where the modes that
	// give it no view of the path (default, lowat) keep it; 0 means the
	// bottleneck rate, as an application configured for its link would.
	Bitrate  rate.Bitrate
	Scenario string // table title; "" derives one
	// Page, for a video run, puts the page behind a leg of its own (a
	// second emulated path from the viewer's namespace); nil: the page, if
	// any, reaches the viewer over loopback.
	Page *PageLeg `json:",omitempty"`
}

// CrossInWindow reports whether competing flows share the measured
// window: Cross is positive and CrossFor, if set, runs past the warm-up.
func (s Run) CrossInWindow() bool {
	return s.Cross > 0 && (s.CrossFor <= 0 || s.CrossFor > s.Warmup)
}

// MaxCross caps Run.Cross.
const MaxCross = 4

// MaxFPS caps Run.FPS, as cmd/sender's -fps.
const MaxFPS = 120

// Limits of the video sender's -bitrate.
const (
	minVideoBitrate = 10 * rate.Kbps
	maxVideoBitrate = 100 * rate.Mbps
)

// VideoBitrate returns the video sender's starting target: Bitrate, or the
// bottleneck rate within the sender's limits.
func (s Run) VideoBitrate() rate.Bitrate {
	if s.Bitrate > 0 {
		return s.Bitrate
	}
	return min(max(s.Path.Rate, minVideoBitrate), maxVideoBitrate)
}

// Total returns the length of the run: its warm-up and its measured window.
func (s Run) Total() time.Duration { return s.Warmup + s.Duration }

// TransportName returns the run's transport, TCP when none is named.
func (s Run) TransportName() string {
	if s.Transport == "" {
		return TCP
	}
	return s.Transport
}

// ModeName returns the run's mode as run.json and the viewer show it: the
// mode's canonical form, or GCC for a WebRTC run.
func (s Run) ModeName() string {
	if s.TransportName() == WebRTC {
		return GCC
	}
	return s.Mode.String()
}

// ID returns the run's ID: unique within a set as long as the runs differ,
// and safe as a file name, as in "2mbit-172ms-bulk64KiB-replenish=15ms".
// A run over a transport other than TCP names it after the workload, as in
// "2mbit-172ms-video-quic-replenish=15ms" or "2mbit-172ms-video-webrtc-gcc";
// a TCP run's ID is the one it had before runs had transports.
func (s Run) ID() string {
	parts := []string{FormatRate(s.Path.Rate), fmtDur(s.Path.RTT), s.Workload.short()}
	if tr := s.TransportName(); tr != TCP {
		parts = append(parts, tr)
	}
	parts = append(parts, s.ModeName())
	def := Defaults()
	if s.Path.Queue != def.Queue {
		parts = append(parts, "q"+fmtDur(s.Path.Queue))
	}
	if s.Path.Loss > 0 {
		parts = append(parts, "loss"+strconv.FormatFloat(s.Path.Loss, 'g', -1, 64))
	}
	if s.Path.Jitter > 0 {
		parts = append(parts, "jitter"+fmtDur(s.Path.Jitter))
	}
	if s.Path.CC != "" && s.Path.CC != def.CC {
		parts = append(parts, s.Path.CC)
	}
	if s.Path.Sndbuf != defaultSndbuf {
		parts = append(parts, "sndbuf"+strconv.Itoa(s.Path.Sndbuf))
	}
	if s.Path.MTU != 0 && s.Path.MTU != emu.MTU {
		parts = append(parts, "mtu"+strconv.Itoa(s.Path.MTU))
	}
	if len(s.Path.Schedule) > 0 {
		parts = append(parts, scheduleID(s.Path))
	}
	if s.Bitrate > 0 {
		parts = append(parts, "br"+FormatRate(s.Bitrate))
	}
	if s.Cross > 0 {
		parts = append(parts, "cross"+strconv.Itoa(s.Cross))
		if s.CrossFor > 0 {
			parts[len(parts)-1] += "for" + s.CrossFor.String()
		}
	}
	if s.FPS > 0 {
		parts = append(parts, "fps"+strconv.Itoa(s.FPS))
	}
	switch {
	case s.Page != nil:
		parts = append(parts, s.Page.id())
	case s.Browser:
		parts = append(parts, "browser")
	}
	return sanitizeID(strings.Join(parts, "-"))
}

// scheduleID names p's schedule in a run's ID: "down3s" for a schedule of
// one 3 s outage (one such part for each outage), "sched2" (the number of
// steps) for any other.
func scheduleID(p Path) string {
	o := p.Outages()
	if 2*len(o) != len(p.Schedule) {
		return "sched" + strconv.Itoa(len(p.Schedule))
	}
	parts := make([]string, len(o))
	for i, x := range o {
		parts[i] = "down" + (x.Up - x.Down).String()
	}
	return strings.Join(parts, "-")
}

// sanitizeID replaces every byte that is not safe in a file name.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '=', c == '+', c == '.', c == '_':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// Title returns the title of the table the run belongs to: its Scenario,
// or one made of the workload and the path, as in "bulk 64 KiB writes,
// 2 Mb/s, 172 ms RTT, 200 ms queue".
func (s Run) Title() string {
	if s.Scenario != "" {
		return s.Scenario
	}
	parts := []string{s.Workload.describe(), s.Path.Rate.String(), fmtDurSpace(s.Path.RTT) + " RTT", fmtDurSpace(s.Path.Queue) + " queue"}
	if s.Path.Loss > 0 {
		parts = append(parts, fmt.Sprintf("%g%% loss", 100*s.Path.Loss))
	}
	if s.Path.Jitter > 0 {
		parts = append(parts, fmtDurSpace(s.Path.Jitter)+" jitter")
	}
	if s.Path.MTU != 0 && s.Path.MTU != emu.MTU {
		parts = append(parts, fmt.Sprintf("MTU %d", s.Path.MTU))
	}
	if s.Path.CC != "" && s.Path.CC != Defaults().CC {
		parts = append(parts, s.Path.CC)
	}
	if s.Path.Sndbuf != defaultSndbuf {
		if s.Path.Sndbuf == 0 {
			parts = append(parts, "Linux's initial send buffer")
		} else {
			parts = append(parts, FormatSize(s.Path.Sndbuf)+" initial send buffer")
		}
	}
	if len(s.Path.Schedule) > 0 {
		parts = append(parts, "schedule "+FormatSchedule(s.Path.Schedule))
	}
	if s.Bitrate > 0 {
		parts = append(parts, "sender bitrate "+s.Bitrate.String())
	}
	switch s.Cross {
	case 0:
	case 1:
		parts = append(parts, "a competing bulk flow")
	default:
		parts = append(parts, strconv.Itoa(s.Cross)+" competing bulk flows")
	}
	if s.Cross > 0 && s.CrossFor > 0 {
		parts[len(parts)-1] += " for the first " + s.CrossFor.String()
	}
	if s.FPS > 0 {
		parts = append(parts, strconv.Itoa(s.FPS)+" fps")
	}
	switch {
	case s.Page != nil:
		parts = append(parts, s.Page.describe())
	case s.Browser:
		parts = append(parts, "browser")
	}
	return strings.Join(parts, ", ")
}

// fmtDur formats d compactly for IDs: "172ms", "1s", "1.5s".
func fmtDur(d time.Duration) string {
	if d%time.Millisecond == 0 && d < 10*time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return d.String()
}

// fmtDurSpace formats d for titles: "172 ms", "1.5 s".
func fmtDurSpace(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', 4, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', 4, 64) + " s"
}
