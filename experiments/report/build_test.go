package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// results writes a results directory: the seed's 2 Mb/s bulk comparison
// (three modes), a video scenario (two modes, one with a browser), a run
// whose run.json lacks its distributions, a run with malformed record lines,
// a run without records and a broken run.json. It returns the runs as
// written.
func results(t testing.TB, dir string) map[string]Run {
	t.Helper()
	written := map[string]Run{}
	add := func(r Run, recs []string) {
		writeRun(t, dir, r.ID, mustJSON(t, r), recs)
		written[r.ID] = r
	}
	add(bulkRun(t, "default", 22000, 1.81e6))
	add(bulkRun(t, "lowat=165000", 610, 1.92e6))
	add(bulkRun(t, "replenish=15ms", 280, 1.88e6))
	add(videoRun(t, "default", 1500, false))
	add(videoRun(t, "replenish=15ms", 20, true))

	// Only what the runner always knows; the distributions come from the
	// records.
	var recs []string
	for i := 1; i <= 100; i++ {
		recs = append(recs, fmt.Sprintf(`{"kind":"write","t":%d,"source_delay_ms":%d}`, i, i))
	}
	writeRun(t, dir, "sparse", `{"id":"sparse","scenario":"sparse","mode":"replenish=15ms","transport":"tcp"}`, recs)

	r, recs := bulkRun(t, "default", 500, 1e6)
	r.ID, r.Scenario = "malformed", "malformed lines"
	recs = slices.Insert(recs, 3, `{"kind":"write","t":`, `garbage`)
	add(r, recs)

	r, _ = bulkRun(t, "default", 500, 1e6)
	r.ID, r.Scenario = "no-records", "no records"
	add(r, nil)

	writeRun(t, dir, "broken", `{"id":"broken","scenario":`, nil)
	return written
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	written := results(t, dir)
	now := time.Date(2026, 10, 29, 15, 57, 15, 0, time.UTC)

	err := build(dir, nil, now)
	if !errors.Is(err, ErrBadRun) || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("Build: %v, want ErrBadRun naming the broken run", err)
	}

	// summary.json
	raw, err := os.ReadFile(filepath.Join(dir, summaryJSON))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "NaN") {
		t.Fatal("NaN in summary.json")
	}
	var sum Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Generated.Equal(now) {
		t.Errorf("generated %v, want %v", sum.Generated, now)
	}
	var ids []string
	for _, r := range sum.Runs {
		ids = append(ids, r.ID)
	}
	wantIDs := []string{
		"2mbit-172ms-bulk-default", "2mbit-172ms-bulk-lowat=165000", "2mbit-172ms-bulk-replenish=15ms",
		"malformed", "no-records", "sparse",
		"2mbit-172ms-video-default", "2mbit-172ms-video-replenish=15ms",
	}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("runs %q, want %q", ids, wantIDs)
	}
	again, err := json.MarshalIndent(Summary{Generated: sum.Generated, Runs: sum.Runs}, "", "  ")
	if err != nil || string(again)+"\n" != string(raw) {
		t.Errorf("summary.json does not round-trip (%v):\n%s\nvs\n%s", err, again, raw)
	}
	runs := map[string]Run{}
	for _, r := range sum.Runs {
		runs[r.ID] = r
	}
	for _, id := range []string{"2mbit-172ms-bulk-default", "2mbit-172ms-video-replenish=15ms", "2mbit-172ms-video-default"} {
		if !sameRun(t, runs[id], written[id]) {
			t.Errorf("%s changed:\n%s\nwant\n%s", id, mustJSON(t, runs[id]), mustJSON(t, written[id]))
		}
	}
	if got := runs["sparse"].SourceDelayMs; got != pct(50, 95, 99) {
		t.Errorf("sparse: source delay %v, want from the records {50 95 99}", got)
	}
	noteHas := func(id, s string) {
		t.Helper()
		if !slices.ContainsFunc(runs[id].Notes, func(n string) bool { return strings.Contains(n, s) }) {
			t.Errorf("%s: notes %q, want one containing %q", id, runs[id].Notes, s)
		}
	}
	noteHas("sparse", "computed from records.jsonl")
	noteHas("malformed", "lines malformed and skipped (first: line 4)")
	noteHas("no-records", "no records.jsonl")

	// summary.md
	md, err := os.ReadFile(filepath.Join(dir, summaryMD))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(md), Markdown(sum.Runs)) || !strings.Contains(string(md), now.Format(time.RFC3339)) {
		t.Errorf("summary.md is not the dated Markdown of the runs:\n%s", md)
	}

	// plots
	wantPlots := []string{
		"bulk-64-kib-2-mb-s-172-ms-rtt-200-ms-queue-source-delay.svg",
		"video-2-mb-s-172-ms-rtt-200-ms-queue-source-delay.svg",
		"video-2-mb-s-172-ms-rtt-200-ms-queue-capture-to-received.svg",
		"video-2-mb-s-172-ms-rtt-200-ms-queue-g2g.svg",
		"video-2-mb-s-172-ms-rtt-200-ms-queue-capture-to-received-over-time.svg",
		"sparse-source-delay.svg",
		"malformed-lines-source-delay.svg",
		"run-2mbit-172ms-bulk-default.svg", "run-2mbit-172ms-bulk-lowat-165000.svg", "run-2mbit-172ms-bulk-replenish-15ms.svg",
		"run-2mbit-172ms-video-default.svg", "run-2mbit-172ms-video-replenish-15ms.svg",
		"run-sparse.svg", "run-malformed.svg",
	}
	files, _ := filepath.Glob(filepath.Join(dir, plotsDir, "*"))
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	slices.Sort(got)
	slices.Sort(wantPlots)
	if !slices.Equal(got, wantPlots) {
		t.Errorf("plots %q, want %q", got, wantPlots)
	}
	svg := func(name string) ([]svgPath, []string) {
		t.Helper()
		doc, err := os.ReadFile(filepath.Join(dir, plotsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return parseSVG(t, doc)
	}
	for _, f := range got {
		svg(f) // well-formed
	}

	colors := modeColors(sum.Runs)
	for _, tc := range []struct {
		file  string
		modes []string
		min   int // segments of each mode's curve
	}{
		{"bulk-64-kib-2-mb-s-172-ms-rtt-200-ms-queue-source-delay.svg", []string{"default", "lowat=165000", "replenish=15ms"}, 100},
		{"video-2-mb-s-172-ms-rtt-200-ms-queue-source-delay.svg", []string{"default", "replenish=15ms"}, 100},
		{"video-2-mb-s-172-ms-rtt-200-ms-queue-capture-to-received.svg", []string{"default", "replenish=15ms"}, 10},
		{"video-2-mb-s-172-ms-rtt-200-ms-queue-g2g.svg", []string{"replenish=15ms"}, 10},
	} {
		t.Run(tc.file, func(t *testing.T) {
			paths, text := svg(tc.file)
			curves := 0
			for _, p := range paths {
				if p.Segments >= tc.min && p.Stroke != "#000000" && p.Stroke != "#E0E0E0" {
					curves++
				}
			}
			if curves != len(tc.modes) {
				t.Errorf("%d curves, want one per mode %q", curves, tc.modes)
			}
			for _, m := range tc.modes {
				c, _ := style(colors[m])
				if n := longestPath(paths, c); n < tc.min {
					t.Errorf("%s: no curve in its colour (longest %d segments)", m, n)
				}
				if !slices.Contains(text, m) {
					t.Errorf("%s: not in the legend %q", m, text)
				}
			}
		})
	}
	for _, tc := range []struct {
		file    string
		want    []string
		notWant []string
	}{
		{"run-2mbit-172ms-bulk-default.svg", []string{"goodput", "bottleneck rate", "source delay", "bottleneck queue"}, []string{"bitrate", "capture to received"}},
		{"run-2mbit-172ms-video-replenish-15ms.svg", []string{"goodput", "bitrate", "drain estimate", "target", "bottleneck rate",
			"source delay", "capture to received", "glass to glass", "bottleneck queue"}, nil},
		{"run-2mbit-172ms-video-default.svg", []string{"capture to received"}, []string{"glass to glass"}},
		{"run-sparse.svg", []string{"source delay"}, []string{"goodput", "bottleneck queue"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, text := svg(tc.file)
			for _, w := range tc.want {
				if !slices.Contains(text, w) {
					t.Errorf("no %q in %q", w, text)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(text, w) {
					t.Errorf("unexpected %q", w)
				}
			}
		})
	}

	// index.html
	page, err := os.ReadFile(filepath.Join(dir, indexHTML))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, f := range got {
		if !strings.Contains(html, `src="plots/`+f+`"`) {
			t.Errorf("index.html does not show %s", f)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:|//)`).FindString(html); m != "" {
		t.Errorf("index.html has an external reference %q", m)
	}
	if n := strings.Count(html, "<table>"); n != 5 {
		t.Errorf("%d tables, want one per scenario (5)", n)
	}
	for _, want := range []string{
		`<td class="num">22.0 s</td>`,
		`<td class="num">1.88 Mb/s (94%)</td>`,
		`<th class="num">part: encode p50</th>`,
		"Source delay p50 of default is 79× that of replenish=15ms (22.0 s vs 280 ms).",
		`<a href="summary.json">`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	bulk := html[strings.Index(html, "<h2>"+bulkScenario):]
	bulk = bulk[:strings.Index(bulk, "</table>")]
	if d, l, r := strings.Index(bulk, "<td>default</td>"), strings.Index(bulk, "<td>lowat=165000</td>"), strings.Index(bulk, "<td>replenish=15ms</td>"); !(d >= 0 && d < l && l < r) {
		t.Errorf("bulk rows out of order: %d %d %d", d, l, r)
	}

	// A second build with a run gone leaves none of its plots behind.
	if err := os.RemoveAll(filepath.Join(dir, runsDir, "broken")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, runsDir, "sparse")); err != nil {
		t.Fatal(err)
	}
	if err := build(dir, nil, now); err != nil {
		t.Fatalf("second build: %v", err)
	}
	for _, f := range []string{"run-sparse.svg", "sparse-source-delay.svg"} {
		if _, err := os.Stat(filepath.Join(dir, plotsDir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", f, err)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %q", leftovers)
	}
}

func TestBuildNoRuns(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, runsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Build(dir, nil); !errors.Is(err, ErrNoRuns) {
		t.Fatalf("err = %v, want ErrNoRuns", err)
	}
	writeRun(t, dir, "broken", `{`, nil)
	if err := Build(dir, nil); !errors.Is(err, ErrBadRun) {
		t.Fatalf("err = %v, want ErrBadRun", err)
	}
	if _, err := os.Stat(filepath.Join(dir, summaryJSON)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("summary written without runs")
	}
}

func TestSlugAndNames(t *testing.T) {
	var n fileNamer
	for _, tc := range []struct{ in, want string }{
		{"bulk 64 KiB, 2 Mb/s", "plots/bulk-64-kib-2-mb-s.svg"},
		{"bulk 64 KiB; 2 Mb/s", "plots/bulk-64-kib-2-mb-s-2.svg"},
		{"run-2mbit-172ms-bulk-replenish=15ms", "plots/run-2mbit-172ms-bulk-replenish-15ms.svg"},
		{"../../etc/passwd", "plots/etc-passwd.svg"},
		{"", "plots/x.svg"},
		{strings.Repeat("a", 200), "plots/" + strings.Repeat("a", 80) + ".svg"},
	} {
		if got := n.file(tc.in); got != tc.want {
			t.Errorf("file(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
