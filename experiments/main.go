// Command experiments runs replenish's workloads on emulated network paths
// and reports how the send-buffer policies compare.
//
//	go run ./experiments run [flags]       one or more runs on an emulated path
//	go run ./experiments report --out DIR  rebuild a results directory's report
//	go run ./experiments demo [flags]      a live demo for an audience
//	go run ./experiments loopback [flags]  glass-to-glass on this machine, no emulation
//	go run ./experiments draw [flags]      a matrix of video paths drawn at random
//
// Each subcommand has its own -h.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"replenish/experiments/workload"
)

// command is a subcommand: it returns the exit code.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// commands maps a subcommand to its function.
var commands = map[string]command{
	"loopback": loopbackMain,
	"run":      runMain,
	"report":   reportMain,
	"demo":     demoMain,
	"draw":     drawMain,
	// Hidden: computes the summaries of a results directory again.
	"resummarize": resummarizeMain,
	// Hidden: a video run's frame records as a rate-controller trace.
	"trace": traceMain,
}

// Hidden: the workloads' processes, which run re-executes inside the
// namespaces (workload.Roles).
func init() {
	for _, r := range workload.Roles {
		commands[string(r)] = func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return workload.Main(ctx, r, args, stdout, stderr)
		}
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "experiments: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: go run ./experiments COMMAND [flags]

commands:
  run       run workloads under several send-buffer modes on an emulated path
  report    rebuild the report (tables, plots, index.html) of a results directory
  demo      a live demo: two senders, with and without SBM, across an emulated path
  loopback  glass-to-glass latency on this machine with headless Chromium
  draw      write a matrix of video paths drawn at random (for run --matrix)

Run "go run ./experiments COMMAND -h" for a command's flags.
`)
}
