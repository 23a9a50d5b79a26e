package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"replenish/metrics"
)

// table is one scenario's comparison, rendered both as Markdown and as HTML.
type table struct {
	Scenario   string   // as given by the runs; may be empty
	Title      string   // Scenario, or a placeholder when it is empty
	Conditions string   // the parameters all its runs share
	Header     []string // column titles
	Numeric    []bool   // per column: right-aligned
	Rows       [][]string
	Runs       []Run    // one per row
	Labels     []string // one per row: the mode (with its transport when the table has several), made unique within the table
	Ratios     []string // sentences comparing default with replenish
	Notes      []string // "label: note"
}

// column is one column of a table: its title, whether it is shown for a set
// of runs, and its cell for one run.
type column struct {
	title   string
	numeric bool
	shown   func(runs []Run) bool
	cell    func(r Run) string
}

func always([]Run) bool { return true }

func anyRun(f func(Run) bool) func([]Run) bool {
	return func(runs []Run) bool { return slices.ContainsFunc(runs, f) }
}

func knownPtr(p *metrics.Percentiles) bool { return p != nil && p.Known() }

// columns lists every column in order; video columns are shown only when a
// run of the table has the value.
var columns = []column{
	{"source delay p50", true, always, func(r Run) string { return fmtMs(r.SourceDelayMs.P50) }},
	{"p95", true, always, func(r Run) string { return fmtMs(r.SourceDelayMs.P95) }},
	{"p99", true, always, func(r Run) string { return fmtMs(r.SourceDelayMs.P99) }},
	{"goodput", true, always, fmtGoodput},
	{"competing flows' goodput", true, anyRun(func(r Run) bool { return r.CrossGoodputBps != nil }), func(r Run) string {
		if r.CrossGoodputBps == nil || !finite(*r.CrossGoodputBps) {
			return missing
		}
		return fmt.Sprintf("%s (%d)", fmtBps(*r.CrossGoodputBps), r.CrossFlows)
	}},
	{"queue p50 / p95", true, always, func(r Run) string {
		return fmtPair(r.BottleneckQueueMs.P50, r.BottleneckQueueMs.P95)
	}},
	{"drops", true, always, func(r Run) string { return strconv.FormatInt(r.EmulatorDrops, 10) }},
	{"retransmits", true, always, func(r Run) string { return strconv.FormatInt(r.Retransmits, 10) }},
	{"fps", true, anyRun(func(r Run) bool { return r.FPS != nil && finite(*r.FPS) }), func(r Run) string {
		if r.FPS == nil || !finite(*r.FPS) {
			return missing
		}
		return fmt.Sprintf("%.1f", *r.FPS)
	}},
	{"resolution", true, anyRun(func(r Run) bool { return r.Width > 0 && r.Height > 0 }), func(r Run) string {
		if r.Width <= 0 || r.Height <= 0 {
			return missing
		}
		return fmt.Sprintf("%dx%d", r.Width, r.Height)
	}},
	{"bitrate", true, anyRun(func(r Run) bool { return finite(r.BitrateBps) && r.BitrateBps > 0 }), func(r Run) string {
		if !finite(r.BitrateBps) || r.BitrateBps <= 0 {
			return missing
		}
		return fmtBps(r.BitrateBps)
	}},
	{"capture to received p50 / p95", true, anyRun(func(r Run) bool { return knownPtr(r.CaptureToReceivedMs) }), func(r Run) string {
		if r.CaptureToReceivedMs == nil {
			return missing
		}
		return fmtPair(r.CaptureToReceivedMs.P50, r.CaptureToReceivedMs.P95)
	}},
	{"g2g p50 / p95", true, anyRun(func(r Run) bool { return knownPtr(r.G2GMs) }), func(r Run) string {
		if r.G2GMs == nil {
			return missing
		}
		return fmtPair(r.G2GMs.P50, r.G2GMs.P95)
	}},
	{"page g2g p50 / p95", true, anyRun(func(r Run) bool { return r.Page != nil }), func(r Run) string {
		if r.Page == nil {
			return missing
		}
		return fmtPair(r.Page.G2GMs.P50, r.Page.G2GMs.P95)
	}},
	{"page leg queue p50 / p95", true, anyRun(func(r Run) bool { return r.Page != nil }), func(r Run) string {
		if r.Page == nil {
			return missing
		}
		return fmtPair(r.Page.QueueDelayMs.P50, r.Page.QueueDelayMs.P95)
	}},
	{"page fps (TL0 · TL1 · TL2)", true, anyRun(func(r Run) bool { return r.Page != nil }), func(r Run) string {
		if r.Page == nil {
			return missing
		}
		l := r.Page.LayerFPS
		return fmt.Sprintf("%.1f (%.1f · %.1f · %.1f)", r.Page.FPS, l[0], l[1], l[2])
	}},
}

// partOrder is the order of the known latency parts; others follow by name.
var partOrder = []string{"wait", "encode", "source_delay", "network"}

// partNames returns the names of the parts any of runs has a p50 for, in
// display order.
func partNames(runs []Run) []string {
	set := map[string]bool{}
	for _, r := range runs {
		for name, p := range r.PartsMs {
			if finite(p.P50) {
				set[name] = true
			}
		}
	}
	var names []string
	for _, name := range partOrder {
		if set[name] {
			names = append(names, name)
			delete(set, name)
		}
	}
	return append(names, sortedKeys(set)...)
}

// tables groups runs (in report order) by scenario and builds one table for
// each.
func tables(runs []Run) []table {
	var out []table
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && runs[j].Scenario == runs[i].Scenario {
			j++
		}
		out = append(out, buildTable(runs[i:j]))
		i = j
	}
	return out
}

func buildTable(runs []Run) table {
	t := table{Scenario: runs[0].Scenario, Title: runs[0].Scenario, Runs: runs}
	if t.Title == "" {
		t.Title = "unnamed scenario"
	}
	t.Conditions = conditions(runs)
	t.Labels = labels(runs)

	var cols []column
	for _, c := range append(slices.Clip(columns), sweepColumns...) {
		if c.shown(runs) {
			cols = append(cols, c)
		}
	}
	for _, name := range partNames(runs) {
		cols = append(cols, column{
			title:   "part: " + strings.ReplaceAll(name, "_", " ") + " p50",
			numeric: true,
			cell: func(r Run) string {
				p, ok := r.PartsMs[name]
				if !ok {
					return missing
				}
				return fmtMs(p.P50)
			},
		})
	}
	t.Header = append(t.Header, "mode")
	t.Numeric = append(t.Numeric, false)
	for _, c := range cols {
		t.Header = append(t.Header, c.title)
		t.Numeric = append(t.Numeric, c.numeric)
	}
	for i, r := range runs {
		row := []string{t.Labels[i]}
		for _, c := range cols {
			row = append(row, c.cell(r))
		}
		t.Rows = append(t.Rows, row)
		for _, n := range r.Notes {
			t.Notes = append(t.Notes, t.Labels[i]+": "+n)
		}
	}
	t.Ratios = ratios(runs, t.Labels)
	return t
}

// labels names each run by its mode, prefixed with its transport when the
// runs have more than one ("tcp replenish=15ms", "webrtc gcc"), adding the
// run ID where a name repeats within the table.
func labels(runs []Run) []string {
	several := slices.ContainsFunc(runs, func(r Run) bool { return transportRank(r.Transport) != transportRank(runs[0].Transport) })
	names := make([]string, len(runs))
	count := map[string]int{}
	for i, r := range runs {
		names[i] = r.Mode
		if several && r.Mode != "" {
			names[i] = transportName(r) + " " + r.Mode
		}
		if r.Page != nil && r.Mode != "" {
			names[i] += ", page " + r.Page.Mode
		}
		count[names[i]]++
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		switch {
		case r.Mode == "":
			out[i] = r.ID
		case count[names[i]] > 1:
			out[i] = names[i] + " (" + r.ID + ")"
		default:
			out[i] = names[i]
		}
	}
	return out
}

// transportName returns r's transport, "tcp" for none.
func transportName(r Run) string {
	if r.Transport == "" {
		return "tcp"
	}
	return r.Transport
}

// ratios compares, for every replenish run, the source delay p50 of the
// default run over the same transport with the same variant ("+nagle",
// ...) against it.
func ratios(runs []Run, labels []string) []string {
	var out []string
	for i, r := range runs {
		kind, _, variant := modeKey(r.Mode)
		if kind != kindReplenish {
			continue
		}
		d := slices.IndexFunc(runs, func(o Run) bool { return o.Mode == "default"+variant && transportName(o) == transportName(r) })
		if d < 0 {
			continue
		}
		def, rep := runs[d].SourceDelayMs.P50, r.SourceDelayMs.P50
		if !finite(def) || !finite(rep) || rep <= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("Source delay p50 of %s is %s that of %s (%s vs %s).",
			labels[d], fmtRatio(def/rep), labels[i], fmtMs(def), fmtMs(rep)))
	}
	return out
}

// conditions describes the parameters all runs share, as in "tcp, cubic,
// bulk=65536, 2.00 Mb/s bottleneck, 172 ms RTT, 200 ms queue, 0% loss, 40.0 s
// measured after 5.00 s warm-up". Parameters that differ are left out.
func conditions(runs []Run) string {
	same := func(f func(Run) string) string {
		v := f(runs[0])
		for _, r := range runs[1:] {
			if f(r) != v {
				return ""
			}
		}
		return v
	}
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	add(same(func(r Run) string { return r.Transport }))
	add(same(func(r Run) string { return r.CC }))
	add(same(func(r Run) string { return r.Workload }))
	add(same(func(r Run) string {
		if r.RateBps <= 0 {
			return ""
		}
		return fmtBps(float64(r.RateBps)) + " bottleneck"
	}))
	add(same(func(r Run) string {
		if r.RTTMs <= 0 {
			return ""
		}
		return fmtMs(r.RTTMs) + " RTT"
	}))
	add(same(func(r Run) string {
		if r.QueueMs <= 0 {
			return ""
		}
		return fmtMs(r.QueueMs) + " queue"
	}))
	add(same(func(r Run) string {
		if !finite(r.Loss) {
			return ""
		}
		return fmtLoss(r.Loss) + " loss"
	}))
	add(same(func(r Run) string {
		if !(r.JitterMs > 0) {
			return ""
		}
		return fmtMs(r.JitterMs) + " jitter"
	}))
	add(same(func(r Run) string {
		if r.DurationS <= 0 {
			return ""
		}
		s := fmtSec(r.DurationS) + " measured"
		if r.WarmupS > 0 {
			s += " after " + fmtSec(r.WarmupS) + " warm-up"
		}
		return s
	}))
	return strings.Join(parts, ", ")
}

// Markdown returns one Markdown table per scenario of runs, in report order
// (see SortRuns), each under a "## scenario" heading and followed by the
// default-versus-replenish comparison and the runs' notes. When runs of
// TargetMode carry the sweep's fields, a "## Targets" section comes first:
// each such run against the sweep's targets, with the counts. It does not
// modify runs.
func Markdown(runs []Run) string {
	runs = slices.Clone(runs)
	SortRuns(runs)
	var b strings.Builder
	if t := targetsOf(runs); t != nil {
		t.markdown(&b)
		b.WriteString("\n")
	}
	for i, t := range tables(runs) {
		if i > 0 {
			b.WriteString("\n")
		}
		t.markdown(&b)
	}
	return b.String()
}

func (t table) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "## %s\n\n", mdEscape(t.Title))
	if t.Conditions != "" {
		fmt.Fprintf(b, "%s\n\n", mdEscape(t.Conditions))
	}
	mdTable(b, t.Header, t.Rows, t.Numeric)
	for _, s := range t.Ratios {
		b.WriteString("\n" + mdEscape(s) + "\n")
	}
	if len(t.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range t.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
}

var mdReplacer = strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")

// mdEscape keeps s on one line and out of the table's column syntax.
func mdEscape(s string) string { return mdReplacer.Replace(s) }
