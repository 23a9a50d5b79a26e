package summary

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/experiments/scenario"
	"replenish/rate"
	"replenish/records"
)

func g2g(v float64) *float64 { return &v }

// videoRecords is a synthetic 30 fps video run of 10 s: frame i captured at
// i/30 s; encode start 1 ms later, end 4 ms later; written at 5 ms; left
// the host at 15 ms (the first 30 frames, in the warm-up, at 515 ms);
// received 100 ms after capture. Every tenth frame is displayed with a
// glass-to-glass of 150 ms, one of them misread. Frame 150 never arrives.
func videoRecords() videoData {
	var v videoData
	for i := range 300 {
		capture := time.Duration(i) * time.Second / 30
		left := capture + 15*time.Millisecond
		if i < 30 {
			left += 500 * time.Millisecond
		}
		w, h := 640, 360
		if i%3 == 0 {
			w, h = 320, 180
		}
		v.Frames = append(v.Frames, records.Frame{
			ID: uint64(i), RTPTimestamp: uint32(1000 + 3000*i), CaptureUs: at(capture),
			EncodeStartUs: at(capture + time.Millisecond), EncodeEndUs: at(capture + 4*time.Millisecond),
			WriteStartUs: at(capture + 5*time.Millisecond), WriteEndUs: at(capture + 5*time.Millisecond), LeftHostUs: at(left),
			Bytes: 5000, Width: w, Height: h, Key: i == 0, TargetBps: 1_500_000, DrainBps: 1_800_000,
			Retransmits: i / 30, // one a second: 8 in the window (2 s to 10 s)
		})
		if i == 150 {
			continue
		}
		// The viewer numbers frames its own way.
		v.Received = append(v.Received, records.ViewerFrame{Kind: records.KindReceived, Stream: 1, Frame: uint32(i + 7), RTPTimestamp: uint32(1000 + 3000*i),
			CaptureUs: at(capture), ReceivedUs: at(capture + 100*time.Millisecond), Bytes: 5000})
		if i%10 == 0 {
			d := records.ViewerFrame{Kind: records.KindDisplayed, Stream: 1, Frame: uint32(i + 7), Client: 1, G2GMs: g2g(150)}
			if i == 100 {
				d.Misread, d.G2GMs = true, nil
			}
			v.Displayed = append(v.Displayed, d)
		}
	}
	v.Conns = []records.Conn{{Retransmits: 99, Frames: 300}} // the whole connection's
	return v
}

func TestJoinFrames(t *testing.T) {
	frames, misreads := joinFrames(videoRecords())
	if len(frames) != 300 || misreads != 1 {
		t.Fatalf("%d frames, %d misreads; want 300 and 1", len(frames), misreads)
	}
	tests := []struct {
		name     string
		i        int
		received bool
		g2g      float64 // NaN: none
	}{
		{"displayed", 10, true, 150},
		{"received only", 11, true, math.NaN()},
		{"misread", 100, true, math.NaN()},
		{"never received", 150, false, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := frames[tt.i]
			if (f.ReceivedUs != 0) != tt.received {
				t.Errorf("received %d", f.ReceivedUs)
			}
			if math.IsNaN(tt.g2g) != (f.G2GMs == nil) || (f.G2GMs != nil && *f.G2GMs != tt.g2g) {
				t.Errorf("g2g %v, want %v", f.G2GMs, tt.g2g)
			}
		})
	}
	p := frames[40].parts()
	want := map[string]float64{partWait: 1, partEncode: 3, partSourceDelay: 10, partNetwork: 85}
	for k, v := range want {
		if !near(p[k], v, 1e-9) {
			t.Errorf("part %s = %v, want %v", k, p[k], v)
		}
	}
	if _, ok := frames[150].parts()[partNetwork]; ok {
		t.Error("a frame never received has a network part")
	}
}

func TestSummarizeVideo(t *testing.T) {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
	in.Spec.Path.Rate = rate.Mbps
	in.Samples = []Sample{{At: time.Second, RateBps: 1e6}, {At: 5 * time.Second, RateBps: 1e6, QueueMs: 12}}
	r, recs := summarizeVideo(in, videoRecords())

	// The window [2 s, 10 s] holds the captures of frames 60 to 299: 240.
	if r.Frames != 240 {
		t.Errorf("frames %d, want 240", r.Frames)
	}
	if !near(r.SourceDelayMs.P50, 10, 1e-9) || !near(r.SourceDelayMs.P99, 10, 1e-9) {
		t.Errorf("source delay %+v, want 10 ms (the warm-up's 510 ms left out)", r.SourceDelayMs)
	}
	if r.CaptureToReceivedMs == nil || !near(r.CaptureToReceivedMs.P50, 100, 1e-9) {
		t.Errorf("capture to received %+v, want 100 ms", r.CaptureToReceivedMs)
	}
	if r.G2GMs == nil || r.G2GMs.P50 != 150 {
		t.Errorf("g2g %+v, want 150 ms", r.G2GMs)
	}
	for name, want := range map[string]float64{partWait: 1, partEncode: 3, partSourceDelay: 10, partNetwork: 85} {
		if p, ok := r.PartsMs[name]; !ok || !near(p.P50, want, 1e-9) {
			t.Errorf("part %s %+v, want p50 %v", name, p, want)
		}
	}
	// Received in the window: frames whose receive time (capture + 100 ms)
	// is in [2 s, 10 s], 57 to 297, less frame 150: 240 frames of 5000 B
	// over 8 s.
	wantGoodput := 240.0 * 5000 * 8 / 8
	if !near(r.GoodputBps, wantGoodput, 1) || r.BitrateBps != r.GoodputBps || !near(r.Utilization, wantGoodput/1e6, 1e-9) {
		t.Errorf("goodput %v, bitrate %v, utilization %v; want %v", r.GoodputBps, r.BitrateBps, r.Utilization, wantGoodput)
	}
	if r.FPS == nil || !near(*r.FPS, 240.0/8, 1e-9) {
		t.Errorf("fps %v, want %v", *r.FPS, 240.0/8)
	}
	if r.Width != 640 || r.Height != 360 {
		t.Errorf("resolution %dx%d, want the most common, 640x360", r.Width, r.Height)
	}
	if r.Retransmits != 8 {
		t.Errorf("retransmits %d, want 8 (those in the window)", r.Retransmits)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"1 of 240 frames captured in the window were not received", "1 displayed frames had an unreadable timestamp"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	frames, samples := 0, 0
	for _, rec := range recs {
		switch rec.Kind {
		case records.KindFrame:
			frames++
		case records.KindSample:
			samples++
		}
	}
	if frames != 300 || samples != 2 {
		t.Errorf("%d frame and %d sample records, want 300 and 2", frames, samples)
	}
}

func TestVideoSamples(t *testing.T) {
	in := bulkInput()
	in.Samples = []Sample{{At: time.Second}, {At: 2 * time.Second}}
	v := videoRecords()
	frames, _ := joinFrames(v)
	recs := videoSamples(in, frames, v.Received)
	if len(recs) != 2 {
		t.Fatalf("%d samples", len(recs))
	}
	// In (1 s, 2 s]: 30 frames written (frames 30..59, written at +5 ms)
	// and 30 received (frames 28..57 at +100 ms).
	s := recs[1]
	if s.BitrateBps == nil || !near(*s.BitrateBps, 30*5000*8, 1) || !near(*s.GoodputBps, 30*5000*8, 1) {
		t.Errorf("sample %+v", s)
	}
	if *s.DrainBps != 1.8e6 || *s.TargetBps != 1.5e6 {
		t.Errorf("drain %v, target %v", *s.DrainBps, *s.TargetBps)
	}
}

func TestVideoPendingNote(t *testing.T) {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
	v := videoRecords()
	// The sender recorded frames 0 to 199 only (the last captured at
	// 6.6 s, before the window's end); the viewer received them all.
	v.Frames = v.Frames[:200]
	r, _ := summarizeVideo(in, v)
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"100 frames written have no record from the sender",
		"100 of 240 frames in the window have no departure time and are left out",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// The viewer's frames still count for capture to received: 239 of the
	// window's 240 (frame 150 never arrived).
	if r.Frames != 240 || r.CaptureToReceivedMs == nil || r.CaptureToReceivedMs.P99 != 100 {
		t.Errorf("frames %d, capture to received %+v; want 240 frames at 100 ms", r.Frames, r.CaptureToReceivedMs)
	}
	if p := r.PartsMs[partNetwork]; !near(p.P50, 85, 1e-9) {
		t.Errorf("network part %+v, want 85 ms from the sender's frames", p)
	}
}

func TestReadVideoRecords(t *testing.T) {
	dir := t.TempDir()
	sender := `{"kind":"frame","id":3,"rtp_ts":90000,"capture_us":10,"encode_start_us":11,"encode_end_us":12,"write_start_us":13,"write_end_us":14,"left_host_us":20,"bytes":100,"width":160,"height":90,"key":true,"target_bps":1,"drain_bps":2}
{"kind":"conn","end_us":30,"retransmits":2,"frames":1}
`
	viewer := `{"kind":"received","stream":1,"frame":1,"name":"x","rtp_ts":90000,"capture_us":10,"received_us":50,"bytes":100}
{"kind":"displayed","stream":1,"frame":1,"client":1,"displayed_us":60,"g2g_ms":0.05}
`
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(sender), 0o644)
	os.WriteFile(filepath.Join(dir, "v.jsonl"), []byte(viewer), 0o644)
	var v videoData
	if err := readSenderRecords(filepath.Join(dir, "s.jsonl"), &v); err != nil {
		t.Fatal(err)
	}
	if err := readViewerRecords(filepath.Join(dir, "v.jsonl"), &v); err != nil {
		t.Fatal(err)
	}
	if err := readViewerRecords(filepath.Join(dir, "missing.jsonl"), &v); err != nil {
		t.Errorf("a missing file: %v", err)
	}
	if len(v.Frames) != 1 || v.Frames[0].LeftHostUs != 20 || !v.Frames[0].Key || len(v.Conns) != 1 || v.Conns[0].Retransmits != 2 {
		t.Errorf("sender %+v %+v", v.Frames, v.Conns)
	}
	if len(v.Received) != 1 || v.Received[0].ReceivedUs != 50 || len(v.Displayed) != 1 || *v.Displayed[0].G2GMs != 0.05 {
		t.Errorf("viewer %+v %+v", v.Received, v.Displayed)
	}
}

func TestVideoLowerBounds(t *testing.T) {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
	v := videoRecords()
	v.Conns[0].EndUs = at(12 * time.Second)
	// From frame 200 (6.67 s) on, nothing left the host or arrived; from
	// frame 250 on the sender gave up tracking the frames (no write time).
	keep := v.Received[:0]
	for _, x := range v.Received {
		if x.CaptureUs < at(200*time.Second/30) {
			keep = append(keep, x)
		}
	}
	v.Received = keep
	for i := 200; i < 300; i++ {
		v.Frames[i].LeftHostUs = 0
		if i >= 250 {
			v.Frames[i].WriteStartUs, v.Frames[i].WriteEndUs = 0, 0
		}
	}
	r, _ := summarizeVideo(in, v)
	// 240 frames in the window, 140 measured at 10 ms and 100 lower
	// bounds of 2.2 s to 5.3 s: the median is still 10 ms, p95 a bound.
	if !near(r.SourceDelayMs.P50, 10, 1e-9) || r.SourceDelayMs.P95 < 2000 {
		t.Errorf("source delay %+v", r.SourceDelayMs)
	}
	if r.CaptureToReceivedMs == nil || r.CaptureToReceivedMs.P95 < 2000 {
		t.Errorf("capture to received %+v, want lower bounds in the tail", r.CaptureToReceivedMs)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"100 of 240 frames in the window had not left the host when the run ended",
		"101 of 240 frames captured in the window were not received complete when the run ended; their capture to received counts", // frame 150 too
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// TestBrowserNote checks that a run with a browser whose page read no
// timestamp says so, and one without a browser does not.
func TestBrowserNote(t *testing.T) {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
	v := videoRecords()
	v.Displayed = nil
	const note = "no frame displayed in the browser had a readable timestamp"
	for _, browser := range []bool{false, true} {
		in.Spec.Browser = browser
		r, _ := summarizeVideo(in, v)
		if got := slices.Contains(r.Notes, note); got != browser {
			t.Errorf("browser %v: notes %q", browser, r.Notes)
		}
	}
}
