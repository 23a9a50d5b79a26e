// Package metrics keeps bounded windows of timed samples and summarises them
// with percentiles, for status lines, the viewer's API and experiment runs.
package metrics

import (
	"math"
	"slices"
	"time"
)

// Window holds the samples of the last Span, at most Cap of them. When full,
// the oldest sample is dropped first. The zero value is not usable; use
// NewWindow. A Window is not safe for concurrent use.
type Window struct {
	span time.Duration
	buf  []sample // ring
	head int      // index of the oldest sample
	n    int
}

type sample struct {
	at time.Time
	v  float64
}

// NewWindow returns a window over the last span holding at most capacity
// samples.
func NewWindow(span time.Duration, capacity int) *Window {
	return &Window{span: span, buf: make([]sample, max(capacity, 1))}
}

// Add records v at time at. Samples are expected in time order.
func (w *Window) Add(at time.Time, v float64) {
	if w.n == len(w.buf) {
		w.head = (w.head + 1) % len(w.buf)
		w.n--
	}
	w.buf[(w.head+w.n)%len(w.buf)] = sample{at, v}
	w.n++
}

// expire drops samples older than now-span.
func (w *Window) expire(now time.Time) {
	cut := now.Add(-w.span)
	for w.n > 0 && w.buf[w.head].at.Before(cut) {
		w.head = (w.head + 1) % len(w.buf)
		w.n--
	}
}

// Values returns the values within the span ending at now, oldest first.
func (w *Window) Values(now time.Time) []float64 {
	w.expire(now)
	out := make([]float64, w.n)
	for i := range w.n {
		out[i] = w.buf[(w.head+i)%len(w.buf)].v
	}
	return out
}

// Sum returns the sum and count of the values within the span ending at now.
func (w *Window) Sum(now time.Time) (sum float64, n int) {
	w.expire(now)
	for i := range w.n {
		sum += w.buf[(w.head+i)%len(w.buf)].v
	}
	return sum, w.n
}

// Summary holds percentiles of a set of values; fields are NaN when there
// were no values.
type Summary struct {
	N                  int
	P50, P95, P99, Max float64
}

// Summarize returns the percentiles of values (nearest-rank on the sorted
// values). It sorts values in place.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		nan := math.NaN()
		return Summary{P50: nan, P95: nan, P99: nan, Max: nan}
	}
	slices.Sort(values)
	return Summary{
		N:   len(values),
		P50: Percentile(values, 50),
		P95: Percentile(values, 95),
		P99: Percentile(values, 99),
		Max: values[len(values)-1],
	}
}

// Percentile returns the p-th percentile (0..100) of sorted values by the
// nearest-rank method, or NaN for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
