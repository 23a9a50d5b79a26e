package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Limits on the points drawn, to keep the SVG files small.
const (
	maxCDFPoints    = 1000 // per curve
	maxSeriesPoints = 2000 // per time series
)

// curve is one line of a plot.
type curve struct {
	Label  string
	Color  color.Color
	Dashes []vg.Length
	Width  vg.Length
	Step   plotter.StepKind
	X, Y   []float64
}

// palette colours the modes of a report, in report order; it repeats with
// dashes after its end.
var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
}

var (
	grey      = color.RGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff}
	lightGrey = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
)

// style returns the colour and dashes of the i-th line of a plot.
func style(i int) (color.Color, []vg.Length) {
	c := palette[i%len(palette)]
	switch (i / len(palette)) % 3 {
	case 1:
		return c, []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		return c, []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return c, nil
}

// sans is the typeface of every plot's text.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot with sans-serif text and a light grid.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, s := range []*font.Font{
		&p.Title.TextStyle.Font, &p.Legend.TextStyle.Font,
		&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font,
	} {
		size := s.Size
		*s = font.From(sans, size)
	}
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.Y.Tick.Label.Font.Size = vg.Points(9)
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe0}
	g.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(g)
	return p
}

// addCurves adds the curves with at least one point to p, with legend
// entries, and returns how many it added.
func addCurves(p *plot.Plot, curves []curve) (int, error) {
	n := 0
	for _, c := range curves {
		if len(c.X) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(c.X))
		for i := range c.X {
			xys[i] = plotter.XY{X: c.X[i], Y: c.Y[i]}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return n, fmt.Errorf("report: plotting %s: %w", c.Label, err)
		}
		l.Color = c.Color
		l.Dashes = c.Dashes
		l.Width = vg.Points(1.5)
		if c.Width > 0 {
			l.Width = c.Width
		}
		l.StepStyle = c.Step
		p.Add(l)
		if c.Label != "" {
			p.Legend.Add(c.Label, l)
		}
		n++
	}
	return n, nil
}

// cdfPoints returns the empirical CDF of sorted values as at most about
// maxCDFPoints points, with only the positive values (a log axis cannot show
// the others; they still count towards the fractions). Up to half the limit
// of values, every step of the CDF is drawn.
func cdfPoints(sorted []float64) (xs, ys []float64) {
	n := len(sorted)
	first, _ := slices.BinarySearchFunc(sorted, 0.0, func(v, t float64) int {
		if v <= t {
			return -1
		}
		return 1
	})
	if first >= n {
		return nil, nil
	}
	fn := float64(n)
	if n-first <= maxCDFPoints/2 {
		for i := first; i < n; i++ {
			xs = append(xs, sorted[i], sorted[i])
			ys = append(ys, float64(i)/fn, float64(i+1)/fn)
		}
		return xs, ys
	}
	k := maxCDFPoints
	span := n - 1 - first
	xs, ys = make([]float64, 0, k), make([]float64, 0, k)
	for j := range k {
		i := first + int(math.Round(float64(j)*float64(span)/float64(k-1)))
		xs = append(xs, sorted[i])
		ys = append(ys, float64(i+1)/fn)
	}
	return xs, ys
}

// logTicks marks a logarithmic axis: a tick at each of 1 to 9 times every
// power of ten between its ends, labelled where label, given the value
// and its multiple of the decade, returns text.
type logTicks func(v float64, mult int) string

var _ plot.Ticker = logTicks(nil)

// msLogTicks labels the decades of an axis in milliseconds ("1 ms",
// "100 ms", "10 s"); bpsLogTicks the 1, 2 and 5 steps of a rate axis
// ("100 kb/s", "2 Mb/s").
var (
	msLogTicks logTicks = func(v float64, mult int) string {
		if mult != 1 {
			return ""
		}
		return decadeLabel(v)
	}
	bpsLogTicks logTicks = func(v float64, mult int) string {
		if mult != 1 && mult != 2 && mult != 5 {
			return ""
		}
		return rateLabel(v)
	}
)

// Ticks returns the ticks between lo and hi, which must be positive.
func (label logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		d := math.Pow10(int(e))
		for i := 1; i < 10; i++ {
			v := d * float64(i)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label(v, i)})
		}
	}
	return ticks
}

// decadeLabel names a power of ten in milliseconds: "0.1 ms", "10 ms", "1 s".
func decadeLabel(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%g s", ms/1000)
	}
	return fmt.Sprintf("%g ms", ms)
}

// cdfPlot draws the CDFs of curves (X in milliseconds) on a logarithmic axis.
// It returns nil when no curve has a positive value.
func cdfPlot(title, quantity string, curves []curve) (*plot.Plot, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		if len(c.X) > 0 {
			lo = min(lo, c.X[0])
			hi = max(hi, c.X[len(c.X)-1])
		}
	}
	if math.IsInf(lo, 1) {
		return nil, nil
	}
	p := newPlot()
	p.Title.Text = title
	p.X.Label.Text = quantity + " (log scale)"
	p.Y.Label.Text = "fraction ≤ x"
	if _, err := addCurves(p, curves); err != nil {
		return nil, err
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = msLogTicks
	p.X.Min = math.Pow10(int(math.Floor(math.Log10(lo))))
	p.X.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
	if p.X.Max <= p.X.Min {
		p.X.Max = p.X.Min * 10
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(6)
	return p, nil
}

// vline is a vertical line across the whole data area at X.
type vline struct {
	X     float64
	Style draw.LineStyle
}

// Plot draws the line; it implements plot.Plotter.
func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.X)
	c.StrokeLine2(v.Style, x, c.Min.Y, x, c.Max.Y)
}

// decimate reduces a time series to at most about limit points by keeping
// the lowest and highest point of each of limit/2 equal time slices, so that
// spikes stay visible. xs must be sorted.
func decimate(xs, ys []float64, limit int) ([]float64, []float64) {
	n := len(xs)
	if n <= limit {
		return xs, ys
	}
	buckets := max(limit/2, 1)
	lo, hi := xs[0], xs[n-1]
	width := (hi - lo) / float64(buckets)
	var ox, oy []float64
	for i := 0; i < n; {
		b := bucketOf(xs[i], lo, width, buckets)
		j, imin, imax := i, i, i
		for j < n && bucketOf(xs[j], lo, width, buckets) == b {
			if ys[j] < ys[imin] {
				imin = j
			}
			if ys[j] > ys[imax] {
				imax = j
			}
			j++
		}
		first, second := min(imin, imax), max(imin, imax)
		ox, oy = append(ox, xs[first]), append(oy, ys[first])
		if second != first {
			ox, oy = append(ox, xs[second]), append(oy, ys[second])
		}
		i = j
	}
	return ox, oy
}

func bucketOf(x, lo, width float64, buckets int) int {
	if width <= 0 {
		return 0
	}
	return min(int((x-lo)/width), buckets-1)
}

// sortedSeries returns s's points in time order, decimated for plotting.
func sortedSeries(s *series) (xs, ys []float64) {
	if s == nil || len(s.X) == 0 {
		return nil, nil
	}
	idx := make([]int, len(s.X))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.X[idx[a]] < s.X[idx[b]] })
	xs, ys = make([]float64, len(idx)), make([]float64, len(idx))
	for i, k := range idx {
		xs[i], ys[i] = s.X[k], s.Y[k]
	}
	return decimate(xs, ys, maxSeriesPoints)
}

// bpsUnit picks the unit for a rate axis whose largest value is hi.
func bpsUnit(hi float64) (scale float64, unit string) {
	switch {
	case hi >= 1e9:
		return 1e9, "Gb/s"
	case hi >= 1e6:
		return 1e6, "Mb/s"
	case hi >= 1e3:
		return 1e3, "kb/s"
	}
	return 1, "b/s"
}

// timeSeriesPlots draws a run's rates, delays and bottleneck queue over time,
// one panel each, with the measured window marked. Panels without data are
// left out; it returns no panels when the records hold none.
func timeSeriesPlots(r Run, rs *runData) ([]*plot.Plot, error) {
	marks := windowMarks(windowOf(r))
	xs, ys := sortedSeries(rs.Series[tsQueue])
	c, _ := style(4)
	var panels []*plot.Plot
	for _, pc := range []panelCurves{
		rateCurves(r, rs),
		delayCurves(rs),
		{[]curve{{Label: tsQueue, Color: c, X: xs, Y: ys}}, "bottleneck queue (ms)", true},
	} {
		if p, err := panel(pc.curves, pc.ylabel, pc.legendTop, marks); err != nil {
			return nil, err
		} else if p != nil {
			panels = append(panels, p)
		}
	}
	if len(panels) > 0 {
		panels[0].Title.Text = r.ID + " (" + r.Mode + ")"
		panels[len(panels)-1].X.Label.Text = "time since start (s); dashed: measured window"
	}
	return panels, nil
}

// panelCurves are the curves of one time-series panel, its axis label and
// where its legend goes.
type panelCurves struct {
	curves    []curve
	ylabel    string
	legendTop bool
}

// windowMarks returns what marks the measured window w on a panel: dashed
// lines at its edges, inside the panel's time axis.
func windowMarks(w window) func(*plot.Plot) {
	return func(p *plot.Plot) {
		st := draw.LineStyle{Color: lightGrey, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		if w.From > 0 {
			p.Add(vline{X: w.From, Style: st})
		}
		if !math.IsInf(w.To, 1) {
			p.Add(vline{X: w.To, Style: st})
		}
		p.X.Min = min(p.X.Min, 0)
		if !math.IsInf(w.To, 1) {
			p.X.Max = max(p.X.Max, w.To)
		}
	}
}

// rateCurves returns the rates panel's curves, scaled to one unit, with
// the bottleneck rate as a reference when any rate has a point. Rates sit
// near the top of their panel: the legend goes below them.
func rateCurves(r Run, rs *runData) panelCurves {
	var curves []curve
	hi := float64(r.RateBps)
	for _, name := range []string{tsGoodput, tsBitrate, tsDrain, tsTarget, tsRate} {
		if s := rs.Series[name]; s != nil {
			for _, v := range s.Y {
				hi = max(hi, v)
			}
		}
	}
	scale, unit := bpsUnit(hi)
	for i, name := range []string{tsGoodput, tsBitrate, tsDrain, tsTarget} {
		xs, ys := sortedSeries(rs.Series[name])
		c, d := style(i + 1)
		curves = append(curves, curve{Label: name, Color: c, Dashes: d, X: xs, Y: scaled(ys, 1/scale)})
	}
	ref := curve{Label: tsRate, Color: grey, Dashes: []vg.Length{vg.Points(5), vg.Points(3)}, Width: vg.Points(1), Step: plotter.PostStep}
	if xs, ys := sortedSeries(rs.Series[tsRate]); len(xs) > 0 {
		// Hold the last rate to the end of the run.
		ref.X, ref.Y = append(xs, max(rs.MaxT, xs[len(xs)-1])), append(ys, ys[len(ys)-1])
	} else if r.RateBps > 0 && rs.MaxT > 0 {
		ref.X, ref.Y = []float64{0, rs.MaxT}, []float64{float64(r.RateBps), float64(r.RateBps)}
	}
	ref.Y = scaled(ref.Y, 1/scale)
	if slices.ContainsFunc(curves, func(c curve) bool { return len(c.X) > 0 }) {
		curves = append(curves, ref)
	}
	return panelCurves{curves, "rate (" + unit + ")", false}
}

// delayCurves returns the delays panel's curves, in seconds when they
// reach seconds.
func delayCurves(rs *runData) panelCurves {
	var curves []curve
	hi := 0.0
	for i, name := range []string{tsSourceDelay, tsC2R, tsG2G} {
		xs, ys := sortedSeries(rs.Series[name])
		c, d := style(i)
		curves = append(curves, curve{Label: name, Color: c, Dashes: d, X: xs, Y: ys})
		for _, v := range ys {
			hi = max(hi, v)
		}
	}
	unit := "ms"
	if hi >= 2000 {
		unit = "s"
		for i := range curves {
			curves[i].Y = scaled(curves[i].Y, 1e-3)
		}
	}
	return panelCurves{curves, "delay (" + unit + ")", true}
}

// panel draws curves over time on a linear axis from zero, with the legend at
// the top left or the bottom right; it returns nil when no curve has a point.
func panel(curves []curve, ylabel string, legendTop bool, marks func(*plot.Plot)) (*plot.Plot, error) {
	p := newPlot()
	n, err := addCurves(p, curves)
	if err != nil || n == 0 {
		return nil, err
	}
	p.Y.Label.Text = ylabel
	p.Y.Min = min(p.Y.Min, 0)
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	p.Legend.Top, p.Legend.Left = legendTop, legendTop
	if legendTop {
		// Headroom for the legend above the data.
		p.Y.Max += (p.Y.Max - p.Y.Min) * 0.08 * float64(n)
		p.Legend.XOffs = vg.Points(6)
	} else {
		p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	}
	marks(p)
	return p, nil
}

func scaled(ys []float64, f float64) []float64 {
	out := make([]float64, len(ys))
	for i, y := range ys {
		out[i] = y * f
	}
	return out
}

// renderSVG draws plots stacked vertically, each height tall and width wide,
// with aligned axes, and returns the SVG document.
func renderSVG(plots []*plot.Plot, width, height vg.Length) ([]byte, error) {
	c := vgsvg.New(width, height*vg.Length(len(plots)))
	dc := draw.New(c)
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{
		Rows: len(plots), Cols: 1,
		PadX: vg.Points(4), PadY: vg.Points(10),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(10),
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("report: writing SVG: %w", err)
	}
	return b.Bytes(), nil
}
