package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"replenish/metrics"
	"replenish/records"
)

// series is a time series: X in seconds since the run's start.
type series struct {
	X, Y []float64
}

func (s *series) add(t float64, v *float64) {
	if v == nil || !finite(*v) {
		return
	}
	s.X = append(s.X, t)
	s.Y = append(s.Y, *v)
}

// Names of the time series kept per run.
const (
	tsGoodput     = "goodput"
	tsBitrate     = "bitrate"
	tsDrain       = "drain estimate"
	tsTarget      = "target"
	tsRate        = "bottleneck rate"
	tsSourceDelay = "source delay"
	tsC2R         = "capture to received"
	tsG2G         = "glass to glass"
	tsQueue       = "bottleneck queue"
)

// runData holds what a run's records.jsonl contributes to the report: the
// values inside the measured window, for distributions, and the time series
// of the whole run, for plots.
type runData struct {
	// Values inside the measured window, in milliseconds.
	SourceDelay, C2R, G2G, Queue []float64
	Parts                        map[string][]float64

	Series map[string]*series
	MaxT   float64 // latest t seen

	Writes, Frames, Samples int // records of each kind inside the window
	Lines                   int // non-blank lines read
	Malformed               int // lines that were not valid records
	FirstMalformed          int // line number of the first malformed line
}

// window is the measured window [From, To] in seconds since the run's start.
type window struct{ From, To float64 }

// windowOf returns r's measured window. A run without a duration is measured
// from the end of its warm-up to its last record.
func windowOf(r Run) window {
	w := window{From: max(r.WarmupS, 0), To: math.Inf(1)}
	if finite(r.DurationS) && r.DurationS > 0 {
		w.To = w.From + r.DurationS
	}
	if !finite(w.From) {
		w.From = 0
	}
	return w
}

func (w window) contains(t float64) bool { return t >= w.From && t <= w.To }

// readRecords reads records.jsonl (records.RunLine lines) from rd. Unknown
// kinds and fields are ignored; lines that are not JSON objects of the
// format, lack a kind, are of a known kind without a time, or are longer
// than records.MaxLine are counted as malformed and skipped. It returns an
// error only when rd fails.
func readRecords(rd io.Reader, w window) (*runData, error) {
	rs := &runData{
		Parts:  map[string][]float64{},
		Series: map[string]*series{},
		MaxT:   math.Inf(-1),
	}
	ts := func(name string) *series {
		s := rs.Series[name]
		if s == nil {
			s = &series{}
			rs.Series[name] = s
		}
		return s
	}
	sc := records.NewScanner(rd)
	for sc.Scan() {
		rs.Lines++
		// A time left absent or null stays NaN.
		rec := records.RunLine{T: math.NaN()}
		switch {
		case sc.TooLong() || json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Kind == "":
			rs.bad(sc.Line())
		case rec.Kind != records.KindWrite && rec.Kind != records.KindFrame && rec.Kind != records.KindSample:
		case !finite(rec.T):
			rs.bad(sc.Line())
		default:
			rs.add(&rec, w, ts)
		}
	}
	if math.IsInf(rs.MaxT, -1) {
		rs.MaxT = 0
	}
	if err := sc.Err(); err != nil {
		return rs, fmt.Errorf("report: reading records: %w", err)
	}
	return rs, nil
}

// bad counts the malformed line number n.
func (rs *runData) bad(n int) {
	rs.Malformed++
	if rs.FirstMalformed == 0 {
		rs.FirstMalformed = n
	}
}

func (rs *runData) add(rec *records.RunLine, w window, ts func(string) *series) {
	t := rec.T
	rs.MaxT = max(rs.MaxT, t)
	in := w.contains(t)
	keep := func(dst *[]float64, v *float64) {
		if in && v != nil && finite(*v) {
			*dst = append(*dst, *v)
		}
	}
	switch rec.Kind {
	case records.KindWrite, records.KindFrame:
		if in {
			if rec.Kind == records.KindWrite {
				rs.Writes++
			} else {
				rs.Frames++
			}
		}
		keep(&rs.SourceDelay, rec.SourceDelayMs)
		keep(&rs.C2R, rec.CaptureToReceivedMs)
		keep(&rs.G2G, rec.G2GMs)
		ts(tsSourceDelay).add(t, rec.SourceDelayMs)
		ts(tsC2R).add(t, rec.CaptureToReceivedMs)
		ts(tsG2G).add(t, rec.G2GMs)
		for name, v := range rec.PartsMs {
			if in && finite(v) {
				rs.Parts[name] = append(rs.Parts[name], v)
			}
		}
	case records.KindSample:
		if in {
			rs.Samples++
		}
		keep(&rs.Queue, rec.QueueMs)
		ts(tsGoodput).add(t, rec.GoodputBps)
		ts(tsBitrate).add(t, rec.BitrateBps)
		ts(tsDrain).add(t, rec.DrainBps)
		ts(tsTarget).add(t, rec.TargetBps)
		ts(tsRate).add(t, rec.RateBps)
		ts(tsQueue).add(t, rec.QueueMs)
	}
}

// fillFromRecords sets the distributions r lacks (unknown percentiles, absent
// video distributions) from the records of its measured window, and notes
// each one it set. The runner's values always take precedence. It sorts the
// value slices of rs in place.
func fillFromRecords(r *Run, rs *runData) {
	var filled []string
	if !r.SourceDelayMs.Known() && len(rs.SourceDelay) > 0 {
		r.SourceDelayMs = Summarize(rs.SourceDelay)
		filled = append(filled, "source delay")
	}
	if !r.BottleneckQueueMs.Known() && len(rs.Queue) > 0 {
		r.BottleneckQueueMs = Summarize(rs.Queue)
		filled = append(filled, "bottleneck queue")
	}
	if (r.CaptureToReceivedMs == nil || !r.CaptureToReceivedMs.Known()) && len(rs.C2R) > 0 {
		p := Summarize(rs.C2R)
		r.CaptureToReceivedMs = &p
		filled = append(filled, "capture to received")
	}
	if (r.G2GMs == nil || !r.G2GMs.Known()) && len(rs.G2G) > 0 {
		p := Summarize(rs.G2G)
		r.G2GMs = &p
		filled = append(filled, "glass to glass")
	}
	if len(r.PartsMs) == 0 && len(rs.Parts) > 0 {
		r.PartsMs = make(map[string]metrics.Percentiles, len(rs.Parts))
		for _, name := range sortedKeys(rs.Parts) {
			r.PartsMs[name] = Summarize(rs.Parts[name])
		}
		filled = append(filled, "parts")
	}
	if len(filled) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("percentiles of %s computed from %s", joinAnd(filled), recordsFile))
	}
	// Sort the rest, for the CDFs.
	for _, v := range [][]float64{rs.SourceDelay, rs.C2R, rs.G2G, rs.Queue} {
		slices.Sort(v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// joinAnd joins words as "a", "a and b" or "a, b and c".
func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " and " + words[len(words)-1]
}
