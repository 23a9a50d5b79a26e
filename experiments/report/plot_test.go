package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestCDFPoints(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		in     []float64 // sorted
		wantX  []float64
		wantY  []float64
		maxLen int
	}{
		{"empty", nil, nil, nil, 0},
		{"steps", []float64{1, 2, 4}, []float64{1, 1, 2, 2, 4, 4}, []float64{0, 1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3, 1}, 6},
		{"non-positive values count but are not drawn", []float64{-1, 0, 2, 4},
			[]float64{2, 2, 4, 4}, []float64{0.5, 0.75, 0.75, 1}, 4},
		{"only non-positive", []float64{-2, 0}, nil, nil, 0},
		{"many values are sampled", seq(100_000), nil, nil, maxCDFPoints},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs, ys := cdfPoints(tc.in)
			if len(xs) != len(ys) || len(xs) > tc.maxLen {
				t.Fatalf("%d x, %d y points, want at most %d", len(xs), len(ys), tc.maxLen)
			}
			if tc.wantX != nil && (!slices.Equal(xs, tc.wantX) || !slices.Equal(ys, tc.wantY)) {
				t.Fatalf("got %v %v, want %v %v", xs, ys, tc.wantX, tc.wantY)
			}
			if len(xs) > 0 {
				if !slices.IsSorted(xs) || !slices.IsSorted(ys) {
					t.Fatal("CDF not monotonic")
				}
				if xs[0] != firstPositive(tc.in) || xs[len(xs)-1] != tc.in[len(tc.in)-1] || ys[len(ys)-1] != 1 {
					t.Fatalf("CDF from (%v,%v) to (%v,%v), want from the least positive value to (max, 1)",
						xs[0], ys[0], xs[len(xs)-1], ys[len(ys)-1])
				}
			}
		})
	}
}

func firstPositive(v []float64) float64 {
	for _, x := range v {
		if x > 0 {
			return x
		}
	}
	return math.NaN()
}

func TestDecimate(t *testing.T) {
	n := 100_000
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i], ys[i] = float64(i)/1000, 10
	}
	ys[54321] = 5000 // one spike
	ys[777] = -3     // one dip
	ox, oy := decimate(xs, ys, 2000)
	if len(ox) > 2000 || len(ox) != len(oy) {
		t.Fatalf("%d points, want at most 2000", len(ox))
	}
	if !slices.Contains(oy, 5000) || !slices.Contains(oy, -3) {
		t.Fatal("spike or dip lost")
	}
	if !slices.IsSorted(ox) || ox[0] != xs[0] {
		t.Fatal("time order or start lost")
	}
	short, _ := decimate(xs[:10], ys[:10], 2000)
	if len(short) != 10 {
		t.Fatalf("short series changed: %d points", len(short))
	}
}

func TestMsLogTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		labels []string
	}{
		{"ms to s", 1, 100_000, []string{"1 ms", "10 ms", "100 ms", "1 s", "10 s", "100 s"}},
		{"sub-ms", 0.01, 1, []string{"0.01 ms", "0.1 ms", "1 ms"}},
		{"one decade", 100, 1000, []string{"100 ms", "1 s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var labels []string
			n := 0
			for _, tk := range msLogTicks.Ticks(tc.lo, tc.hi) {
				if tk.Value < tc.lo*0.999 || tk.Value > tc.hi*1.001 {
					t.Errorf("tick %v outside [%v, %v]", tk.Value, tc.lo, tc.hi)
				}
				if tk.Label != "" {
					labels = append(labels, tk.Label)
				}
				n++
			}
			if !slices.Equal(labels, tc.labels) {
				t.Errorf("labels %q, want %q", labels, tc.labels)
			}
			if want := 9*(len(tc.labels)-1) + 1; n != want {
				t.Errorf("%d ticks, want %d", n, want)
			}
		})
	}
}

// svgPath is a stroked path of an SVG document.
type svgPath struct {
	Stroke   string // "#RRGGBB"
	Segments int    // line-to commands
}

// parseSVG checks that doc is well-formed XML with an svg root and returns
// its stroked paths and its text.
func parseSVG(t *testing.T, doc []byte) (paths []svgPath, text []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	inText := false
	strokeRE := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			inText = el.Name.Local == "text"
			if el.Name.Local != "path" {
				continue
			}
			var p svgPath
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "style":
					if m := strokeRE.FindStringSubmatch(a.Value); m != nil {
						p.Stroke = strings.ToUpper(m[1])
					}
				case "d":
					p.Segments = strings.Count(a.Value, "L")
				}
			}
			if p.Stroke != "" {
				paths = append(paths, p)
			}
		case xml.CharData:
			if inText {
				text = append(text, strings.TrimSpace(string(el)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return paths, text
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// longestPath returns the most segments of a path stroked in c.
func longestPath(paths []svgPath, c color.Color) int {
	n := -1
	for _, p := range paths {
		if p.Stroke == hexColor(c) {
			n = max(n, p.Segments)
		}
	}
	return n
}

func TestCDFPlot(t *testing.T) {
	var curves []curve
	modes := []string{"default", "lowat=165000", "replenish=15ms"}
	for i, m := range modes {
		v := make([]float64, 200)
		for j := range v {
			v[j] = math.Pow(10, float64(i)) * float64(j+1)
		}
		c, d := style(i)
		xs, ys := cdfPoints(v)
		curves = append(curves, curve{Label: m, Color: c, Dashes: d, X: xs, Y: ys})
	}
	curves = append(curves, curve{Label: "empty"})
	p, err := cdfPlot("title", "source delay", curves)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := renderSVG([]*plot.Plot{p}, 400, 300)
	if err != nil {
		t.Fatal(err)
	}
	paths, text := parseSVG(t, doc)
	for i, m := range modes {
		c, _ := style(i)
		if n := longestPath(paths, c); n < 200 {
			t.Errorf("%s: longest path in its colour has %d segments, want a curve of at least 200", m, n)
		}
		if !slices.Contains(text, m) {
			t.Errorf("no legend entry %q", m)
		}
	}
	if slices.Contains(text, "empty") {
		t.Error("legend entry for a curve without points")
	}
	for _, label := range []string{"1 ms", "10 ms", "100 ms", "1 s", "10 s"} {
		if !slices.Contains(text, label) {
			t.Errorf("no tick label %q in %q", label, text)
		}
	}

	if p, err := cdfPlot("t", "q", []curve{{Label: "none"}}); p != nil || err != nil {
		t.Errorf("plot without data: %v, %v; want nil, nil", p, err)
	}
}

func TestRateTicks(t *testing.T) {
	var labels []string
	for _, tk := range bpsLogTicks.Ticks(100e3, 20e6) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	want := []string{"100 kb/s", "200 kb/s", "500 kb/s", "1 Mb/s", "2 Mb/s", "5 Mb/s", "10 Mb/s", "20 Mb/s"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}
