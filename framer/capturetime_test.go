package framer

import (
	"testing"
	"time"
)

// TestCaptureTimeInterpolated sends 100 frames of an L1T3 stream at
// 30 fps, with a keyframe at the start and at 1.5 s and the capture clock
// stepping back once, behind the previous frame, and checks which frames carry their capture time
// (the first, keyframes, a base-layer frame once a second, the frame the
// RTP clock cannot place) and that the Assembler gives every frame its
// capture time, also when a relay drops the upper layers.
func TestCaptureTimeInterpolated(t *testing.T) {
	layers := []Layer{{Present: true, TID: 0}, {Present: true, TID: 2}, {Present: true, TID: 1}, {Present: true, TID: 2}}
	p := NewPacketizer(PacketizerConfig{SSRC: 7, MaxPacketSize: 1200})
	all, base := NewAssembler(0), NewAssembler(0)
	var stamped []int
	const frames = 100
	for n := range frames {
		capture := testEpoch.Add(time.Duration(n) * time.Second / 30)
		if n >= 60 {
			capture = capture.Add(-50 * time.Millisecond) // the clock stepped back at frame 60
		}
		key := n == 0 || n == 45
		l := layers[n%4]
		l.TL0PicIdx = uint8(n / 4)
		pkts, _, err := p.PacketizeLayer(vp8Frame(key, 64, 64, 300, byte(n)), capture, l)
		if err != nil {
			t.Fatal(err)
		}
		if !parsePackets(t, pkts)[0].capture.IsZero() {
			stamped = append(stamped, n)
		}
		check := func(a *Assembler, who string) {
			var fr *Frame
			for _, b := range pkts {
				if fr, err = a.Push(b); err != nil {
					t.Fatalf("%s: frame %d: %v", who, n, err)
				}
			}
			// The RTP clock has 90 kHz ticks: an extrapolated capture
			// time is within a tick (11.1 µs, and a nanosecond of
			// rounding).
			if d := capture.Sub(fr.Capture).Abs(); fr.Capture.IsZero() || d > time.Second/ClockRate+time.Nanosecond {
				t.Errorf("%s: frame %d: capture %v, want %v", who, n, fr.Capture, capture)
			}
		}
		check(all, "every layer")
		if l.TID == 0 {
			check(base, "base layer only")
		}
	}
	// 0 and 45 are keyframes; 60 the frame the step back put on the tick
	// after the previous frame's, 17 ms off its capture; 32 (1.07 s) and
	// 92 (2.97 s, 1.02 s after 60) the first base-layer frames a second
	// after the last frame with its capture time.
	want := []int{0, 32, 45, 60, 92}
	if len(stamped) != len(want) {
		t.Fatalf("frames with their capture time %v, want %v", stamped, want)
	}
	for i := range want {
		if stamped[i] != want[i] {
			t.Fatalf("frames with their capture time %v, want %v", stamped, want)
		}
	}
}

// TestCaptureStampLimits checks that a capture time is not extrapolated to
// another stream or from more than CaptureTimeMaxAge away, in either
// direction across the RTP timestamp's wrap.
func TestCaptureStampLimits(t *testing.T) {
	var c captureStamp
	if got := c.resolve(1, 100, time.Time{}); !got.IsZero() {
		t.Errorf("with nothing received: %v, want zero", got)
	}
	ts := uint32(0xFFFFFFFF - 9000) // 100 ms before the wrap
	c.resolve(1, ts, testEpoch)
	for _, tc := range []struct {
		ssrc uint32
		ts   uint32
		want time.Duration // from testEpoch; -1: none
	}{
		{1, ts + 18000, 200 * time.Millisecond}, // across the wrap
		{1, ts - 9000, -100 * time.Millisecond},
		{1, ts + uint32(maxAgeTicks), CaptureTimeMaxAge},
		{1, ts + uint32(maxAgeTicks) + 1, -1},
		{1, ts - uint32(maxAgeTicks) - 1, -1},
		{2, ts + 90, -1},
	} {
		got := c.resolve(tc.ssrc, tc.ts, time.Time{})
		if tc.want == -1 {
			if !got.IsZero() {
				t.Errorf("ssrc %d ts %d: %v, want none", tc.ssrc, tc.ts, got)
			}
			continue
		}
		if !got.Equal(testEpoch.Add(tc.want)) {
			t.Errorf("ssrc %d ts %d: %v, want %v", tc.ssrc, tc.ts, got.Sub(testEpoch), tc.want)
		}
	}
}
