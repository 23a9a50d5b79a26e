package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"replenish/metrics"
	"replenish/records"
)

func TestReadRecords(t *testing.T) {
	long := `{"kind":"write","t":1,"pad":"` + strings.Repeat("x", records.MaxLine) + `"}`
	for _, tc := range []struct {
		name      string
		lines     []string
		w         window
		malformed int
		first     int
		lines2    int // non-blank lines
		delays    []float64
		queue     []float64
		writes    int
	}{
		{
			name: "writes and samples",
			lines: []string{
				`{"kind":"write","t":0.5,"bytes":65536,"source_delay_ms":300}`,
				`{"kind":"write","t":1.5,"bytes":65536,"source_delay_ms":280}`,
				`{"kind":"write","t":2.5,"bytes":65536}`,
				`{"kind":"sample","t":1.2,"goodput_bps":1.8e6,"queue_ms":180}`,
			},
			w:      window{0, math.Inf(1)},
			lines2: 4, delays: []float64{300, 280}, queue: []float64{180}, writes: 3,
		},
		{
			name: "measured window only",
			lines: []string{
				`{"kind":"write","t":0.5,"source_delay_ms":1}`,
				`{"kind":"write","t":5,"source_delay_ms":2}`,
				`{"kind":"write","t":45,"source_delay_ms":3}`,
				`{"kind":"write","t":45.1,"source_delay_ms":4}`,
				`{"kind":"sample","t":4.9,"queue_ms":7}`,
				`{"kind":"sample","t":6,"queue_ms":8}`,
			},
			w:      window{5, 45},
			lines2: 6, delays: []float64{2, 3}, queue: []float64{8}, writes: 2,
		},
		{
			name: "malformed counted, unknown ignored",
			lines: []string{
				`{"kind":"write","t":1,"source_delay_ms":10}`,
				`not json`,
				``,
				`{"kind":"write","source_delay_ms":11}`,
				`{"kind":"write","t":"soon","source_delay_ms":12}`,
				`{"t":3}`,
				`[1,2]`,
				`{"kind":"probe","t":2,"whatever":[1,2,3]}`,
				`{"kind":"write","t":2,"source_delay_ms":13,"new_field":{"a":1}}`,
				long,
				`{"kind":"write","t":3,"source_delay_ms":null}`,
				`{"kind":"write","t":4,"source_delay_ms":14}`,
			},
			w:         window{0, math.Inf(1)},
			malformed: 6, first: 2, lines2: 11,
			delays: []float64{10, 13, 14}, writes: 4,
		},
		{
			name:      "no final newline, truncated last line",
			lines:     []string{`{"kind":"write","t":1,"source_delay_ms":10}`, `{"kind":"write","t":2,"sou`},
			w:         window{0, math.Inf(1)},
			malformed: 1, first: 2, lines2: 2, delays: []float64{10}, writes: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := readRecords(strings.NewReader(strings.Join(tc.lines, "\n")), tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Malformed != tc.malformed || rs.FirstMalformed != tc.first || rs.Lines != tc.lines2 {
				t.Errorf("malformed %d (first %d) of %d lines, want %d (first %d) of %d",
					rs.Malformed, rs.FirstMalformed, rs.Lines, tc.malformed, tc.first, tc.lines2)
			}
			if !slices.Equal(rs.SourceDelay, tc.delays) {
				t.Errorf("source delays %v, want %v", rs.SourceDelay, tc.delays)
			}
			if !slices.Equal(rs.Queue, tc.queue) {
				t.Errorf("queue %v, want %v", rs.Queue, tc.queue)
			}
			if rs.Writes != tc.writes {
				t.Errorf("writes %d, want %d", rs.Writes, tc.writes)
			}
		})
	}
}

func TestReadRecordsVideo(t *testing.T) {
	r, recs := videoRun(t, "replenish=15ms", 20, true)
	rs, err := readRecords(strings.NewReader(strings.Join(recs, "\n")), windowOf(r))
	if err != nil {
		t.Fatal(err)
	}
	// Frames at 30 fps from t=0 for 22 s; the window is [2, 22].
	if rs.Frames != 600 || len(rs.C2R) != 600 || len(rs.G2G) != 600 {
		t.Fatalf("frames %d, c2r %d, g2g %d; want 600 each", rs.Frames, len(rs.C2R), len(rs.G2G))
	}
	for _, part := range []string{"wait", "encode", "source_delay", "network"} {
		if len(rs.Parts[part]) != 600 {
			t.Errorf("part %s: %d values, want 600", part, len(rs.Parts[part]))
		}
	}
	// Time series cover the whole run, warm-up included.
	if n := len(rs.Series[tsSourceDelay].X); n != 660 {
		t.Errorf("source delay series has %d points, want 660", n)
	}
	for _, name := range []string{tsGoodput, tsBitrate, tsDrain, tsTarget, tsRate, tsQueue} {
		if n := len(rs.Series[name].X); n != 110 {
			t.Errorf("series %s has %d points, want 110", name, n)
		}
	}
	if rs.MaxT < 21.9 {
		t.Errorf("MaxT = %v", rs.MaxT)
	}
}

func TestFillFromRecords(t *testing.T) {
	recs := []string{}
	for i := 1; i <= 100; i++ {
		recs = append(recs, fmt.Sprintf(`{"kind":"frame","t":%d,"source_delay_ms":%d,"capture_to_received_ms":%d,"parts_ms":{"wait":%d}}`, i, i, 1000+i, i))
		recs = append(recs, fmt.Sprintf(`{"kind":"sample","t":%d,"queue_ms":%d}`, i, 2*i))
	}
	for _, tc := range []struct {
		name   string
		run    Run
		sd     metrics.Percentiles
		queue  metrics.Percentiles
		c2r    *metrics.Percentiles
		wait   float64
		filled bool
	}{
		{
			name:  "all missing",
			run:   Run{SourceDelayMs: NoPercentiles(), BottleneckQueueMs: NoPercentiles()},
			sd:    pct(50, 95, 99),
			queue: pct(100, 190, 198),
			c2r:   pctPtr(1050, 1095, 1099),
			wait:  50, filled: true,
		},
		{
			name: "runner's values kept",
			run: Run{SourceDelayMs: pct(1, 2, 3), BottleneckQueueMs: pct(4, 5, 6),
				CaptureToReceivedMs: pctPtr(7, 8, 9), PartsMs: map[string]metrics.Percentiles{"wait": pct(10, 11, 12)}},
			sd:    pct(1, 2, 3),
			queue: pct(4, 5, 6),
			c2r:   pctPtr(7, 8, 9),
			wait:  10,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := readRecords(strings.NewReader(strings.Join(recs, "\n")), window{0, math.Inf(1)})
			if err != nil {
				t.Fatal(err)
			}
			r := tc.run
			fillFromRecords(&r, rs)
			if r.SourceDelayMs != tc.sd || r.BottleneckQueueMs != tc.queue || *r.CaptureToReceivedMs != *tc.c2r {
				t.Errorf("source delay %v, queue %v, c2r %v; want %v, %v, %v",
					r.SourceDelayMs, r.BottleneckQueueMs, *r.CaptureToReceivedMs, tc.sd, tc.queue, *tc.c2r)
			}
			if r.PartsMs["wait"].P50 != tc.wait {
				t.Errorf("wait p50 %v, want %v", r.PartsMs["wait"].P50, tc.wait)
			}
			if r.G2GMs != nil {
				t.Errorf("g2g set without data: %v", *r.G2GMs)
			}
			if filled := len(r.Notes) > 0; filled != tc.filled {
				t.Errorf("notes %q, want a note: %v", r.Notes, tc.filled)
			}
			if !slices.IsSorted(rs.SourceDelay) || !slices.IsSorted(rs.C2R) {
				t.Error("values not sorted for the CDF")
			}
		})
	}
}

func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"kind":"write","t":1,"source_delay_ms":2}` + "\n" + `{"kind":"sample","t":1,"queue_ms":3}`))
	f.Add([]byte(`{"kind":"frame","t":1,"parts_ms":{"wait":null,"x":1e308}}`))
	f.Add([]byte("\n\n{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := readRecords(bytes.NewReader(data), window{0, math.Inf(1)})
		if err != nil {
			t.Fatal(err)
		}
		if rs.Malformed > rs.Lines || rs.Lines > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("malformed %d, lines %d", rs.Malformed, rs.Lines)
		}
		for _, v := range rs.SourceDelay {
			if !finite(v) {
				t.Fatalf("non-finite value %v kept", v)
			}
		}
	})
}
