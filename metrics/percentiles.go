package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Percentiles summarises a set of values: how many there were, their 50th,
// 95th and 99th percentiles by nearest rank, and the largest. A value is NaN
// when it is unknown (there were no values). It is the one summary type of
// the project: the viewer's API, the emulator's counters, the experiment
// runs' summaries and the loopback measurement all use it, each in its own
// unit (ms, mostly), which the field holding it names.
//
// Figures says which of the figures it carries: all of them when it comes
// from Summarize; fewer when a consumer publishes fewer (the viewer's API
// gives some distributions as p50 and p95 only, run.json as p50, p95 and
// p99). A figure that is not carried is zero. JSON holds exactly the carried
// figures, in the order p50, p95, p99, n, max, an unknown value as null; it
// reads back with the figures whose keys are present.
type Percentiles struct {
	N                  int
	P50, P95, P99, Max float64
	Figures            Figures
}

// Figures is a set of the figures of a Percentiles.
type Figures uint8

// The figures of a Percentiles.
const (
	Count Figures = 1 << iota // N
	P50
	P95
	P99
	Max
	All = Count | P50 | P95 | P99 | Max
)

// Summarize returns the percentiles of values (nearest rank on the sorted
// values), carrying all figures: the values are NaN and N is 0 for no
// values. It sorts values in place.
func Summarize(values []float64) Percentiles {
	if len(values) == 0 {
		nan := math.NaN()
		return Percentiles{P50: nan, P95: nan, P99: nan, Max: nan, Figures: All}
	}
	slices.Sort(values)
	return Percentiles{
		N:       len(values),
		P50:     Percentile(values, 50),
		P95:     Percentile(values, 95),
		P99:     Percentile(values, 99),
		Max:     values[len(values)-1],
		Figures: All,
	}
}

// Unknown returns a Percentiles carrying the figures f, every one of them
// unknown.
func Unknown(f Figures) Percentiles { return Percentiles{}.Only(f) }

// Only returns p carrying the figures f: a figure p carries keeps its
// value, one it does not carry is unknown (NaN; 0 for the count), and a
// figure outside f is dropped (zero).
func (p Percentiles) Only(f Figures) Percentiles {
	out := Percentiles{Figures: f}
	vals := []struct {
		fig      Figures
		src, dst *float64
	}{{P50, &p.P50, &out.P50}, {P95, &p.P95, &out.P95}, {P99, &p.P99, &out.P99}, {Max, &p.Max, &out.Max}}
	for _, v := range vals {
		switch {
		case f&v.fig == 0:
		case p.Figures&v.fig != 0:
			*v.dst = *v.src
		default:
			*v.dst = math.NaN()
		}
	}
	if f&Count != 0 && p.Figures&Count != 0 {
		out.N = p.N
	}
	return out
}

// Known reports whether any carried percentile or maximum is a finite
// number.
func (p Percentiles) Known() bool {
	for _, v := range []struct {
		fig Figures
		v   float64
	}{{P50, p.P50}, {P95, p.P95}, {P99, p.P99}, {Max, p.Max}} {
		if p.Figures&v.fig != 0 && finite(v.v) {
			return true
		}
	}
	return false
}

// Round returns p with every value rounded to the given number of
// decimals, as an API that publishes milliseconds to the microsecond wants.
func (p Percentiles) Round(decimals int) Percentiles {
	m := math.Pow10(decimals)
	r := func(v float64) float64 {
		if !finite(v) {
			return v
		}
		return math.Round(v*m) / m
	}
	p.P50, p.P95, p.P99, p.Max = r(p.P50), r(p.P95), r(p.P99), r(p.Max)
	return p
}

// MarshalJSON writes the carried figures as {"p50", "p95", "p99", "n",
// "max"}, in that order, with null for a value that is not a finite number.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	key := func(k string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	for _, v := range []struct {
		fig Figures
		key string
		v   float64
	}{{P50, "p50", p.P50}, {P95, "p95", p.P95}, {P99, "p99", p.P99}, {Count, "n", 0}, {Max, "max", p.Max}} {
		if p.Figures&v.fig == 0 {
			continue
		}
		key(v.key)
		switch {
		case v.fig == Count:
			b = strconv.AppendInt(b, int64(p.N), 10)
		case finite(v.v):
			b = appendFloat(b, v.v)
		default:
			b = append(b, "null"...)
		}
	}
	return append(b, '}'), nil
}

// percentilesJSON tells an absent key (nil) from a null one.
type percentilesJSON struct {
	P50 json.RawMessage `json:"p50"`
	P95 json.RawMessage `json:"p95"`
	P99 json.RawMessage `json:"p99"`
	N   json.RawMessage `json:"n"`
	Max json.RawMessage `json:"max"`
}

// UnmarshalJSON reads the form MarshalJSON writes: the figures whose keys
// are present, a null value as unknown (NaN). A null object leaves the
// figures as they were and makes every value unknown.
func (p *Percentiles) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*p = Unknown(p.Figures)
		return nil
	}
	var j percentilesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var out Percentiles
	for _, v := range []struct {
		fig Figures
		raw json.RawMessage
		dst *float64
	}{{P50, j.P50, &out.P50}, {P95, j.P95, &out.P95}, {P99, j.P99, &out.P99}, {Max, j.Max, &out.Max}} {
		if v.raw == nil {
			continue
		}
		out.Figures |= v.fig
		*v.dst = math.NaN()
		if string(v.raw) != "null" {
			if err := json.Unmarshal(v.raw, v.dst); err != nil {
				return fmt.Errorf("metrics: percentiles: %w", err)
			}
		}
	}
	if j.N != nil {
		out.Figures |= Count
		if string(j.N) != "null" {
			if err := json.Unmarshal(j.N, &out.N); err != nil {
				return fmt.Errorf("metrics: percentiles: %w", err)
			}
		}
	}
	*p = out
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
