package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/rate"
)

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// needRoot skips a test that needs network namespaces.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the emulated path creates network namespaces")
	}
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
}

// testRunner returns a runner that re-executes this test binary for the
// workloads (see TestMain) and writes into a temporary directory.
func testRunner(t *testing.T) *runner {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &runner{bins: binaries{Self: self}, out: t.TempDir(), log: discardLog(), emu: discardLog(), prog: newProgress(io.Discard)}
}

// TestBulkComparison is the short end-to-end run of CI: 64 KiB writes at
// 2 Mb/s over 40 ms RTT, about 10 s per mode. Replenish mode's source delay
// must be at most a fifth of the unmanaged sender's, at no real cost in
// goodput.
func TestBulkComparison(t *testing.T) {
	needRoot(t)
	emu.PrioritizeProcess()
	rn := testRunner(t)
	path := scenario.Path{Rate: 2 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: "cubic", Sndbuf: 8 << 20}
	runs := map[string]report.Run{}
	for _, mode := range []string{"default", "replenish=15ms"} {
		spec := scenario.Run{Path: path, Mode: mustMode(mode), Workload: scenario.Workload{Kind: scenario.KindBulk, Write: scenario.DefaultBulkWrite},
			Warmup: 2 * time.Second, Duration: 8 * time.Second, Drain: 2 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := rn.runOne(ctx, spec, spec.ID(), spec.ID())
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("%s: source delay p50 %.0f ms p95 %.0f ms, goodput %.2f Mb/s, writes %d, notes %q",
			mode, r.SourceDelayMs.P50, r.SourceDelayMs.P95, r.GoodputBps/1e6, r.Writes, r.Notes)
		runs[mode] = r
	}
	def, rep := runs["default"], runs["replenish=15ms"]
	if !(rep.SourceDelayMs.P50 <= def.SourceDelayMs.P50/5) {
		t.Errorf("replenish source delay p50 %.0f ms is not at most a fifth of default's %.0f ms", rep.SourceDelayMs.P50, def.SourceDelayMs.P50)
	}
	if !(rep.GoodputBps >= 0.8*float64(path.Rate)) {
		t.Errorf("replenish goodput %.2f Mb/s is under 80%% of %v", rep.GoodputBps/1e6, path.Rate)
	}
	if rep.Writes < 20 {
		t.Errorf("replenish made %d writes in the window, want at least 20 (8 s of 64 KiB at 2 Mb/s is 30)", rep.Writes)
	}
	// The results directory is what package report reads.
	if err := report.Build(rn.out, nil); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, f := range []string{"summary.json", "summary.md", "index.html", "runs/2mbit-40ms-bulk64KiB-default/records.jsonl"} {
		if _, err := os.Stat(filepath.Join(rn.out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestRequestResponse runs the two-small-writes workload briefly: with
// Nagle on, the body waits for the header's (delayed) ACK, at least a
// round trip; with TCP_NODELAY it leaves at once.
func TestRequestResponse(t *testing.T) {
	needRoot(t)
	rn := testRunner(t)
	path := scenario.Path{Rate: 2 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: "cubic"}
	got := map[string]report.Run{}
	for _, mode := range []string{"default", "default+nagle"} {
		spec := scenario.Run{Path: path, Mode: mustMode(mode), Workload: scenario.Workload{Kind: scenario.KindRR}, Warmup: time.Second, Duration: 3 * time.Second, Drain: time.Second}
		r, err := rn.runOne(context.Background(), spec, spec.ID(), spec.ID())
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("%s: body source delay p50 %.2f ms, %d bodies, notes %q", mode, r.SourceDelayMs.P50, r.Writes, r.Notes)
		got[mode] = r
	}
	if p := got["default"].SourceDelayMs.P50; !(p < 5) {
		t.Errorf("TCP_NODELAY: body source delay p50 %.1f ms, want under 5 ms", p)
	}
	if p := got["default+nagle"].SourceDelayMs.P50; !(p >= 40) {
		t.Errorf("Nagle: body source delay p50 %.1f ms, want at least the 40 ms RTT", p)
	}
}

// TestChildCrash checks that a workload process that dies in the middle of
// a run fails the run with an error naming it, and that the run's
// namespaces are gone afterwards.
func TestChildCrash(t *testing.T) {
	needRoot(t)
	rn := testRunner(t)
	spec := scenario.Run{Path: scenario.Path{Rate: 2 * rate.Mbps, Queue: 200 * time.Millisecond, CC: "cubic"}, Mode: mustMode("default"),
		Workload: scenario.Workload{Kind: scenario.KindBulk, Write: 1000}, Warmup: time.Second, Duration: time.Minute}
	type result struct {
		r   report.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := rn.runOne(context.Background(), spec, spec.ID(), spec.ID())
		done <- result{r, err}
	}()
	// Kill the sending process once it runs.
	var killed bool
	for !killed {
		select {
		case res := <-done:
			t.Fatalf("run ended before the sender could be killed: %v", res.err)
		case <-time.After(200 * time.Millisecond):
		}
		killed = killProcess(t, "bulk-send", rn.out)
	}
	res := <-done
	// errChildExited comes only from noticing the exit during the run, not
	// from stopping the processes at its planned end.
	if !errors.Is(res.err, errChildExited) || !strings.Contains(res.err.Error(), "bulk-send") {
		t.Fatalf("err = %v, want errChildExited naming bulk-send", res.err)
	}
	if !strings.Contains(strings.Join(res.r.Notes, " "), "run failed") {
		t.Errorf("notes %q", res.r.Notes)
	}
	if _, err := os.Stat(filepath.Join(rn.out, "runs", spec.ID(), "run.json")); err != nil {
		t.Errorf("a failed run writes run.json too: %v", err)
	}
	ns, _ := filepath.Glob(fmt.Sprintf("/run/netns/rpl-%d-*", os.Getpid()))
	if len(ns) > 0 {
		t.Errorf("namespaces left: %q", ns)
	}
}

// killProcess kills the process whose command line holds both words, and
// reports whether it found one.
func killProcess(t *testing.T, a, b string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		cmd, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(cmd, []byte(a)) || !bytes.Contains(cmd, []byte(b)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Logf("kill %d: %v", pid, err)
			continue
		}
		return true
	}
	return false
}
