package pathmodel

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/sender"
)

// fixed is a controller that asks for one bitrate on one rung, whatever
// it observes.
type fixed struct {
	b    rate.Bitrate
	rung media.Rung
	seen []sender.Observation
}

func (f *fixed) Update(o sender.Observation) sender.Decision {
	f.seen = append(f.seen, o)
	return sender.Decision{Bitrate: f.b, Rung: f.rung}
}

func (f *fixed) Rung() media.Rung { return f.rung }

func fixedAt(b rate.Bitrate, r media.Rung) (func([]media.Rung, rate.Bitrate) Controller, *fixed) {
	f := &fixed{b: b, rung: r}
	return func([]media.Rung, rate.Bitrate) Controller { return f }, f
}

var rung360 = media.Rung{Size: media.Size{W: 640, H: 360}, Min: 400 * rate.Kbps, Max: 2500 * rate.Kbps}

func TestLinkServesAtScheduledRate(t *testing.T) {
	p := Path{Rate: 1 * rate.Mbps, RTT: 10 * time.Millisecond, Steps: []Step{{At: time.Second, Rate: 500 * rate.Kbps}}}
	sched := newSchedule(p)
	l := link{sched: &sched, limit: 3000}
	// 1250 bytes take 10 ms at 1 Mb/s; the second waits for the first.
	if s, d, drop := l.send(0, 1250); drop || s != 0 || d != 10*time.Millisecond {
		t.Fatalf("first packet: start %v depart %v dropped %v", s, d, drop)
	}
	if s, d, drop := l.send(0, 1250); drop || s != 10*time.Millisecond || d != 20*time.Millisecond {
		t.Fatalf("second packet: start %v depart %v dropped %v", s, d, drop)
	}
	if _, _, drop := l.send(0, 1250); !drop {
		t.Fatal("third packet fit in a 3000-byte queue holding 2500")
	}
	// Across the step: 5 ms at 1 Mb/s (625 bytes), the rest at 500 kb/s.
	if d := sched.finish(995*time.Millisecond, 1250); d != time.Second+10*time.Millisecond {
		t.Fatalf("across the step: depart %v, want 1.01s", d)
	}
	if b := sched.bits(0, 2*time.Second); b != 1.5e6 {
		t.Fatalf("bits over 2 s: %v, want 1.5e6", b)
	}
}

// TestBulkFillsTheLink checks the TCP models against what the kernel's
// do to a backlogged flow: CUBIC fills a link with a buffer of a BDP or
// more; BBR nearly so, less its PROBE_RTT pauses.
func TestBulkFillsTheLink(t *testing.T) {
	for _, tc := range []struct {
		cc   CC
		r    rate.Bitrate
		rtt  time.Duration
		want float64
	}{
		{Cubic, 1 * rate.Mbps, 20 * time.Millisecond, 0.97},
		{Cubic, 10 * rate.Mbps, 80 * time.Millisecond, 0.97},
		{BBR, 1 * rate.Mbps, 20 * time.Millisecond, 0.9},
		{BBR, 10 * rate.Mbps, 80 * time.Millisecond, 0.9},
	} {
		u, err := Bulk(Config{Path: Path{Rate: tc.r, RTT: tc.rtt, Queue: 200 * time.Millisecond, CC: tc.cc}, Duration: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if u < tc.want || u > 1.001 {
			t.Errorf("%v at %v, %v: bulk utilization %.3f, want %.2f..1", tc.cc, tc.r, tc.rtt, u, tc.want)
		}
	}
}

// TestBacklogFillsTheQueue sends above the link rate: with CUBIC the
// socket stays backlogged and the bottleneck queue fills to its limit
// (the physics the controller must avoid), and the source delay grows with
// the backlog.
func TestBacklogFillsTheQueue(t *testing.T) {
	ctrl, _ := fixedAt(2*rate.Mbps, rung360)
	r, err := Run(Config{Path: Path{Rate: 1 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond}, Seed: 1, NewController: ctrl, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Queue.P50 < 150*time.Millisecond {
		t.Errorf("sending twice the link rate: queue p50 %v, want near the 200 ms buffer", r.Queue.P50)
	}
	if r.RawUtil < 0.95 {
		t.Errorf("sending twice the link rate: utilization %.2f, want the link full", r.RawUtil)
	}
	// The VP8 bytes are the link less the headers and framing: TCP/IP
	// 3.6% of the frames' bytes at the bottleneck, and RTP, framing and
	// the timing report per frame.
	var video, wire int
	for _, f := range r.Frames[r.Frames0:] {
		video, wire = video+f.Video, wire+f.Wire
	}
	if v := float64(video) / float64(wire); v < 0.93 || v > 0.97 {
		t.Errorf("VP8 bytes %.3f of the frames' bytes at the bottleneck: want 3 to 7%% less", v)
	}
	// The summary counts a frame's VP8 bytes when it is received; at half
	// a second a frame the window's two edges move it by a frame (2%) or
	// two.
	if r.VideoUtil < r.RawUtil*0.9 || r.VideoUtil > r.RawUtil {
		t.Errorf("VP8 utilization %.3f against the link's use %.3f: want 0 to 10%% less", r.VideoUtil, r.RawUtil)
	}
	if r.Drops == 0 {
		t.Error("sending twice the link rate: no drops")
	}
}

// TestIdlePath sends well below the link rate: no queue, and capture to
// received at its floor (the one-way delay, the frame's serialization and
// the encode).
func TestIdlePath(t *testing.T) {
	ctrl, f := fixedAt(500*rate.Kbps, rung360)
	p := Path{Rate: 5 * rate.Mbps, RTT: 80 * time.Millisecond}
	r, err := Run(Config{Path: p, Seed: 1, NewController: ctrl, Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Queue.P95 > time.Millisecond {
		t.Errorf("at a tenth of the link: queue p95 %v, want none", r.Queue.P95)
	}
	if r.Excess.P50 < -2*time.Millisecond || r.Excess.P50 > 2*time.Millisecond {
		t.Errorf("at a tenth of the link: capture to received %v above the floor %v, want about 0", r.Excess.P50, r.Floor)
	}
	// The floor: 40 ms one way, a 2 kB frame at 5 Mb/s (3.3 ms), 3.5 ms
	// to encode 640x360.
	if r.Floor < 44*time.Millisecond || r.Floor > 50*time.Millisecond {
		t.Errorf("floor %v, want about 47 ms", r.Floor)
	}
	if r.FPS < 29.5 {
		t.Errorf("fps %.1f, want 30", r.FPS)
	}
	last := f.seen[len(f.seen)-1]
	if last.MinRTT < p.RTT || last.MinRTT > p.RTT+p.Rate.Duration(mss+tcpIPHeader)+time.Millisecond {
		t.Errorf("min RTT %v, want the base %v and a packet's serialization", last.MinRTT, p.RTT)
	}
	if !last.AppLimited || last.DrainRate <= 0 || last.Written <= last.Encoded {
		t.Errorf("last observation %+v: want app-limited, a drain rate, and overhead in the bytes written", last)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Path: Path{Rate: 3 * rate.Mbps, RTT: 50 * time.Millisecond, Loss: 0.001, CC: BBR}, Seed: 7, Duration: 20 * time.Second}
	a, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(cfg)
	if len(a.Frames) != len(b.Frames) || a.Excess != b.Excess || a.Util != b.Util {
		t.Fatalf("same seed, different runs: %+v vs %+v", a.Excess, b.Excess)
	}
	for i := range a.Frames {
		if a.Frames[i] != b.Frames[i] {
			t.Fatalf("frame %d differs: %+v vs %+v", i, a.Frames[i], b.Frames[i])
		}
	}
	cfg.Seed++
	c, _ := Run(cfg)
	if c.Excess == a.Excess && len(c.Frames) == len(a.Frames) {
		t.Error("another seed, the same run")
	}
}

// BenchmarkRun is a 60 s run at 50 Mb/s (the most events a second of the
// matrix's paths); it should take well under a second.
func BenchmarkRun(b *testing.B) {
	for _, cc := range []CC{Cubic, BBR} {
		b.Run(cc.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(Config{Path: Path{Rate: 50 * rate.Mbps, RTT: 20 * time.Millisecond, Queue: 100 * time.Millisecond, CC: cc}, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJitter runs a sender at a fixed rate well under the link, so that no
// queue builds, with and without jitter: each frame arrives later by at most
// the jitter (the last of its packets, none overtaking another), by a good
// part of it at the median, and the floor gains the jitter's median draw.
func TestJitter(t *testing.T) {
	const jitter = 20 * time.Millisecond
	run := func(j time.Duration) *Result {
		t.Helper()
		newCtrl, _ := fixedAt(800*rate.Kbps, rung360)
		p := Path{Rate: 4 * rate.Mbps, RTT: 40 * time.Millisecond, Jitter: j}
		r, err := Run(Config{Path: p, Seed: 5, Duration: 20 * time.Second, NewController: newCtrl})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain, jittered := run(0), run(jitter)
	if len(plain.Frames) != len(jittered.Frames) || len(plain.Frames) < 500 {
		t.Fatalf("%d and %d frames, want the same frames", len(plain.Frames), len(jittered.Frames))
	}
	var later []time.Duration
	for i, f := range jittered.Frames {
		g := plain.Frames[i]
		if f.Capture != g.Capture || f.Received < 0 || g.Received < 0 {
			continue
		}
		d := f.Received - g.Received
		if d < 0 || d > jitter {
			t.Fatalf("frame %d arrived %v later with jitter, want 0 to %v", i, d, jitter)
		}
		later = append(later, d)
	}
	if p := percentiles(later); len(later) < 500 || p.P50 < jitter/4 {
		t.Errorf("frames arrived later by %v at the median over %d frames, want at least %v", p.P50, len(later), jitter/4)
	}
	if d := jittered.Floor - plain.Floor; d != jitter/2 {
		t.Errorf("floor %v with jitter, %v without: want %v more", jittered.Floor, plain.Floor, jitter/2)
	}
}

// TestCross runs a sender at a fixed quarter of the link beside a
// competing bulk flow of each congestion control: the flow takes the rest
// of the link, and with CUBIC it keeps the drop-tail queue near full, so
// the stream's frames wait behind it. Without the flow nothing changes.
func TestCross(t *testing.T) {
	for _, cc := range []CC{Cubic, BBR} {
		run := func(n int) *Result {
			t.Helper()
			newCtrl, _ := fixedAt(1*rate.Mbps, rung360)
			p := Path{Rate: 4 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc, Cross: n}
			r, err := Run(Config{Path: p, Seed: 3, Duration: 30 * time.Second, NewController: newCtrl})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		alone, shared := run(0), run(1)
		if alone.CrossUtil != 0 {
			t.Errorf("%v: competing share %.3f without a competing flow", cc, alone.CrossUtil)
		}
		if sum := shared.RawUtil + shared.CrossUtil; shared.CrossUtil < 0.6 || sum < 0.9 || sum > 1.001 {
			t.Errorf("%v: the stream %.3f and the competing flow %.3f of the link, want the flow to take the rest", cc, shared.RawUtil, shared.CrossUtil)
		}
		if math.Abs(shared.RawUtil-alone.RawUtil) > 0.05 {
			t.Errorf("%v: the stream's share %.3f beside the flow, %.3f alone: a fixed rate should keep it", cc, shared.RawUtil, alone.RawUtil)
		}
		if cc == Cubic && shared.Queue.P50 < 100*time.Millisecond {
			t.Errorf("CUBIC beside the stream: standing queue p50 %v, want most of the 200 ms buffer", shared.Queue.P50)
		}
		// A download that ends before the measured window leaves the
		// stream alone in it.
		newCtrl, _ := fixedAt(1*rate.Mbps, rung360)
		p := Path{Rate: 4 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond, CC: cc, Cross: 1, CrossUntil: 5 * time.Second}
		ended, err := Run(Config{Path: p, Seed: 3, Duration: 30 * time.Second, NewController: newCtrl})
		if err != nil {
			t.Fatal(err)
		}
		if ended.CrossUtil != 0 || math.Abs(ended.RawUtil-alone.RawUtil) > 0.02 || ended.Queue.P95 > alone.Queue.P95+time.Millisecond {
			t.Errorf("%v, the download ended at 5 s: its share %.3f, the stream's %.3f (alone %.3f), queue p95 %v (alone %v)",
				cc, ended.CrossUtil, ended.RawUtil, alone.RawUtil, ended.Queue.P95, alone.Queue.P95)
		}
	}
	if _, err := Run(Config{Path: Path{Rate: rate.Mbps, RTT: time.Millisecond, Cross: MaxCross + 1}}); !errors.Is(err, ErrConfig) {
		t.Errorf("%d competing flows: %v, want ErrConfig", MaxCross+1, err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Path: Path{Rate: 1 * rate.Mbps}},
		{Path: Path{RTT: time.Millisecond}},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond, Loss: 1}},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond, Jitter: -time.Millisecond}},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond, Cross: 1, CrossUntil: -time.Second}},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond, Steps: []Step{{At: 0, Rate: 1}}}},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond}, Warmup: time.Minute, Duration: time.Second},
		{Path: Path{Rate: 1 * rate.Mbps, RTT: time.Millisecond}, Ladder: []media.Rung{}},
	} {
		if _, err := Run(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v): %v, want ErrConfig", cfg, err)
		}
		if _, err := Bulk(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("Bulk(%+v): %v, want ErrConfig", cfg, err)
		}
	}
}

// TestDrainEstimator checks the two semantics: an application-limited
// window may only raise the sticky estimate (the transport's); the
// decaying one follows it.
func TestDrainEstimator(t *testing.T) {
	for _, tc := range []struct {
		kind Estimator
		want float64 // bytes per second after the application-limited phase
	}{
		{Sticky, 125000},
		{Decaying, 12500},
	} {
		e := newDrainEstimator(tc.kind)
		tp := &tcp{cc: newCubic(), srtt: 100 * time.Millisecond, minRTT: 100 * time.Millisecond}
		now := time.Duration(0)
		step := func(rate float64, app bool, n int) {
			for range n {
				now += 10 * time.Millisecond
				tp.deliveredBytes += int64(rate * 0.01)
				tp.delivered++
				tp.sndNxt = tp.deliveredBytes
				tp.written = tp.sndNxt
				if !app {
					tp.written += mss // backlogged
				}
				e.onAck(now, tp, app)
			}
		}
		step(125000, false, 100) // 1 Mb/s backlogged
		if got, _, _ := e.estimate(tp); math.Abs(float64(got)/8-125000) > 1 {
			t.Fatalf("%v: backlogged at 1 Mb/s: %v", tc.kind, got)
		}
		step(12500, true, 300) // 100 kb/s application-limited, 3 s
		if got, _, _ := e.estimate(tp); math.Abs(float64(got)/8-tc.want) > tc.want*0.01 {
			t.Errorf("%v: after 3 s application-limited at 100 kb/s: %v B/s, want %v", tc.kind, float64(got)/8, tc.want)
		}
	}
}

// TestReportBytes checks the timing report's share of the writes: none on
// the first write, the first frame's on the second, then at 2 Mb/s every
// frame written since on the first write at least reportEvery later, and
// at 100 kb/s one frame's every half second or so.
func TestReportBytes(t *testing.T) {
	h, e := reportHeader, reportEntry
	for _, tc := range []struct {
		target rate.Bitrate
		want   []int
	}{
		// Writes at 0, 67, 133, 200, 267 ms...: the second reports one
		// frame; the fifth (267 ms, 200 ms after the second) the three
		// since.
		{2 * rate.Mbps, []int{0, h + e, 0, 0, h + 3*e, 0, 0, h + 3*e, 0, 0, h + 3*e}},
		// 1% of 100 kb/s has room for one timing after 528 ms: the
		// tenth write, 533 ms after the second.
		{100 * rate.Kbps, []int{0, h + e, 0, 0, 0, 0, 0, 0, 0, h + e, 0}},
	} {
		var s sim
		var got []int
		for k := range len(tc.want) {
			got = append(got, s.reportBytes(time.Duration(k)*time.Second/15, tc.target))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: report bytes per write %v, want %v", tc.target, got, tc.want)
		}
	}
}

// TestInvitesWithLead: a stream held above a 1 Mb/s path by a fixed
// target, each frame 12 ms to encode, more than half the 15 ms replenish
// time. The invitation allows for the lead the sender declares (its encode
// time), as the transports' does, so each frame is written while the one
// before still has bytes at the host; invited at half the replenish time
// alone, the socket would empty during every encode.
func TestInvitesWithLead(t *testing.T) {
	newCtrl, _ := fixedAt(1500*rate.Kbps, rung360)
	r, err := Run(Config{
		Path:          Path{Rate: rate.Mbps, RTT: 20 * time.Millisecond, Queue: 200 * time.Millisecond, CC: Cubic},
		Duration:      15 * time.Second,
		NewController: newCtrl,
		Encoder:       EncoderModel{EncodeTime: func(media.Rung) time.Duration { return 12 * time.Millisecond }},
	})
	if err != nil {
		t.Fatal(err)
	}
	behind, n := 0, 0
	for i := 1; i < len(r.Frames); i++ {
		prev, f := r.Frames[i-1], r.Frames[i]
		if f.Write < time.Second || prev.LeftHost < 0 {
			continue
		}
		n++
		if f.Write < prev.LeftHost {
			behind++
		}
	}
	if n == 0 || float64(behind) < 0.8*float64(n) {
		t.Errorf("%d of %d frames written while the one before was still at the host, want most", behind, n)
	}
}

// TestPacedLongFrames holds 8 Mb/s of 15 fps video over a 10 Mb/s path
// with a 30 ms buffer: each frame is 53 ms of the link. Paced (the sender
// paces frames this long, transport/tcp's LongFrame), CUBIC lets each
// frame into the bottleneck at 1.2 times cwnd a round trip and the queue
// it builds fits; unpaced, the window sends it at once, the buffer loses
// the tail, and the frames wait for retransmissions.
func TestPacedLongFrames(t *testing.T) {
	r720 := media.Rung{Size: media.Size{W: 1280, H: 720}, Min: 1500 * rate.Kbps, Max: 20 * rate.Mbps}
	p := Path{Rate: 10 * rate.Mbps, RTT: 80 * time.Millisecond, Queue: 30 * time.Millisecond}
	for seed := range 3 {
		for _, unpaced := range []bool{false, true} {
			ctrl, _ := fixedAt(8*rate.Mbps, r720)
			r, err := Run(Config{Path: p, FPS: 15, NoPacing: unpaced, Seed: uint64(seed + 1), NewController: ctrl, Duration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d, unpaced %v: capture to received p95 %v over the floor, %d drops", seed+1, unpaced, r.Excess.P95, r.Drops)
			if !unpaced && r.Excess.P95 > 20*time.Millisecond {
				t.Errorf("seed %d, paced: capture to received p95 %v over the floor, want under 20 ms", seed+1, r.Excess.P95)
			}
			if unpaced && r.Excess.P95 < 50*time.Millisecond {
				t.Errorf("seed %d, unpaced: capture to received p95 %v over the floor, want the retransmissions' 50 ms or more", seed+1, r.Excess.P95)
			}
		}
	}
}

// TestEncoderFloor checks the model encoder's smallest frame: about the
// same size from a 30 fps and a 60 fps source, as libvpx's coarsest
// quantizer makes it (media.Rung.MinAt), so that at 60 fps a target far
// below the rung's Min is overshot as the real encoder overshoots it.
func TestEncoderFloor(t *testing.T) {
	rung := media.Ladder[1]
	mean := func(fps int) float64 {
		e := encoder{m: EncoderModel{}.withDefaults(), rng: rand.New(rand.NewPCG(1, 2)), srcFPS: fps}
		e.setBitrate(media.MinBitrate)
		var n, sum float64
		for i := range 300 {
			b, key, _ := e.encode(rung, rung.Interval(fps), false)
			if i >= 30 && !key {
				n, sum = n+1, sum+float64(b)
			}
		}
		return sum / n
	}
	at30, at60 := mean(30), mean(60)
	// 150 kb/s at 30 fps is 625 bytes a frame; the floor is floorShare of it.
	if want := floorShare * 625; math.Abs(at30-want) > 0.1*want {
		t.Errorf("30 fps: frames of %.0f bytes at the floor, want about %.0f", at30, want)
	}
	if r := at60 / at30; r < 0.8 || r > 0.95 {
		t.Errorf("60 fps: frames of %.0f bytes at the floor, %.2f of 30 fps's, want 0.8 to 0.95 (libvpx: 0.88)", at60, r)
	}
}

// TestEncoderCutDip checks the model encoder's output after
// its target falls from one frame to the next: short of the new target
// after a deep fall, for a few hundred milliseconds, as libvpx's was in
// the real runs (cutDip's doc), and at it after a shallow one or with
// NoCutDip.
func TestEncoderCutDip(t *testing.T) {
	rung := media.Ladder[2]
	const fps = 30
	// share returns the output over the new target's steady output in
	// [from, to) after a fall from 2 Mb/s by k times.
	share := func(m EncoderModel, k float64, from, to time.Duration) float64 {
		e := encoder{m: m.withDefaults(), rng: rand.New(rand.NewPCG(3, 4)), srcFPS: fps}
		d := rung.Interval(fps)
		e.setBitrate(2 * rate.Mbps)
		for range 2 * fps {
			e.encode(rung, d, false)
		}
		low := rate.Bitrate(float64(2*rate.Mbps) / k)
		e.setBitrate(low)
		var bits float64
		var n int
		for at := time.Duration(0); at < to; at += d {
			b, _, _ := e.encode(rung, d, false)
			if at >= from {
				bits += float64(b * 8)
				n++
			}
		}
		return bits / (float64(n) * float64(low) * d.Seconds() * e.m.Output)
	}
	for _, tc := range []struct {
		k        float64
		from, to time.Duration
		lo, hi   float64
	}{
		{4, 0, 250 * time.Millisecond, 0.35, 0.65},
		{4, time.Second, 1500 * time.Millisecond, 0.9, 1.1},
		{2, 0, 250 * time.Millisecond, 0.6, 0.9},
		{1.3, 0, 250 * time.Millisecond, 0.9, 1.1},
	} {
		if got := share(EncoderModel{}, tc.k, tc.from, tc.to); got < tc.lo || got > tc.hi {
			t.Errorf("after a fall by %g times, output in [%v, %v) %.2f of the new target's, want %.2f to %.2f", tc.k, tc.from, tc.to, got, tc.lo, tc.hi)
		}
	}
	if got := share(EncoderModel{NoCutDip: true}, 4, 0, 250*time.Millisecond); got < 0.9 || got > 1.1 {
		t.Errorf("NoCutDip: after a fall by 4 times, output in the first 250ms %.2f of the new target's, want 0.9 to 1.1", got)
	}
}
