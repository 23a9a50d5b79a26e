// Package summary turns what a run's processes recorded (their records
// files in the run's raw directory) and the emulator's readings into the
// run's summary, a report.Run for run.json, and the lines of its
// records.jsonl: it joins the sender's and the viewer's records frame by
// frame, places every write and frame in the measured window, and notes
// what a number needs read with it (lower bounds, shared departure stamps).
// Everything but the reading and writing of files is a pure function of
// its inputs, so that a results directory can be summarized again
// (Resummarize) when the way runs are summarized changes.
package summary

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/metrics"
	"replenish/records"
)

// Summarize reads what the processes of in's run recorded in its raw
// directory and returns the run's summary and the lines of its
// records.jsonl. It fails only when a records file cannot be read.
func Summarize(in Input, raw string) (report.Run, []records.RunLine, error) {
	switch in.Spec.Workload.Kind {
	case scenario.KindVideo:
		var d videoData
		if err := readSenderRecords(filepath.Join(raw, records.SenderFile), &d); err != nil {
			return report.Run{}, nil, fmt.Errorf("summary: sender records: %w", err)
		}
		if err := readViewerRecords(filepath.Join(raw, records.ViewerFile), &d); err != nil {
			return report.Run{}, nil, fmt.Errorf("summary: viewer records: %w", err)
		}
		run, recs := summarizeVideo(in, d)
		if err := crossFields(&run, in, raw); err != nil {
			return report.Run{}, nil, err
		}
		return run, recs, nil
	}
	var d sendData
	if err := readSendRecords(filepath.Join(raw, records.SendFile), &d); err != nil {
		return report.Run{}, nil, fmt.Errorf("summary: sender records: %w", err)
	}
	if in.Spec.Workload.Kind == scenario.KindRR {
		run, recs := summarizeRR(in, d)
		return run, recs, nil
	}
	if err := readSinkRecords(filepath.Join(raw, records.SinkFile), &d); err != nil {
		return report.Run{}, nil, fmt.Errorf("summary: sink records: %w", err)
	}
	run, recs := summarizeBulk(in, d)
	return run, recs, nil
}

// Failed returns the summary of a run that failed with err: what its
// description gives, no measurements, and a note saying why.
func Failed(spec scenario.Run, id string, err error) report.Run {
	run := baseRun(Input{Spec: spec, ID: id})
	run.BottleneckQueueMs = report.NoPercentiles()
	run.Notes = append(run.Notes, "run failed: "+err.Error())
	return run
}

// Timeline places a run's events: T0 is when the sending side started, and
// the measured window is [Warmup, Warmup+Duration] after it.
type Timeline struct {
	T0       time.Time
	Warmup   time.Duration
	Duration time.Duration
}

// sec returns the time of a wall-clock stamp in µs since the epoch as
// seconds since T0.
func (tl Timeline) sec(us int64) float64 {
	return float64(us-tl.T0.UnixMicro()) / 1e6
}

// window returns the measured window in µs since the epoch.
func (tl Timeline) window() (from, to int64) {
	from = tl.T0.Add(tl.Warmup).UnixMicro()
	return from, from + tl.Duration.Microseconds()
}

// in reports whether the stamp us lies in the measured window.
func (tl Timeline) in(us int64) bool {
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
func retransIn(tl Timeline, samples []retransSample) int64 {
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

// Sample is one periodic reading of the emulator during a run.
type Sample struct {
	At        time.Duration // since T0
	RateBps   float64       // forward bottleneck rate now
	QueueMs   float64       // median queueing delay of the packets delivered over the last interval; 0 when none
	Delivered float64       // forward IP bits per second over the last interval
}

// SampleFrom turns an emulator snapshot into a sample at time at. Its
// window must be the sampling interval.
func SampleFrom(at time.Duration, st emu.Stats) Sample {
	s := Sample{At: at, RateBps: float64(st.Forward.Rate), Delivered: st.Forward.Window.Rate()}
	if st.Forward.Window.Packets > 0 {
		s.QueueMs = st.Forward.Window.Queue.P50
	}
	return s
}

// sortRecords sorts records.jsonl lines by time, stably.
func sortRecords(recs []records.RunLine) {
	slices.SortStableFunc(recs, func(a, b records.RunLine) int { return cmp.Compare(a.T, b.T) })
}

// Input is what a run's summary is computed from besides what its
// processes recorded: the run, its timeline and the emulator's readings.
type Input struct {
	Spec    scenario.Run
	ID      string
	TL      Timeline
	Final   emu.Stats // at the end of the window, totals reset at its start
	Samples []Sample
	Idle    IdleLog // the forward bottleneck's idle spans
	// PageFinal is the page leg's emulator at the end of the window,
	// totals reset at its start; nil without a page leg.
	PageFinal *emu.Stats
}

// lateNoteMs is the emulator's lateness from which a run's notes say so: a
// packet held this long reads as queueing to the sender, and a controller
// may cut on it.
const lateNoteMs = 20

// baseRun fills the fields every run has.
func baseRun(in Input) report.Run {
	s := in.Spec
	fwd := in.Final.Forward.Total
	var late *metrics.Percentiles
	var notes []string
	if fwd.Late.N > 0 {
		l := fwd.Late.Only(metrics.P50 | metrics.P99 | metrics.Max)
		late = &l
		if l.Max >= lateNoteMs {
			notes = append(notes, fmt.Sprintf("the emulator delivered a packet %s late (p99 %s): the machine was busy, and the delays carry it",
				FormatMs(l.Max), FormatMs(l.P99)))
		}
	}
	return report.Run{
		ID: in.ID, Scenario: s.Title(), Mode: s.ModeName(), Transport: s.TransportName(), Workload: s.Workload.String(), CC: s.Path.CC,
		RateBps: int64(s.Path.Rate), RTTMs: float64(s.Path.RTT) / float64(time.Millisecond),
		QueueMs: float64(s.Path.Queue) / float64(time.Millisecond), Loss: s.Path.Loss, JitterMs: float64(s.Path.Jitter) / float64(time.Millisecond), Schedule: scenario.FormatSchedule(s.Path.Schedule),
		DurationS: s.Duration.Seconds(), WarmupS: s.Warmup.Seconds(),
		SourceDelayMs: report.NoPercentiles(), GoodputBps: math.NaN(), Utilization: math.NaN(),
		BottleneckQueueMs: fwd.Queue.Only(report.Figures), EmulatorDrops: fwd.Drops, EmulatorLateMs: late,
		Notes: notes,
	}
}

// meanRate returns the mean bottleneck rate over the measured window.
func (in Input) meanRate() float64 {
	return in.Spec.Path.MeanRate(in.Spec.Warmup, in.Spec.Total())
}

// linkUtilization returns the bottleneck's use in the window: the IP bytes
// the emulator delivered toward the receiver (Final's totals, restarted at
// the window's start) over their span, over the window's mean rate. It
// returns nil when the totals hold no bytes (as in inputs saved before
// they were kept) or the rate is unknown.
func (in Input) linkUtilization() *float64 {
	t := in.Final.Forward.Total
	mr := in.meanRate()
	if t.Bytes <= 0 || t.Span <= 0 || mr <= 0 {
		return nil
	}
	return ptr(t.Rate() / mr)
}

// sourceDelays returns the source delays in ms of the writes in the
// window (of the given part, "" for all): measured ones, and for writes that
// had not left the host when the sender stopped at endUs, the time they had
// waited, a lower bound. It also returns how many were lower bounds and how
// many had no departure time at all.
func sourceDelays(tl Timeline, writes []records.Write, part string, endUs int64) (delays []float64, bounds, unknown int) {
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
func sharedStamps(tl Timeline, writes []records.Write, part string) int {
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

// FormatMs formats milliseconds for notes and progress lines: "0.42 ms",
// "174 ms", "1.31 s"; "unknown" for NaN.
func FormatMs(v float64) string {
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

// FormatBps formats bits per second for notes and progress lines:
// "1.88 Mb/s", "84.0 kb/s"; "unknown" for NaN.
func FormatBps(v float64) string {
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
