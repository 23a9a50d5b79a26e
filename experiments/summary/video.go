package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"replenish/experiments/report"
	"replenish/metrics"
	"replenish/records"
	"replenish/transport"
)

// videoData is what a video run's sender and viewer recorded.
type videoData struct {
	Frames    []records.Frame
	Conns     []records.Conn
	Received  []records.ViewerFrame
	Displayed []records.ViewerFrame
	Lost      []records.ViewerFrame // "lost" lines: frames that never arrived whole
}

// readSenderRecords reads cmd/sender's records file.
func readSenderRecords(path string, v *videoData) error {
	return records.ReadFile(path, func(kind string, line []byte) error {
		switch kind {
		case records.KindFrame:
			return records.Append(&v.Frames, line)
		case records.KindConn:
			return records.Append(&v.Conns, line)
		}
		return nil
	})
}

// readViewerRecords reads cmd/viewer's records file.
func readViewerRecords(path string, v *videoData) error {
	return records.ReadFile(path, func(kind string, line []byte) error {
		switch kind {
		case records.KindReceived:
			return records.Append(&v.Received, line)
		case records.KindDisplayed:
			return records.Append(&v.Displayed, line)
		case records.KindLost:
			return records.Append(&v.Lost, line)
		}
		return nil
	})
}

// joinedFrame is a sent frame with what the viewer saw of it.
type joinedFrame struct {
	records.Frame
	ReceivedUs  int64    // 0: never received
	G2GMs       *float64 // glass to glass from the first page that displayed it; nil if none did
	stampShared bool     // the next frame has the same departure time
	viewerOnly  bool     // known from the viewer's records alone
}

// Latency parts of a frame, in the order of its life.
const (
	partWait        = "wait"         // capture to encode start
	partEncode      = "encode"       // encode start to end
	partSourceDelay = "source_delay" // write start to last byte left the host
	partNetwork     = "network"      // last byte left the host to received complete
)

// parts returns the frame's latency parts in ms; a part whose stamps are
// missing is absent.
func (f joinedFrame) parts() map[string]float64 {
	p := map[string]float64{}
	if f.EncodeStartUs > 0 && f.CaptureUs > 0 {
		p[partWait] = ms(f.EncodeStartUs - f.CaptureUs)
	}
	if f.EncodeEndUs > 0 && f.EncodeStartUs > 0 {
		p[partEncode] = ms(f.EncodeEndUs - f.EncodeStartUs)
	}
	if f.LeftHostUs > 0 {
		p[partSourceDelay] = ms(f.LeftHostUs - f.WriteStartUs)
		if f.ReceivedUs > 0 {
			p[partNetwork] = ms(f.ReceivedUs - f.LeftHostUs)
		}
	}
	return p
}

// joinFrames joins the sender's frames with the viewer's records by RTP
// timestamp (received) and by the viewer's stream and frame ids
// (displayed). Frames keep the sender's order, followed by the frames only
// the viewer recorded. It also returns how many displayed frames had a
// misread timestamp.
func joinFrames(v videoData) (frames []joinedFrame, misreads int) {
	type key struct{ stream, frame uint32 }
	g2g := map[key]*float64{}
	for _, d := range v.Displayed {
		if d.Misread {
			misreads++
			continue
		}
		k := key{d.Stream, d.Frame}
		if _, seen := g2g[k]; !seen && d.G2GMs != nil {
			g2g[k] = d.G2GMs
		}
	}
	recv := make(map[uint32]records.ViewerFrame, len(v.Received))
	for _, r := range v.Received {
		if _, dup := recv[r.RTPTimestamp]; !dup {
			recv[r.RTPTimestamp] = r
		}
	}
	frames = make([]joinedFrame, len(v.Frames))
	for i, f := range v.Frames {
		j := joinedFrame{Frame: f}
		if r, ok := recv[f.RTPTimestamp]; ok {
			j.ReceivedUs = r.ReceivedUs
			j.G2GMs = g2g[key{r.Stream, r.Frame}]
		}
		frames[i] = j
	}
	for i := 0; i+1 < len(frames); i++ {
		if lh := frames[i].LeftHostUs; lh > 0 && lh == frames[i+1].LeftHostUs {
			frames[i].stampShared = true
		}
	}
	// Frames the viewer received but the sender has no record of (their
	// departure stamp never came): what the viewer knows of them.
	sent := make(map[uint32]bool, len(v.Frames))
	for _, f := range v.Frames {
		sent[f.RTPTimestamp] = true
	}
	for _, r := range v.Received {
		if sent[r.RTPTimestamp] {
			continue
		}
		sent[r.RTPTimestamp] = true
		frames = append(frames, joinedFrame{
			Frame:      records.Frame{RTPTimestamp: r.RTPTimestamp, CaptureUs: r.CaptureUs, Bytes: r.Bytes, Width: r.Width, Height: r.Height},
			ReceivedUs: r.ReceivedUs, G2GMs: g2g[key{r.Stream, r.Frame}], viewerOnly: true,
		})
	}
	return frames, misreads
}

// summarizeVideo builds the summary and the records of a video run.
func summarizeVideo(in Input, v videoData) (report.Run, []records.RunLine) {
	r := baseRun(in)
	tl := in.TL
	frames, misreads := joinFrames(v)
	// When the sender stopped: frames without a departure or an arrival
	// by then count with the time they had waited, a lower bound.
	var endUs int64
	for _, c := range v.Conns {
		endUs = max(endUs, c.EndUs)
	}
	t := videoTally{endUs: endUs, parts: map[string][]float64{}, sizes: map[[2]int]int{}}
	if in.Spec.Mode.Policy == transport.Expire {
		t.expireUs = in.Spec.Mode.Expire.Microseconds()
	}
	recs := make([]records.RunLine, 0, len(frames)+len(in.Samples))
	for _, f := range frames {
		rec := frameLine(tl, f)
		recs = append(recs, rec)
		if tl.in(f.CaptureUs) {
			t.add(f, rec)
		}
	}
	t.fill(&r)
	received(&r, in, v.Received)
	lossFields(&r, in, v)
	sweepFields(&r, in, frames, v.Received, t.c2r, t.c2rAt)
	pageFields(&r, in, v.Displayed)
	rs := make([]retransSample, 0, len(v.Frames))
	for _, f := range v.Frames {
		if f.WriteStartUs > 0 { // a frame whose record was lost has none
			rs = append(rs, retransSample{f.WriteStartUs, f.Retransmits})
		}
	}
	r.Retransmits = retransIn(tl, rs)
	r.Notes = append(r.Notes, t.notes(r.Frames, misreads)...)
	r.Notes = append(r.Notes, connNotes(tl, v)...)
	if in.Spec.Browser && (r.G2GMs == nil || math.IsNaN(r.G2GMs.P50)) {
		r.Notes = append(r.Notes, "no frame displayed in the browser had a readable timestamp")
	}
	recs = append(recs, videoSamples(in, frames, v.Received)...)
	sortRecords(recs)
	return r, recs
}

// frameLine returns the records.jsonl line of a frame.
func frameLine(tl Timeline, f joinedFrame) records.RunLine {
	p := f.parts()
	rec := records.RunLine{Kind: records.KindFrame, T: tl.sec(f.CaptureUs), Bytes: f.Bytes, Width: f.Width, Height: f.Height, Key: f.Key, PartsMs: p}
	if sd, ok := p[partSourceDelay]; ok {
		rec.SourceDelayMs = ptr(sd)
	}
	if f.ReceivedUs > 0 {
		rec.CaptureToReceivedMs = ptr(ms(f.ReceivedUs - f.CaptureUs))
	}
	rec.G2GMs = f.G2GMs
	return rec
}

// videoTally gathers the frames captured in the measured window.
type videoTally struct {
	endUs int64 // when the sender stopped; 0 if unknown
	// expireUs is the expiry of QUIC's expire mode in µs, 0 in other
	// modes: a frame that never left and was never received, written more
	// than this before the sender stopped, was reset or dropped.
	expireUs int64
	expired  int // such frames

	frames                 int
	delays, c2r, g2g       []float64
	c2rAt                  []int64 // each c2r value's frame's capture, µs since the epoch
	parts                  map[string][]float64
	sizes                  map[[2]int]int
	lost, unstamped        int // not received; no departure time
	shared, early, sdBound int // shared stamp; arrived before departing; source delay a lower bound
}

// add counts the frame f, whose records.jsonl line is rec.
func (t *videoTally) add(f joinedFrame, rec records.RunLine) {
	t.frames++
	if f.Width > 0 && f.Height > 0 {
		t.sizes[[2]int{f.Width, f.Height}]++
	}
	if f.stampShared {
		t.shared++
	}
	if n, ok := rec.PartsMs[partNetwork]; ok && n < 0 {
		t.early++
	}
	// A frame the sender gave up tracking has no write time; it was
	// written after its encoding ended.
	written := f.WriteStartUs
	if written == 0 {
		written = f.EncodeEndUs
	}
	if t.expireUs > 0 && rec.SourceDelayMs == nil && f.ReceivedUs == 0 && written > 0 && t.endUs > written+t.expireUs {
		t.expired++ // a loss, not a delay: frames_lost and freezes count it
		return
	}
	switch {
	case rec.SourceDelayMs != nil:
		t.delays = append(t.delays, *rec.SourceDelayMs)
	case t.endUs > 0 && written > 0 && t.endUs > written:
		t.delays = append(t.delays, ms(t.endUs-written))
		t.sdBound++
	default:
		t.unstamped++
	}
	switch {
	case rec.CaptureToReceivedMs != nil:
		t.c2r = append(t.c2r, *rec.CaptureToReceivedMs)
		t.c2rAt = append(t.c2rAt, f.CaptureUs)
	case t.endUs > f.CaptureUs:
		t.c2r = append(t.c2r, ms(t.endUs-f.CaptureUs))
		t.c2rAt = append(t.c2rAt, f.CaptureUs)
		t.lost++
	default:
		t.lost++
	}
	if f.G2GMs != nil {
		t.g2g = append(t.g2g, *f.G2GMs)
	}
	for name, val := range rec.PartsMs {
		t.parts[name] = append(t.parts[name], val)
	}
}

// fill sets r's frame count, distributions and resolution.
func (t *videoTally) fill(r *report.Run) {
	r.Frames = t.frames
	r.SourceDelayMs = pct(t.delays)
	if len(t.c2r) > 0 {
		p := pct(t.c2r)
		r.CaptureToReceivedMs = &p
	}
	if len(t.g2g) > 0 {
		p := pct(t.g2g)
		r.G2GMs = &p
	}
	if len(t.parts) > 0 {
		r.PartsMs = map[string]metrics.Percentiles{}
		for name, vals := range t.parts {
			r.PartsMs[name] = pct(vals)
		}
	}
	r.Width, r.Height = commonSize(t.sizes)
}

// notes explains the window's frames that lack a number or whose number is
// a bound, of n frames.
func (t *videoTally) notes(n, misreads int) []string {
	var notes []string
	if t.expired > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d frames captured in the window expired (their stream was reset, or they were dropped unsent) "+
			"and are left out of source delay and capture to received; frames_lost, freezes and expiry count them", t.expired, n))
	}
	if t.lost > 0 {
		what := ""
		if t.endUs > 0 {
			what = "; their capture to received counts as the time they had waited, so its percentiles are lower bounds"
		}
		notes = append(notes, fmt.Sprintf("%d of %d frames captured in the window were not received complete when the run ended%s", t.lost, n, what))
	}
	notes = append(notes, boundNotes("frames", n, t.sdBound, t.unstamped)...)
	notes = append(notes, sharedNote("frames", t.shared, n)...)
	if t.early > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d frames in the window arrived before their recorded departure (a shared departure time)", t.early, n))
	}
	if misreads > 0 {
		notes = append(notes, fmt.Sprintf("%d displayed frames had an unreadable timestamp and are left out of glass to glass", misreads))
	}
	return notes
}

// received sets the media delivered: frames received complete inside the
// window, their goodput, bitrate and rate.
func received(r *report.Run, in Input, recv []records.ViewerFrame) {
	var bytes, n int
	for _, x := range recv {
		if in.TL.in(x.ReceivedUs) {
			bytes += x.Bytes
			n++
		}
	}
	secs := in.Spec.Duration.Seconds()
	r.GoodputBps = float64(bytes) * 8 / secs
	r.BitrateBps = r.GoodputBps
	fps := float64(n) / secs
	r.FPS = &fps
	if mr := in.meanRate(); mr > 0 {
		r.Utilization = r.GoodputBps / mr
	}
	r.LinkUtilization = in.linkUtilization()
}

// connNotes notes frames written without a record and reconnections.
func connNotes(tl Timeline, v videoData) []string {
	var notes []string
	var written uint64
	for _, c := range v.Conns {
		written += c.Frames
	}
	// Frames leave in order: if the last frame recorded was captured
	// before the window ended, the frames written after it, which have no
	// record, may include some of the window's.
	var lastCapture int64
	for _, f := range v.Frames {
		lastCapture = max(lastCapture, f.CaptureUs)
	}
	if _, to := tl.window(); written > uint64(len(v.Frames)) && lastCapture < to {
		notes = append(notes, fmt.Sprintf("%d frames written have no record from the sender (no departure stamp came for them before it stopped); "+
			"some were captured in the window, so the source delay percentiles leave them out; capture to received counts those the viewer received",
			written-uint64(len(v.Frames))))
	}
	if len(v.Conns) > 1 {
		notes = append(notes, fmt.Sprintf("the sender connected %d times", len(v.Conns)))
	}
	return notes
}

// commonSize returns the most common frame size, the larger on a tie.
func commonSize(sizes map[[2]int]int) (w, h int) {
	best := -1
	for sz, n := range sizes {
		if n > best || (n == best && sz[0]*sz[1] > w*h) {
			best, w, h = n, sz[0], sz[1]
		}
	}
	return w, h
}

// videoSamples returns the sample lines of a video run: the emulator's
// readings with, over each interval, the media goodput received, the
// bitrate written and the sender's latest drain estimate and target.
func videoSamples(in Input, frames []joinedFrame, received []records.ViewerFrame) []records.RunLine {
	byWrite := slices.Clone(frames)
	slices.SortFunc(byWrite, func(a, b joinedFrame) int { return cmp.Compare(a.WriteStartUs, b.WriteStartUs) })
	byRecv := slices.Clone(received)
	slices.SortFunc(byRecv, func(a, b records.ViewerFrame) int { return cmp.Compare(a.ReceivedUs, b.ReceivedUs) })
	recs := make([]records.RunLine, 0, len(in.Samples))
	t0 := in.TL.T0.UnixMicro()
	prev := t0
	fi, ri := 0, 0
	for _, s := range in.Samples {
		at := t0 + s.At.Microseconds()
		secs := float64(at-prev) / 1e6
		rec := records.RunLine{Kind: records.KindSample, T: s.At.Seconds(), QueueMs: ptr(s.QueueMs), RateBps: ptr(s.RateBps), DeliveredBps: ptr(s.Delivered)}
		var written, got int
		var drain, target int64
		for fi < len(byWrite) && byWrite[fi].WriteStartUs <= at {
			if byWrite[fi].WriteStartUs > prev {
				written += byWrite[fi].Bytes
			}
			drain, target = byWrite[fi].DrainBps, byWrite[fi].TargetBps
			fi++
		}
		for ri < len(byRecv) && byRecv[ri].ReceivedUs <= at {
			if byRecv[ri].ReceivedUs > prev {
				got += byRecv[ri].Bytes
			}
			ri++
		}
		if secs > 0 {
			rec.GoodputBps = ptr(float64(got) * 8 / secs)
			rec.BitrateBps = ptr(float64(written) * 8 / secs)
		}
		if drain > 0 {
			rec.DrainBps = ptr(float64(drain))
		}
		if target > 0 {
			rec.TargetBps = ptr(float64(target))
		}
		recs = append(recs, rec)
		prev = at
	}
	return recs
}
