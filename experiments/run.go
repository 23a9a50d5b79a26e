package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/internal/headless"
)

// runOverhead is roughly what a run adds to its length: path set-up,
// process start and stop.
const runOverhead = 3 * time.Second

// runMain is the run command.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseRunFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 2
	}
	specs, err := o.runs()
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 2
	}
	ids := scenario.UniqueIDs(specs)
	if o.Out == "" {
		o.Out = filepath.Join("results", "run-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(filepath.Join(o.Out, "runs"), 0o755); err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 1
	}

	prog := newProgress(stderr)
	level := slog.LevelInfo
	if o.Verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(prog, &slog.HandlerOptions{Level: level}))
	emuLevel := slog.LevelWarn
	if o.Verbose {
		emuLevel = slog.LevelDebug
	}
	emuLog := slog.New(slog.NewTextHandler(prog, &slog.HandlerOptions{Level: emuLevel}))

	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "run: needs root: the emulated path creates network namespaces")
		return 1
	}
	if err := emu.PrioritizeProcess(); err != nil {
		log.Warn("could not raise this process's priority; results may suffer on a busy machine", "err", err)
	}
	video, browser := false, false
	var total time.Duration
	for _, s := range specs {
		video = video || s.Workload.Kind == scenario.KindVideo
		browser = browser || s.Browser
		total += s.Total() + runOverhead
	}
	if browser {
		if _, err := headless.Path(); err != nil {
			fmt.Fprintf(stderr, "run: --browser: %v\n", err)
			return 1
		}
	}
	tmp, err := os.MkdirTemp("", "replenish-experiments-")
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if video && o.BinDir == "" {
		fmt.Fprintln(stderr, "building the sender and the viewer")
	}
	bins, err := findBinaries(ctx, video, o.BinDir, tmp)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 1
	}
	rn := &runner{bins: bins, out: o.Out, log: log, emu: emuLog, prog: prog}
	fmt.Fprintf(stderr, "%d runs into %s, about %s\n", len(specs), o.Out, (total / time.Duration(o.Parallel)).Round(time.Second))

	failed := rn.runAll(ctx, specs, ids, o.Parallel)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "run: interrupted; the namespaces are removed")
	}

	if err := report.Build(o.Out, log); err != nil {
		fmt.Fprintf(stderr, "run: report: %v\n", err)
		return 1
	}
	runs, _ := report.Load(o.Out)
	fmt.Fprint(stdout, report.Markdown(runs))
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(o.Out, "index.html"))
	switch {
	case ctx.Err() != nil:
		return 130
	case failed > 0:
		fmt.Fprintf(stderr, "run: %d of %d runs failed (see their notes)\n", failed, len(specs))
		return 1
	}
	return 0
}

// runAll runs specs, parallel at a time, each on its own path, and returns
// how many failed. It stops starting runs once ctx is done.
func (rn *runner) runAll(ctx context.Context, specs []scenario.Run, ids []string, parallel int) (failed int) {
	var mu sync.Mutex
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
				run, err := rn.runOne(ctx, specs[i], ids[i], label)
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					rn.prog.finish(label, "failed: "+err.Error())
					continue
				}
				rn.prog.finish(label, doneLine(run))
			}
		})
	}
	wg.Wait()
	return failed
}

// doneLine is a finished run's line.
func doneLine(r report.Run) string {
	s := fmt.Sprintf("source delay p50 %s p95 %s", summary.FormatMs(r.SourceDelayMs.P50), summary.FormatMs(r.SourceDelayMs.P95))
	if !math.IsNaN(r.GoodputBps) {
		s += fmt.Sprintf(", goodput %s (%.0f%%)", summary.FormatBps(r.GoodputBps), 100*r.Utilization)
	}
	s += ", queue p50 " + summary.FormatMs(r.BottleneckQueueMs.P50)
	if r.CaptureToReceivedMs != nil {
		s += ", capture to received p50 " + summary.FormatMs(r.CaptureToReceivedMs.P50)
	}
	if r.G2GMs != nil {
		s += ", g2g p50 " + summary.FormatMs(r.G2GMs.P50)
	}
	return s
}
