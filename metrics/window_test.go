package metrics

import (
	"math"
	"testing"
	"time"
)

func TestWindowExpiresAndCaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := NewWindow(10*time.Second, 4)
	for i := range 6 {
		w.Add(t0.Add(time.Duration(i)*time.Second), float64(i))
	}
	// Capacity 4: samples 2..5 remain.
	if got := w.Values(t0.Add(5 * time.Second)); len(got) != 4 || got[0] != 2 || got[3] != 5 {
		t.Fatalf("after cap: %v, want [2 3 4 5]", got)
	}
	// At t0+14s the span starts at t0+4s: samples 4 and 5 remain.
	if got := w.Values(t0.Add(14 * time.Second)); len(got) != 2 || got[0] != 4 {
		t.Fatalf("after expiry: %v, want [4 5]", got)
	}
	if sum, n := w.Sum(t0.Add(14 * time.Second)); sum != 9 || n != 2 {
		t.Fatalf("Sum = %v, %d; want 9, 2", sum, n)
	}
	if got := w.Values(t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("after span: %v, want empty", got)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            []float64
		p50, p95, p99 float64
	}{
		{"one", []float64{7}, 7, 7, 7},
		{"hundred", seq(1, 100), 50, 95, 99},
		{"unsorted", []float64{5, 1, 4, 2, 3}, 3, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.in)
			if s.P50 != tc.p50 || s.P95 != tc.p95 || s.P99 != tc.p99 || s.N != len(tc.in) {
				t.Fatalf("got %+v, want p50=%v p95=%v p99=%v", s, tc.p50, tc.p95, tc.p99)
			}
		})
	}
	if s := Summarize(nil); !math.IsNaN(s.P50) || s.N != 0 {
		t.Fatalf("empty: %+v, want NaN", s)
	}
}

func seq(a, b int) []float64 {
	var out []float64
	for i := a; i <= b; i++ {
		out = append(out, float64(i))
	}
	return out
}
