package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"replenish/metrics"
)

// maxLine caps the length of one line of records.jsonl; a longer line is
// counted as malformed and skipped.
const maxLine = 64 << 10

// Record kinds in records.jsonl.
const (
	kindWrite  = "write"
	kindFrame  = "frame"
	kindSample = "sample"
)

// record is one line of records.jsonl. Absent fields are nil.
type record struct {
	Kind string   `json:"kind"`
	T    *float64 `json:"t"` // seconds since the run's start

	// write and frame
	SourceDelayMs *float64 `json:"source_delay_ms"`

	// frame
	Width               *int                `json:"width"`
	Height              *int                `json:"height"`
	CaptureToReceivedMs *float64            `json:"capture_to_received_ms"`
	G2GMs               *float64            `json:"g2g_ms"`
	PartsMs             map[string]*float64 `json:"parts_ms"`

	// sample
	GoodputBps *float64 `json:"goodput_bps"`
	BitrateBps *float64 `json:"bitrate_bps"`
	QueueMs    *float64 `json:"queue_ms"`
	DrainBps   *float64 `json:"drain_bps"`
	TargetBps  *float64 `json:"target_bps"`
	RateBps    *float64 `json:"rate_bps"`
}

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

// records holds what a run's records.jsonl contributes to the report: the
// values inside the measured window, for distributions, and the time series
// of the whole run, for plots.
type records struct {
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

// readRecords reads records.jsonl from rd, one JSON object per line. Unknown
// kinds and fields are ignored; lines that are not JSON objects, lack a kind,
// or are of a known kind without a time are counted as malformed and skipped.
// It returns an error only when rd fails.
func readRecords(rd io.Reader, w window) (*records, error) {
	rs := &records{
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
	br := bufio.NewReaderSize(rd, maxLine)
	lineNo := 0
	bad := func() {
		rs.Malformed++
		if rs.FirstMalformed == 0 {
			rs.FirstMalformed = lineNo
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Too long: count it and skip to the end of the line.
			lineNo++
			rs.Lines++
			bad()
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return rs, fmt.Errorf("report: reading records: %w", err)
			}
			continue
		}
		if err != nil && err != io.EOF {
			return rs, fmt.Errorf("report: reading records: %w", err)
		}
		if len(line) > 0 {
			lineNo++
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			rs.Lines++
			var rec record
			if json.Unmarshal(line, &rec) != nil || rec.Kind == "" {
				bad()
			} else if rec.Kind == kindWrite || rec.Kind == kindFrame || rec.Kind == kindSample {
				if rec.T == nil || !finite(*rec.T) {
					bad()
				} else {
					rs.add(&rec, w, ts)
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	if math.IsInf(rs.MaxT, -1) {
		rs.MaxT = 0
	}
	return rs, nil
}

func (rs *records) add(rec *record, w window, ts func(string) *series) {
	t := *rec.T
	rs.MaxT = max(rs.MaxT, t)
	in := w.contains(t)
	keep := func(dst *[]float64, v *float64) {
		if in && v != nil && finite(*v) {
			*dst = append(*dst, *v)
		}
	}
	switch rec.Kind {
	case kindWrite, kindFrame:
		if in {
			if rec.Kind == kindWrite {
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
			if in && v != nil && finite(*v) {
				rs.Parts[name] = append(rs.Parts[name], *v)
			}
		}
	case kindSample:
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

// percentiles summarizes values (sorting them in place).
func percentiles(values []float64) Percentiles {
	s := metrics.Summarize(values)
	return Percentiles{P50: s.P50, P95: s.P95, P99: s.P99}
}

// fillFromRecords sets the distributions r lacks (unknown percentiles, absent
// video distributions) from the records of its measured window, and notes
// each one it set. The runner's values always take precedence. It sorts the
// value slices of rs in place.
func fillFromRecords(r *Run, rs *records) {
	var filled []string
	if !r.SourceDelayMs.Known() && len(rs.SourceDelay) > 0 {
		r.SourceDelayMs = percentiles(rs.SourceDelay)
		filled = append(filled, "source delay")
	}
	if !r.BottleneckQueueMs.Known() && len(rs.Queue) > 0 {
		r.BottleneckQueueMs = percentiles(rs.Queue)
		filled = append(filled, "bottleneck queue")
	}
	if (r.CaptureToReceivedMs == nil || !r.CaptureToReceivedMs.Known()) && len(rs.C2R) > 0 {
		p := percentiles(rs.C2R)
		r.CaptureToReceivedMs = &p
		filled = append(filled, "capture to received")
	}
	if (r.G2GMs == nil || !r.G2GMs.Known()) && len(rs.G2G) > 0 {
		p := percentiles(rs.G2G)
		r.G2GMs = &p
		filled = append(filled, "glass to glass")
	}
	if len(r.PartsMs) == 0 && len(rs.Parts) > 0 {
		r.PartsMs = make(map[string]Percentiles, len(rs.Parts))
		for _, name := range sortedKeys(rs.Parts) {
			r.PartsMs[name] = percentiles(rs.Parts[name])
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
