package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/metrics"
	"replenish/rate"
	"replenish/records"
	"replenish/transport"
)

// t0 is the time zero of the synthetic runs below.
var t0 = time.Unix(1_800_000_000, 0)

// at returns the stamp in µs since the epoch of t0 + d.
func at(d time.Duration) int64 { return t0.Add(d).UnixMicro() }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestTimeline(t *testing.T) {
	tl := Timeline{T0: t0, Warmup: 2 * time.Second, Duration: 8 * time.Second}
	from, to := tl.window()
	if from != at(2*time.Second) || to != at(10*time.Second) {
		t.Errorf("window [%d, %d], want [%d, %d]", from, to, at(2*time.Second), at(10*time.Second))
	}
	tests := []struct {
		name string
		d    time.Duration
		in   bool
	}{
		{"warm-up", time.Second, false},
		{"start", 2 * time.Second, true},
		{"middle", 5 * time.Second, true},
		{"end", 10 * time.Second, true},
		{"after", 10*time.Second + time.Microsecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tl.in(at(tt.d)); got != tt.in {
				t.Errorf("in(%v) = %v", tt.d, got)
			}
			if got := tl.sec(at(tt.d)); !near(got, tt.d.Seconds(), 1e-9) {
				t.Errorf("sec = %v, want %v", got, tt.d.Seconds())
			}
		})
	}
}

func TestRetransIn(t *testing.T) {
	tl := Timeline{T0: t0, Warmup: 2 * time.Second, Duration: 8 * time.Second}
	s := func(d time.Duration, n int) retransSample { return retransSample{at(d), n} }
	tests := []struct {
		name    string
		samples []retransSample
		want    int64
	}{
		{"none", nil, 0},
		{"one sample", []retransSample{s(3*time.Second, 5)}, 0},
		{"rises outside the window", []retransSample{s(0, 0), s(time.Second, 10), s(11*time.Second, 30)}, 0},
		{"rise into the window", []retransSample{s(time.Second, 10), s(3*time.Second, 12), s(9*time.Second, 20)}, 10},
		{"rise out of the window", []retransSample{s(9*time.Second, 20), s(11*time.Second, 40)}, 0},
		{"out of order", []retransSample{s(9*time.Second, 20), s(time.Second, 10), s(3*time.Second, 12)}, 10},
		{"a new connection", []retransSample{s(3*time.Second, 50), s(4*time.Second, 60), s(5*time.Second, 2), s(6*time.Second, 3)}, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retransIn(tl, tt.samples); got != tt.want {
				t.Errorf("retransIn = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGoodputBetween(t *testing.T) {
	// 1000 bytes every 10 ms from 10 ms on: 800 kb/s.
	var pts []records.Sink
	for i := int64(1); i <= 300; i++ {
		pts = append(pts, records.Sink{Us: at(time.Duration(i) * 10 * time.Millisecond), Total: i * 1000})
	}
	tests := []struct {
		name     string
		points   []records.Sink
		from, to time.Duration
		want     float64
	}{
		{name: "steady", points: pts, from: time.Second, to: 2 * time.Second, want: 800e3},
		{name: "from before the first point", points: pts, from: 0, to: time.Second, want: 800e3},
		{name: "past the last point", points: pts, from: 2 * time.Second, to: 4 * time.Second, want: 400e3},
		{name: "between points", points: pts, from: 1005 * time.Millisecond, to: 2005 * time.Millisecond, want: 800e3},
		{name: "no points", points: nil, from: 0, to: time.Second, want: 0},
		{name: "empty span", points: pts, from: time.Second, to: time.Second, want: math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := goodputBetween(tt.points, at(tt.from), at(tt.to))
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && !near(got, tt.want, 1)) {
				t.Errorf("goodputBetween = %v, want %v", got, tt.want)
			}
		})
	}
	if c := countAt(pts, at(15*time.Millisecond)); c != 1000 {
		t.Errorf("countAt between the first two points = %d, want 1000", c)
	}
}

// bulkInput is a 10 s run: 2 s warm-up, 8 s window, at 2 Mb/s.
func bulkInput() Input {
	spec := scenario.Run{
		Path: scenario.Path{Rate: 2 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: "cubic", Sndbuf: 8 << 20},
		Mode: mustMode("replenish=15ms"), Workload: scenario.Workload{Kind: scenario.KindBulk, Write: 1000}, Warmup: 2 * time.Second, Duration: 8 * time.Second,
	}
	final := emu.Stats{Forward: emu.DirStats{Total: emu.Counters{
		Drops: 3, Queue: metrics.Percentiles{P50: 100, P95: 190, P99: 199, Max: 200, N: 1000, Figures: metrics.All},
	}}}
	return Input{Spec: spec, ID: spec.ID(), TL: Timeline{T0: t0, Warmup: spec.Warmup, Duration: spec.Duration}, Final: final,
		Samples: []Sample{{At: 5 * time.Second, RateBps: 2e6, QueueMs: 80, Delivered: 2e6}, {At: 10 * time.Second, RateBps: 2e6, QueueMs: 90, Delivered: 1.9e6}}}
}

func TestSummarizeBulk(t *testing.T) {
	in := bulkInput()
	var d sendData
	// A write every 100 ms from 0 to 9.9 s; source delay 10 ms, except
	// that from 9 s on they are still pending at 12 s.
	for i := range 100 {
		start := time.Duration(i) * 100 * time.Millisecond
		// One retransmit a second: 8 between the window's first write
		// (2.0 s) and its last (9.9 s, pending), counting the rise from
		// the write before the window.
		w := records.Write{Kind: records.KindWrite, ID: uint64(i), WriteStartUs: at(start), WriteEndUs: at(start), Bytes: 1000, DrainBps: 1_900_000, Retransmits: i / 10}
		if start < 9*time.Second {
			w.LeftHostUs = at(start + 10*time.Millisecond)
		} else {
			w.Pending = true
		}
		d.Writes = append(d.Writes, w)
	}
	d.Conn = &records.Conn{Kind: records.KindConn, EndUs: at(12 * time.Second), Retransmits: 99} // the whole connection's
	// The sink reads 1.5 Mb/s (1875 bytes every 10 ms).
	for i := int64(1); i <= 1100; i++ {
		d.Sink = append(d.Sink, records.Sink{Us: at(time.Duration(i) * 10 * time.Millisecond), Total: i * 1875})
	}
	r, recs := summarizeBulk(in, d)

	if r.ID != "2mbit-40ms-bulk1000B-replenish=15ms" || r.Mode != "replenish=15ms" || r.Workload != "bulk=1000" || r.Transport != "tcp" {
		t.Errorf("identity: %+v", r)
	}
	if r.RateBps != 2_000_000 || r.RTTMs != 40 || r.QueueMs != 200 || r.DurationS != 8 || r.WarmupS != 2 {
		t.Errorf("conditions: %+v", r)
	}
	// Writes at 2.0 .. 10.0 s are in the window: 81 of them.
	if r.Writes != 80 {
		t.Errorf("writes %d, want 80 (2.0 s to 9.9 s)", r.Writes)
	}
	// 70 measured at 10 ms, 10 pending: lower bounds of 2.1 s to 3 s.
	if !near(r.SourceDelayMs.P50, 10, 1e-9) || r.SourceDelayMs.P95 < 2000 {
		t.Errorf("source delay %+v, want p50 10 ms and p95 a lower bound above 2 s", r.SourceDelayMs)
	}
	if !near(r.GoodputBps, 1.5e6, 1) || !near(r.Utilization, 0.75, 1e-6) {
		t.Errorf("goodput %v (%v), want 1.5 Mb/s (0.75)", r.GoodputBps, r.Utilization)
	}
	if r.Retransmits != 8 || r.EmulatorDrops != 3 || r.BottleneckQueueMs.P50 != 100 || r.BottleneckQueueMs.P95 != 190 {
		t.Errorf("counters %+v", r)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "10 of 80 writes in the window had not left the host") {
		t.Errorf("notes %q lack the lower bound", r.Notes)
	}
	// Records: one per write and per sample, in time order.
	if len(recs) != 102 {
		t.Fatalf("%d records, want 102", len(recs))
	}
	var prev float64
	for i, rec := range recs {
		if tm := rec.T; tm < prev {
			t.Fatalf("record %d at %v after %v", i, tm, prev)
		} else {
			prev = tm
		}
	}
	var samples []records.RunLine
	for _, rec := range recs {
		if rec.Kind == records.KindSample {
			samples = append(samples, rec)
		}
	}
	if len(samples) != 2 || samples[0].GoodputBps == nil || !near(*samples[0].GoodputBps, 1.5e6, 1) || *samples[1].DrainBps != 1.9e6 {
		t.Errorf("samples %+v", samples)
	}
	// The records must read as the report expects them.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(recs[0]); err != nil || !strings.Contains(buf.String(), `"kind":"write","t":0,`) {
		t.Errorf("first record %s, %v", buf.String(), err)
	}
}

func TestSummarizeBulkNotes(t *testing.T) {
	in := bulkInput()
	var d sendData
	// The source delay grows from 100 ms to 900 ms; the second half of
	// the window reads half as fast; two writes share a stamp; one has no
	// departure at all.
	for i := range 100 {
		start := time.Duration(i) * 100 * time.Millisecond
		w := records.Write{Kind: records.KindWrite, ID: uint64(i), WriteStartUs: at(start), LeftHostUs: at(start + time.Duration(100+8*i)*time.Millisecond)}
		switch i {
		case 50:
			w.LeftHostUs = d.Writes[49].LeftHostUs
		case 60:
			w.LeftHostUs = 0
		}
		d.Writes = append(d.Writes, w)
	}
	// Four writes at 10 s: the earlier ones share the last one's stamp.
	total := int64(0)
	for i := int64(1); i <= 1000; i++ {
		if i <= 600 {
			total += 2000
		} else {
			total += 1000
		}
		d.Sink = append(d.Sink, records.Sink{Us: at(time.Duration(i) * 10 * time.Millisecond), Total: total})
	}
	r, _ := summarizeBulk(in, d)
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"goodput still converging",
		"source delay still growing",
		"1 of 80 writes in the window have no departure time",
		"1 of 80 writes in the window share their departure time",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestSummarizeRR(t *testing.T) {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindRR}
	var d sendData
	for i := range 50 {
		start := 2*time.Second + time.Duration(i)*100*time.Millisecond
		d.Writes = append(d.Writes,
			records.Write{Kind: records.KindWrite, ID: uint64(2 * i), Part: "header", WriteStartUs: at(start), LeftHostUs: at(start + 10*time.Microsecond)},
			records.Write{Kind: records.KindWrite, ID: uint64(2*i + 1), Part: "body", WriteStartUs: at(start), LeftHostUs: at(start + 80*time.Millisecond)},
		)
		d.Requests = append(d.Requests, records.Request{Kind: records.KindRequest, ID: uint64(i), StartUs: at(start), EndUs: at(start + 120*time.Millisecond)})
	}
	r, recs := summarizeRR(in, d)
	if r.Writes != 50 || !near(r.SourceDelayMs.P50, 80, 1e-9) {
		t.Errorf("bodies %d, source delay %+v; want 50 at 80 ms", r.Writes, r.SourceDelayMs)
	}
	if !math.IsNaN(r.GoodputBps) {
		t.Errorf("goodput %v, want unknown", r.GoodputBps)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"request latency p50 120 ms", "over 50 requests", "header's p50 is 0.01 ms"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	writes := 0
	for _, rec := range recs {
		if w := rec; w.Kind == records.KindWrite {
			writes++
			if w.Part != "body" {
				t.Errorf("a %s write in the records", w.Part)
			}
		}
	}
	if writes != 50 {
		t.Errorf("%d write records, want the 50 bodies", writes)
	}
}

func TestSampleFrom(t *testing.T) {
	st := emu.Stats{Forward: emu.DirStats{Rate: 2 * rate.Mbps, Window: emu.Counters{Span: 250 * time.Millisecond, Bytes: 62500, Packets: 42,
		Queue: metrics.Percentiles{P50: 120, Figures: metrics.All}}}}
	s := SampleFrom(3*time.Second, st)
	if s.At != 3*time.Second || s.RateBps != 2e6 || !near(s.Delivered, 2e6, 1) || s.QueueMs != 120 {
		t.Errorf("sample %+v", s)
	}
	st.Forward.Window.Packets = 0
	if s := SampleFrom(0, st); s.QueueMs != 0 {
		t.Errorf("an idle interval's queue is %v, want 0", s.QueueMs)
	}
}

// TestResummarize checks that a run's saved input and raw records give the
// same summary again.
func TestResummarize(t *testing.T) {
	raw := t.TempDir()
	in := bulkInput()
	in.Spec.Path.Schedule = []scenario.Step{{At: 5 * time.Second, Rate: rate.Mbps}}
	in.Final.Forward.Total.Span, in.Final.Forward.Total.Bytes = 8*time.Second, 1_100_000
	var send, sink bytes.Buffer
	var d sendData
	enc := json.NewEncoder(&send)
	for i := range 50 {
		w := records.Write{Kind: records.KindWrite, ID: uint64(i), WriteStartUs: at(time.Duration(i) * 200 * time.Millisecond), Bytes: 1000}
		w.LeftHostUs = w.WriteStartUs + 5000
		d.Writes = append(d.Writes, w)
		enc.Encode(w)
	}
	c := records.Conn{Kind: records.KindConn, EndUs: at(11 * time.Second), Retransmits: 2}
	d.Conn = &c
	enc.Encode(c)
	for i := int64(1); i <= 100; i++ {
		l := records.Sink{Us: at(time.Duration(i) * 100 * time.Millisecond), Total: i * 10000}
		d.Sink = append(d.Sink, l)
		json.NewEncoder(&sink).Encode(l)
	}
	os.WriteFile(filepath.Join(raw, records.SendFile), send.Bytes(), 0o644)
	os.WriteFile(filepath.Join(raw, records.SinkFile), sink.Bytes(), 0o644)
	if err := SaveInput(raw, in); err != nil {
		t.Fatal(err)
	}
	got, gotRecs, err := Resummarize(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRecs := summarizeBulk(in, d)
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) || len(gotRecs) != len(wantRecs) {
		t.Errorf("again:\n %s\nfirst time:\n %s", gj, wj)
	}
	if !near(got.Utilization, got.GoodputBps/1.375e6, 1e-9) {
		t.Errorf("utilization %v: the saved schedule (2 Mb/s, then 1 Mb/s from 5 s: a mean of 1.375 Mb/s over the window) was lost", got.Utilization)
	}
	if l := got.LinkUtilization; l == nil || !near(*l, 0.8, 1e-9) {
		t.Errorf("link utilization %v, want 0.8 (1.1 Mb/s over 1.375 Mb/s): the saved totals or schedule were lost", fmtPtr(l))
	}
}

// TestResummarizeOldResults computes the summaries of an earlier version's
// results directory again from its raw records: every records.jsonl must
// come out as that version wrote it, and every run.json with every field
// that version wrote unchanged (fields added since may join them).
func TestResummarizeOldResults(t *testing.T) {
	const old = "../testdata/results-v1"
	raws, err := filepath.Glob(filepath.Join(old, "runs", "*", "raw"))
	if err != nil || len(raws) != 3 {
		t.Fatalf("%d raw directories, %v", len(raws), err)
	}
	for _, raw := range raws {
		t.Run(filepath.Base(filepath.Dir(raw)), func(t *testing.T) {
			run, recs, err := Resummarize(raw)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := Write(dir, run, recs); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(filepath.Join(filepath.Dir(raw), "records.jsonl"))
			got, _ := os.ReadFile(filepath.Join(dir, "records.jsonl"))
			if !bytes.Equal(got, want) {
				t.Errorf("records.jsonl differs from the one written with the results")
			}
			var old, now map[string]json.RawMessage
			want, _ = os.ReadFile(filepath.Join(filepath.Dir(raw), "run.json"))
			got, _ = os.ReadFile(filepath.Join(dir, "run.json"))
			if err := errors.Join(json.Unmarshal(want, &old), json.Unmarshal(got, &now)); err != nil {
				t.Fatal(err)
			}
			for k, v := range old {
				if !bytes.Equal(now[k], v) {
					t.Errorf("run.json: %s is %s, was %s", k, now[k], v)
				}
			}
			for k, v := range now {
				if _, ok := old[k]; !ok {
					t.Logf("run.json: new %s: %s", k, v)
				}
			}
		})
	}
}

// TestLinkUtilization checks the link's use: the forward totals' IP bytes
// over their span, over the window's mean rate (not the nominal one), in
// bulk and video summaries alike, and unknown without bytes.
func TestLinkUtilization(t *testing.T) {
	// 2 Mb/s, then 1 Mb/s from 5 s: a mean of 1.375 Mb/s over the window
	// [2 s, 10 s]. 1,237,500 bytes over 8 s are 1.2375 Mb/s: 90% of the
	// mean rate, 62% of the nominal one.
	withTotals := func(bytes int64, span time.Duration, reverse bool) Input {
		in := bulkInput()
		in.Spec.Path.Schedule = []scenario.Step{{At: 5 * time.Second, Rate: rate.Mbps}}
		c := emu.Counters{Span: span, Bytes: bytes, Packets: bytes / 1000}
		in.Final.Forward.Total.Span = span
		if reverse {
			in.Final.Reverse.Total = c
		} else {
			in.Final.Forward.Total.Bytes = bytes
		}
		return in
	}
	for _, tc := range []struct {
		name string
		in   Input
		want float64 // NaN: unknown
	}{
		{"forward bytes over the mean rate", withTotals(1_237_500, 8*time.Second, false), 0.9},
		{"span not the window's", withTotals(1_237_500, 10*time.Second, false), 0.72},
		{"no bytes (older inputs)", withTotals(0, 8*time.Second, false), math.NaN()},
		{"no span", withTotals(1_237_500, 0, false), math.NaN()},
		{"reverse bytes only", withTotals(1_237_500, 8*time.Second, true), math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bulk, _ := summarizeBulk(tc.in, sendData{})
			video := tc.in
			video.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
			vr, _ := summarizeVideo(video, videoData{})
			for kind, r := range map[string]report.Run{"bulk": bulk, "video": vr} {
				got := r.LinkUtilization
				switch {
				case math.IsNaN(tc.want) && got != nil:
					t.Errorf("%s: link utilization %v, want unknown", kind, *got)
				case !math.IsNaN(tc.want) && got == nil:
					t.Errorf("%s: link utilization unknown, want %v", kind, tc.want)
				case !math.IsNaN(tc.want) && !near(*got, tc.want, 1e-9):
					t.Errorf("%s: link utilization %v, want %v", kind, *got, tc.want)
				}
			}
		})
	}
}

// mustMode parses a mode the test knows to be valid.
func mustMode(s string) transport.Mode {
	m, err := transport.ParseMode(s)
	if err != nil {
		panic(err)
	}
	return m
}

func TestFailed(t *testing.T) {
	in := bulkInput()
	r := Failed(in.Spec, "x", errors.New("no namespace"))
	if r.ID != "x" || r.Mode != "replenish=15ms" || r.Scenario != in.Spec.Title() || r.SourceDelayMs.Known() || r.BottleneckQueueMs.Known() ||
		!slices.Contains(r.Notes, "run failed: no namespace") {
		t.Errorf("Failed = %+v", r)
	}
}

// TestEmulatorLate checks that a run carries the emulator's lateness, and
// says so in its notes once a packet was held lateNoteMs or more.
func TestEmulatorLate(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		note bool
	}{{4.9, false}, {61.7, true}} {
		var in Input
		in.Final.Forward.Total.Late = metrics.Percentiles{N: 5000, P50: 0.02, P95: 0.1, P99: 0.13, Max: tc.max, Figures: metrics.All}
		r := baseRun(in)
		if l := r.EmulatorLateMs; l == nil || l.P50 != 0.02 || l.P99 != 0.13 || l.Max != tc.max {
			t.Errorf("max %v: emulator_late_ms %+v, want p50 0.02, p99 0.13, max %v", tc.max, l, tc.max)
		}
		noted := strings.Contains(strings.Join(r.Notes, "\n"), "the emulator delivered a packet")
		if noted != tc.note {
			t.Errorf("max %v ms: notes %q, want a note of the lateness: %v", tc.max, r.Notes, tc.note)
		}
	}
	if r := baseRun(Input{}); r.EmulatorLateMs != nil || len(r.Notes) > 0 {
		t.Errorf("without counts: emulator_late_ms %+v, notes %q, want neither", r.EmulatorLateMs, r.Notes)
	}
}
