package report

import (
	"fmt"
	"math"
	"strings"
)

// missing is shown in a table cell for an unknown value.
const missing = "–"

// step is one range of a human-readable scale: values below limit (in the
// input unit) are divided by scale and shown with dec decimals and unit.
type step struct {
	limit float64
	scale float64
	dec   int
	unit  string
}

// human formats v on scale: the first step whose limit the rounded value
// stays below, so that 999.7 ms reads "1.00 s" rather than "1000 ms".
func human(v float64, scale []step) string {
	if !finite(v) {
		return missing
	}
	a := math.Abs(v)
	for i, s := range scale {
		p := math.Pow10(s.dec)
		rounded := math.Round(a/s.scale*p) / p * s.scale
		if rounded < s.limit || i == len(scale)-1 {
			return fmt.Sprintf("%.*f %s", s.dec, v/s.scale, s.unit)
		}
	}
	return missing // not reached
}

// msScale shows milliseconds with about three significant digits:
// "0.42 ms", "8.6 ms", "174 ms", "1.31 s", "22.0 s", "512 s".
var msScale = []step{
	{1, 1, 2, "ms"},
	{10, 1, 1, "ms"},
	{1000, 1, 0, "ms"},
	{10e3, 1e3, 2, "s"},
	{100e3, 1e3, 1, "s"},
	{math.Inf(1), 1e3, 0, "s"},
}

// bpsScale shows bits per second with three significant digits:
// "840 b/s", "84.0 kb/s", "1.88 Mb/s", "86.6 Mb/s".
var bpsScale = []step{
	{1e3, 1, 0, "b/s"},
	{10e3, 1e3, 2, "kb/s"},
	{100e3, 1e3, 1, "kb/s"},
	{1e6, 1e3, 0, "kb/s"},
	{10e6, 1e6, 2, "Mb/s"},
	{100e6, 1e6, 1, "Mb/s"},
	{1e9, 1e6, 0, "Mb/s"},
	{10e9, 1e9, 2, "Gb/s"},
	{100e9, 1e9, 1, "Gb/s"},
	{math.Inf(1), 1e9, 0, "Gb/s"},
}

// fmtMs formats a duration in milliseconds, or "–" when unknown.
func fmtMs(ms float64) string { return human(ms, msScale) }

// fmtSec formats a duration in seconds, or "–" when unknown.
func fmtSec(s float64) string { return human(s*1e3, msScale) }

// fmtBps formats a rate in bits per second, or "–" when unknown.
func fmtBps(bps float64) string { return human(bps, bpsScale) }

// fmtPair formats two percentiles as "p50 / p95", or "–" when both are
// unknown.
func fmtPair(a, b float64) string {
	if !finite(a) && !finite(b) {
		return missing
	}
	return fmtMs(a) + " / " + fmtMs(b)
}

// fmtGoodput formats goodput with its share of the bottleneck and the
// link's use when known, as in "1.88 Mb/s (94%; link 97%)". The share is
// the run's utilization when known, otherwise goodput over the nominal
// rate.
func fmtGoodput(r Run) string {
	if !finite(r.GoodputBps) {
		return missing
	}
	s := fmtBps(r.GoodputBps)
	u := r.Utilization
	if !finite(u) && r.RateBps > 0 {
		u = r.GoodputBps / float64(r.RateBps)
	}
	var shares []string
	if finite(u) {
		shares = append(shares, fmt.Sprintf("%.0f%%", u*100))
	}
	if l, ok := linkUse(r); ok {
		shares = append(shares, fmt.Sprintf("link %.0f%%", l*100))
	}
	if len(shares) > 0 {
		s += " (" + strings.Join(shares, "; ") + ")"
	}
	return s
}

// linkUse returns the run's link utilization, and whether it is known.
func linkUse(r Run) (float64, bool) {
	if r.LinkUtilization == nil || !finite(*r.LinkUtilization) {
		return 0, false
	}
	return *r.LinkUtilization, true
}

// fmtRatio formats how many times a is b, as in "79×" or "2.4×".
func fmtRatio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.1f×", x)
}

// fmtLoss formats a loss probability as a percentage, as in "0.5%".
func fmtLoss(p float64) string {
	if !finite(p) {
		return missing
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", p*100), "0"), ".") + "%"
}
