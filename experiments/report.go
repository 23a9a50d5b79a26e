package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"replenish/experiments/report"
	"replenish/experiments/summary"
	"replenish/records"
)

// reportMain is the report command: it rebuilds a results directory's
// summary, table, plots and index page from its runs.
func reportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run ./experiments report --out DIR

Rebuilds summary.json, summary.md, plots/ and index.html of a results
directory from its runs/*/run.json and records.jsonl, and prints the table.

flags:
`)
		fs.PrintDefaults()
	}
	out, code := parseOut(fs, args, stderr)
	if out == "" {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := report.Build(out, log); err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	printReport(stdout, out)
	return 0
}

// parseOut parses the only flag of the report and resummarize commands,
// --out, on fs, and returns its value, or "" and the exit code.
func parseOut(fs *flag.FlagSet, args []string, stderr io.Writer) (out string, code int) {
	fs.StringVar(&out, "out", "", "results `directory` written by run")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return "", 0
		}
		return "", 2
	}
	if out == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: need --out DIR and nothing else\n", fs.Name())
		return "", 2
	}
	return out, 0
}

// resummarizeMain is the hidden command "resummarize": it computes every
// run's summary and records of a results directory again from the runs'
// raw records, then rebuilds the report, so that a change to how runs are
// summarized can be applied to results already taken.
func resummarizeMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resummarize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out, code := parseOut(fs, args, stderr)
	if out == "" {
		return code
	}
	dirs, err := filepath.Glob(filepath.Join(out, records.RunsDir, "*", records.RawDir, records.InputFile))
	if err != nil || len(dirs) == 0 {
		fmt.Fprintf(stderr, "resummarize: no runs with %s under %s\n", records.InputFile, out)
		return 1
	}
	for _, f := range dirs {
		raw := filepath.Dir(f)
		run, recs, err := summary.Resummarize(raw)
		if err == nil {
			err = summary.Write(filepath.Dir(raw), run, recs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "resummarize: %s: %v\n", filepath.Dir(raw), err)
			code = 1
		}
	}
	if c := reportMain(ctx, []string{"--out", out}, stdout, stderr); c != 0 {
		return c
	}
	return code
}
