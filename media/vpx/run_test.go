package vpx

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// t0 is an arbitrary capture epoch for tests, away from any wraparound.
var t0 = time.Date(2026, 10, 29, 15, 57, 15, 123_000_000, time.UTC)

// runConfig describes an encode run over rendered frames.
type runConfig struct {
	size     media.Size
	bitrate  rate.Bitrate
	frames   int
	fps      int // capture rate; frames are captured every 1/fps
	keyEvery int // force a keyframe every keyEvery frames; 0 never
	psnr     bool
	layers   media.Scalability
}

// runResult summarises an encode run.
type runResult struct {
	bytes     []int // per frame
	keys      []bool
	layers    []media.Layer
	q         []int
	psnr      float64 // mean luma PSNR between the stamp band and the noise, last two thirds
	misreads  int
	firstBad  string
	encodeDur time.Duration
}

// rate returns the bitrate of frames [from, len) at the run's capture rate.
func (r runResult) rate(from, fps int) rate.Bitrate { return r.layerRate(from, fps, 3) }

// layerRate returns the bitrate of the frames [from, len) of temporal
// layers 0 to tid at the run's capture rate: what a receiver given those
// layers gets. Frames without layers count as TL0.
func (r runResult) layerRate(from, fps int, tid uint8) rate.Bitrate {
	n := 0
	for i, b := range r.bytes[from:] {
		if r.layers[from+i].TID <= tid {
			n += b
		}
	}
	return rate.Bitrate(float64(n) * 8 * float64(fps) / float64(len(r.bytes)-from))
}

// meanQ returns the mean quantizer of frames [from, len).
func (r runResult) meanQ(from int) float64 {
	s := 0
	for _, q := range r.q[from:] {
		s += q
	}
	return float64(s) / float64(len(r.q)-from)
}

// encodeRun renders frames, encodes them, decodes them and reads their
// stamps back, comparing each with the frame's capture time.
func encodeRun(tb testing.TB, rc runConfig) runResult {
	tb.Helper()
	enc, err := NewEncoder(media.EncoderConfig{Size: rc.size, Bitrate: rc.bitrate, FPS: rc.fps, Scalability: rc.layers})
	if err != nil {
		tb.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		tb.Fatal(err)
	}
	defer dec.Close()
	var res runResult
	var psnrSum float64
	f := media.NewFrame(rc.size)
	for i := range rc.frames {
		capture := t0.Add(time.Duration(i) * time.Second / time.Duration(rc.fps))
		media.Render(f, capture, uint64(i), "test")
		ef, err := enc.Encode(f, rc.keyEvery > 0 && i > 0 && i%rc.keyEvery == 0)
		if err != nil {
			tb.Fatalf("frame %d: %v", i, err)
		}
		res.encodeDur += ef.End.Sub(ef.Start)
		res.bytes = append(res.bytes, len(ef.Data))
		res.keys = append(res.keys, ef.Key)
		res.layers = append(res.layers, ef.Layer)
		res.q = append(res.q, enc.LastQuantizer())
		out, err := dec.Decode(ef.Data)
		if err != nil {
			tb.Fatalf("frame %d: decode: %v", i, err)
		}
		if bad := checkStamp(out, capture); bad != "" {
			res.misreads++
			if res.firstBad == "" {
				res.firstBad = fmt.Sprintf("frame %d: %s", i, bad)
			}
		}
		if rc.psnr && i >= rc.frames/3 {
			lo, hi := cleanRows(rc.size)
			lo, hi = lo*rc.size.W, hi*rc.size.W
			psnrSum += psnr(f.Y[lo:hi], out.Y[lo:hi])
		}
	}
	res.psnr = psnrSum / float64(rc.frames-rc.frames/3)
	return res
}

// checkStamp reads f's stamp and returns "" if it gives capture to the
// millisecond, or what went wrong. The reader's reference time is 40 ms
// later, as a viewer's clock would be.
func checkStamp(f *media.Frame, capture time.Time) string {
	v, err := media.ReadStamp(f.Y, f.Size.W, f.Size)
	if err != nil {
		return err.Error()
	}
	if got := media.StampTime(v, capture.Add(40*time.Millisecond)); got.UnixMilli() != capture.UnixMilli() {
		return fmt.Sprintf("read %v, captured %v", got, capture)
	}
	return ""
}

// cleanRows returns the rows [lo, hi) of a picture media.Render draws at
// size sz that hold no noise: from the stamp band down to the noise, which
// covers the lower two thirds of the area below the band.
func cleanRows(sz media.Size) (lo, hi int) {
	band := media.StampBand(sz)
	return band, band + (sz.H-band)/3
}

func psnr(a, b []byte) float64 {
	var se float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	if se == 0 {
		return 99
	}
	return 10 * math.Log10(255*255*float64(len(a))/se)
}

// ladderRuns caches the 90-frame runs at each rung's Min and Max (at the
// rung's frame rate), which several tests inspect.
var ladderRuns struct {
	sync.Mutex
	m map[string]runResult
}

// ladderRun returns the cached result of a 90-frame run for rung r at
// bitrate br with layers s, captured at the rung's frame rate (the
// sender's, for a 30 fps source).
func ladderRun(tb testing.TB, r media.Rung, br rate.Bitrate, s media.Scalability) runResult {
	tb.Helper()
	key := fmt.Sprint(r.Size, br, s)
	ladderRuns.Lock()
	defer ladderRuns.Unlock()
	if res, ok := ladderRuns.m[key]; ok {
		return res
	}
	res := encodeRun(tb, runConfig{size: r.Size, bitrate: br, frames: 90, fps: r.Rate(30), layers: s})
	if ladderRuns.m == nil {
		ladderRuns.m = make(map[string]runResult)
	}
	ladderRuns.m[key] = res
	return res
}
