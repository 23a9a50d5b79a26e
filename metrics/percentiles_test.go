package metrics

import (
	"encoding/json"
	"math"
	"testing"
)

func TestPercentilesJSON(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		p    Percentiles
		want string
	}{
		{"all", Percentiles{N: 3, P50: 1.5, P95: 2, P99: 3, Max: 4, Figures: All}, `{"p50":1.5,"p95":2,"p99":3,"n":3,"max":4}`},
		{"run.json", Summarize([]float64{1, 2, 3}).Only(P50 | P95 | P99), `{"p50":2,"p95":3,"p99":3}`},
		{"api latency", Summarize(nil).Only(P50 | P95 | P99 | Count), `{"p50":null,"p95":null,"p99":null,"n":0}`},
		{"api parts", Summarize([]float64{0.1234567}).Round(3).Only(P50 | P95), `{"p50":0.123,"p95":0.123}`},
		{"not finite", Percentiles{P50: math.Inf(1), P95: nan, P99: 1e-7, Figures: P50 | P95 | P99}, `{"p50":null,"p95":null,"p99":1e-7}`},
		{"nothing", Percentiles{}, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.p)
			if err != nil || string(b) != tc.want {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tc.want)
			}
			var back Percentiles
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if b2, _ := json.Marshal(back); string(b2) != tc.want {
				t.Fatalf("read back and written again: %s, want %s", b2, tc.want)
			}
		})
	}
}

func TestPercentilesUnmarshal(t *testing.T) {
	nan := math.NaN()
	same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	for _, tc := range []struct {
		name, in string
		want     Percentiles
	}{
		{"three", `{"p50":1.5,"p95":2,"p99":3}`, Percentiles{P50: 1.5, P95: 2, P99: 3, Figures: P50 | P95 | P99}},
		{"null value", `{"p50":1,"p95":null}`, Percentiles{P50: 1, P95: nan, Figures: P50 | P95}},
		{"count", `{"n":7,"max":9}`, Percentiles{N: 7, Max: 9, Figures: Count | Max}},
		{"empty", `{}`, Percentiles{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Percentiles
			if err := json.Unmarshal([]byte(tc.in), &p); err != nil {
				t.Fatal(err)
			}
			if p.Figures != tc.want.Figures || p.N != tc.want.N || !same(p.P50, tc.want.P50) || !same(p.P95, tc.want.P95) ||
				!same(p.P99, tc.want.P99) || !same(p.Max, tc.want.Max) {
				t.Fatalf("got %+v, want %+v", p, tc.want)
			}
		})
	}
	// A null object keeps the figures and forgets the values.
	p := Percentiles{P50: 1, P95: 2, Figures: P50 | P95}
	if err := json.Unmarshal([]byte(`null`), &p); err != nil || p.Figures != P50|P95 || !math.IsNaN(p.P50) || !math.IsNaN(p.P95) {
		t.Fatalf("after null: %+v, %v", p, err)
	}
	if err := json.Unmarshal([]byte(`{"p50":"x"}`), &p); err == nil {
		t.Fatal("a string p50 read without error")
	}
}

func TestPercentilesOnlyAndKnown(t *testing.T) {
	p := Summarize([]float64{4, 1, 3, 2})
	if p.N != 4 || p.Max != 4 || p.Figures != All || !p.Known() {
		t.Fatalf("Summarize: %+v", p)
	}
	two := p.Only(P50 | P95)
	if two.N != 0 || two.P99 != 0 || two.Max != 0 || two.P50 != 2 || two.P95 != 4 {
		t.Fatalf("Only(P50|P95): %+v", two)
	}
	// A figure asked for but not carried is unknown.
	if back := two.Only(P50 | P99); back.P50 != 2 || !math.IsNaN(back.P99) {
		t.Fatalf("Only(P50|P99) of two figures: %+v", back)
	}
	if u := Unknown(P50 | P95 | P99); u.Known() || !math.IsNaN(u.P95) {
		t.Fatalf("Unknown: %+v", u)
	}
	// Known looks at carried figures only.
	if (Percentiles{P50: 1}).Known() {
		t.Fatal("a figure not carried counts as known")
	}
}
