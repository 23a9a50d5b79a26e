package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Names of the outputs inside a results directory.
const (
	summaryJSON = "summary.json"
	summaryMD   = "summary.md"
	indexHTML   = "index.html"
	plotsDir    = "plots"
)

// Summary is the content of summary.json.
type Summary struct {
	Generated time.Time `json:"generated"` // RFC 3339
	Runs      []Run     `json:"runs"`      // in report order (see SortRuns)
}

// figure is one SVG file of the report.
type figure struct {
	File    string // relative to the results directory, with forward slashes
	Caption string
}

// runExtra is what Build adds to a run for the report.
type runExtra struct {
	SourceDelay, C2R, G2G cdfCurve // measured window
	C2RTime               series   // capture to received over the whole run, sorted and decimated
	Plot                  *figure  // time series, if any
	Lines, Malformed      int
}

// cdfCurve is a run's CDF, ready to draw: X in milliseconds.
type cdfCurve struct {
	X, Y []float64
	N    int // values behind it
}

func newCDF(sorted []float64) cdfCurve {
	xs, ys := cdfPoints(sorted)
	return cdfCurve{X: xs, Y: ys, N: len(sorted)}
}

// Build reads the results directory dir (see Load) and writes into it
// summary.json, summary.md, one SVG per plot under plots/ (replacing the SVG
// files a previous Build left there) and index.html, which shows the tables
// and links the plots relatively so that the directory can be published as
// it is.
//
// Each run's records.jsonl is streamed once: it supplies the plots, and the
// percentiles run.json lacks (noted in the run's notes). Malformed record
// lines are skipped, counted in the run's notes and logged; a missing
// records file leaves the run without plots. Build logs to log, which may be
// nil. It blocks until everything is written. When some runs could not be
// read, Build still writes the report from the others and then returns
// Load's error; it returns ErrNoRuns when there is nothing to report, and an
// error wrapping the file system's when writing fails.
func Build(dir string, log *slog.Logger) error {
	return build(dir, log, time.Now())
}

func build(dir string, log *slog.Logger, now time.Time) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loaded, loadErr := loadRuns(dir)
	runs := make([]Run, len(loaded))
	for i, l := range loaded {
		runs[i] = l.Run
	}
	if len(runs) == 0 {
		if loadErr == nil {
			loadErr = ErrNoRuns
		}
		return loadErr
	}
	if loadErr != nil {
		log.Warn("report: some runs left out", "err", loadErr)
	}
	if err := cleanPlots(filepath.Join(dir, plotsDir)); err != nil {
		return err
	}
	names := fileNamer{}
	extras := make(map[string]*runExtra, len(runs))
	for i := range runs {
		x, err := buildRun(dir, loaded[i].Dir, &runs[i], &names, log)
		if err != nil {
			return err
		}
		extras[runs[i].ID] = x
	}

	colors := modeColors(runs)
	tabs := tables(runs)
	overview, err := overviewFigures(dir, runs, &names)
	if err != nil {
		return err
	}
	scenarioFigs := make([][]figure, len(tabs))
	for i, t := range tabs {
		figs, err := scenarioPlots(dir, t, extras, colors, &names)
		if err != nil {
			return err
		}
		scenarioFigs[i] = figs
	}

	summary, err := json.MarshalIndent(Summary{Generated: now.UTC().Truncate(time.Second), Runs: runs}, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encoding %s: %w", summaryJSON, err)
	}
	if err := writeFile(filepath.Join(dir, summaryJSON), append(summary, '\n')); err != nil {
		return err
	}
	md := "# Experiment results\n\nGenerated " + now.UTC().Format(time.RFC3339) + "; plots in " + indexHTML + ".\n\n" + Markdown(runs)
	if err := writeFile(filepath.Join(dir, summaryMD), []byte(md)); err != nil {
		return err
	}
	page, err := renderIndex(now, runs, tabs, overview, scenarioFigs, extras)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, indexHTML), page); err != nil {
		return err
	}
	log.Info("report: written", "dir", dir, "runs", len(runs), "scenarios", len(tabs))
	return loadErr
}

// buildRun streams a run's records, fills the percentiles its summary lacks,
// and draws its time series.
func buildRun(dir, runDir string, r *Run, names *fileNamer, log *slog.Logger) (*runExtra, error) {
	x := &runExtra{}
	path := filepath.Join(dir, runsDir, runDir, recordsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Warn("report: run has no records", "run", r.ID)
		r.Notes = append(r.Notes, "no "+recordsFile+": no plots")
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	rs, err := readRecords(f, windowOf(*r))
	if err != nil {
		return nil, fmt.Errorf("%w (run %s)", err, r.ID)
	}
	x.Lines, x.Malformed = rs.Lines, rs.Malformed
	if rs.Malformed > 0 {
		log.Warn("report: malformed records skipped", "run", r.ID, "lines", rs.Malformed, "first", rs.FirstMalformed)
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of %d lines malformed and skipped (first: line %d)",
			recordsFile, rs.Malformed, rs.Lines, rs.FirstMalformed))
	}
	fillFromRecords(r, rs)
	x.SourceDelay, x.C2R, x.G2G = newCDF(rs.SourceDelay), newCDF(rs.C2R), newCDF(rs.G2G)
	x.C2RTime.X, x.C2RTime.Y = sortedSeries(rs.Series[tsC2R])

	panels, err := timeSeriesPlots(*r, rs)
	if err != nil {
		return nil, err
	}
	if len(panels) == 0 {
		return x, nil
	}
	svg, err := renderSVG(panels, 8*vg.Inch, 2.6*vg.Inch)
	if err != nil {
		return nil, err
	}
	fig := figure{File: names.file("run-" + r.ID), Caption: "Run " + r.ID + " over time."}
	if err := writeFile(filepath.Join(dir, filepath.FromSlash(fig.File)), svg); err != nil {
		return nil, err
	}
	x.Plot = &fig
	return x, nil
}

// scenarioPlots draws the CDFs comparing the modes of one table.
func scenarioPlots(dir string, t table, extras map[string]*runExtra, colors map[string]int, names *fileNamer) ([]figure, error) {
	kinds := []struct {
		file, quantity, unit string
		pick                 func(*runExtra) cdfCurve
	}{
		{"source-delay", "source delay", "writes or frames", func(x *runExtra) cdfCurve { return x.SourceDelay }},
		{"capture-to-received", "capture to received", "frames", func(x *runExtra) cdfCurve { return x.C2R }},
		{"g2g", "glass to glass", "frames", func(x *runExtra) cdfCurve { return x.G2G }},
	}
	var figs []figure
	for _, k := range kinds {
		var curves []curve
		for i, r := range t.Runs {
			c := k.pick(extras[r.ID])
			col, dash := style(colors[colorKey(r)])
			curves = append(curves, curve{Label: t.Labels[i], Color: col, Dashes: dash, X: c.X, Y: c.Y})
		}
		p, err := cdfPlot(t.Title+"\n"+k.quantity+", measured window", k.quantity, curves)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		svg, err := renderSVG([]*plot.Plot{p}, 7*vg.Inch, 4.2*vg.Inch)
		if err != nil {
			return nil, err
		}
		fig := figure{
			File:    names.file(slug(t.Title) + "-" + k.file),
			Caption: "CDF of " + k.quantity + " per mode in the measured window (" + k.unit + "; log scale).",
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(fig.File)), svg); err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	fig, err := c2rTimeFigure(dir, t, extras, colors, names)
	if err != nil || fig == nil {
		return figs, err
	}
	return append(figs, *fig), nil
}

// c2rTimeFigure draws a table's capture to received over time (c2rTimePlot)
// into dir; nil when the table has none.
func c2rTimeFigure(dir string, t table, extras map[string]*runExtra, colors map[string]int, names *fileNamer) (*figure, error) {
	p, err := c2rTimePlot(t, extras, colors)
	if err != nil || p == nil {
		return nil, err
	}
	svg, err := renderSVG([]*plot.Plot{p}, 8*vg.Inch, 4.2*vg.Inch)
	if err != nil {
		return nil, err
	}
	fig := figure{File: names.file(slug(t.Title) + "-capture-to-received-over-time"),
		Caption: "Capture to received of each frame over time, one curve per run (transport and mode; log scale)."}
	return &fig, writeFile(filepath.Join(dir, filepath.FromSlash(fig.File)), svg)
}

// modeColors numbers the distinct transports and modes of runs (colorKey)
// in report order, so that a mode over a transport has the same colour in
// every plot.
func modeColors(runs []Run) map[string]int {
	var keys []Run
	for _, r := range runs {
		if !slices.ContainsFunc(keys, func(k Run) bool { return colorKey(k) == colorKey(r) }) {
			keys = append(keys, r)
		}
	}
	slices.SortFunc(keys, func(a, b Run) int {
		return cmp.Or(compareTransports(a.Transport, b.Transport), compareModes(a.Mode, b.Mode))
	})
	out := make(map[string]int, len(keys))
	for i, k := range keys {
		out[colorKey(k)] = i
	}
	return out
}

// colorKey is what a run's colour follows: its mode, and its transport
// unless TCP.
func colorKey(r Run) string {
	if t := transportName(r); t != "tcp" {
		return t + " " + r.Mode
	}
	return r.Mode
}

// fileNamer hands out unique SVG file names under plots/.
type fileNamer struct {
	used map[string]bool
}

// file returns "plots/<slug of base>.svg", numbered when already taken.
func (n *fileNamer) file(base string) string {
	if n.used == nil {
		n.used = map[string]bool{}
	}
	s := slug(base)
	name := s
	for i := 2; n.used[name]; i++ {
		name = s + "-" + strconv.Itoa(i)
	}
	n.used[name] = true
	return plotsDir + "/" + name + ".svg"
}

// slug reduces s to lower-case letters and digits joined by single dashes,
// at most 80 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 80 {
			break
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

// cleanPlots creates the plots directory, removing the SVG files in it.
func cleanPlots(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(path, "*.svg"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// writeFile replaces path with data through a temporary file in the same
// directory, so that a reader never sees a half-written file.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o644)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
