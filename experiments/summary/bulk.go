package summary

import (
	"fmt"
	"math"

	"replenish/experiments/report"
	"replenish/records"
)

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

// readSendRecords reads a sending process's records file.
func readSendRecords(path string, d *sendData) error {
	var conns []records.Conn
	err := records.ReadFile(path, func(kind string, line []byte) error {
		switch kind {
		case records.KindWrite:
			return records.Append(&d.Writes, line)
		case records.KindRequest:
			return records.Append(&d.Requests, line)
		case records.KindConn:
			return records.Append(&conns, line)
		}
		return nil
	})
	if len(conns) > 0 {
		d.Conn = &conns[len(conns)-1]
	}
	return err
}

// readSinkRecords reads the sink's records file.
func readSinkRecords(path string, d *sendData) error {
	return records.ReadFile(path, func(kind string, line []byte) error { return records.Append(&d.Sink, line) })
}

// summarizeBulk builds the summary and the records of a bulk run.
func summarizeBulk(in Input, d sendData) (report.Run, []records.RunLine) {
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
	r.LinkUtilization = in.linkUtilization()
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
			FormatBps(g1), FormatBps(g2)))
	}
	if len(first) > 0 && len(second) > 0 {
		p1, p2 := pct(first).P50, pct(second).P50
		if p2 > 1.5*p1 && p2-p1 > 10 {
			notes = append(notes, fmt.Sprintf("source delay still growing: p50 %s in the first half of the window, %s in the second",
				FormatMs(p1), FormatMs(p2)))
		}
	}
	return notes
}

// bulkSamples returns the sample lines of a bulk or rr run: the emulator's
// readings with the sink's goodput and the sender's latest drain estimate
// over each interval.
func bulkSamples(in Input, d sendData) []records.RunLine {
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
func summarizeRR(in Input, d sendData) (report.Run, []records.RunLine) {
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
			FormatMs(l.P50), FormatMs(l.P95), FormatMs(l.P99), n, float64(n)/in.Spec.Duration.Seconds()))
	}
	if len(header) > 0 {
		r.Notes = append(r.Notes, "source delay is the body's; the header's p50 is "+FormatMs(pct(header).P50))
	}
	r.Notes = append(r.Notes, boundNotes("bodies", r.Writes, bounds, unknown)...)
	r.Notes = append(r.Notes, sharedNote("bodies", sharedStamps(tl, d.Writes, records.PartBody), r.Writes)...)
	recs = append(recs, bulkSamples(in, sendData{})...)
	sortRecords(recs)
	return r, recs
}
