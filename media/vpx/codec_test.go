package vpx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// TestStampThroughCodec encodes 90 frames at each rung's Min and Max
// bitrate and frame rate, decodes them and requires every stamp to read back
// the capture time to the millisecond.
func TestStampThroughCodec(t *testing.T) {
	for _, r := range media.Ladder {
		for _, br := range []rate.Bitrate{r.Min, r.Max} {
			t.Run(fmt.Sprintf("%v/%v", r.Size, br), func(t *testing.T) {
				res := ladderRun(t, r, br, media.L1T1)
				if res.misreads != 0 {
					t.Fatalf("%d of %d stamps misread; first: %s", res.misreads, len(res.bytes), res.firstBad)
				}
			})
		}
	}
}

// TestStampAtFewestFrames encodes the lowest rung at its fewest frames a
// second (media.MaxStretch) and its lowest bitrate there, Min over the
// stretch, with and without temporal layers, and requires every stamp to
// read back: each frame keeps the bits of a frame at Min
// (media.Rung.IntervalAt).
func TestStampAtFewestFrames(t *testing.T) {
	r := media.Ladder[0]
	fps := r.Rate(30) / media.MaxStretch
	b := r.Min / media.MaxStretch
	for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
		t.Run(mode.String(), func(t *testing.T) {
			res := encodeRun(t, runConfig{size: r.Size, bitrate: b, frames: 60, fps: fps, keyEvery: 20, layers: mode})
			if res.misreads != 0 {
				t.Fatalf("%d of %d stamps misread at %v and %d fps; first: %s", res.misreads, len(res.bytes), b, fps, res.firstBad)
			}
			if got := res.rate(10, fps); got > b*11/10 {
				t.Errorf("output %v at target %v and %d fps", got, b, fps)
			}
		})
	}
}

// TestStampThroughKeyframes forces a keyframe every 10 frames at each rung's
// Min bitrate and frame rate, where keyframes are capped hardest, and
// requires every stamp to read back.
func TestStampThroughKeyframes(t *testing.T) {
	for _, r := range media.Ladder {
		t.Run(r.Size.String(), func(t *testing.T) {
			res := encodeRun(t, runConfig{size: r.Size, bitrate: r.Min, frames: 40, fps: r.Rate(30), keyEvery: 10})
			if res.misreads != 0 {
				t.Fatalf("%d of %d stamps misread; first: %s", res.misreads, len(res.bytes), res.firstBad)
			}
			for i, k := range res.keys {
				if want := i%10 == 0; k != want {
					t.Fatalf("frame %d: key %v, want %v", i, k, want)
				}
			}
		})
	}
}

// TestKeyframeCap forces keyframes at each rung's Default and Max bitrate
// and requires each to stay within 4 nominal frame sizes (target / the
// rung's frame rate),
// so that a keyframe does not stall a path for long. Measured with the cap
// at 300%: up to 3.5 nominal frames.
func TestKeyframeCap(t *testing.T) {
	for _, r := range media.Ladder {
		for _, br := range []rate.Bitrate{r.Default(), r.Max} {
			t.Run(fmt.Sprintf("%v/%v", r.Size, br), func(t *testing.T) {
				res := encodeRun(t, runConfig{size: r.Size, bitrate: br, frames: 61, fps: r.Rate(30), keyEvery: 30})
				nominal := br.Bytes(r.Interval(30))
				for _, i := range []int{0, 30, 60} {
					if !res.keys[i] || res.bytes[i] > 4*nominal {
						t.Errorf("frame %d: key %v, %d bytes, nominal frame %d", i, res.keys[i], res.bytes[i], nominal)
					}
				}
			})
		}
	}
}

// Rate control bounds: over frames 30..89 of a 90-frame run at 30 fps (the
// first 30 hold the keyframe and the settling of rate control), output at
// Max must reach maxFloor of the target (the picture is rich enough to spend
// it) and output at Min must not exceed minCeil of the target (the rung can
// go that low). Measured: 0.96..0.99 of Max and 0.95..1.02 of Min.
const (
	maxFloor = 0.85
	minCeil  = 1.15
)

func TestRateControl(t *testing.T) {
	for _, r := range media.Ladder {
		t.Run(r.Size.String()+"/max", func(t *testing.T) {
			got := ladderRun(t, r, r.Max, media.L1T1).rate(30, r.Rate(30))
			if float64(got) < maxFloor*float64(r.Max) {
				t.Fatalf("output %v at target %v: below %.2f of it", got, r.Max, maxFloor)
			}
		})
		t.Run(r.Size.String()+"/min", func(t *testing.T) {
			got := ladderRun(t, r, r.Min, media.L1T1).rate(30, r.Rate(30))
			if float64(got) > minCeil*float64(r.Min) {
				t.Fatalf("output %v at target %v: above %.2f of it", got, r.Min, minCeil)
			}
		})
	}
}

// TestRateControlFastSource checks the rungs' Min from a 60 fps source
// (media.Rung.MinAt): the encoder holds MinAt(60), while Min itself, set
// at 30 fps, is below its coarsest quantizer's floor there.
func TestRateControlFastSource(t *testing.T) {
	for _, r := range media.Ladder[1:3] {
		t.Run(r.Size.String(), func(t *testing.T) {
			run := func(b rate.Bitrate) float64 {
				res := encodeRun(t, runConfig{size: r.Size, bitrate: b, frames: 120, fps: 60, layers: media.L1T3})
				return float64(res.rate(30, 60)) / float64(b)
			}
			if got := run(r.MinAt(60)); got > minCeil {
				t.Errorf("output at MinAt(60) %v: %.2f of it, want at most %.2f", r.MinAt(60), got, minCeil)
			}
			if got := run(r.Min); got < 1.3 {
				t.Errorf("output at Min %v from 60 fps: %.2f of it, want over 1.3 (the floor MinAt keeps clear of)", r.Min, got)
			}
		})
	}
}

// TestRecodeSmallFrames encodes 450 frames at the lowest rung (160x90, L1T3,
// 15 fps, 85 kb/s) and requires the frames' sizes to vary from one to the
// next by at most recodeNoise (the log size's mean absolute change, as a
// standard deviation: times √π/2) and the output to stay on the target: at
// the lowest rung's size libvpx's good-quality deadline re-encodes a frame
// that misses its size (0.093 measured here; 0.117 with the realtime
// deadline).
func TestRecodeSmallFrames(t *testing.T) {
	const recodeNoise = 0.105
	sz, target := media.Size{W: 160, H: 90}, 85*rate.Kbps
	res := encodeRun(t, runConfig{size: sz, bitrate: target, frames: 450, fps: 15, layers: media.L1T3})
	var dev float64
	from := 60
	for i := from + 1; i < len(res.bytes); i++ {
		dev += math.Abs(math.Log(float64(res.bytes[i]) / float64(res.bytes[i-1])))
	}
	noise := dev / float64(len(res.bytes)-from-1) * math.Sqrt(math.Pi) / 2
	got := res.rate(from, 15)
	t.Logf("frame-to-frame noise %.3f, output %.3f of the target", noise, float64(got)/float64(target))
	if noise > recodeNoise {
		t.Errorf("frame-to-frame noise %.3f, want at most %.3f", noise, recodeNoise)
	}
	if r := float64(got) / float64(target); r < 0.95 || r > 1.05 {
		t.Errorf("output %v at target %v: %.3f of it, want 0.95 to 1.05", got, target, r)
	}
}

// TestFrameDurations encodes frames at a rate below the configured FPS, as
// the sender does at its 15 fps rung, and requires the output bitrate over
// real time to track the target, with and without temporal layers, whether
// the rate comes from the configuration or from each frame's Interval.
func TestFrameDurations(t *testing.T) {
	tests := []struct {
		name     string
		fps      int           // configured
		interval time.Duration // set on each frame
		ticks    int           // of 1/30 s between captures
	}{
		{"10 fps configured", 10, 0, 3},
		{"5 fps configured", 5, 0, 6},
		{"15 fps by interval", 30, time.Second / 15, 2},
		{"10 fps by interval", 30, time.Second / 10, 3},
	}
	sz := media.Size{W: 640, H: 360}
	target := 800 * rate.Kbps
	for _, tt := range tests {
		for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				cfg := media.EncoderConfig{Size: sz, Bitrate: target, FPS: tt.fps, Scalability: mode}
				sizes := encodeEvery(t, cfg, tt.interval, 60, func(int) int { return tt.ticks })
				var bytes int
				for _, n := range sizes[20:] {
					bytes += n
				}
				secs := float64(len(sizes[20:])*tt.ticks) / 30
				got := rate.Bitrate(float64(bytes) * 8 / secs)
				t.Logf("output %v over real time at target %v", got, target)
				if got < target*7/10 || got > target*13/10 {
					t.Fatalf("output %v over real time at target %v", got, target)
				}
			})
		}
	}
}

// TestGapNotBilled skips frames, as the sender does while a transport
// stalls, and requires the frame after the gap to be about one frame's
// worth, not the gap's: the link carried none of the skipped frames' bits,
// and a frame the gap's size would queue behind itself on the path.
func TestGapNotBilled(t *testing.T) {
	const gapAt, gap = 60, 6 // ticks of 1/30 s
	for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: 2 * rate.Mbps, Scalability: mode}
			sizes := encodeEvery(t, cfg, time.Second/30, gapAt+10, func(i int) int {
				if i == gapAt {
					return gap
				}
				return 1
			})
			before := slices.Clone(sizes[gapAt-12 : gapAt])
			slices.Sort(before)
			med := before[len(before)/2]
			t.Logf("frames before the gap: median %d B; after it: %v", med, sizes[gapAt:gapAt+4])
			if after := sizes[gapAt]; after > 2*med {
				t.Fatalf("frame after a gap of %d intervals: %d B, %.1f times the median frame before it (%d B)", gap, after, float64(after)/float64(med), med)
			}
		})
	}
}

// encodeEvery encodes n frames, the i-th ticks(i) ticks of 1/30 s after
// the one before, each with the given Interval, and returns their sizes.
func encodeEvery(t *testing.T, cfg media.EncoderConfig, interval time.Duration, n int, ticks func(i int) int) []int {
	t.Helper()
	return encodeWith(t, cfg, interval, n, ticks, func(*Encoder, int) {})
}

// encodeWith is encodeEvery calling before(enc, i) ahead of the i-th frame.
func encodeWith(t *testing.T, cfg media.EncoderConfig, interval time.Duration, n int, ticks func(i int) int, before func(enc *Encoder, i int)) []int {
	t.Helper()
	enc, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	f := media.NewFrame(cfg.Size)
	f.Interval = interval
	tick := 0
	sizes := make([]int, 0, n)
	for i := range n {
		before(enc, i)
		tick += ticks(i)
		media.Render(f, t0.Add(time.Duration(tick)*time.Second/30), uint64(tick), "test")
		ef, err := enc.Encode(f, false)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(ef.Data))
	}
	return sizes
}

// TestSetBitrate changes the target mid-stream and requires the output to
// follow it in both directions from the next frame on, with and without
// temporal layers.
func TestSetBitrate(t *testing.T) {
	for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
		t.Run(mode.String(), func(t *testing.T) { setBitrate(t, mode) })
	}
}

func setBitrate(t *testing.T, mode media.Scalability) {
	sz := media.Size{W: 640, H: 360}
	lo, hi := 500*rate.Kbps, 2500*rate.Kbps
	enc, err := NewEncoder(media.EncoderConfig{Size: sz, Bitrate: lo, Scalability: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	f := media.NewFrame(sz)
	var sizes []int
	encode := func(n int) {
		for range n {
			i := len(sizes)
			media.Render(f, t0.Add(time.Duration(i)*time.Second/30), uint64(i), "test")
			ef, err := enc.Encode(f, false)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(ef.Data))
		}
	}
	mean := func(from, to int) float64 {
		s := 0
		for _, n := range sizes[from:to] {
			s += n
		}
		return float64(s) / float64(to-from)
	}
	encode(40)
	if err := enc.SetBitrate(hi); err != nil {
		t.Fatal(err)
	}
	if enc.Bitrate() != hi {
		t.Fatalf("Bitrate() = %v after SetBitrate(%v)", enc.Bitrate(), hi)
	}
	encode(40)
	if err := enc.SetBitrate(lo); err != nil {
		t.Fatal(err)
	}
	encode(40)
	low1, high, low2 := mean(20, 40), mean(60, 80), mean(100, 120)
	t.Logf("mean frame bytes: %.0f at %v, %.0f at %v, %.0f at %v", low1, lo, high, hi, low2, lo)
	if high < 3*low1 || high < 3*low2 {
		t.Fatalf("output did not follow the target: %.0f, %.0f, %.0f bytes per frame", low1, high, low2)
	}
	t.Logf("around the changes: %v, %v", sizes[36:44], sizes[76:84])
	// From the next frame on: the first frame after each change moves.
	if float64(sizes[40]) < 1.5*low1 {
		t.Errorf("first frame after raising the target: %d bytes, before %.0f", sizes[40], low1)
	}
	if float64(sizes[80]) > high/1.5 {
		t.Errorf("first frame after lowering the target: %d bytes, before %.0f", sizes[80], high)
	}
}

// TestLevelReset changes the target after 10 s at another and requires the
// ten frames after the change to follow it, with and without temporal
// layers: libvpx carries its rate-control buffer's level over in bits, so
// without the reset (levelsStale) they come out at 2.3 times the new
// target after a cut to a third and at 0.6 of it after a doubling.
func TestLevelReset(t *testing.T) {
	sz := media.Size{W: 640, H: 360}
	tests := []struct {
		from, to rate.Bitrate
		lo, hi   float64 // bounds on the ten frames' output over the new target
	}{
		{1950 * rate.Kbps, 650 * rate.Kbps, 0, 1.4},
		{1000 * rate.Kbps, 500 * rate.Kbps, 0, 1.4},
		{650 * rate.Kbps, 1300 * rate.Kbps, 0.71, 2},
	}
	for _, tt := range tests {
		for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
			t.Run(fmt.Sprintf("%v-%v/%v", tt.from, tt.to, mode), func(t *testing.T) {
				const at = 300
				cfg := media.EncoderConfig{Size: sz, Bitrate: tt.from, Scalability: mode}
				sizes := encodeWith(t, cfg, 0, at+10, func(int) int { return 1 }, func(enc *Encoder, i int) {
					if i == at {
						if err := enc.SetBitrate(tt.to); err != nil {
							t.Fatal(err)
						}
					}
				})
				n := 0
				for _, b := range sizes[at:] {
					n += b
				}
				got := float64(n*8) / (float64(tt.to) / 30 * 10)
				t.Logf("ten frames after the change: %.2f times the target, %v", got, sizes[at:])
				if got < tt.lo || got > tt.hi {
					t.Fatalf("ten frames after %v -> %v: %.2f times the new target, want %.2f to %.2f", tt.from, tt.to, got, tt.lo, tt.hi)
				}
			})
		}
	}
}

// TestLevelResetAfterProbe raises the target a little every frame for 25
// frames (a probe: 0.2 a second at 30 fps), which the encoder follows just
// below its target, and then cuts it to 0.8, and requires the ten frames
// after the cut to spend the new target: without a reset on a fall by
// more than a tenth (levelsStale) the surplus the probe left in the level
// comes out on top, at 1.10 of the target; reset to the starting level
// rather than the optimal one, they undershoot at 0.84.
func TestLevelResetAfterProbe(t *testing.T) {
	sz := media.Size{W: 640, H: 360}
	const at, ramp, after = 300, 25, 10
	cfg := media.EncoderConfig{Size: sz, Bitrate: 1860 * rate.Kbps, Scalability: media.L1T3}
	target := cfg.Bitrate
	var targets []rate.Bitrate
	sizes := encodeWith(t, cfg, 0, at+ramp+after, func(int) int { return 1 }, func(enc *Encoder, i int) {
		switch {
		case i >= at && i < at+ramp:
			target = target.Scale(1 + 0.2/30)
		case i == at+ramp:
			target = target.Scale(0.8)
		default:
			targets = append(targets, target)
			return
		}
		if err := enc.SetBitrate(target); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target)
	})
	var bits, want float64
	for i := at + ramp; i < len(sizes); i++ {
		bits += float64(sizes[i] * 8)
		want += float64(targets[i]) / 30
	}
	got := bits / want
	t.Logf("%d frames after the cut: %.2f times the target, %v", after, got, sizes[at+ramp:])
	if got < 0.92 || got > 1.06 {
		t.Fatalf("%d frames after a probe's cut: %.2f times the new target, want 0.92 to 1.06", after, got)
	}
}

func TestForceKey(t *testing.T) {
	sz := media.Size{W: 320, H: 180}
	enc, err := NewEncoder(media.EncoderConfig{Size: sz})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	f := media.NewFrame(sz)
	force := map[int]bool{7: true, 8: true, 20: true}
	for i := range 30 {
		capture := t0.Add(time.Duration(i) * time.Second / 30)
		media.Render(f, capture, uint64(i), "test")
		ef, err := enc.Encode(f, force[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 0 || force[i]; ef.Key != want {
			t.Fatalf("frame %d: key %v, want %v", i, ef.Key, want)
		}
		if ef.Size != sz || ef.End.Before(ef.Start) {
			t.Fatalf("frame %d: size %v, start %v, end %v", i, ef.Size, ef.Start, ef.End)
		}
		out, err := dec.Decode(ef.Data)
		if err != nil {
			t.Fatal(err)
		}
		if bad := checkStamp(out, capture); bad != "" {
			t.Fatalf("frame %d: %s", i, bad)
		}
	}
}

// TestSizeChange switches sizes as the sender does when it changes rungs:
// each change must re-initialise the encoder and start with a keyframe that
// a running decoder follows.
func TestSizeChange(t *testing.T) {
	enc, err := NewEncoder(media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: 600 * rate.Kbps})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	seq := []media.Size{{W: 640, H: 360}, {W: 320, H: 180}, {W: 1280, H: 720}, {W: 160, H: 90}, {W: 640, H: 360}}
	i := 0
	for _, sz := range seq {
		f := media.NewFrame(sz)
		for j := range 8 {
			capture := t0.Add(time.Duration(i) * time.Second / 30)
			i++
			media.Render(f, capture, uint64(i), "test")
			ef, err := enc.Encode(f, false)
			if err != nil {
				t.Fatal(err)
			}
			if ef.Key != (j == 0) || ef.Size != sz || enc.Size() != sz {
				t.Fatalf("%v frame %d: key %v, size %v, encoder %v", sz, j, ef.Key, ef.Size, enc.Size())
			}
			out, err := dec.Decode(ef.Data)
			if err != nil {
				t.Fatal(err)
			}
			if out.Size != sz {
				t.Fatalf("decoded %v, want %v", out.Size, sz)
			}
			if bad := checkStamp(out, capture); bad != "" {
				t.Fatalf("%v frame %d: %s", sz, j, bad)
			}
		}
	}
	if enc.Bitrate() != 600*rate.Kbps {
		t.Fatalf("bitrate after size changes = %v", enc.Bitrate())
	}
}

// TestConfig checks that Config reaches libvpx: a thread count it refuses
// is an error, and other settings than the defaults (two threads, so two
// token partitions) give a stream the decoder reads, stamps intact.
func TestConfig(t *testing.T) {
	sz := media.Size{W: 640, H: 360}
	if e, err := (Config{Threads: 1000}).NewEncoder(media.EncoderConfig{Size: sz}); !errors.Is(err, ErrCodec) || e != nil {
		t.Fatalf("1000 threads: %v, %v; want ErrCodec", e, err)
	}
	enc, err := Config{Threads: 2, CPUUsed: -6}.NewEncoder(media.EncoderConfig{Size: sz})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	f := media.NewFrame(sz)
	for i := range 10 {
		capture := t0.Add(time.Duration(i) * time.Second / 30)
		media.Render(f, capture, uint64(i), "test")
		ef, err := enc.Encode(f, false)
		if err != nil {
			t.Fatal(err)
		}
		out, err := dec.Decode(ef.Data)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if bad := checkStamp(out, capture); bad != "" {
			t.Fatalf("frame %d: %s", i, bad)
		}
	}
}

// TestDecodeMatches checks that the decoder returns the encoder's picture:
// at a generous bitrate the noise-free area must come back close.
func TestDecodeMatches(t *testing.T) {
	res := encodeRun(t, runConfig{size: media.Size{W: 320, H: 180}, bitrate: 2 * rate.Mbps, frames: 15, fps: 30, psnr: true})
	if res.psnr < 35 {
		t.Fatalf("decoded picture PSNR %.1f dB, want at least 35", res.psnr)
	}
}

func TestEncoderErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  media.EncoderConfig
		want error
	}{
		{"zero size", media.EncoderConfig{}, media.ErrSize},
		{"odd size", media.EncoderConfig{Size: media.Size{W: 641, H: 360}}, media.ErrSize},
		{"bitrate too low", media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: rate.Kbps}, media.ErrBitrate},
		{"bitrate too high", media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: rate.Gbps}, media.ErrBitrate},
		{"negative bitrate", media.EncoderConfig{Size: media.Size{W: 640, H: 360}, Bitrate: -1}, media.ErrBitrate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEncoder(tt.cfg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if e != nil {
				t.Fatal("encoder returned with an error")
			}
		})
	}

	sz := media.Size{W: 320, H: 180}
	e, err := NewEncoder(media.EncoderConfig{Size: sz})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Bitrate(), media.RungOf(sz).Default(); got != want {
		t.Errorf("default bitrate %v, want %v", got, want)
	}
	if err := e.SetBitrate(0); !errors.Is(err, media.ErrBitrate) {
		t.Errorf("SetBitrate(0) = %v", err)
	}
	if e.LastQuantizer() != -1 {
		t.Errorf("LastQuantizer before any frame = %d", e.LastQuantizer())
	}
	bad := []struct {
		name string
		f    *media.Frame
		want error
	}{
		{"short luma", &media.Frame{Size: sz, Y: make([]byte, 10), U: make([]byte, 160*90), V: make([]byte, 160*90)}, media.ErrFrame},
		{"no chroma", &media.Frame{Size: sz, Y: make([]byte, 320*180)}, media.ErrFrame},
		{"bad size", &media.Frame{Size: media.Size{W: 3, H: 3}}, media.ErrSize},
	}
	for _, b := range bad {
		if _, err := e.Encode(b.f, false); !errors.Is(err, b.want) {
			t.Errorf("%s: Encode err = %v, want %v", b.name, err, b.want)
		}
	}
	f := media.NewFrame(sz)
	media.Render(f, t0, 1, "x")
	if _, err := e.Encode(f, false); err != nil {
		t.Fatal(err)
	}
	if q := e.LastQuantizer(); q < 0 || q > 63 {
		t.Errorf("LastQuantizer = %d", q)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := e.Encode(f, false); !errors.Is(err, media.ErrClosed) {
		t.Errorf("Encode after Close = %v", err)
	}
	if err := e.SetBitrate(rate.Mbps); !errors.Is(err, media.ErrClosed) {
		t.Errorf("SetBitrate after Close = %v", err)
	}
}

func TestDecoderErrors(t *testing.T) {
	sz := media.Size{W: 160, H: 90}
	enc, err := NewEncoder(media.EncoderConfig{Size: sz})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	f := media.NewFrame(sz)
	media.Render(f, t0, 1, "x")
	key, err := enc.Encode(f, false)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	inputs := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"one byte", []byte{0}},
		{"garbage", []byte("this is not a VP8 frame at all, not even close")},
		{"truncated keyframe", key.Data[:10]},
	}
	for _, in := range inputs {
		if _, err := dec.Decode(in.data); !errors.Is(err, ErrCodec) {
			t.Errorf("%s: err = %v, want ErrCodec", in.name, err)
		}
	}
	// The decoder is still usable.
	out, err := dec.Decode(key.Data)
	if err != nil {
		t.Fatal(err)
	}
	if bad := checkStamp(out, t0); bad != "" {
		t.Fatal(bad)
	}
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := dec.Decode(key.Data); !errors.Is(err, media.ErrClosed) {
		t.Fatalf("Decode after Close = %v", err)
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range []struct {
		size media.Size
		br   rate.Bitrate
	}{
		{media.Size{W: 640, H: 360}, 1500 * rate.Kbps},
		{media.Size{W: 1280, H: 720}, 8 * rate.Mbps},
		{media.Size{W: 1280, H: 720}, 20 * rate.Mbps},
	} {
		b.Run(fmt.Sprintf("%v/%v", c.size, c.br), func(b *testing.B) {
			// Pre-render a second of pictures so only encoding is timed.
			frames := make([]*media.Frame, 30)
			for i := range frames {
				frames[i] = media.NewFrame(c.size)
				media.Render(frames[i], t0.Add(time.Duration(i)*time.Second/30), uint64(i), "bench")
			}
			enc, err := NewEncoder(media.EncoderConfig{Size: c.size, Bitrate: c.br})
			if err != nil {
				b.Fatal(err)
			}
			defer enc.Close()
			var bytes int
			i := 0
			for b.Loop() {
				f := frames[i%len(frames)]
				f.Capture = t0.Add(time.Duration(i) * time.Second / 30)
				ef, err := enc.Encode(f, false)
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(ef.Data)
				i++
			}
			b.ReportMetric(float64(bytes)*8*30/float64(i)/1e6, "Mb/s")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		size media.Size
		br   rate.Bitrate
	}{
		{media.Size{W: 640, H: 360}, 1500 * rate.Kbps},
		{media.Size{W: 1280, H: 720}, 20 * rate.Mbps},
	} {
		b.Run(fmt.Sprintf("%v/%v", c.size, c.br), func(b *testing.B) {
			enc, err := NewEncoder(media.EncoderConfig{Size: c.size, Bitrate: c.br})
			if err != nil {
				b.Fatal(err)
			}
			defer enc.Close()
			f := media.NewFrame(c.size)
			var stream [][]byte
			for i := range 60 {
				media.Render(f, t0.Add(time.Duration(i)*time.Second/30), uint64(i), "bench")
				ef, err := enc.Encode(f, i%30 == 0)
				if err != nil {
					b.Fatal(err)
				}
				stream = append(stream, ef.Data)
			}
			dec, err := NewDecoder()
			if err != nil {
				b.Fatal(err)
			}
			defer dec.Close()
			i := 0
			for b.Loop() {
				if _, err := dec.Decode(stream[i%len(stream)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
