package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/metrics"
	"replenish/records"
)

// This file turns what a run's processes recorded into the run's summary
// (report.Run) and the lines of its records.jsonl. Everything here is a pure
// function of its inputs.

// timeline places a run's events: T0 is when the sending side started, and
// the measured window is [Warmup, Warmup+Duration] after it.
type timeline struct {
	T0       time.Time
	Warmup   time.Duration
	Duration time.Duration
}

// sec returns the time of a wall-clock stamp in µs since the epoch as
// seconds since T0.
func (tl timeline) sec(us int64) float64 {
	return float64(us-tl.T0.UnixMicro()) / 1e6
}

// window returns the measured window in µs since the epoch.
func (tl timeline) window() (from, to int64) {
	from = tl.T0.Add(tl.Warmup).UnixMicro()
	return from, from + tl.Duration.Microseconds()
}

// in reports whether the stamp us lies in the measured window.
func (tl timeline) in(us int64) bool {
	from, to := tl.window()
	return us >= from && us <= to
}

// countAt returns the sink's running total at time us: that of the last
// point at or before it (points in time order), 0 before the first.
func countAt(points []records.Sink, us int64) int64 {
	i := sort.Search(len(points), func(i int) bool { return points[i].Us > us })
	if i == 0 {
		return 0
	}
	return points[i-1].Total
}

// retransSample is a connection's retransmit count as a write started.
type retransSample struct {
	Us    int64
	Count int
}

// retransIn counts the retransmits in the measured window from the samples
// (in any order): the rises of the count from each sample to the next that
// lies in the window. A count below the one before it is a new
// connection's, which started from zero. The edges are as exact as the
// samples are dense: a write's interval.
func retransIn(tl timeline, samples []retransSample) int64 {
	slices.SortStableFunc(samples, func(a, b retransSample) int { return cmp.Compare(a.Us, b.Us) })
	var n int64
	for i := 1; i < len(samples); i++ {
		prev, cur := samples[i-1].Count, samples[i]
		if !tl.in(cur.Us) {
			continue
		}
		if cur.Count < prev {
			prev = 0
		}
		n += int64(cur.Count - prev)
	}
	return n
}

// goodputBetween returns the rate in bits per second at which the sink's
// count grew from from to to (µs since the epoch), or NaN for an empty span.
func goodputBetween(points []records.Sink, from, to int64) float64 {
	if to <= from {
		return math.NaN()
	}
	return float64(countAt(points, to)-countAt(points, from)) * 8 / (float64(to-from) / 1e6)
}

// ms converts a duration in µs to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }

// pct summarizes values (sorting them in place) as run.json gives a
// distribution, all NaN for no values.
func pct(values []float64) metrics.Percentiles { return report.Summarize(values) }

// ptr returns a pointer to v, or nil when v is not a finite number.
func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// emuSample is one periodic reading of the emulator.
type emuSample struct {
	At        time.Duration // since T0
	RateBps   float64       // forward bottleneck rate now
	QueueMs   float64       // median queueing delay of the packets delivered over the last interval; 0 when none
	Delivered float64       // forward IP bits per second over the last interval
}

// sampleFrom turns an emulator snapshot into a sample at time at. Its
// window must be the sampling interval.
func sampleFrom(at time.Duration, st emu.Stats) emuSample {
	s := emuSample{At: at, RateBps: float64(st.Forward.Rate), Delivered: st.Forward.Window.Rate()}
	if st.Forward.Window.Packets > 0 {
		s.QueueMs = st.Forward.Window.Queue.P50
	}
	return s
}

// sortRecords sorts records.jsonl lines by time, stably.
func sortRecords(recs []records.RunLine) {
	slices.SortStableFunc(recs, func(a, b records.RunLine) int { return cmp.Compare(a.T, b.T) })
}

// runInput is what every run's summary starts from.
type runInput struct {
	Spec    scenario.Run
	ID      string
	TL      timeline
	Final   emu.Stats // at the end of the window, totals reset at its start
	Samples []emuSample
}

// baseRun fills the fields every run has.
func baseRun(in runInput) report.Run {
	s := in.Spec
	fwd := in.Final.Forward.Total
	return report.Run{
		ID: in.ID, Scenario: s.Title(), Mode: s.Mode.String(), Transport: "tcp", Workload: s.Workload.String(), CC: s.Path.CC,
		RateBps: int64(s.Path.Rate), RTTMs: float64(s.Path.RTT) / float64(time.Millisecond),
		QueueMs: float64(s.Path.Queue) / float64(time.Millisecond), Loss: s.Path.Loss,
		DurationS: s.Duration.Seconds(), WarmupS: s.Warmup.Seconds(),
		SourceDelayMs: report.NoPercentiles(), GoodputBps: math.NaN(), Utilization: math.NaN(),
		BottleneckQueueMs: fwd.Queue.Only(report.Figures), EmulatorDrops: fwd.Drops,
	}
}

// meanRate returns the mean bottleneck rate over the measured window.
func (in runInput) meanRate() float64 {
	return in.Spec.Path.MeanRate(in.Spec.Warmup, in.Spec.Total())
}

// sendData is what a bulk or rr run's processes recorded.
type sendData struct {
	Writes   []records.Write
	Requests []records.Request
	Conn     *records.Conn
	Sink     []records.Sink
}

// retransSamples returns the retransmit counts the writes recorded.
func (d sendData) retransSamples() []retransSample {
	s := make([]retransSample, 0, len(d.Writes))
	for _, w := range d.Writes {
		s = append(s, retransSample{w.WriteStartUs, w.Retransmits})
	}
	return s
}

// readSendRecords reads a sending child's records file.
func readSendRecords(path string, d *sendData) error {
	return records.ReadFile(path, func(kind string, line []byte) error {
		switch kind {
		case records.KindWrite:
			var l records.Write
			if err := json.Unmarshal(line, &l); err != nil {
				return err
			}
			d.Writes = append(d.Writes, l)
		case records.KindRequest:
			var l records.Request
			if err := json.Unmarshal(line, &l); err != nil {
				return err
			}
			d.Requests = append(d.Requests, l)
		case records.KindConn:
			var l records.Conn
			if err := json.Unmarshal(line, &l); err != nil {
				return err
			}
			d.Conn = &l
		}
		return nil
	})
}

// readSinkRecords reads the sink's records file.
func readSinkRecords(path string, d *sendData) error {
	return records.ReadFile(path, func(kind string, line []byte) error {
		var l records.Sink
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		d.Sink = append(d.Sink, l)
		return nil
	})
}

// sourceDelays returns the source delays in ms of the writes in the
// window (of the given part, "" for all): measured ones, and for writes that
// had not left the host when the sender stopped at endUs, the time they had
// waited, a lower bound. It also returns how many were lower bounds and how
// many had no departure time at all.
func sourceDelays(tl timeline, writes []records.Write, part string, endUs int64) (delays []float64, bounds, unknown int) {
	for _, w := range writes {
		if !tl.in(w.WriteStartUs) || (part != "" && w.Part != part) {
			continue
		}
		switch {
		case w.LeftHostUs > 0:
			delays = append(delays, ms(w.LeftHostUs-w.WriteStartUs))
		case w.Pending && endUs > w.WriteStartUs:
			delays = append(delays, ms(endUs-w.WriteStartUs))
			bounds++
		default:
			unknown++
		}
	}
	return delays, bounds, unknown
}

// boundNotes explains lower bounds and unknown source delays.
func boundNotes(what string, n, bounds, unknown int) []string {
	var notes []string
	if bounds > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d %s in the window had not left the host when the run ended; "+
			"their source delay counts as the time they had waited, so the percentiles are lower bounds", bounds, n, what))
	}
	if unknown > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d %s in the window have no departure time and are left out", unknown, n, what))
	}
	return notes
}

// sharedStamps counts the writes in the window (of the given part, "" for
// all) whose departure time is also that of the next write: the kernel
// appended the later write to the skb that held the earlier one's last
// byte, so only one timestamp came for both, and the earlier write's source
// delay is overstated.
func sharedStamps(tl timeline, writes []records.Write, part string) int {
	n := 0
	var prev *records.Write
	for i := range writes {
		w := &writes[i]
		if part != "" && w.Part != part {
			continue
		}
		if prev != nil && prev.LeftHostUs > 0 && prev.LeftHostUs == w.LeftHostUs && tl.in(prev.WriteStartUs) {
			n++
		}
		prev = w
	}
	return n
}

// sharedNote explains shared departure stamps.
func sharedNote(what string, shared, n int) []string {
	if shared == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d of %d %s in the window share their departure time with the next one "+
		"(the kernel merged them into one skb, which carries one timestamp), so their source delay is overstated", shared, n, what)}
}

// summarizeBulk builds the summary and the records of a bulk run.
func summarizeBulk(in runInput, d sendData) (report.Run, []records.RunLine) {
	r := baseRun(in)
	tl := in.TL
	from, to := tl.window()
	mid := from + (to-from)/2
	var endUs int64
	if d.Conn != nil {
		endUs = d.Conn.EndUs
	}
	r.Retransmits = retransIn(tl, d.retransSamples())
	recs := make([]records.RunLine, 0, len(d.Writes)+len(in.Samples))
	var first, second []float64
	for _, w := range d.Writes {
		rec := records.RunLine{Kind: records.KindWrite, T: tl.sec(w.WriteStartUs), Bytes: w.Bytes}
		if w.DrainBps > 0 {
			rec.DrainBps = ptr(float64(w.DrainBps))
		}
		if w.LeftHostUs > 0 {
			sd := ms(w.LeftHostUs - w.WriteStartUs)
			rec.SourceDelayMs = ptr(sd)
			if tl.in(w.WriteStartUs) {
				if w.WriteStartUs < mid {
					first = append(first, sd)
				} else {
					second = append(second, sd)
				}
			}
		}
		recs = append(recs, rec)
		if tl.in(w.WriteStartUs) {
			r.Writes++
		}
	}
	delays, bounds, unknown := sourceDelays(tl, d.Writes, "", endUs)
	r.SourceDelayMs = pct(delays)
	r.GoodputBps = goodputBetween(d.Sink, from, to)
	if mr := in.meanRate(); mr > 0 {
		r.Utilization = r.GoodputBps / mr
	}
	r.Notes = append(r.Notes, boundNotes("writes", r.Writes, bounds, unknown)...)
	r.Notes = append(r.Notes, sharedNote("writes", sharedStamps(tl, d.Writes, ""), r.Writes)...)
	r.Notes = append(r.Notes, trendNotes(d.Sink, from, mid, to, first, second)...)
	recs = append(recs, bulkSamples(in, d)...)
	sortRecords(recs)
	return r, recs
}

// trendNotes notes a goodput or a source delay that still changes much
// between the two halves of the window.
func trendNotes(sink []records.Sink, from, mid, to int64, first, second []float64) []string {
	var notes []string
	g1, g2 := goodputBetween(sink, from, mid), goodputBetween(sink, mid, to)
	if g1 > 0 && g2 > 0 && math.Abs(g2-g1) > 0.1*max(g1, g2) {
		notes = append(notes, fmt.Sprintf("goodput still converging: %s in the first half of the window, %s in the second",
			fmtBps(g1), fmtBps(g2)))
	}
	if len(first) > 0 && len(second) > 0 {
		p1, p2 := pct(first).P50, pct(second).P50
		if p2 > 1.5*p1 && p2-p1 > 10 {
			notes = append(notes, fmt.Sprintf("source delay still growing: p50 %s in the first half of the window, %s in the second",
				fmtMs(p1), fmtMs(p2)))
		}
	}
	return notes
}

// bulkSamples returns the sample lines of a bulk or rr run: the emulator's
// readings with the sink's goodput and the sender's latest drain estimate
// over each interval.
func bulkSamples(in runInput, d sendData) []records.RunLine {
	recs := make([]records.RunLine, 0, len(in.Samples))
	t0 := in.TL.T0.UnixMicro()
	prev := t0
	wi := 0
	for _, s := range in.Samples {
		at := t0 + s.At.Microseconds()
		rec := records.RunLine{Kind: records.KindSample, T: s.At.Seconds(), QueueMs: ptr(s.QueueMs), RateBps: ptr(s.RateBps), DeliveredBps: ptr(s.Delivered)}
		if len(d.Sink) > 0 {
			rec.GoodputBps = ptr(goodputBetween(d.Sink, prev, at))
		}
		var drain int64
		for wi < len(d.Writes) && d.Writes[wi].WriteStartUs <= at {
			if d.Writes[wi].DrainBps > 0 {
				drain = d.Writes[wi].DrainBps
			}
			wi++
		}
		if drain > 0 {
			rec.DrainBps = ptr(float64(drain))
		}
		recs = append(recs, rec)
		prev = at
	}
	return recs
}

// summarizeRR builds the summary and the records of a request/response run:
// the source delay is the body's, and the request latency goes in the
// notes.
func summarizeRR(in runInput, d sendData) (report.Run, []records.RunLine) {
	r := baseRun(in)
	tl := in.TL
	var endUs int64
	if d.Conn != nil {
		endUs = d.Conn.EndUs
	}
	r.Retransmits = retransIn(tl, d.retransSamples())
	recs := make([]records.RunLine, 0, len(d.Writes)/2+len(in.Samples))
	for _, w := range d.Writes {
		if w.Part != records.PartBody {
			continue
		}
		rec := records.RunLine{Kind: records.KindWrite, T: tl.sec(w.WriteStartUs), Bytes: w.Bytes, Part: w.Part}
		if w.LeftHostUs > 0 {
			rec.SourceDelayMs = ptr(ms(w.LeftHostUs - w.WriteStartUs))
		}
		recs = append(recs, rec)
		if tl.in(w.WriteStartUs) {
			r.Writes++
		}
	}
	body, bounds, unknown := sourceDelays(tl, d.Writes, records.PartBody, endUs)
	header, _, _ := sourceDelays(tl, d.Writes, records.PartHeader, endUs)
	r.SourceDelayMs = pct(body)
	var latency []float64
	for _, q := range d.Requests {
		if tl.in(q.StartUs) {
			latency = append(latency, ms(q.EndUs-q.StartUs))
		}
	}
	if n := len(latency); n > 0 {
		l := pct(latency)
		r.Notes = append(r.Notes, fmt.Sprintf("request latency p50 %s, p95 %s, p99 %s over %d requests (%.1f per second)",
			fmtMs(l.P50), fmtMs(l.P95), fmtMs(l.P99), n, float64(n)/in.Spec.Duration.Seconds()))
	}
	if len(header) > 0 {
		r.Notes = append(r.Notes, "source delay is the body's; the header's p50 is "+fmtMs(pct(header).P50))
	}
	r.Notes = append(r.Notes, boundNotes("bodies", r.Writes, bounds, unknown)...)
	r.Notes = append(r.Notes, sharedNote("bodies", sharedStamps(tl, d.Writes, records.PartBody), r.Writes)...)
	recs = append(recs, bulkSamples(in, sendData{})...)
	sortRecords(recs)
	return r, recs
}

// fmtMs formats milliseconds for notes: "0.42 ms", "174 ms", "1.31 s".
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "unknown"
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2g ms", v)
}

// fmtBps formats bits per second for notes: "1.88 Mb/s", "84.0 kb/s".
func fmtBps(v float64) string {
	switch {
	case math.IsNaN(v):
		return "unknown"
	case v >= 1e6:
		return fmt.Sprintf("%.2f Mb/s", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f kb/s", v/1e3)
	}
	return fmt.Sprintf("%.0f b/s", v)
}
