package report

import (
	"math"
	"strings"
	"testing"

	"replenish/metrics"
)

func TestFormats(t *testing.T) {
	nan := math.NaN()
	link, nanLink := 0.8353, nan
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"ms sub", fmtMs(0.424), "0.42 ms"},
		{"ms one decimal", fmtMs(8.6), "8.6 ms"},
		{"ms rounds up a range", fmtMs(9.96), "10 ms"},
		{"ms", fmtMs(174), "174 ms"},
		{"ms to s", fmtMs(999.7), "1.00 s"},
		{"s two decimals", fmtMs(1310), "1.31 s"},
		{"s one decimal", fmtMs(22000), "22.0 s"},
		{"s whole", fmtMs(512000), "512 s"},
		{"ms negative", fmtMs(-3.25), "-3.2 ms"},
		{"ms unknown", fmtMs(nan), "–"},
		{"bps", fmtBps(840), "840 b/s"},
		{"kbps", fmtBps(84_000), "84.0 kb/s"},
		{"kbps low", fmtBps(15_700), "15.7 kb/s"},
		{"Mbps", fmtBps(1.88e6), "1.88 Mb/s"},
		{"Mbps rounds up", fmtBps(999_999), "1.00 Mb/s"},
		{"Mbps one decimal", fmtBps(86.6e6), "86.6 Mb/s"},
		{"Gbps", fmtBps(1.5e9), "1.50 Gb/s"},
		{"goodput", fmtGoodput(Run{GoodputBps: 1.88e6, Utilization: 0.94, RateBps: 2e6}), "1.88 Mb/s (94%)"},
		{"goodput from rate", fmtGoodput(Run{GoodputBps: 1.84e6, Utilization: nan, RateBps: 2e6}), "1.84 Mb/s (92%)"},
		{"goodput no rate", fmtGoodput(Run{GoodputBps: 1.81e6, Utilization: nan}), "1.81 Mb/s"},
		{"goodput unknown", fmtGoodput(Run{GoodputBps: nan, Utilization: 0.9}), "–"},
		{"goodput and link", fmtGoodput(Run{GoodputBps: 64.3e3, Utilization: 0.643, LinkUtilization: &link, RateBps: 1e5}), "64.3 kb/s (64%; link 84%)"},
		{"goodput from rate and link", fmtGoodput(Run{GoodputBps: 1.84e6, Utilization: nan, LinkUtilization: &link, RateBps: 2e6}), "1.84 Mb/s (92%; link 84%)"},
		{"goodput no rate, link", fmtGoodput(Run{GoodputBps: 1.81e6, Utilization: nan, LinkUtilization: &link}), "1.81 Mb/s (link 84%)"},
		{"goodput unknown, link", fmtGoodput(Run{GoodputBps: nan, Utilization: 0.9, LinkUtilization: &link}), "–"},
		{"goodput, link not finite", fmtGoodput(Run{GoodputBps: 1.88e6, Utilization: 0.94, LinkUtilization: &nanLink}), "1.88 Mb/s (94%)"},
		{"pair", fmtPair(180, 195), "180 ms / 195 ms"},
		{"pair half", fmtPair(180, nan), "180 ms / –"},
		{"pair unknown", fmtPair(nan, nan), "–"},
		{"ratio big", fmtRatio(78.57), "79×"},
		{"ratio small", fmtRatio(2.44), "2.4×"},
		{"loss", fmtLoss(0.005), "0.5%"},
		{"no loss", fmtLoss(0), "0%"},
		{"seconds", fmtSec(40), "40.0 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// tableRows returns the table rows of the section of md under the heading
// for scenario, as cells.
func tableRows(t *testing.T, md, scenario string) [][]string {
	t.Helper()
	_, sec, ok := strings.Cut(md, "## "+scenario+"\n")
	if !ok {
		t.Fatalf("no section %q in\n%s", scenario, md)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var rows [][]string
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

// column returns the cells of the column titled title (header row first).
func columnOf(t *testing.T, rows [][]string, title string) []string {
	t.Helper()
	for i, h := range rows[0] {
		if h == title {
			var out []string
			for _, r := range rows[2:] {
				out = append(out, r[i])
			}
			return out
		}
	}
	t.Fatalf("no column %q in %q", title, rows[0])
	return nil
}

func TestMarkdown(t *testing.T) {
	nan := math.NaN()
	def, _ := bulkRun(t, "default", 22000, 1.81e6)
	low, _ := bulkRun(t, "lowat=165000", 610, 1.92e6)
	rep, _ := bulkRun(t, "replenish=15ms", 280, 1.88e6)
	def.Notes = []string{"goodput still converging"}
	link := 0.974
	rep.LinkUtilization = &link
	vdef, _ := videoRun(t, "default", 1500, false)
	vrep, _ := videoRun(t, "replenish=15ms", 20, true)
	sparse := Run{ID: "sparse", Scenario: "sparse | odd", Mode: "replenish=15ms",
		SourceDelayMs: NoPercentiles(), BottleneckQueueMs: NoPercentiles(), GoodputBps: nan, Utilization: nan}

	// Given out of order; Markdown sorts a copy.
	runs := []Run{vrep, rep, sparse, def, vdef, low}
	md := Markdown(runs)
	if runs[0].ID != vrep.ID {
		t.Fatal("Markdown reordered its argument")
	}

	t.Run("scenario order", func(t *testing.T) {
		b, s, v := strings.Index(md, "## "+bulkScenario), strings.Index(md, "## sparse"), strings.Index(md, "## "+videoScenario)
		if !(b >= 0 && b < s && s < v) {
			t.Fatalf("sections at %d, %d, %d, want bulk < sparse < video:\n%s", b, s, v, md)
		}
	})

	t.Run("bulk", func(t *testing.T) {
		rows := tableRows(t, md, bulkScenario)
		wantHeader := "mode|source delay p50|p95|p99|goodput|queue p50 / p95|drops|retransmits"
		if got := strings.Join(rows[0], "|"); got != wantHeader {
			t.Fatalf("header %q, want %q (no video columns)", got, wantHeader)
		}
		if got := strings.Join(rows[1], ""); got != "---"+strings.Repeat("---:", 7) {
			t.Fatalf("alignment row %q", got)
		}
		for _, tc := range []struct {
			col  string
			want []string
		}{
			{"mode", []string{"default", "lowat=165000", "replenish=15ms"}},
			{"source delay p50", []string{"22.0 s", "610 ms", "280 ms"}},
			{"goodput", []string{"1.81 Mb/s (90%)", "1.92 Mb/s (96%)", "1.88 Mb/s (94%; link 97%)"}},
			{"queue p50 / p95", []string{"180 ms / 195 ms", "180 ms / 195 ms", "180 ms / 195 ms"}},
			{"drops", []string{"3", "3", "3"}},
			{"retransmits", []string{"12", "12", "12"}},
		} {
			if got := columnOf(t, rows, tc.col); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("column %s = %q, want %q", tc.col, got, tc.want)
			}
		}
		for _, want := range []string{
			"Source delay p50 of default is 79× that of replenish=15ms (22.0 s vs 280 ms).",
			"- default: goodput still converging",
			"tcp, cubic, bulk=65536, 2.00 Mb/s bottleneck, 172 ms RTT, 200 ms queue, 0% loss, 40.0 s measured after 5.00 s warm-up",
		} {
			if !strings.Contains(md, want+"\n") {
				t.Errorf("missing line %q in\n%s", want, md)
			}
		}
	})

	t.Run("video", func(t *testing.T) {
		rows := tableRows(t, md, videoScenario)
		for _, tc := range []struct {
			col  string
			want []string
		}{
			{"mode", []string{"default", "replenish=15ms"}},
			{"fps", []string{"29.8", "29.8"}},
			{"resolution", []string{"640x360", "640x360"}},
			{"bitrate", []string{"1.75 Mb/s", "1.75 Mb/s"}},
			{"capture to received p50 / p95", []string{"1.60 s / 1.62 s", "120 ms / 140 ms"}},
			{"g2g p50 / p95", []string{"–", "150 ms / 180 ms"}},
			{"part: wait p50", []string{"1.0 ms", "1.0 ms"}},
			{"part: encode p50", []string{"3.2 ms", "3.2 ms"}},
			{"part: source delay p50", []string{"1.50 s", "20 ms"}},
			{"part: network p50", []string{"90 ms", "90 ms"}},
		} {
			if got := columnOf(t, rows, tc.col); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("column %s = %q, want %q", tc.col, got, tc.want)
			}
		}
		if i, j := strings.Index(md, "part: wait"), strings.Index(md, "part: network"); i > j {
			t.Errorf("parts out of order")
		}
	})

	t.Run("missing fields", func(t *testing.T) {
		rows := tableRows(t, md, `sparse \| odd`)
		want := "replenish=15ms|–|–|–|–|–|0|0"
		if got := strings.Join(rows[2], "|"); got != want || len(rows) != 3 {
			t.Fatalf("rows %q, want one row %q", rows, want)
		}
		sec := md[strings.Index(md, "## sparse"):strings.Index(md, "## "+videoScenario)]
		if strings.Contains(sec, "Source delay p50 of") {
			t.Errorf("comparison without a default run:\n%s", sec)
		}
	})
}

func TestRatios(t *testing.T) {
	p := func(p50 float64) metrics.Percentiles { return pct(p50, p50, p50) }
	for _, tc := range []struct {
		name string
		runs []Run
		want []string
	}{
		{"pair", []Run{{Mode: "default", SourceDelayMs: p(1310)}, {Mode: "replenish=15ms", SourceDelayMs: p(8.6)}},
			[]string{"Source delay p50 of default is 152× that of replenish=15ms (1.31 s vs 8.6 ms)."}},
		{"variants pair up", []Run{
			{Mode: "default", SourceDelayMs: p(1000)}, {Mode: "default+nagle", SourceDelayMs: p(2000)},
			{Mode: "replenish=15ms", SourceDelayMs: p(100)}, {Mode: "replenish=15ms+nagle", SourceDelayMs: p(400)}},
			[]string{"Source delay p50 of default is 10× that of replenish=15ms (1.00 s vs 100 ms).",
				"Source delay p50 of default+nagle is 5.0× that of replenish=15ms+nagle (2.00 s vs 400 ms)."}},
		{"no default", []Run{{Mode: "lowat=1000", SourceDelayMs: p(1000)}, {Mode: "replenish=15ms", SourceDelayMs: p(10)}}, nil},
		{"unknown p50", []Run{{Mode: "default", SourceDelayMs: NoPercentiles()}, {Mode: "replenish=15ms", SourceDelayMs: p(10)}}, nil},
		{"zero p50", []Run{{Mode: "default", SourceDelayMs: p(10)}, {Mode: "replenish=15ms", SourceDelayMs: p(0)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ratios(tc.runs, labels(tc.runs))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	runs := []Run{{ID: "a", Mode: "default"}, {ID: "b", Mode: "default"}, {ID: "c", Mode: "replenish=15ms"}, {ID: "d"}}
	got := strings.Join(labels(runs), ",")
	if want := "default (a),default (b),replenish=15ms,d"; got != want {
		t.Fatalf("labels %q, want %q", got, want)
	}
}

// TestPageLegColumns checks a table of runs with a page leg: each row
// names the viewer's policy toward the page, and the page's glass to glass
// and frame rates by layer have their columns.
func TestPageLegColumns(t *testing.T) {
	nan := math.NaN()
	page := func(mode string, fps float64, layers [4]float64, p95 float64) *PageLeg {
		return &PageLeg{Mode: mode, G2GMs: metrics.Percentiles{P50: 80, P95: p95, P99: nan}, FPS: fps, LayerFPS: layers}
	}
	base := Run{Scenario: "page", Mode: "default", SourceDelayMs: NoPercentiles(), GoodputBps: nan, Utilization: nan, BottleneckQueueMs: NoPercentiles()}
	a, b := base, base
	a.ID, a.Page = "a", page("replenish=15ms", 11.25, [4]float64{7.5, 2.5, 1.25}, 210)
	b.ID, b.Page = "b", page("default", 29.5, [4]float64{7.5, 7.5, 14.5}, 4200)
	rows := tableRows(t, Markdown([]Run{a, b}), "page")
	modes := columnOf(t, rows, "mode")
	g2g := columnOf(t, rows, "page g2g p50 / p95")
	fps := columnOf(t, rows, "page fps (TL0 · TL1 · TL2)")
	want := map[string][2]string{
		"default, page replenish=15ms": {"80 ms / 210 ms", "11.2 (7.5 · 2.5 · 1.2)"},
		"default, page default":        {"80 ms / 4.20 s", "29.5 (7.5 · 7.5 · 14.5)"},
	}
	for i, m := range modes {
		w, ok := want[m]
		if !ok || g2g[i] != w[0] || fps[i] != w[1] {
			t.Errorf("row %q: g2g %q, fps %q; want one of %v", m, g2g[i], fps[i], want)
		}
	}
}
