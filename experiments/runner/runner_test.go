package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/experiments/workload"
	"replenish/rate"
	"replenish/records"
	"replenish/transport"
)

// TestMain runs a workload's hidden command instead of the tests when the
// runner re-executes this test binary inside a namespace, as it
// re-executes the experiments program.
func TestMain(m *testing.M) {
	if os.Getenv(proc.ChildEnv) != "" && len(os.Args) > 1 {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := workload.Main(ctx, workload.Role(os.Args[1]), os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

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
func testRunner(t *testing.T) *Runner {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Programs: workload.Programs{Self: self}, Out: t.TempDir(), Log: discardLog(), EmuLog: discardLog(), Progress: NewProgress(io.Discard)}
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
		r, err := rn.RunOne(ctx, spec, spec.ID(), spec.ID())
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
	if err := report.Build(rn.Out, nil); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, f := range []string{"summary.json", "summary.md", "index.html", "runs/2mbit-40ms-bulk64KiB-default/records.jsonl"} {
		if _, err := os.Stat(filepath.Join(rn.Out, f)); err != nil {
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
		r, err := rn.RunOne(context.Background(), spec, spec.ID(), spec.ID())
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
		r, err := rn.RunOne(context.Background(), spec, spec.ID(), spec.ID())
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
		killed = killProcess(t, "bulk-send", rn.Out)
	}
	res := <-done
	// ErrChildExited comes only from noticing the exit during the run, not
	// from stopping the processes at its planned end.
	if !errors.Is(res.err, ErrChildExited) || !strings.Contains(res.err.Error(), "bulk-send") {
		t.Fatalf("err = %v, want ErrChildExited naming bulk-send", res.err)
	}
	if !strings.Contains(strings.Join(res.r.Notes, " "), "run failed") {
		t.Errorf("notes %q", res.r.Notes)
	}
	if _, err := os.Stat(filepath.Join(rn.Out, "runs", spec.ID(), "run.json")); err != nil {
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

// mustMode parses a mode the test knows to be valid.
func mustMode(s string) transport.Mode {
	m, err := transport.ParseMode(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestSchedule checks that a run's schedule reaches the emulator at the
// run's time: the bottleneck rate the samples read steps down at 1.5 s, and
// the delivered rate follows.
func TestSchedule(t *testing.T) {
	needRoot(t)
	rn := testRunner(t)
	path := scenario.Path{Rate: 2 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: "cubic",
		Schedule: []scenario.Step{{At: 1500 * time.Millisecond, Rate: 500 * rate.Kbps}}}
	spec := scenario.Run{Path: path, Mode: mustMode("default"), Workload: scenario.Workload{Kind: scenario.KindBulk, Write: 4096},
		Duration: 4 * time.Second}
	if _, err := rn.RunOne(t.Context(), spec, spec.ID(), spec.ID()); err != nil {
		t.Fatal(err)
	}
	var before, after, delivered []float64
	// The delivered rate is over the emulator's last window, the
	// sampling interval: a sample within a window of the step counts
	// bytes sent before it. A window of span S holds up to S x rate plus
	// one packet, whose fence post reads 550 kb/s over 240 ms at 500
	// kb/s with full-size packets; a link still at 2 Mb/s reads four
	// times that.
	settled := (path.Schedule[0].At + emu.DefaultWindow + 200*time.Millisecond).Seconds()
	fencePost := 8 * emu.MTU / (0.9 * SampleEvery.Seconds())
	err := records.ReadFile(filepath.Join(rn.Out, records.RunsDir, spec.ID(), records.RunRecords), func(kind string, line []byte) error {
		var l records.RunLine
		if kind != records.KindSample || json.Unmarshal(line, &l) != nil || l.RateBps == nil {
			return nil
		}
		switch {
		case l.T < 1.4:
			before = append(before, *l.RateBps)
		case l.T > 1.6:
			after = append(after, *l.RateBps)
			if l.T > settled && l.DeliveredBps != nil {
				delivered = append(delivered, *l.DeliveredBps)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 || len(after) == 0 || len(delivered) == 0 {
		t.Fatalf("samples: %d before the step, %d after", len(before), len(after))
	}
	for _, r := range before {
		if r != 2e6 {
			t.Errorf("rate %v before the step, want 2 Mb/s", r)
		}
	}
	for _, r := range after {
		if r != 5e5 {
			t.Errorf("rate %v after the step, want 500 kb/s", r)
		}
	}
	for _, d := range delivered {
		if d > 5e5+fencePost {
			t.Errorf("delivered %v b/s a second after the step to 500 kb/s", d)
		}
	}
}
