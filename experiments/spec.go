package main

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

// errSpec is wrapped by every error about a run's description: its flags, a
// line of a matrix file, a mode, a workload or a schedule.
var errSpec = errors.New("experiments: invalid run")

// Workload kinds.
const (
	kindBulk  = "bulk"  // a saturating sender of fixed-size writes, with a sink
	kindVideo = "video" // cmd/sender and cmd/viewer
	kindRR    = "rr"    // requests of two small writes, each answered
)

// Sizes of the request/response workload (seeds/002): a header and a body
// written separately, answered once both have arrived.
const (
	rrHeader = 16
	rrBody   = 32
)

// defaultBulkWrite is the size of a bulk write when the workload gives none.
const defaultBulkWrite = 64 << 10

// maxBulkWrite caps a bulk write.
const maxBulkWrite = 64 << 20

// workload is what a run sends.
type workload struct {
	Kind  string // kindBulk, kindVideo or kindRR
	Write int    // bytes per write, bulk only
}

// parseWorkload reads "video", "rr", "bulk" (64 KiB writes) or "bulk=SIZE",
// where SIZE is a byte count such as 512, 4096, 4KiB or 64KiB.
func parseWorkload(s string) (workload, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	switch name {
	case kindVideo, kindRR:
		if hasArg {
			return workload{}, fmt.Errorf("%w: workload %s takes no size", errSpec, name)
		}
		return workload{Kind: name}, nil
	case kindBulk:
		w := workload{Kind: kindBulk, Write: defaultBulkWrite}
		if hasArg {
			n, err := parseSize(arg)
			if err != nil {
				return workload{}, fmt.Errorf("%w: workload %q: %v", errSpec, s, err)
			}
			if n < 1 || n > maxBulkWrite {
				return workload{}, fmt.Errorf("%w: workload %q: write size out of range (1 B to 64 MiB)", errSpec, s)
			}
			w.Write = n
		}
		return w, nil
	}
	return workload{}, fmt.Errorf("%w: workload %q (want video, rr, bulk or bulk=BYTES)", errSpec, s)
}

// String returns the workload as run.json records it: "video", "bulk=65536"
// or "rr=16+32".
func (w workload) String() string {
	switch w.Kind {
	case kindBulk:
		return "bulk=" + strconv.Itoa(w.Write)
	case kindRR:
		return fmt.Sprintf("rr=%d+%d", rrHeader, rrBody)
	}
	return w.Kind
}

// short returns a compact name for run IDs: "video", "bulk64KiB", "rr".
func (w workload) short() string {
	if w.Kind == kindBulk {
		return "bulk" + strings.ReplaceAll(fmtSize(w.Write), " ", "")
	}
	return w.Kind
}

// describe returns the workload for a scenario title.
func (w workload) describe() string {
	switch w.Kind {
	case kindBulk:
		return "bulk " + fmtSize(w.Write) + " writes"
	case kindRR:
		return fmt.Sprintf("requests of %d B + %d B writes", rrHeader, rrBody)
	}
	return "video"
}

// parseSize reads a byte count: "512", "4096", "4KiB", "64KiB", "1MiB",
// "15000", "15kB" (decimal) or "165k".
func parseSize(s string) (int, error) {
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
	if n > maxBulkWrite*4/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// fmtSize formats a byte count as "512 B", "4 KiB" or "64 KiB" when it is a
// whole number of KiB or MiB, and in bytes otherwise.
func fmtSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// parseModes reads a comma-separated list of modes, each as
// transport.ParseMode reads it. Two that print the same are an error.
func parseModes(s string) ([]transport.Mode, error) {
	var out []transport.Mode
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		m, err := transport.ParseMode(f)
		if err != nil {
			return nil, fmt.Errorf("%w: mode %q: %v", errSpec, f, err)
		}
		if m.Policy == transport.Expire {
			return nil, fmt.Errorf("%w: mode %q: expire is a QUIC mode", errSpec, f)
		}
		if seen[m.String()] {
			return nil, fmt.Errorf("%w: mode %s given twice", errSpec, m)
		}
		seen[m.String()] = true
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no modes", errSpec)
	}
	return out, nil
}

// step is one change of a rate schedule: at At after the run starts the
// bottleneck rate becomes Rate (0 keeps it) and the round-trip time RTT (0
// keeps it).
type step struct {
	At   time.Duration
	Rate rate.Bitrate
	RTT  time.Duration
}

// parseSchedule reads a comma-separated list of steps "AT=RATE",
// "AT=RATE/RTT" or "AT=/RTT", as in "20s=500kbit,30s=2mbit/80ms". Steps must
// be in increasing time order.
func parseSchedule(s string) ([]step, error) {
	var out []step
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		at, change, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("%w: schedule step %q (want AT=RATE, AT=RATE/RTT or AT=/RTT)", errSpec, f)
		}
		var st step
		var err error
		if st.At, err = time.ParseDuration(at); err != nil || st.At < 0 {
			return nil, fmt.Errorf("%w: schedule step %q: time %q", errSpec, f, at)
		}
		r, d, _ := strings.Cut(change, "/")
		if r != "" {
			if st.Rate, err = rate.Parse(r); err != nil {
				return nil, fmt.Errorf("%w: schedule step %q: %v", errSpec, f, err)
			}
		}
		if d != "" {
			if st.RTT, err = time.ParseDuration(d); err != nil || st.RTT <= 0 {
				return nil, fmt.Errorf("%w: schedule step %q: RTT %q", errSpec, f, d)
			}
		}
		if st.Rate == 0 && st.RTT == 0 {
			return nil, fmt.Errorf("%w: schedule step %q changes nothing", errSpec, f)
		}
		if len(out) > 0 && st.At <= out[len(out)-1].At {
			return nil, fmt.Errorf("%w: schedule step %q is not after the one before", errSpec, f)
		}
		out = append(out, st)
	}
	return out, nil
}

// fmtSchedule formats steps as parseSchedule reads them.
func fmtSchedule(steps []step) string {
	var b strings.Builder
	for i, st := range steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(st.At.String() + "=")
		if st.Rate > 0 {
			b.WriteString(fmtRate(st.Rate))
		}
		if st.RTT > 0 {
			b.WriteString("/" + st.RTT.String())
		}
	}
	return b.String()
}

// fmtRate formats r compactly for IDs and flags: "100kbit", "2mbit",
// "86mbit", "1500kbit", "12345bit".
func fmtRate(r rate.Bitrate) string {
	switch {
	case r >= rate.Mbps && r%rate.Mbps == 0:
		return fmt.Sprintf("%dmbit", r/rate.Mbps)
	case r >= rate.Kbps && r%rate.Kbps == 0:
		return fmt.Sprintf("%dkbit", r/rate.Kbps)
	}
	return fmt.Sprintf("%dbit", int64(r))
}

// defaultSndbufBytes is the default of --sndbuf: the 8 MB send buffer of
// the published table's unmanaged sender.
const defaultSndbufBytes = 8 << 20

// minQueuePackets is the fewest full packets the bottleneck queue holds.
const minQueuePackets = 8

// pathSpec describes the emulated path of a run.
type pathSpec struct {
	Rate     rate.Bitrate  // bottleneck rate, forward direction
	RTT      time.Duration // round-trip propagation delay, split evenly
	Queue    time.Duration // drop-tail limit as time at Rate
	Loss     float64       // random loss probability, forward direction
	Schedule []step
	CC       string // congestion control in both namespaces
	// Sndbuf is the initial send buffer of TCP sockets on the sender side
	// in bytes (net.ipv4.tcp_wmem's default; autotuning may grow it). 0
	// keeps the emulator's setting.
	Sndbuf int
	// MTU is the MTU of the path's devices in bytes; 0 means emu.MTU.
	MTU int
}

// maxSndbuf caps pathSpec.Sndbuf.
const maxSndbuf = 1 << 30

// wmem returns the value of net.ipv4.tcp_wmem for the sender's namespace.
func (p pathSpec) wmem() string {
	return fmt.Sprintf("4096 %d %d", p.Sndbuf, max(p.Sndbuf, 32<<20))
}

// queueBytes returns the drop-tail limit in bytes for rate r and queue time
// q: what r drains in q, never under minQueuePackets full packets.
func queueBytes(r rate.Bitrate, q time.Duration) int {
	return max(r.Bytes(q), minQueuePackets*emu.MTU)
}

// emuConfig returns the emulator's configuration for the path: the
// bottleneck, its queue and the loss in the forward direction, and half the
// RTT of propagation delay each way. The queue limit is computed from the
// initial rate and kept when the rate changes. The schedule is not part of
// it: the runner applies it, timed from the start of the workload.
func (p pathSpec) emuConfig() emu.Config {
	fwd := emu.LinkConfig{
		Rate:       p.Rate,
		Delay:      p.RTT / 2,
		QueueBytes: queueBytes(p.Rate, p.Queue),
		Loss:       p.Loss,
		Seed:       1,
	}
	rev := emu.LinkConfig{Delay: p.RTT - p.RTT/2}
	return emu.Config{Forward: fwd, Reverse: rev, CC: p.CC, MTU: p.MTU}
}

// meanRate returns the time-weighted mean bottleneck rate over [from, to]
// (times since the run's start) given the schedule.
func (p pathSpec) meanRate(from, to time.Duration) float64 {
	if to <= from {
		return float64(p.rateAt(from))
	}
	var sum float64
	t := from
	cur := p.rateAt(from)
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

// rateAt returns the bottleneck rate the schedule sets at time t.
func (p pathSpec) rateAt(t time.Duration) rate.Bitrate {
	r := p.Rate
	for _, st := range p.Schedule {
		if st.At <= t && st.Rate > 0 {
			r = st.Rate
		}
	}
	return r
}

// runSpec describes one run: a workload in one mode on one path.
type runSpec struct {
	Path     pathSpec
	Mode     transport.Mode
	Workload workload
	Warmup   time.Duration
	Duration time.Duration // the measured window after the warm-up
	Drain    time.Duration // at most this long after the window for its data to leave
	Browser  bool          // video: measure capture to displayed in headless Chromium
	MaxRes   string        // video: largest resolution, "" for the sender's default
	// Bitrate is the video sender's starting target, where the modes that
	// give it no view of the path (default, lowat) keep it; 0 means the
	// bottleneck rate, as an application configured for its link would.
	Bitrate  rate.Bitrate
	Scenario string // table title; "" derives one
}

// Limits of the video sender's -bitrate.
const (
	minVideoBitrate = 10 * rate.Kbps
	maxVideoBitrate = 100 * rate.Mbps
)

// videoBitrate returns the video sender's starting target.
func (s runSpec) videoBitrate() rate.Bitrate {
	if s.Bitrate > 0 {
		return s.Bitrate
	}
	return min(max(s.Path.Rate, minVideoBitrate), maxVideoBitrate)
}

// total returns the length of the whole run.
func (s runSpec) total() time.Duration { return s.Warmup + s.Duration }

// id returns the run's ID: unique within a set as long as the runs differ,
// and safe as a file name, as in "2mbit-172ms-bulk64KiB-replenish=15ms".
func (s runSpec) id() string {
	parts := []string{fmtRate(s.Path.Rate), fmtDur(s.Path.RTT), s.Workload.short(), s.Mode.String()}
	if s.Path.Queue != defaultQueue {
		parts = append(parts, "q"+fmtDur(s.Path.Queue))
	}
	if s.Path.Loss > 0 {
		parts = append(parts, "loss"+strconv.FormatFloat(s.Path.Loss, 'g', -1, 64))
	}
	if s.Path.CC != "" && s.Path.CC != defaultCC {
		parts = append(parts, s.Path.CC)
	}
	if s.Path.Sndbuf != defaultSndbufBytes {
		parts = append(parts, "sndbuf"+strconv.Itoa(s.Path.Sndbuf))
	}
	if s.Path.MTU != 0 && s.Path.MTU != emu.MTU {
		parts = append(parts, "mtu"+strconv.Itoa(s.Path.MTU))
	}
	if len(s.Path.Schedule) > 0 {
		parts = append(parts, "sched"+strconv.Itoa(len(s.Path.Schedule)))
	}
	if s.Bitrate > 0 {
		parts = append(parts, "br"+fmtRate(s.Bitrate))
	}
	if s.Browser {
		parts = append(parts, "browser")
	}
	return sanitizeID(strings.Join(parts, "-"))
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

// scenario returns the title of the table the run belongs to: the one the
// spec gives, or one made of the workload and the path, as in "bulk 64 KiB
// writes, 2 Mb/s, 172 ms RTT, 200 ms queue".
func (s runSpec) scenario() string {
	if s.Scenario != "" {
		return s.Scenario
	}
	parts := []string{s.Workload.describe(), s.Path.Rate.String(), fmtDurSpace(s.Path.RTT) + " RTT", fmtDurSpace(s.Path.Queue) + " queue"}
	if s.Path.Loss > 0 {
		parts = append(parts, fmt.Sprintf("%g%% loss", 100*s.Path.Loss))
	}
	if s.Path.MTU != 0 && s.Path.MTU != emu.MTU {
		parts = append(parts, fmt.Sprintf("MTU %d", s.Path.MTU))
	}
	if s.Path.CC != "" && s.Path.CC != defaultCC {
		parts = append(parts, s.Path.CC)
	}
	if s.Path.Sndbuf != defaultSndbufBytes {
		if s.Path.Sndbuf == 0 {
			parts = append(parts, "Linux's initial send buffer")
		} else {
			parts = append(parts, fmtSize(s.Path.Sndbuf)+" initial send buffer")
		}
	}
	if len(s.Path.Schedule) > 0 {
		parts = append(parts, "schedule "+fmtSchedule(s.Path.Schedule))
	}
	if s.Bitrate > 0 {
		parts = append(parts, "sender bitrate "+s.Bitrate.String())
	}
	if s.Browser {
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
