package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/runner"
	"replenish/experiments/scenario"
	"replenish/experiments/workload"
	"replenish/internal/headless"
	"replenish/records"
)

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
	specs, skipped, err := o.runs()
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 2
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "run: %s\n", s)
	}
	if o.Out == "" {
		o.Out = filepath.Join("results", "run-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(filepath.Join(o.Out, records.RunsDir), 0o755); err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 1
	}
	rn, failed, err := runAll(ctx, o, specs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "run: interrupted; the namespaces are removed")
	}
	if err := report.Build(o.Out, rn.Log); err != nil {
		fmt.Fprintf(stderr, "run: report: %v\n", err)
		return 1
	}
	printReport(stdout, o.Out)
	switch {
	case ctx.Err() != nil:
		return 130
	case failed > 0:
		fmt.Fprintf(stderr, "run: %d of %d runs failed (see their notes)\n", failed, len(specs))
		return 1
	}
	return 0
}

// runAll runs specs as o says, with its progress and messages on stderr,
// and returns the runner and how many runs failed. It fails only when the
// runs cannot start.
func runAll(ctx context.Context, o runOptions, specs []scenario.Run, stderr io.Writer) (*runner.Runner, int, error) {
	rn := &runner.Runner{Out: o.Out, Progress: runner.NewProgress(stderr)}
	rn.Log, rn.EmuLog = slog.New(slog.NewTextHandler(rn.Progress, &slog.HandlerOptions{Level: slog.LevelInfo})),
		slog.New(slog.NewTextHandler(rn.Progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.Verbose {
		rn.Log = slog.New(slog.NewTextHandler(rn.Progress, &slog.HandlerOptions{Level: slog.LevelDebug}))
		rn.EmuLog = rn.Log
	}
	if os.Geteuid() != 0 {
		return nil, 0, errors.New("needs root: the emulated path creates network namespaces")
	}
	if err := emu.PrioritizeProcess(); err != nil {
		rn.Log.Warn("could not raise this process's priority; results may suffer on a busy machine", "err", err)
	}
	video, browser := false, false
	var total time.Duration
	for _, s := range specs {
		video = video || s.Workload.Kind == scenario.KindVideo
		browser = browser || s.Browser
		total += s.Total() + runner.Overhead
	}
	if browser {
		if _, err := headless.Path(); err != nil {
			return nil, 0, fmt.Errorf("--browser: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "replenish-experiments-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	if video && o.BinDir == "" {
		fmt.Fprintln(stderr, "building the sender and the viewer")
	}
	if rn.Programs, err = workload.FindPrograms(ctx, video, o.BinDir, tmp); err != nil {
		return nil, 0, err
	}
	fmt.Fprintf(stderr, "%d runs into %s, about %s\n", len(specs), o.Out, (total / time.Duration(o.Parallel)).Round(time.Second))
	return rn, rn.RunAll(ctx, specs, scenario.UniqueIDs(specs), o.Parallel), nil
}

// printReport prints the tables of the results directory out and where its
// report is.
func printReport(stdout io.Writer, out string) {
	runs, _ := report.Load(out)
	fmt.Fprint(stdout, report.Markdown(runs))
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(out, "index.html"))
}
