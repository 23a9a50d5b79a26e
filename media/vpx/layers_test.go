package vpx

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// TestStampThroughLayers is TestStampThroughCodec with three temporal
// layers: at each rung's Min and Max, every stamp of a 90-frame run reads
// back, the frames follow L1T3's pattern, and the rate control bounds of
// TestRateControl hold for the stream as a whole.
func TestStampThroughLayers(t *testing.T) {
	for _, r := range media.Ladder {
		for _, br := range []rate.Bitrate{r.Min, r.Max} {
			t.Run(fmt.Sprintf("%v/%v", r.Size, br), func(t *testing.T) {
				res := ladderRun(t, r, br, media.L1T3)
				if res.misreads != 0 {
					t.Fatalf("%d of %d stamps misread; first: %s", res.misreads, len(res.bytes), res.firstBad)
				}
				checkPattern(t, res.layers, res.keys)
				got := res.rate(30, r.Rate(30))
				if br == r.Max && float64(got) < maxFloor*float64(br) || br == r.Min && float64(got) > minCeil*float64(br) {
					t.Fatalf("output %v at target %v", got, br)
				}
			})
		}
	}
}

// checkPattern requires layers to be media.Layering's L1T3 pattern with
// keyframes where keys says, from the first frame's TL0PicIdx on.
func checkPattern(t *testing.T, layers []media.Layer, keys []bool) {
	t.Helper()
	ref := media.NewLayeringAt(media.L1T3, layers[0].TL0PicIdx)
	for i, got := range layers {
		if want := ref.Next(keys[i]); got != want {
			t.Fatalf("frame %d (key %v): layer %+v, want %+v", i, keys[i], got, want)
		}
	}
}

// TestLayerSplit checks that rate control gives each layer its share of
// the target (TL0 25%, TL1 25%, TL2 50%: every frame about the average),
// also after a keyframe restarted the pattern (libvpx must be told each
// frame's layer), and keeps it across SetBitrate, and that the stream
// follows the target.
func TestLayerSplit(t *testing.T) {
	sz := media.Size{W: 640, H: 360}
	lo, hi := 600*rate.Kbps, 1800*rate.Kbps
	enc, err := NewEncoder(media.EncoderConfig{Size: sz, Bitrate: lo, Scalability: media.L1T3})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	f := media.NewFrame(sz)
	var frames []media.EncodedFrame
	encode := func(n int) {
		for range n {
			i := len(frames)
			media.Render(f, t0.Add(time.Duration(i)*time.Second/30), uint64(i), "test")
			ef, err := enc.Encode(f, i == 6) // a keyframe out of libvpx's own period
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, ef)
		}
	}
	// check requires frames [from, to) at target b: the whole within 15%,
	// each layer's share within 8 points of its due.
	check := func(from, to int, b rate.Bitrate) {
		var bytes [3]int
		all := 0
		for _, ef := range frames[from:to] {
			bytes[ef.Layer.TID] += len(ef.Data)
			all += len(ef.Data)
		}
		got := rate.Bitrate(float64(all) * 8 * 30 / float64(to-from))
		share := [3]float64{}
		for i := range share {
			share[i] = float64(bytes[i]) / float64(all)
		}
		t.Logf("frames %d..%d at %v: %v, shares %.2f", from, to, b, got, share)
		if got < b*85/100 || got > b*115/100 {
			t.Errorf("frames %d..%d: %v at target %v", from, to, got, b)
		}
		for i, want := range [3]float64{0.25, 0.25, 0.5} {
			if share[i] < want-0.08 || share[i] > want+0.08 {
				t.Errorf("frames %d..%d: TL%d has %.2f of the bits, want %.2f", from, to, i, share[i], want)
			}
		}
	}
	encode(64)
	if err := enc.SetBitrate(hi); err != nil {
		t.Fatal(err)
	}
	encode(64)
	if err := enc.SetBitrate(lo); err != nil {
		t.Fatal(err)
	}
	encode(64)
	check(24, 64, lo)
	check(88, 128, hi)
	check(152, 192, lo)
}

// TestLayerPattern forces keyframes at each position of the period and
// changes size: each keyframe is a TL0 frame that restarts the pattern,
// the TL0PicIdx runs on across re-initialisations, and a decoder that gets
// every frame reads every stamp.
func TestLayerPattern(t *testing.T) {
	small, large := media.Size{W: 160, H: 90}, media.Size{W: 320, H: 180}
	enc, err := NewEncoder(media.EncoderConfig{Size: small, Scalability: media.L1T3})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	force := map[int]bool{9: true, 14: true, 19: true, 20: true}
	var layers []media.Layer
	var keys []bool
	for i := range 40 {
		sz := small
		if i >= 28 {
			sz = large
		}
		f := media.NewFrame(sz)
		capture := t0.Add(time.Duration(i) * time.Second / 30)
		media.Render(f, capture, uint64(i), "test")
		ef, err := enc.Encode(f, force[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 0 || i == 28 || force[i]; ef.Key != want {
			t.Fatalf("frame %d: key %v, want %v", i, ef.Key, want)
		}
		layers, keys = append(layers, ef.Layer), append(keys, ef.Key)
		out, err := dec.Decode(ef.Data)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if bad := checkStamp(out, capture); bad != "" {
			t.Fatalf("frame %d: %s", i, bad)
		}
	}
	checkPattern(t, layers, keys)

	// Without layers every frame has the zero Layer.
	plain, err := NewEncoder(media.EncoderConfig{Size: small})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	f := media.NewFrame(small)
	for i := range 5 {
		media.Render(f, t0.Add(time.Duration(i)*time.Second/30), uint64(i), "test")
		if ef, err := plain.Encode(f, false); err != nil || ef.Layer != (media.Layer{}) {
			t.Fatalf("frame %d without layers: %+v, %v", i, ef.Layer, err)
		}
	}
	if _, err := NewEncoder(media.EncoderConfig{Size: small, Scalability: 9}); !errors.Is(err, media.ErrScalability) {
		t.Fatalf("unknown mode: %v", err)
	}
}

// TestLayerKeyframeCap is TestKeyframeCap with layers: a keyframe is a TL0
// frame, whose rate control budget is TL0's average frame, and must still
// stay within 4 nominal frames.
func TestLayerKeyframeCap(t *testing.T) {
	for _, r := range media.Ladder {
		br := r.Default()
		t.Run(fmt.Sprintf("%v/%v", r.Size, br), func(t *testing.T) {
			res := encodeRun(t, runConfig{size: r.Size, bitrate: br, frames: 61, fps: 30, keyEvery: 30, layers: media.L1T3})
			nominal := br.Bytes(time.Second / 30)
			for _, i := range []int{0, 30, 60} {
				if !res.keys[i] || res.bytes[i] > 4*nominal {
					t.Errorf("frame %d: key %v, %d bytes, nominal frame %d", i, res.keys[i], res.bytes[i], nominal)
				}
			}
		})
	}
}

// layeredStream is an encoded L1T3 run and what a decoder given every
// frame made of it.
type layeredStream struct {
	frames   []media.EncodedFrame
	captures []time.Time
	full     []*media.Frame // decoded from the whole stream
}

// encodeLayered encodes n frames at sz with L1T3, keyframes at the frames
// in keys (and the first), and decodes the whole stream.
func encodeLayered(t *testing.T, sz media.Size, n int, keys map[int]bool) layeredStream {
	t.Helper()
	enc, err := NewEncoder(media.EncoderConfig{Size: sz, Scalability: media.L1T3})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var s layeredStream
	f := media.NewFrame(sz)
	for i := range n {
		capture := t0.Add(time.Duration(i) * time.Second / 30)
		media.Render(f, capture, uint64(i), "test")
		ef, err := enc.Encode(f, keys[i])
		if err != nil {
			t.Fatal(err)
		}
		s.frames = append(s.frames, ef)
		s.captures = append(s.captures, capture)
	}
	s.full = s.decode(t, func(int, media.Layer) bool { return true }, nil)
	return s
}

// decode decodes the frames keep accepts, in order, and returns the
// pictures (nil for frames not kept). A frame that fails to decode fails
// the test; so does a stamp that does not read back, unless bad is
// non-nil, which then collects the indices of those frames.
func (s layeredStream) decode(t *testing.T, keep func(i int, l media.Layer) bool, bad *[]int) []*media.Frame {
	t.Helper()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out := make([]*media.Frame, len(s.frames))
	for i, ef := range s.frames {
		if !keep(i, ef.Layer) {
			continue
		}
		pic, err := dec.Decode(ef.Data)
		if err != nil {
			t.Fatalf("frame %d (%+v): %v", i, ef.Layer, err)
		}
		out[i] = pic
		if msg := checkStamp(pic, s.captures[i]); msg != "" {
			if bad == nil {
				t.Fatalf("frame %d (%+v): %s", i, ef.Layer, msg)
			}
			*bad = append(*bad, i)
		}
	}
	return out
}

// cleanPSNR returns the luma PSNR of pic against src over the rows that
// hold no noise (see cleanRows).
func cleanPSNR(src, pic *media.Frame) float64 {
	lo, hi := cleanRows(src.Size)
	return psnr(src.Y[lo*src.Size.W:hi*src.Size.W], pic.Y[lo*src.Size.W:hi*src.Size.W])
}

// samePicture reports whether a and b are the same picture, to the bit.
func samePicture(a, b *media.Frame) bool {
	return a.Size == b.Size && bytes.Equal(a.Y, b.Y) && bytes.Equal(a.U, b.U) && bytes.Equal(a.V, b.V)
}

// TestLayerDrop proves the layering with a decoder: with the upper layers
// dropped, every frame left decodes to exactly the picture a decoder given
// every frame makes (so it references nothing that was dropped), and its
// stamp reads back. A TL0 frame lost breaks the pictures until the next
// keyframe (luma PSNR at least 2 dB below the whole stream's; measured 4
// to 16 dB below), and the TL0PicIdx of the next TL0 frame shows the loss.
func TestLayerDrop(t *testing.T) {
	const keyAt = 44
	s := encodeLayered(t, media.Size{W: 320, H: 180}, 60, map[int]bool{keyAt: true})
	for _, tc := range []struct {
		name string
		keep func(i int, l media.Layer) bool
	}{
		{"without TL2", func(_ int, l media.Layer) bool { return l.TID < 2 }},
		{"TL0 only", func(_ int, l media.Layer) bool { return l.TID == 0 }},
		{"TL2 dropped at random", func(i int, l media.Layer) bool { return l.TID < 2 || i%3 != 0 }},
		// A relay that forwarded TL0 only adds the upper layers back at
		// their sync frames (RFC 7741's Y bit).
		{"layers added at sync frames", (&upswitch{from: 20}).keep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.decode(t, tc.keep, nil)
			kept := 0
			for i, pic := range got {
				if pic == nil {
					continue
				}
				kept++
				if !samePicture(pic, s.full[i]) {
					t.Fatalf("frame %d (%+v) decodes differently without the dropped frames", i, s.frames[i].Layer)
				}
			}
			t.Logf("%d of %d frames kept", kept, len(got))
		})
	}

	t.Run("TL0 lost", func(t *testing.T) {
		const lost = 16 // a TL0 frame
		if l := s.frames[lost].Layer; l.TID != 0 || s.frames[lost].Key {
			t.Fatalf("frame %d is %+v", lost, l)
		}
		var misread []int
		got := s.decode(t, func(i int, _ media.Layer) bool { return i != lost }, &misread)
		src := media.NewFrame(media.Size{W: 320, H: 180})
		for i := lost + 1; i < len(got); i++ {
			media.Render(src, s.captures[i], uint64(i), "test")
			p, whole := cleanPSNR(src, got[i]), cleanPSNR(src, s.full[i])
			if i < keyAt && p > whole-2 || i >= keyAt && !samePicture(got[i], s.full[i]) {
				t.Errorf("frame %d (%+v): PSNR %.1f dB, whole stream %.1f dB", i, s.frames[i].Layer, p, whole)
			}
		}
		// The stamps are robust enough to read back all the same.
		t.Logf("stamps misread after the loss: %v", misread)
		next := s.frames[lost+4].Layer
		if next.TID != 0 || next.TL0PicIdx != s.frames[lost].Layer.TL0PicIdx+1 || next.TL0PicIdx-s.frames[lost-4].Layer.TL0PicIdx != 2 {
			t.Errorf("TL0PicIdx %d, %d, %d around the lost frame: the gap does not show",
				s.frames[lost-4].Layer.TL0PicIdx, s.frames[lost].Layer.TL0PicIdx, next.TL0PicIdx)
		}
	})
}

// TestLayerReferences follows libvpx's reference buffers through a decoder
// (which buffers each frame used and which it updated) and checks the
// structure the layers promise: a frame uses only frames of its own layer
// or lower ones, a sync frame only the latest TL0 frame, a frame above TL0
// nothing older than the latest TL0 frame, and a TL2 frame updates no
// buffer, so that any TL2 frame can be dropped alone.
func TestLayerReferences(t *testing.T) {
	s := encodeLayered(t, media.Size{W: 320, H: 180}, 120, map[int]bool{30: true, 61: true, 95: true})
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	bufs := []struct {
		bit  int
		name string
	}{{refLast, "LAST"}, {refGolden, "GF"}, {refAltRef, "ARF"}}
	var holds [3]int // the frame each buffer holds
	lastTL0 := 0
	uses := map[string]int{}
	for i, ef := range s.frames {
		if _, err := dec.Decode(ef.Data); err != nil {
			t.Fatal(err)
		}
		used, updated, err := dec.lastRefs()
		if err != nil {
			t.Fatal(err)
		}
		l := ef.Layer
		for b, buf := range bufs {
			if ef.Key || used&buf.bit == 0 {
				continue
			}
			src := s.frames[holds[b]].Layer
			uses[fmt.Sprintf("TL%d sync=%v uses %s", l.TID, l.Sync, buf.name)]++
			if src.TID > l.TID || l.Sync && src.TID != 0 || l.TID > 0 && holds[b] < lastTL0 {
				t.Errorf("frame %d (%+v) uses %s, which holds frame %d (%+v); the last TL0 frame is %d",
					i, l, buf.name, holds[b], src, lastTL0)
			}
		}
		if l.TID == 2 && updated != 0 {
			t.Errorf("frame %d (%+v) updates buffers %b", i, l, updated)
		}
		for b, buf := range bufs {
			if updated&buf.bit != 0 {
				holds[b] = i
			}
		}
		if l.TID == 0 {
			lastTL0 = i
		}
	}
	t.Logf("references used: %v", uses)
}

// upswitch is a relay's forwarding rule for one receiver: TL0 only before
// frame from, then every layer, each from its first sync frame on (a frame
// of layer t > 0 goes only once layers 1..t have started).
type upswitch struct {
	from    int
	started [3]bool
}

func (u *upswitch) keep(i int, l media.Layer) bool {
	switch {
	case l.TID == 0:
		return true
	case i < u.from:
		return false
	case l.Sync:
		u.started[l.TID] = true
	}
	for t := 1; t <= int(l.TID); t++ {
		if !u.started[t] {
			return false
		}
	}
	return true
}

// BenchmarkLayers measures what L1T3 costs against one layer at the same
// target, at 640x360 and 1280x720 at their Default and Min bitrates: a
// 300-frame run at 30 fps, reporting over frames 30..299 the bitrate (and
// as a fraction of the target), the luma PSNR of the noise-free area, the
// mean quantizer, and for L1T3 the bitrate of TL0 alone and of TL0+TL1 and
// the mean TL0 frame as a multiple of the mean frame. One iteration is one
// run.
func BenchmarkLayers(b *testing.B) {
	for _, r := range media.Ladder[2:] {
		for _, br := range []rate.Bitrate{r.Default(), r.Min} {
			for _, s := range []media.Scalability{media.L1T1, media.L1T3} {
				b.Run(fmt.Sprintf("%v/%v/%v", r.Size, br, s), func(b *testing.B) {
					var res runResult
					for b.Loop() {
						res = encodeRun(b, runConfig{size: r.Size, bitrate: br, frames: 300, fps: 30, psnr: true, layers: s})
					}
					got := res.rate(30, r.Rate(30))
					b.ReportMetric(float64(got)/1000, "kb/s")
					b.ReportMetric(float64(got)/float64(br), "of-target")
					b.ReportMetric(res.psnr, "dB")
					b.ReportMetric(res.meanQ(30), "q")
					b.ReportMetric(float64(res.misreads), "misreads")
					if s == media.L1T3 {
						b.ReportMetric(float64(res.layerRate(30, 30, 0))/1000, "TL0-kb/s")
						b.ReportMetric(float64(res.layerRate(30, 30, 1))/1000, "TL01-kb/s")
						b.ReportMetric(float64(res.layerRate(30, 30, 0))/float64(got)*4, "TL0-frame/mean")
					}
				})
			}
		}
	}
}
