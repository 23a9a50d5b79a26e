// Package metrics keeps bounded windows of timed samples and summarises them
// with percentiles (Percentiles, the one summary type of the project), for
// status lines, the viewer's API, the path emulator and experiment runs.
package metrics

import (
	"math"
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
