package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// oldSweep is a results directory of the sweep written before
// serialization_ms, top_rung and steps: the run.json files of a halving
// at 2 Mb/s and of 100 kb/s at 20 ms, replenish=15ms and default each,
// without their records.
const oldSweep = "../testdata/results-sweep-v1"

// TestOldSweepReports checks that a sweep written before the targets'
// fields still reports: its tables, and a Targets section that judges
// what the runs carry and names the field each other target needs.
func TestOldSweepReports(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(oldSweep)); err != nil {
		t.Fatal(err)
	}
	if err := build(dir, nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, summaryMD))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, indexHTML))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Load(dir)
	if err != nil || len(runs) != 4 {
		t.Fatalf("Load: %d runs, %v", len(runs), err)
	}
	tab := targetsOf(runs)
	if tab == nil || len(tab.Rows) != 2 {
		t.Fatalf("Targets section %+v, want two rows", tab)
	}
	cell := func(id, target string) string {
		for _, row := range tab.Rows {
			if row[0] == id {
				return row[slices.Index(tab.Header, target)]
			}
		}
		t.Fatalf("no row %s", id)
		return ""
	}
	const halved, slow = "2mbit-80ms-video-replenish=15ms-sched1", "100kbit-20ms-video-replenish=15ms"
	for _, c := range []struct{ id, target, want string }{
		{halved, "source delay p50", "n/a: no serialization_ms (resummarize)"},
		{halved, "recovery", "n/a: no steps (resummarize)"},
		{halved, "default's source delay p50", "n/a: no serialization_ms of default (resummarize)"},
		{halved, "capture to received p50", " met"},
		{slow, "recovery", "n/a: no step"},
		{slow, "utilization", "63.5% (≥ 90%) missed by 26.5 points (top rung's ceiling unknown)"},
		{slow, "drain ratio p50", "0.85 (0.9 to 1.1) missed by 0.05"},
	} {
		if got := cell(c.id, c.target); !strings.HasSuffix(got, c.want) {
			t.Errorf("%s, %s: %q, want it to end in %q", c.id, c.target, got, c.want)
		}
	}
	for _, want := range []string{"## Targets\n", "| recovery | ≤ 2 s after a halving, ≤ 5 s after a doubling | 0 | 0 | 2 |",
		"## video, 2.00 Mb/s, 80 ms RTT, 200 ms queue, schedule 20s=1mbit\n", "## video, 100 kb/s, 20 ms RTT, 200 ms queue\n"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(string(page), `<h2>Targets</h2>`) {
		t.Error("index.html has no Targets section")
	}
}
