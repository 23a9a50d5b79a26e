package sender

import (
	"math/rand/v2"
	"time"

	"replenish/rate"
)

// The timing report's cost on the wire: the RTCP APP header and the
// report's own header (plus two bytes of framing), then 32 bytes a frame.
const (
	reportBaseBytes  = 34
	reportEntryBytes = 32
)

// reportShare is the largest share of the target bitrate the timing reports
// may take. A report with every frame's timing costs 32 bytes a frame: 5% of
// a 100 kb/s link at 15 fps, and 1.8% at 500 kb/s and 30 fps, bytes the
// video does not get. Within the share a report carries a random sample of
// the frames since the last one; the viewer's latency parts are percentiles
// over a window, which a sample estimates without bias. At 2 Mb/s and above
// every frame fits.
const reportShare = 0.01

// ReportPlan says whether a timing report is due, since after the last one,
// with n timings waiting, on a stream whose target bitrate is target, and how
// many of the n it may carry. A report is due every reportEvery once the
// share has room for one timing (at the lowest rung's rates, every half
// second or so), and at once when n reaches maxReport/2, so that timings are
// not lost to the cap. A zero target (unknown) puts no limit on the report.
// The path model (sender/pathmodel) charges the reports' bytes by it.
func ReportPlan(since time.Duration, target rate.Bitrate, n int) (due bool, keep int) {
	if n <= 0 {
		return false, 0
	}
	if target <= 0 {
		return since >= reportEvery || n >= maxReport/2, n
	}
	budget := target.BytesPerSecond() * reportShare * since.Seconds()
	keep = int((budget - reportBaseBytes) / reportEntryBytes)
	due = since >= reportEvery && keep >= 1 || n >= maxReport/2
	return due, min(max(keep, 1), n)
}

// sampleOf keeps k of the timings in ts, each k-subset equally likely, in
// their order, and returns them in ts's backing array. A random sample,
// not every n/k-th frame: with temporal layers a fixed stride would keep
// frames of the same layer again and again.
func sampleOf[T any](ts []T, k int) []T {
	if k >= len(ts) {
		return ts
	}
	out := ts[:0]
	for i, t := range ts {
		if rand.IntN(len(ts)-i) < k-len(out) {
			out = append(out, t)
		}
	}
	return out
}
