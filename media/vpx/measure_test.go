package vpx

import (
	"fmt"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// BenchmarkRungs measures the ladder: for each rung at its Min, Default and
// Max bitrate, a 90-frame run at the rung's frame rate, reporting the bitrate of frames
// 30..89 (kb/s and as a fraction of the target), the mean quantizer over
// them, the keyframe size, the luma PSNR of the noise-free picture area,
// stamp misreads and the encode time per frame. One iteration is one run.
func BenchmarkRungs(b *testing.B) {
	for _, r := range media.Ladder {
		for _, br := range []struct {
			name string
			v    rate.Bitrate
		}{{"min", r.Min}, {"default", r.Default()}, {"max", r.Max}} {
			b.Run(fmt.Sprintf("%v/%s", r.Size, br.name), func(b *testing.B) {
				var res runResult
				for b.Loop() {
					res = encodeRun(b, runConfig{size: r.Size, bitrate: br.v, frames: 90, fps: r.Rate(30), psnr: true})
				}
				got := res.rate(30, r.Rate(30))
				b.ReportMetric(float64(got)/1000, "kb/s")
				b.ReportMetric(float64(got)/float64(br.v), "of-target")
				b.ReportMetric(res.meanQ(30), "q")
				b.ReportMetric(float64(res.bytes[0]), "key-B")
				b.ReportMetric(res.psnr, "dB")
				b.ReportMetric(float64(res.misreads), "misreads")
				b.ReportMetric(float64(res.encodeDur)/float64(time.Millisecond)/float64(len(res.bytes)), "ms/frame")
			})
		}
	}
}
