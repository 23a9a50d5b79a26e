// Package runner runs the experiments' runs: for each, a fresh emulated path
// (experiments/emu), the run's workload started on it (a receiving side,
// then the sending side at the run's time zero, with the path's schedule),
// the emulator sampled through the warm-up, the measured window and the
// drain, the processes watched (one that exits early fails the run), and
// the run's summary and records written into the results directory
// (experiments/summary). Runs go one after another or a few at a time,
// each on its own path, with a progress display.
package runner

import (
	"context"
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
	"replenish/experiments/proc"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/experiments/workload"
	"replenish/records"
)

// SampleEvery is how often a run reads the emulator's counters; it is also
// the emulator's recent window, so that each sample covers one interval.
const SampleEvery = 250 * time.Millisecond

// Overhead is roughly what a run adds to its length: path set-up, process
// start and stop.
const Overhead = 3 * time.Second

// ErrChildExited is wrapped when a workload process ends before its run.
var ErrChildExited = errors.New("experiments: a workload process exited early")

// Workload is one run's processes (workload.Runnable).
type Workload = workload.Runnable

var (
	_ Workload = (*workload.Bulk)(nil)
	_ Workload = (*workload.Video)(nil)
	_ Workload = (*workload.Crossed)(nil)
)

// Runner runs runs into a results directory. Its fields are set before the
// first run and not changed after; RunAll may run several runs at once.
type Runner struct {
	Programs workload.Programs
	Out      string       // the results directory
	Log      *slog.Logger // the runs' messages
	EmuLog   *slog.Logger // the emulator's, usually quieter
	Progress *Progress
}

// workload returns the processes of spec's workload on path p (and the
// page's leg, page, or nil), with their files in dir.
func (rn *Runner) workload(spec scenario.Run, p, page *emu.Path, dir string) Workload {
	if spec.Workload.Kind != scenario.KindVideo {
		return workload.NewBulk(spec, p, dir, rn.Programs.Self)
	}
	v := workload.NewVideo(spec, p, page, dir, rn.Programs, rn.Log)
	if spec.Cross > 0 {
		return workload.NewCrossed(v, spec.Cross, spec.CrossFor, p, dir, rn.Programs.Self)
	}
	return v
}

// RunAll runs specs (with their IDs), parallel at a time, each on its own
// path, and returns how many failed. It stops starting runs once ctx is
// done.
func (rn *Runner) RunAll(ctx context.Context, specs []scenario.Run, ids []string, parallel int) (failed int) {
	var mu sync.Mutex // guards next and failed
	next := 0
	var wg sync.WaitGroup
	for range min(parallel, len(specs)) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(specs) || ctx.Err() != nil {
					return
				}
				label := fmt.Sprintf("[%d/%d] %s", i+1, len(specs), ids[i])
				run, err := rn.RunOne(ctx, specs[i], ids[i], label)
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					rn.Progress.finish(label, "failed: "+err.Error())
					continue
				}
				rn.Progress.finish(label, doneLine(run))
			}
		})
	}
	wg.Wait()
	return failed
}

// doneLine is a finished run's line.
func doneLine(r report.Run) string {
	ms, bps := summary.FormatMs, summary.FormatBps
	s := fmt.Sprintf("source delay p50 %s p95 %s", ms(r.SourceDelayMs.P50), ms(r.SourceDelayMs.P95))
	if !math.IsNaN(r.GoodputBps) {
		s += fmt.Sprintf(", goodput %s (%.0f%%", bps(r.GoodputBps), 100*r.Utilization)
		if l := r.LinkUtilization; l != nil {
			s += fmt.Sprintf("; link %.0f%%", 100**l)
		}
		s += ")"
	}
	s += ", queue p50 " + ms(r.BottleneckQueueMs.P50)
	if r.CaptureToReceivedMs != nil {
		s += ", capture to received p50 " + ms(r.CaptureToReceivedMs.P50)
	}
	if r.G2GMs != nil {
		s += ", g2g p50 " + ms(r.G2GMs.P50)
	}
	return s
}

// RunOne runs spec on a fresh path, writes runs/<id>/run.json and
// records.jsonl, and returns the run's summary; label names it on the
// progress display. A run that fails still writes a run.json, whose notes
// say why.
func (rn *Runner) RunOne(ctx context.Context, spec scenario.Run, id, label string) (report.Run, error) {
	dir := filepath.Join(rn.Out, records.RunsDir, id)
	raw := filepath.Join(dir, records.RawDir)
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

// execute does RunOne's work.
func (rn *Runner) execute(ctx context.Context, spec scenario.Run, id, label, raw string) (report.Run, []records.RunLine, error) {
	cfg := spec.Path.EmuConfig()
	cfg.Window = SampleEvery
	cfg.Logger = rn.EmuLog
	p, err := emu.Start(ctx, cfg)
	if err != nil {
		return report.Run{}, nil, err
	}
	defer p.Close()
	page, err := rn.startPageLeg(ctx, spec, p)
	if err != nil {
		return report.Run{}, nil, err
	}
	if page != nil {
		defer page.Close()
	}
	w := rn.workload(spec, p, page, raw)
	stopped := false
	defer func() {
		if !stopped {
			w.Stop()
		}
	}()
	if err := w.StartReceiver(ctx); err != nil {
		return report.Run{}, nil, err
	}
	t0 := time.Now()
	fwd, rev := spec.Path.EmuSchedule()
	p.Schedule(emu.Forward, fwd)
	p.Schedule(emu.Reverse, rev)
	if page != nil {
		fwd, rev := spec.Page.EmuSchedule()
		page.Schedule(emu.Forward, fwd)
		page.Schedule(emu.Reverse, rev)
	}
	if err := w.StartSender(ctx); err != nil {
		return report.Run{}, nil, err
	}
	in := summary.Input{Spec: spec, ID: id, TL: summary.Timeline{T0: t0, Warmup: spec.Warmup, Duration: spec.Duration}}
	p.TakeIdle(emu.Forward) // the idle time before the run's start
	final, samples, err := rn.watch(ctx, run{spec: spec, p: p, w: w, t0: t0, label: label, idle: &in.Idle,
		page: page, pageFinal: &in.PageFinal})
	stopped = true
	if serr := w.Stop(); err == nil && serr != nil {
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

// startPageLeg starts the path of spec's page leg, from p's receiver
// namespace (the viewer's), or returns nil when spec has none.
func (rn *Runner) startPageLeg(ctx context.Context, spec scenario.Run, p *emu.Path) (*emu.Path, error) {
	if spec.Page == nil {
		return nil, nil
	}
	cfg := spec.Page.EmuConfig(p.ReceiverNS())
	cfg.CC, cfg.Window, cfg.Logger = p.CC(), SampleEvery, rn.EmuLog
	page, err := emu.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("the page's leg: %w", err)
	}
	return page, nil
}

// run is a run under way, as watch sees it.
type run struct {
	spec  scenario.Run
	p     *emu.Path
	w     Workload
	t0    time.Time // the sending side's start
	label string
	idle  *summary.IdleLog // the forward bottleneck's idle spans, gathered at every sample
	// page is the page's leg, nil without one; pageFinal receives its
	// statistics at the end of the window.
	page      *emu.Path
	pageFinal **emu.Stats
}

// exits returns a channel that receives each of w's processes that exits,
// and a function that stops watching them.
func exits(w Workload) (<-chan *proc.Proc, func()) {
	procs := w.Procs()
	exited := make(chan *proc.Proc, len(procs))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, pr := range procs {
		wg.Go(func() {
			select {
			case <-pr.Done():
				exited <- pr
			case <-stop:
			}
		})
	}
	return exited, func() {
		close(stop)
		wg.Wait()
	}
}

// watch samples the emulator until the end of the run (its counters and
// its idle spans), restarts the emulator's totals at the end of the
// warm-up and updates the progress line. After the window, it quiesces the workload and waits up to the
// run's drain for it to be drained. It returns the statistics at the end
// of the window and the samples, or an error if ctx ends or a process
// exits early.
func (rn *Runner) watch(ctx context.Context, r run) (emu.Stats, []summary.Sample, error) {
	exited, unwatch := exits(r.w)
	defer unwatch()
	total := r.spec.Total()
	warm, end := time.NewTimer(r.spec.Warmup), time.NewTimer(total)
	defer warm.Stop()
	defer end.Stop()
	tick := time.NewTicker(SampleEvery)
	defer tick.Stop()
	samples := make([]summary.Sample, 0, int(total/SampleEvery)+2)
	warmedUp := r.spec.Warmup == 0
	if warmedUp {
		r.p.ResetTotals()
	}
	var final emu.Stats
	var drainEnd <-chan time.Time // set once the window is over
	for {
		select {
		case <-ctx.Done():
			return emu.Stats{}, nil, ctx.Err()
		case pr := <-exited:
			return emu.Stats{}, nil, fmt.Errorf("%w: %s after %.1f s: %v (see %s.log)", ErrChildExited, pr.Name(),
				time.Since(r.t0).Seconds(), pr.Err(), pr.Name())
		case <-warm.C:
			r.p.ResetTotals()
			if r.page != nil {
				r.page.ResetTotals()
			}
			warmedUp = true
		case now := <-tick.C:
			r.idle.Add(r.p.TakeIdle(emu.Forward))
			s := summary.SampleFrom(now.Sub(r.t0), r.p.Stats())
			samples = append(samples, s)
			line := liveLine(r.spec, warmedUp, s, r.w)
			if drainEnd != nil {
				since := s.At - total
				if r.w.Drained(since) {
					return final, samples, nil
				}
				line = fmt.Sprintf("draining %.0f/%.0f s  ", since.Seconds(), r.spec.Drain.Seconds()) + line
			}
			rn.Progress.update(r.label, line)
		case <-end.C:
			r.idle.Add(r.p.TakeIdle(emu.Forward))
			final = r.p.Stats()
			if r.page != nil {
				st := r.page.Stats()
				*r.pageFinal = &st
			}
			if r.spec.Drain <= 0 {
				return final, samples, nil
			}
			r.w.Quiesce()
			dt := time.NewTimer(r.spec.Drain)
			defer dt.Stop()
			drainEnd = dt.C
		case <-drainEnd:
			return final, samples, nil
		}
	}
}

// liveLine is a run's progress line.
func liveLine(spec scenario.Run, warmedUp bool, s summary.Sample, w Workload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5.1f/%.0f s", s.At.Seconds(), spec.Total().Seconds())
	if !warmedUp {
		b.WriteString(" (warm-up)")
	}
	fmt.Fprintf(&b, "  delivered %s  queue %s", summary.FormatBps(s.Delivered), summary.FormatMs(s.QueueMs))
	p50, extra := w.Live()
	if !math.IsNaN(p50) {
		fmt.Fprintf(&b, "  source delay p50 %s", summary.FormatMs(p50))
	}
	if extra != "" {
		b.WriteString("  " + extra)
	}
	return b.String()
}
