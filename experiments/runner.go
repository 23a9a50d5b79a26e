package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/records"
)

// sampleEvery is how often a run reads the emulator's counters; it is also
// the emulator's recent window, so that each sample covers one interval.
const sampleEvery = 250 * time.Millisecond

// Grace periods for stopping a run's processes.
const (
	stopGrace = 5 * time.Second
	readyWait = 20 * time.Second
)

// Ports inside the namespaces.
const (
	workloadPort = 9000 // sink, rr server and viewer media
	viewerHTTP   = "127.0.0.1:8080"
)

// runner runs runs.
type runner struct {
	bins binaries
	out  string // results directory
	log  *slog.Logger
	emu  *slog.Logger // for the emulator, quieter
	prog *progress
}

// live holds a run's latest figures for the progress display. It is safe
// for concurrent use.
type live struct {
	mu     sync.Mutex // guards the fields below
	srcP50 float64    // ms; NaN when unknown
	extra  string
}

func newLive() *live { return &live{srcP50: math.NaN()} }

func (l *live) set(p50 float64, extra string) {
	l.mu.Lock()
	l.srcP50, l.extra = p50, extra
	l.mu.Unlock()
}

func (l *live) get() (float64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.srcP50, l.extra
}

// workloadRun is one run's processes: a receiving side started first, a
// sending side started at the run's time zero, both stopped at its end.
type workloadRun interface {
	// startReceiver starts the receiving side and returns once it accepts
	// connections.
	startReceiver(ctx context.Context) error
	// startSender starts the sending side.
	startSender(ctx context.Context) error
	// procs returns the processes started so far.
	procs() []*proc
	// quiesce tells the sending side, at the end of the window, to stop
	// writing new data where it can.
	quiesce()
	// drained reports whether what was written in the window has left
	// the host, sinceEnd after the window ended.
	drained(sinceEnd time.Duration) bool
	// stop ends the sending side, then the receiving side, and returns
	// what went wrong.
	stop() error
}

// newWorkloadRun returns the processes of spec's workload on path p, with
// their files in dir.
func (rn *runner) newWorkloadRun(spec scenario.Run, p *emu.Path, dir string, lv *live) workloadRun {
	if spec.Workload.Kind == scenario.KindVideo {
		return &videoRun{spec: spec, p: p, dir: dir, bins: rn.bins, live: lv, log: rn.log, c2r99: math.NaN()}
	}
	return &bulkRun{spec: spec, p: p, dir: dir, self: rn.bins.Self, live: lv}
}

// runOne runs spec on a fresh path, writes runs/<id>/run.json and
// records.jsonl, and returns the run's summary. A run that fails still
// writes a run.json, whose notes say why.
func (rn *runner) runOne(ctx context.Context, spec scenario.Run, id, label string) (report.Run, error) {
	dir := filepath.Join(rn.out, "runs", id)
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return report.Run{}, err
	}
	run, recs, err := rn.execute(ctx, spec, id, label, raw)
	if err != nil {
		run = summary.Failed(spec, id, err)
	}
	if werr := summary.Write(dir, run, recs); werr != nil && err == nil {
		err = werr
	}
	return run, err
}

// execute does runOne's work.
func (rn *runner) execute(ctx context.Context, spec scenario.Run, id, label, raw string) (report.Run, []records.RunLine, error) {
	cfg := spec.Path.EmuConfig()
	cfg.Window = sampleEvery
	cfg.Logger = rn.emu
	p, err := emu.Start(ctx, cfg)
	if err != nil {
		return report.Run{}, nil, err
	}
	defer p.Close()
	if spec.Path.Sndbuf > 0 {
		if err := p.Do(emu.Sender, func() error {
			return os.WriteFile("/proc/sys/net/ipv4/tcp_wmem", []byte(spec.Path.Wmem()), 0)
		}); err != nil {
			return report.Run{}, nil, fmt.Errorf("experiments: setting the send buffer: %w", err)
		}
	}

	lv := newLive()
	w := rn.newWorkloadRun(spec, p, raw, lv)
	stopped := false
	defer func() {
		if !stopped {
			w.stop()
		}
	}()
	if err := w.startReceiver(ctx); err != nil {
		return report.Run{}, nil, err
	}
	t0 := time.Now()
	fwd, rev := spec.Path.EmuSchedule()
	p.Schedule(emu.Forward, fwd)
	p.Schedule(emu.Reverse, rev)
	if err := w.startSender(ctx); err != nil {
		return report.Run{}, nil, err
	}
	in := summary.Input{Spec: spec, ID: id, TL: summary.Timeline{T0: t0, Warmup: spec.Warmup, Duration: spec.Duration}}
	final, samples, err := rn.watch(ctx, spec, p, w, t0, lv, label)
	stopped = true
	if serr := w.stop(); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return report.Run{}, nil, err
	}
	in.Final, in.Samples = final, samples
	if err := summary.SaveInput(raw, in); err != nil {
		return report.Run{}, nil, err
	}
	return summary.Summarize(in, raw)
}

// watch samples the emulator until the end of the run, restarts the
// emulator's totals at the end of the warm-up and updates the progress
// line. It returns the final statistics and the
// samples, or an error if ctx ends or a process exits early.
func (rn *runner) watch(ctx context.Context, spec scenario.Run, p *emu.Path, w workloadRun, t0 time.Time, lv *live, label string) (emu.Stats, []summary.Sample, error) {
	procs := w.procs()
	exited := make(chan *proc, len(procs))
	stopWatch := make(chan struct{})
	var watchers sync.WaitGroup
	defer func() {
		close(stopWatch)
		watchers.Wait()
	}()
	for _, pr := range procs {
		watchers.Go(func() {
			select {
			case <-pr.done:
				exited <- pr
			case <-stopWatch:
			}
		})
	}
	total := spec.Total()
	warm := time.NewTimer(spec.Warmup)
	defer warm.Stop()
	end := time.NewTimer(total)
	defer end.Stop()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	samples := make([]summary.Sample, 0, int(total/sampleEvery)+2)

	warmedUp := spec.Warmup == 0
	if warmedUp {
		p.ResetTotals()
	}
	var final emu.Stats
	ended := false // the window is over; draining
	var drainEnd <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return emu.Stats{}, nil, ctx.Err()
		case pr := <-exited:
			return emu.Stats{}, nil, fmt.Errorf("%w: %s after %.1f s: %v (see %s.log)", errChildExited, pr.name,
				time.Since(t0).Seconds(), pr.exitErr(), pr.name)
		case <-warm.C:
			p.ResetTotals()
			warmedUp = true
		case now := <-tick.C:
			at := now.Sub(t0)
			s := summary.SampleFrom(at, p.Stats())
			samples = append(samples, s)
			line := liveLine(spec, at, warmedUp, s, lv)
			if ended {
				since := at - total
				if w.drained(since) {
					return final, samples, nil
				}
				line = fmt.Sprintf("draining %.0f/%.0f s  ", since.Seconds(), spec.Drain.Seconds()) + line
			}
			rn.prog.update(label, line)
		case <-end.C:
			final = p.Stats()
			if spec.Drain <= 0 {
				return final, samples, nil
			}
			ended = true
			w.quiesce()
			dt := time.NewTimer(spec.Drain)
			defer dt.Stop()
			drainEnd = dt.C
		case <-drainEnd:
			return final, samples, nil
		}
	}
}

// liveLine is a run's progress line.
func liveLine(spec scenario.Run, at time.Duration, warmedUp bool, s summary.Sample, lv *live) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5.1f/%.0f s", at.Seconds(), spec.Total().Seconds())
	if !warmedUp {
		b.WriteString(" (warm-up)")
	}
	fmt.Fprintf(&b, "  delivered %s  queue %s", summary.FormatBps(s.Delivered), summary.FormatMs(s.QueueMs))
	p50, extra := lv.get()
	if !math.IsNaN(p50) {
		fmt.Fprintf(&b, "  source delay p50 %s", summary.FormatMs(p50))
	}
	if extra != "" {
		b.WriteString("  " + extra)
	}
	return b.String()
}

// bulkRun is a bulk or request/response run: this program re-executed as
// bulk-sink and bulk-send (or rr-server and rr-client) in the namespaces.
type bulkRun struct {
	spec scenario.Run
	p    *emu.Path
	dir  string
	self string
	live *live

	recv, send *proc

	mu     sync.Mutex // guards status
	status statusLine // the sender's latest
}

func (b *bulkRun) addr() string {
	return fmt.Sprintf("%s:%d", b.p.ReceiverAddr(), workloadPort)
}

func (b *bulkRun) startReceiver(ctx context.Context) error {
	ready := make(chan struct{})
	var once sync.Once
	onLine := func(l string) {
		if l == readyLine {
			once.Do(func() { close(ready) })
		}
	}
	argv := []string{b.self, "bulk-sink", "-listen", b.addr(), "-records", filepath.Join(b.dir, records.SinkFile)}
	name := "bulk-sink"
	if b.spec.Workload.Kind == scenario.KindRR {
		argv = []string{b.self, "rr-server", "-listen", b.addr()}
		name = "rr-server"
	}
	var err error
	if b.recv, err = startProc(b.p.ReceiverNS(), name, argv, filepath.Join(b.dir, name+".log"), onLine); err != nil {
		return err
	}
	return b.recv.waitReady(ctx, ready, readyWait)
}

func (b *bulkRun) startSender(ctx context.Context) error {
	argv := []string{b.self, "bulk-send", "-to", b.addr(), "-mode", b.spec.Mode.String(),
		"-size", fmt.Sprint(b.spec.Workload.Write), "-records", filepath.Join(b.dir, records.SendFile)}
	name := "bulk-send"
	if b.spec.Workload.Kind == scenario.KindRR {
		argv = []string{b.self, "rr-client", "-to", b.addr(), "-mode", b.spec.Mode.String(), "-records", filepath.Join(b.dir, records.SendFile)}
		name = "rr-client"
	}
	onLine := func(l string) {
		var st statusLine
		if json.Unmarshal([]byte(l), &st) == nil {
			b.mu.Lock()
			b.status = st
			b.mu.Unlock()
			p50 := st.P50Ms
			if p50 < 0 {
				p50 = math.NaN()
			}
			b.live.set(p50, fmt.Sprintf("writes %d", st.Writes))
		}
	}
	var err error
	b.send, err = startProc(b.p.SenderNS(), name, argv, filepath.Join(b.dir, name+".log"), onLine)
	return err
}

// started returns the processes of ps that were started (not nil).
func started(ps ...*proc) []*proc {
	var out []*proc
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

func (b *bulkRun) procs() []*proc {
	return started(b.recv, b.send)
}

func (b *bulkRun) quiesce() {
	if b.send != nil {
		b.send.cmd.Process.Signal(stopSignal)
	}
}

func (b *bulkRun) drained(time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status.Stopped && b.status.Pending == 0
}

func (b *bulkRun) stop() error {
	var errs []error
	for _, p := range []*proc{b.send, b.recv} {
		if p != nil {
			errs = append(errs, p.stop(stopGrace))
		}
	}
	return errors.Join(errs...)
}
