package summary

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/rate"
	"replenish/records"
)

// videoInput is bulkInput's run as video at 1 Mb/s: a 2 s warm-up and an
// 8 s window, 40 ms RTT.
func videoInput() Input {
	in := bulkInput()
	in.Spec.Workload = scenario.Workload{Kind: scenario.KindVideo}
	in.Spec.Path.Rate = rate.Mbps
	return in
}

func TestSweepFieldsOfVideo(t *testing.T) {
	in := videoInput()
	v := videoRecords()
	// The estimate: path-limited at 0.9 and 1.1 times the rate, alternately;
	// every fifth frame app-limited at half the rate, left out.
	for i := range v.Frames {
		d := &records.Drain{Source: "measured", RateBps: 900_000}
		if i%2 == 1 {
			d.RateBps = 1_100_000
		}
		if i%5 == 0 {
			d.RateBps, d.AppLimited = 500_000, true
		}
		v.Frames[i].Drain = d
	}
	r, _ := summarizeVideo(in, v)
	// Frames 60 to 299: 80 of them (multiples of 3) at 320x180.
	if got := r.RungFraction; len(got) != 2 || got["320x180"] != 0.3333 || got["640x360"] != 0.6667 {
		t.Errorf("rung fraction %v, want 1/3 at 320x180 and 2/3 at 640x360", got)
	}
	// 20 ms one way + 5000 B at 1 Mb/s + a 3 ms encode.
	if r.FloorMs == nil || !near(*r.FloorMs, 20+40+3, 1e-9) {
		t.Errorf("floor %v ms, want 63", r.FloorMs)
	}
	// With 10 ms of jitter, its median draw, 5 ms, is the path's too.
	in.Spec.Path.Jitter = 10 * time.Millisecond
	if j, _ := summarizeVideo(in, v); j.FloorMs == nil || !near(*j.FloorMs, 20+5+40+3, 1e-9) {
		t.Errorf("floor %v ms with 10 ms of jitter, want 68", j.FloorMs)
	}
	in.Spec.Path.Jitter = 0
	// Every frame received 100 ms after its capture, on a path without
	// steps: 37 ms over the floor, each.
	if o := r.OverFloorMs; o == nil || !near(o.P50, 37, 1e-9) || !near(o.P95, 37, 1e-9) {
		t.Errorf("over the floor %+v, want 37 ms", o)
	}
	if d := r.DrainRatio; d == nil || d.N != 192 || !near(d.P50, 0.9, 1e-9) || !near(d.P95, 1.1, 1e-9) {
		t.Errorf("drain ratio %+v, want 0.9 and 1.1 over the 192 path-limited frames", d)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "drain_ratio") }) {
		t.Errorf("notes %q: none says the drain ratio is against the IP rate", r.Notes)
	}
	// With the bytes written known: 4500 B a frame, 240 frames in the 8 s
	// window, 1.08 Mb/s, where the link delivered 1.2 Mb/s of IP packets.
	// The estimate is then against 0.9 of the rate.
	for i := range v.Frames {
		v.Frames[i].Written = 4500
	}
	in.Final.Forward.Total.Bytes, in.Final.Forward.Total.Span = 1_200_000, 8*time.Second
	r, _ = summarizeVideo(in, v)
	if d := r.DrainRatio; d == nil || d.N != 192 || !near(d.P50, 1, 1e-4) || !near(d.P95, 1.1/0.9, 1e-4) {
		t.Errorf("drain ratio %+v, want 1 and 1.22 against the payload's share of the rate", d)
	}
	floorNote := func(r report.Run) bool {
		return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "floor_ms") })
	}
	if !near(*r.FloorMs, 63, 1e-9) || floorNote(r) {
		t.Errorf("floor %v ms (notes %q), want 63: 4500 B written a frame are 5000 B of packets", *r.FloorMs, r.Notes)
	}
	// A frame's serialization counts its packets' headers: 5400 B
	// written a frame (1.296 Mb/s) where the link delivered 1.6 Mb/s are
	// 6667 B of packets, 53.3 ms at 1 Mb/s.
	for i := range v.Frames {
		v.Frames[i].Written = 5400
	}
	in.Final.Forward.Total.Bytes = 1_600_000
	if w, _ := summarizeVideo(in, v); !near(*w.FloorMs, 20+53.333+3, 1e-3) || floorNote(w) {
		t.Errorf("floor %v ms (notes %q), want 76.33 with the headers", *w.FloorMs, w.Notes)
	}
	// Beside a competing flow the link's bytes are not all the stream's:
	// the bytes written, 43.2 ms, with a note.
	in.Spec.Cross = 1
	if w, _ := summarizeVideo(in, v); !near(*w.FloorMs, 20+43.2+3, 1e-9) || !floorNote(w) {
		t.Errorf("floor %v ms (notes %q) beside a competing flow, want 66.2 and a note", *w.FloorMs, w.Notes)
	}
	in.Spec.CrossFor = in.Spec.Warmup // they ended before the window: the headers again
	if w, _ := summarizeVideo(in, v); !near(*w.FloorMs, 20+53.333+3, 1e-3) || floorNote(w) {
		t.Errorf("floor %v ms (notes %q) after the competing flow ended, want 76.33", *w.FloorMs, w.Notes)
	}
	in.Spec.Cross, in.Spec.CrossFor = 0, 0
	if r.IdleFraction != nil || r.RecoveryS != nil {
		t.Errorf("idle fraction %v and recoveries %v without idle spans or a schedule", r.IdleFraction, r.RecoveryS)
	}
	if r.Freezes == nil || r.Freezes.Count != 0 || *r.FramesLost != 0 || *r.Undecodable != 0 || r.Expiry != nil {
		t.Errorf("freezes %+v, lost %v, undecodable %v, expiry %+v; want none", r.Freezes, r.FramesLost, r.Undecodable, r.Expiry)
	}
}

func TestWaitSpans(t *testing.T) {
	// Frame 0 waited from its capture; frame 1 was captured 100 ms after
	// frame 0 with two frames skipped in between, so a raw frame waited
	// from a third of the way.
	frames := []joinedFrame{
		{Frame: records.Frame{CaptureUs: at(0), EncodeStartUs: at(5 * time.Millisecond)}},
		{Frame: records.Frame{CaptureUs: at(100 * time.Millisecond), EncodeStartUs: at(110 * time.Millisecond), Skipped: 2}},
		{Frame: records.Frame{CaptureUs: at(120 * time.Millisecond)}, viewerOnly: true},
	}
	got := waitSpans(frames)
	want := [][2]int64{{at(0), at(5 * time.Millisecond)}, {at(0) + 100000/3, at(110 * time.Millisecond)}}
	if !slices.Equal(got, want) {
		t.Errorf("wait spans %v, want %v", got, want)
	}
	if got := merge([][2]int64{{5, 9}, {1, 3}, {2, 4}, {9, 10}, {7, 7}}); !slices.Equal(got, [][2]int64{{1, 4}, {5, 10}}) {
		t.Errorf("merge = %v", got)
	}
	if got := intersect([][2]int64{{0, 10}, {20, 30}}, [][2]int64{{5, 25}, {28, 40}}); !slices.Equal(got, [][2]int64{{5, 10}, {20, 25}, {28, 30}}) {
		t.Errorf("intersect = %v", got)
	}
	if got := clip([][2]int64{{0, 10}, {20, 30}, {40, 50}}, 5, 25); !slices.Equal(got, [][2]int64{{5, 10}, {20, 25}}) {
		t.Errorf("clip = %v", got)
	}
}

func TestIdleFraction(t *testing.T) {
	in := videoInput()
	frames, _ := joinFrames(videoRecords()) // each waits 1 ms, from its capture to its encode
	if f, note := idleFraction(in, frames); f != nil || note != "" {
		t.Errorf("without idle spans: %v, %q", f, note)
	}
	// Idle from 0 to 6 s: the window's first 4 s, with 120 frames
	// waiting 1 ms each, over an 8 s window.
	var log IdleLog
	log.Add([]emu.IdleSpan{{From: t0, To: t0.Add(6 * time.Second)}}, 0)
	in.Idle = log
	if f, _ := idleFraction(in, frames); f == nil || !near(*f, 0.120/8, 1e-9) {
		t.Errorf("idle fraction %v, want %v", f, 0.120/8)
	}
	in.Idle.Lost = 1
	if f, note := idleFraction(in, frames); f != nil || note == "" {
		t.Errorf("with lost spans: %v, %q; want unknown, with a note", f, note)
	}
}

func TestFreezesAndLosses(t *testing.T) {
	in := videoInput()
	v := videoRecords()
	// Frames 200 to 215 never arrive: a gap of 17 frame intervals; frames
	// 250 to 259 arrive undecodable, a gap of 11 intervals; the last 20
	// frames never arrive, a gap that runs to the window's end. The viewer
	// found 16 frames lost in the window, 3 before.
	var recv []records.ViewerFrame
	for _, x := range v.Received {
		i := (int(x.RTPTimestamp) - 1000) / 3000
		switch {
		case i >= 200 && i <= 215, i >= 280:
			continue
		case i >= 250 && i <= 259:
			x.Undecodable = true
		}
		recv = append(recv, x)
	}
	v.Received = recv
	v.Lost = []records.ViewerFrame{
		{Kind: records.KindLost, ReceivedUs: at(time.Second), LostFrames: 3},
		{Kind: records.KindLost, ReceivedUs: at(7 * time.Second), LostFrames: 16},
	}
	in.Spec.Mode = mustMode("expire=100ms")
	v.Conns = []records.Conn{{BytesWritten: 100000, ExpiredDropped: 2, ExpiredReset: 3, BytesReset: 5000}, {BytesWritten: 100000, BytesReset: 5000}}
	r, _ := summarizeVideo(in, v)
	interval := 1000.0 / 30
	// Frame 279 arrives at 9.4 s: 0.6 s to the window's end.
	wantTotal := 17*interval + 11*interval + 600
	if f := r.Freezes; f == nil || f.Count != 3 || !near(f.TotalMs, wantTotal, 0.01) || f.MaxMs == nil || !near(*f.MaxMs, 600, 0.01) {
		t.Errorf("freezes %+v, want 3 of %.1f ms in all, the longest 600 ms", f, wantTotal)
	}
	if r.OutageRecoveryS != nil {
		t.Errorf("outage recoveries %v without an outage", r.OutageRecoveryS)
	}
	if *r.FramesLost != 16 || *r.Undecodable != 10 {
		t.Errorf("lost %d, undecodable %d; want 16 and 10", *r.FramesLost, *r.Undecodable)
	}
	if e := r.Expiry; e == nil || e.Dropped != 2 || e.Reset != 3 || e.BytesReset != 10000 || e.Waste != 0.05 {
		t.Errorf("expiry %+v", e)
	}
}

// stepRecords is a 30 fps run of 14 s at 1 Mb/s that halves at 5 s and
// doubles back at 8 s: frames of 5000 B, received 100 ms after capture but
// 400 ms after from the halving to 6.5 s, except for a lucky half second
// from 5.4 s; from the doubling to 9 s the frames are 3000 B (0.72 Mb/s,
// under 90% of the rate).
func stepRecords() videoData {
	var v videoData
	for i := range 14 * 30 {
		capture := time.Duration(i) * time.Second / 30
		delay, size := 100*time.Millisecond, 5000
		if capture >= 5*time.Second && capture < 6500*time.Millisecond && (capture < 5400*time.Millisecond || capture >= 5900*time.Millisecond) {
			delay = 400 * time.Millisecond
		}
		if capture >= 8*time.Second && capture < 9*time.Second {
			size = 3000
		}
		ts := uint32(1000 + 3000*i)
		v.Frames = append(v.Frames, records.Frame{RTPTimestamp: ts, CaptureUs: at(capture), EncodeStartUs: at(capture + time.Millisecond),
			EncodeEndUs: at(capture + 4*time.Millisecond), WriteStartUs: at(capture + 5*time.Millisecond), Bytes: size, Width: 640, Height: 360})
		v.Received = append(v.Received, records.ViewerFrame{Kind: records.KindReceived, RTPTimestamp: ts, CaptureUs: at(capture),
			ReceivedUs: at(capture + delay), Bytes: size})
	}
	return v
}

// TestOverFloorFollowsTheRTT checks that capture to received over the
// floor counts each frame against the floor on the path when it was
// captured: after a round-trip step the path's own delay is not the
// sender's queue.
func TestOverFloorFollowsTheRTT(t *testing.T) {
	// The floor: 20 ms one way (100 ms after the step) + 5000 B at 1 Mb/s
	// + a 3 ms encode.
	step := scenario.Step{At: 6 * time.Second, RTT: 200 * time.Millisecond}
	checkOverFloor(t, step, 5000, 5000, 63*time.Millisecond, 143*time.Millisecond)
}

func TestOverFloorFollowsTheRate(t *testing.T) {
	// The rate doubles and the frames with it: 20 ms one way + 5000 B at
	// 1 Mb/s, then 10000 B at 2 Mb/s, + a 3 ms encode, either side. The
	// window's median frame (10000 B: 6 s of its 8 are after the step)
	// would put the floor at 103 ms before it.
	step := scenario.Step{At: 4 * time.Second, Rate: 2 * rate.Mbps}
	checkOverFloor(t, step, 5000, 10000, 63*time.Millisecond, 63*time.Millisecond)
}

// checkOverFloor summarizes 10 s of frames (the window: 2 to 10 s) at 30 fps on a 1 Mb/s path
// whose schedule has one step, of before bytes each before it and after
// after, each received 10 ms over the floor (every tenth 50 ms) that is
// floor0 before the step and floor1 after, and checks floor_ms and
// over_floor_ms.
func checkOverFloor(t *testing.T, step scenario.Step, before, after int, floor0, floor1 time.Duration) {
	t.Helper()
	in := videoInput()
	in.Spec.Path.Schedule = []scenario.Step{step}
	var v videoData
	for i := range 300 {
		capture := time.Duration(i) * time.Second / 30
		floor, size := floor0, before
		if capture >= step.At {
			floor, size = floor1, after
		}
		over := 10 * time.Millisecond
		if i%10 == 0 {
			over = 50 * time.Millisecond
		}
		ts := uint32(1000 + 3000*i)
		v.Frames = append(v.Frames, records.Frame{RTPTimestamp: ts, CaptureUs: at(capture), EncodeStartUs: at(capture + time.Millisecond),
			EncodeEndUs: at(capture + 4*time.Millisecond), WriteStartUs: at(capture + 5*time.Millisecond), Bytes: size, Width: 640, Height: 360})
		v.Received = append(v.Received, records.ViewerFrame{Kind: records.KindReceived, RTPTimestamp: ts, CaptureUs: at(capture),
			ReceivedUs: at(capture + floor + over), Bytes: size})
	}
	r, _ := summarizeVideo(in, v)
	if r.FloorMs == nil {
		t.Fatal("no floor")
	}
	if want := ms(floor0.Microseconds()); !near(*r.FloorMs, want, 1e-9) {
		t.Fatalf("floor %g ms, want %g (the path at the window's start)", *r.FloorMs, want)
	}
	if o := r.OverFloorMs; o == nil || !near(o.P50, 10, 1e-9) || !near(o.P95, 50, 1e-9) {
		t.Errorf("over the floor %+v, want p50 10 ms and p95 50 ms", o)
	}
	// Against the floor at the window's start, the frames after the step
	// would look 80 ms queued.
	if floor0 != floor1 {
		if c := r.CaptureToReceivedMs; c == nil || c.P50-*r.FloorMs < 50 {
			t.Errorf("capture to received %+v: the case does not tell the two floors apart", c)
		}
	}
}

func TestRecoveries(t *testing.T) {
	in := videoInput()
	in.Spec.Duration = 12 * time.Second
	in.TL.Duration = in.Spec.Duration
	in.Spec.Path.Schedule = []scenario.Step{
		{At: time.Second, RTT: 80 * time.Millisecond}, // in the warm-up: not measured
		{At: 5 * time.Second, Rate: 500 * rate.Kbps},
		{At: 8 * time.Second, Rate: rate.Mbps},
		{At: 13 * time.Second, RTT: 40 * time.Millisecond}, // too close to the end to judge
	}
	r, _ := summarizeVideo(in, stepRecords())
	// After the halving the floor is 40 ms one way + 80 ms + 3 ms: the
	// 400 ms frames are over it, the 100 ms ones under. The window
	// starting at 5.4 s is under, but those from 5.7 s are over again: no
	// recovery yet. A window starting at 6.3 s holds 6 of the slow frames
	// among 15: its median is back, and stays.
	// After the doubling the media is 0.72 Mb/s until 9 s: a second's
	// window of arrivals starting at 8.5 s holds 18 frames of 3000 B and
	// 12 of 5000 B, 0.912 Mb/s; one at 8.4 s, 21 and 9, 0.864 Mb/s.
	want := []float64{math.NaN(), 1.3, 0.5, math.NaN()}
	if len(r.RecoveryS) != len(want) {
		t.Fatalf("recoveries %v, want %v", r.RecoveryS, want)
	}
	for i, w := range want {
		got := r.RecoveryS[i]
		if (got == nil) != math.IsNaN(w) || (got != nil && !near(*got, w, 1e-9)) {
			t.Errorf("step %d: recovery %v, want %v", i, fmtPtr(got), w)
		}
	}
	if r.Schedule != "1s=/80ms,5s=500kbit,8s=1mbit,13s=/40ms" {
		t.Errorf("schedule %q", r.Schedule)
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestIdleSaved checks that the idle spans survive input.json, and that
// an input.json written before them reads as unknown.
func TestIdleSaved(t *testing.T) {
	dir := t.TempDir()
	in := videoInput()
	in.Idle.Add([]emu.IdleSpan{{From: t0.Add(time.Second), To: t0.Add(2 * time.Second)}}, 2)
	if err := SaveInput(dir, in); err != nil {
		t.Fatal(err)
	}
	got, err := LoadInput(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Idle.Known || got.Idle.Lost != 2 || !slices.Equal(got.Idle.Spans, in.Idle.Spans) {
		t.Errorf("idle read back as %+v, want %+v", got.Idle, in.Idle)
	}
	in.Idle = IdleLog{}
	if err := SaveInput(dir, in); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadInput(dir); err != nil || got.Idle.Known {
		t.Errorf("no spans read back as %+v, %v", got.Idle, err)
	}
}

// TestExpiredFrames checks that in the expire mode a frame that never left
// and never arrived counts as expired, not as a delay that lasted until
// the sender stopped.
func TestExpiredFrames(t *testing.T) {
	in := videoInput()
	v := videoRecords()
	v.Conns = []records.Conn{{EndUs: at(12 * time.Second), Frames: 300, ExpiredReset: 10}}
	var recv []records.ViewerFrame
	for _, x := range v.Received {
		if i := (int(x.RTPTimestamp) - 1000) / 3000; i < 100 || i >= 110 {
			recv = append(recv, x)
		}
	}
	v.Received = recv
	for i := 100; i < 110; i++ {
		v.Frames[i].LeftHostUs = 0
	}
	for _, mode := range []string{"expire=100ms", "replenish=15ms"} {
		in.Spec.Mode = mustMode(mode)
		r, _ := summarizeVideo(in, v)
		expired := slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "10 of 240 frames captured in the window expired") })
		bounds := r.SourceDelayMs.P99 > 1000
		if mode == "expire=100ms" && (!expired || bounds || !near(r.CaptureToReceivedMs.P99, 100, 1e-9)) {
			t.Errorf("%s: notes %q, source delay %+v, capture to received %+v; want 10 expired frames left out", mode, r.Notes, r.SourceDelayMs, r.CaptureToReceivedMs)
		}
		if mode != "expire=100ms" && (expired || !bounds) {
			t.Errorf("%s: notes %q, source delay %+v; want lower bounds, not expiry", mode, r.Notes, r.SourceDelayMs)
		}
	}
}

// TestOutageRecoveries checks the time from each outage's end to the
// first decodable frame captured after it: stale frames received after
// the return, undecodable ones, and returns in the warm-up or without a
// fresh frame before the next outage do not count.
func TestOutageRecoveries(t *testing.T) {
	in := videoInput() // 2 s warm-up, 8 s window
	sched, err := scenario.ParseSchedule("1s=down,1500ms=up,3s=down,4s=up,6s=down,6500ms=up,8s=down,9s=up")
	if err != nil {
		t.Fatal(err)
	}
	in.Spec.Path.Schedule = sched
	v := videoRecords()
	var recv []records.ViewerFrame
	for _, x := range v.Received {
		c := time.Duration(x.CaptureUs-at(0)) * time.Microsecond
		switch {
		case c >= 3*time.Second && c < 4*time.Second:
			// Captured in the second outage: held and received at
			// 4.3 s, stale.
			x.ReceivedUs = at(4300 * time.Millisecond)
		case c >= 4*time.Second && c < 4400*time.Millisecond:
			// The first fresh ones arrive undecodable, then from
			// 4.4 s decodable 500 ms after capture.
			x.Undecodable = true
		case c >= 4400*time.Millisecond && c < 5*time.Second:
			x.ReceivedUs = x.CaptureUs + 500_000
		case c >= 6*time.Second:
			continue // nothing after the third outage
		}
		recv = append(recv, x)
	}
	v.Received = recv
	r, _ := summarizeVideo(in, v)
	want := []any{nil, 0.9, nil, nil}
	got := make([]any, len(r.OutageRecoveryS))
	for i, p := range r.OutageRecoveryS {
		got[i] = fmtPtr(p)
	}
	if !slices.Equal(got, want) {
		t.Errorf("outage recoveries %v, want %v", got, want)
	}
	if f := r.Freezes; f == nil || f.MaxMs == nil || !near(*f.MaxMs, 10000-6067, 1) {
		t.Errorf("freezes %+v, want the longest from the last frame, received at 6.067 s, to the end", f)
	}
}

// TestFreezesLongest checks that the longest freeze is kept wherever it
// falls in the window.
func TestFreezesLongest(t *testing.T) {
	in := videoInput() // window 2 s to 10 s
	var recv []records.ViewerFrame
	for _, ms := range []int{1900, 2000, 3000, 3100, 3500, 9950} {
		recv = append(recv, records.ViewerFrame{ReceivedUs: at(time.Duration(ms) * time.Millisecond)})
	}
	recv = append(recv, records.ViewerFrame{ReceivedUs: at(10200 * time.Millisecond)})
	f := freezes(in.TL, recv)
	// Gaps over 200 ms: 1000, 400, 6450 and 50 of 250 inside the window.
	if f.Count != 4 || !near(f.TotalMs, 1000+400+6450+50, 1e-6) || f.MaxMs == nil || *f.MaxMs != 6450 {
		t.Errorf("freezes %+v (longest %v), want 4 of 7900 ms, the longest 6450 ms", f, fmtPtr(f.MaxMs))
	}
}

// TestSteadyUtilization checks the utilization judged on a path whose rate
// steps: the window less the recovery each change of the rate may take by
// its target (2 s after a fall, 5 s after a rise), and nothing on a path
// whose steps change only the round trip.
func TestSteadyUtilization(t *testing.T) {
	in := videoInput() // 1 Mb/s; window 2 to 10 s, here to 20 s
	in.Spec.Duration = 18 * time.Second
	in.TL.Duration = in.Spec.Duration
	in.Spec.Path.Schedule = []scenario.Step{
		{At: 4 * time.Second, Rate: 2 * rate.Mbps},          // cut: 4 to 9 s
		{At: 12 * time.Second, Rate: rate.Mbps},             // cut: 12 to 14 s
		{At: 16 * time.Second, RTT: 100 * time.Millisecond}, // not cut
	}
	// The media received: 0.9 of the link, but 0.5 of it in the cut
	// spans (a climb or a queue), one frame every 10 ms.
	var recv []records.ViewerFrame
	for at := time.Duration(0); at < 20*time.Second; at += 10 * time.Millisecond {
		share := 0.9
		if (at >= 4*time.Second && at < 9*time.Second) || (at >= 12*time.Second && at < 14*time.Second) {
			share = 0.5
		}
		bytes := share * float64(in.Spec.Path.RateAt(at)) / 8 / 100
		recv = append(recv, records.ViewerFrame{ReceivedUs: in.TL.us(at), Bytes: int(math.Round(bytes))})
	}
	got := steadyUtilization(in, recv)
	if got == nil || !near(*got, 0.9, 1e-3) {
		t.Errorf("steady utilization %v, want 0.9", fmtPtr(got))
	}
	in.Spec.Path.Schedule = in.Spec.Path.Schedule[2:]
	if got := steadyUtilization(in, recv); got != nil {
		t.Errorf("steady utilization %v on a path whose rate does not step, want none", *got)
	}
}

// TestRiseWindowHeld: for a rise, the share of the frames from the step
// until the run was back whose transport had its congestion window full
// (within three packets); nothing for a fall, or for frames without the
// transport's window.
func TestRiseWindowHeld(t *testing.T) {
	in := videoInput() // 1 Mb/s, the window from 2 to 10 s
	in.Spec.Path.Schedule = []scenario.Step{
		{At: 3 * time.Second, Rate: 2 * rate.Mbps},
		{At: 6 * time.Second, Rate: rate.Mbps},
		{At: 8 * time.Second, Rate: 2 * rate.Mbps},
	}
	var frames []joinedFrame
	for i := range 80 { // every 100 ms from 2 s
		at := 2*time.Second + time.Duration(i)*100*time.Millisecond
		d := &records.Drain{AtUs: in.TL.us(at), Cwnd: 50_000, InFlight: 20_000}
		switch {
		case at >= 3*time.Second && at < 4*time.Second:
			d.InFlight = 50_000 - 3*1500 // held: the first second of the first rise
		case at >= 8*time.Second && at < 9*time.Second:
			d.Cwnd = 0 // no window known
		}
		frames = append(frames, joinedFrame{Frame: records.Frame{Drain: d}})
	}
	// The first rise back after 2 s: 10 of its 20 frames held. The
	// second never back (to its end at 10 s): no window in its first
	// second, none held after.
	got := riseWindowHeld(in, frames, []*float64{ptr(2), nil, nil})
	want := []float64{0.5, math.NaN(), 0}
	if len(got) != len(want) {
		t.Fatalf("rise_window_held %v, want %v", got, want)
	}
	for i, w := range want {
		if (got[i] == nil) != math.IsNaN(w) || (got[i] != nil && !near(*got[i], w, 1e-9)) {
			t.Errorf("step %d: %v, want %v", i, fmtPtr(got[i]), w)
		}
	}
	for i := range frames {
		frames[i].Drain.Cwnd = 0
	}
	if got := riseWindowHeld(in, frames, []*float64{ptr(2), nil, nil}); got != nil {
		t.Errorf("without a window: %v, want none", got)
	}
}

// TestRiseRecoveryCountsTheLink checks that a rise's recovery counts the
// link's bytes, headers included, as link_utilization does: a stream whose
// VP8 stays at 84% of the new rate while its packets keep the link 98%
// busy has recovered.
func TestRiseRecoveryCountsTheLink(t *testing.T) {
	in := videoInput()
	in.Spec.Path.Rate = 500 * rate.Kbps
	in.Spec.Path.Schedule = []scenario.Step{{At: 4 * time.Second, Rate: rate.Mbps}}
	var v videoData
	var written int64
	for i := range 12 * 30 {
		capture := time.Duration(i) * time.Second / 30
		// 360 kb/s of VP8 before 5 s, 840 kb/s after; the framing adds
		// 200 and 400 B to each frame, the IP headers 5% more.
		size, w := 1500, 1700
		if capture >= 5*time.Second {
			size, w = 3500, 3900
		}
		ts := uint32(1000 + 3000*i)
		v.Frames = append(v.Frames, records.Frame{RTPTimestamp: ts, CaptureUs: at(capture), EncodeStartUs: at(capture + time.Millisecond),
			EncodeEndUs: at(capture + 4*time.Millisecond), WriteStartUs: at(capture + 5*time.Millisecond), Bytes: size, Written: w,
			Width: 640, Height: 360})
		v.Received = append(v.Received, records.ViewerFrame{Kind: records.KindReceived, RTPTimestamp: ts, CaptureUs: at(capture),
			ReceivedUs: at(capture + 100*time.Millisecond), Bytes: size})
		if in.TL.in(at(capture)) {
			written += int64(w)
		}
	}
	in.Final.Forward.Total.Bytes, in.Final.Forward.Total.Span = written*105/100, in.TL.Duration
	r, _ := summarizeVideo(in, v)
	// The window from 5.0 s holds 3 frames of 1700 B and 27 of 3900 B
	// written: 0.927 Mb/s on the link; the one from 4.9 s, 6 and 24,
	// 0.872 Mb/s.
	if len(r.RecoveryS) != 1 {
		t.Fatalf("recoveries %v, want one", r.RecoveryS)
	}
	if got := r.RecoveryS[0]; got == nil || !near(*got, 1, 1e-9) {
		t.Errorf("recovery %v, want 1 s", fmtPtr(got))
	}
	// Without the link's bytes the media alone counts, and never reaches
	// 90% of the rate.
	in.Final.Forward.Total.Bytes = 0
	if r, _ := summarizeVideo(in, v); len(r.RecoveryS) != 1 || r.RecoveryS[0] != nil {
		t.Errorf("recovery %v counting the media, want none", fmtPtr(r.RecoveryS[0]))
	}
}
