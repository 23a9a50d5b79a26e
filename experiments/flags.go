package main

import (
	"flag"
	"fmt"
	"io"

	"replenish/experiments/scenario"
)

// runOptions are the run command's flags beyond those of scenario.Flags.
type runOptions struct {
	Spec     scenario.Flags
	Out      string
	Matrix   string
	Quick    bool
	Parallel int
	BinDir   string
	Verbose  bool
}

// parseRunFlags reads the run command's flags. Help goes to out.
func parseRunFlags(args []string, out io.Writer) (runOptions, error) {
	o := runOptions{Spec: scenario.Defaults(), Parallel: 1}
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
	o.Spec.Register(fs)
	fs.StringVar(&o.Out, "out", "", "results `directory` (default results/run-YYYYMMDD-HHMMSS)")
	fs.StringVar(&o.Matrix, "matrix", "", "scenario `file` or directory of *.txt files (or a comma-separated list of them): one line of run flags per set of runs")
	fs.BoolVar(&o.Quick, "quick", false, "shorten every run to a 2 s warm-up and an 8 s window (a smoke test)")
	fs.IntVar(&o.Parallel, "parallel", o.Parallel, "`runs` at a time, each on its own path (more than 1 only on an idle machine with cores to spare)")
	fs.StringVar(&o.BinDir, "bindir", "", "`directory` with prebuilt sender and viewer binaries (default: go build them)")
	fs.BoolVar(&o.Verbose, "v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", scenario.ErrSpec, fs.Args())
	}
	if o.Parallel < 1 {
		return o, fmt.Errorf("%w: --parallel %d must be at least 1", scenario.ErrSpec, o.Parallel)
	}
	return o, nil
}

// runs returns the runs the options describe: those of the matrix when
// one is given, otherwise those of the flags; --quick shortens them all.
// It also returns a note for each combination of transport and mode that
// was asked for and does not exist.
func (o runOptions) runs() (runs []scenario.Run, skipped []string, err error) {
	if o.Matrix != "" {
		runs, skipped, err = scenario.ReadMatrix(o.Matrix, o.Spec)
	} else {
		runs, skipped, err = o.Spec.Runs()
	}
	if err != nil {
		return nil, nil, err
	}
	if o.Quick {
		scenario.Quick(runs)
	}
	return runs, skipped, nil
}
