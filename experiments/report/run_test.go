package report

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"replenish/metrics"
)

// TestRunPercentilesJSON reads the distributions of run.json as earlier
// versions wrote them, and as a hand-edited file may hold them.
func TestRunPercentilesJSON(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		in   string
		want metrics.Percentiles
	}{
		{"all", `{"p50":1.5,"p95":2,"p99":3}`, pct(1.5, 2, 3)},
		{"null", `{"p50":1,"p95":null,"p99":3}`, pct(1, nan, 3)},
		{"absent", `{"p50":1}`, pct(1, nan, nan)},
		{"object null", `null`, NoPercentiles()},
		{"empty", `{}`, NoPercentiles()},
		{"more figures", `{"p50":1,"p95":2,"p99":3,"n":4,"max":5}`, pct(1, 2, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Run
			if err := json.Unmarshal([]byte(`{"source_delay_ms":`+tc.in+`}`), &got); err != nil {
				t.Fatal(err)
			}
			p := got.SourceDelayMs
			if p.Figures != Figures || p.N != 0 || p.Max != 0 || !sameFloat(p.P50, tc.want.P50) || !sameFloat(p.P95, tc.want.P95) || !sameFloat(p.P99, tc.want.P99) {
				t.Fatalf("got %+v, want %+v", p, tc.want)
			}
			// Back out: NaN is null, never NaN, and only p50, p95 and p99.
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var back metrics.Percentiles
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if back.Figures != Figures || !sameFloat(back.P50, p.P50) || !sameFloat(back.P95, p.P95) || !sameFloat(back.P99, p.P99) {
				t.Fatalf("round trip %s: got %+v, want %+v", b, back, p)
			}
		})
	}
	b, _ := json.Marshal(Run{SourceDelayMs: Summarize([]float64{1, 2}), BottleneckQueueMs: metrics.Summarize([]float64{3})})
	for _, want := range []string{`"source_delay_ms":{"p50":1,"p95":2,"p99":2}`, `"bottleneck_queue_ms":{"p50":3,"p95":3,"p99":3}`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("Marshal = %s, want %s in it", b, want)
		}
	}
}

func TestRunJSON(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	fpsNaN := nan
	for _, tc := range []struct {
		name string
		in   Run
		// want is what reading the JSON back gives.
		want Run
	}{
		{
			name: "full",
			in: func() Run {
				r, _ := videoRun(t, "replenish=15ms", 20, true)
				return r
			}(),
			want: func() Run {
				r, _ := videoRun(t, "replenish=15ms", 20, true)
				return r
			}(),
		},
		{
			name: "non-finite",
			in: Run{ID: "x", RTTMs: inf, Loss: nan, GoodputBps: nan, Utilization: inf, FPS: &fpsNaN, BitrateBps: nan,
				SourceDelayMs: pct(nan, 1, inf), BottleneckQueueMs: NoPercentiles(),
				G2GMs: pctPtr(nan, nan, nan), PartsMs: map[string]metrics.Percentiles{"wait": pct(nan, 2, 3)}},
			want: Run{ID: "x", GoodputBps: nan, Utilization: nan,
				SourceDelayMs: pct(nan, 1, nan), BottleneckQueueMs: NoPercentiles(),
				G2GMs: pctPtr(nan, nan, nan), PartsMs: map[string]metrics.Percentiles{"wait": pct(nan, 2, 3)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
				t.Fatalf("non-finite number in %s", b)
			}
			var got Run
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !sameRun(t, got, tc.want) {
				t.Fatalf("read back\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, tc.want))
			}
		})
	}
}

// TestRunLinkUtilizationJSON checks that link_utilization goes out and
// comes back when known, and is absent when unknown, also when the run
// holds a non-finite value or the file was written before the field.
func TestRunLinkUtilizationJSON(t *testing.T) {
	num := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name  string
		in    *float64
		field string // in the JSON; "" for absent
		want  *float64
	}{
		{"known", num(0.835), `"link_utilization":0.835`, num(0.835)},
		{"zero", num(0), `"link_utilization":0`, num(0)},
		{"unknown", nil, "", nil},
		{"NaN", num(math.NaN()), "", nil},
		{"infinite", num(math.Inf(1)), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(Run{ID: "x", GoodputBps: 64.3e3, Utilization: 0.643, LinkUtilization: tc.in})
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(b), `"link_utilization"`)
			if tc.field == "" && has || tc.field != "" && !strings.Contains(string(b), tc.field) {
				t.Fatalf("Marshal = %s, want %q in it", b, tc.field)
			}
			var got Run
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if (got.LinkUtilization == nil) != (tc.want == nil) || got.LinkUtilization != nil && *got.LinkUtilization != *tc.want {
				t.Fatalf("read back %s: link utilization %v, want %v", b, got.LinkUtilization, tc.want)
			}
		})
	}
	for _, old := range []string{`{"id":"a","utilization":0.5}`, `{"id":"a","utilization":0.5,"link_utilization":null}`} {
		var r Run
		if err := json.Unmarshal([]byte(old), &r); err != nil {
			t.Fatal(err)
		}
		if r.LinkUtilization != nil || r.Utilization != 0.5 {
			t.Errorf("%s: link utilization %v, utilization %v; want unknown and 0.5", old, r.LinkUtilization, r.Utilization)
		}
	}
}

func TestRunJSONMissingFields(t *testing.T) {
	var r Run
	if err := json.Unmarshal([]byte(`{"id":"a","mode":"default","goodput_bps":null}`), &r); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"source delay p50": r.SourceDelayMs.P50, "queue p95": r.BottleneckQueueMs.P95,
		"goodput": r.GoodputBps, "utilization": r.Utilization,
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN", name, v)
		}
	}
	if r.G2GMs != nil || r.CaptureToReceivedMs != nil || r.FPS != nil || r.PartsMs != nil {
		t.Errorf("absent video fields set: %+v", r)
	}
}

func TestSortRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []string // in the expected order
	}{
		{"seed table", []string{"default", "lowat=15000", "lowat=165000", "replenish=15ms"}},
		{"byte units", []string{"lowat=187", "lowat=15KB", "lowat=64KiB", "lowat=165000"}},
		{"durations", []string{"replenish=500us", "replenish=5ms", "replenish=15ms", "replenish=1s"}},
		{"variants follow their base", []string{"default", "default+nagle", "lowat=187", "lowat=187+nagle",
			"replenish=15ms", "replenish=15ms+nagle", "replenish=15ms+noclause", "replenish=30ms"}},
		{"unknown modes last", []string{"default", "replenish=15ms", "bbr-pacing", "zzz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []Run
			// Feed them in reverse, under one scenario.
			for _, m := range slices.Backward(tc.modes) {
				runs = append(runs, Run{ID: "id-" + m, Scenario: "s", Mode: m})
			}
			SortRuns(runs)
			var got []string
			for _, r := range runs {
				got = append(got, r.Mode)
			}
			if !slices.Equal(got, tc.modes) {
				t.Fatalf("order %q, want %q", got, tc.modes)
			}
		})
	}
	t.Run("scenario first", func(t *testing.T) {
		runs := []Run{{ID: "1", Scenario: "b", Mode: "default"}, {ID: "2", Scenario: "a", Mode: "replenish=15ms"}, {ID: "3", Scenario: "a", Mode: "default"}}
		SortRuns(runs)
		if runs[0].ID != "3" || runs[1].ID != "2" || runs[2].ID != "1" {
			t.Fatalf("order %v", runs)
		}
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	r1, _ := bulkRun(t, "replenish=15ms", 280, 1.88e6)
	r2, _ := bulkRun(t, "default", 22000, 1.81e6)
	writeRun(t, dir, r1.ID, mustJSON(t, r1), nil)
	writeRun(t, dir, r2.ID, mustJSON(t, r2), nil)
	writeRun(t, dir, "no-id", `{"scenario":"s","mode":"default"}`, nil)
	writeRun(t, dir, "broken", `{"id":`, nil)
	writeRun(t, dir, "dup", mustJSON(t, r1), nil)
	if err := os.MkdirAll(filepath.Join(dir, runsDir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}

	runs, err := Load(dir)
	if !errors.Is(err, ErrBadRun) {
		t.Fatalf("err = %v, want ErrBadRun", err)
	}
	for _, bad := range []string{"broken", "dup", "empty"} {
		if !strings.Contains(err.Error(), bad+":") {
			t.Errorf("error does not name %s: %v", bad, err)
		}
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	want := []string{r2.ID, r1.ID, "no-id"} // bulk scenario: default, replenish; then "s"
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %q, want %q", ids, want)
	}
	if !sameRun(t, runs[1], r1) {
		t.Fatalf("run read back as %+v, want %+v", runs[1], r1)
	}

	t.Run("no runs", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, runsDir), 0o755)
		if _, err := Load(dir); !errors.Is(err, ErrNoRuns) {
			t.Fatalf("err = %v, want ErrNoRuns", err)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		if _, err := Load(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist", err)
		}
	})
}
