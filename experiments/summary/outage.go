package summary

import (
	"math"

	"replenish/experiments/scenario"
	"replenish/records"
)

// outageRecoveries returns, for each outage, the seconds from the path's
// return (its AT=up) until the viewer received the first decodable frame
// captured at or after the return: frames captured before it, stale ones
// that waited out the outage in the sender's or the network's buffers, do
// not count. Nil for an outage whose return fell in the warm-up, or with
// no such frame before the next outage began or the run ended. Capture
// times are the sender's and reception times the viewer's, which on one
// host (the emulator's namespaces) are the same clock.
func outageRecoveries(in Input, outages []scenario.Outage, recv []records.ViewerFrame) []*float64 {
	out := make([]*float64, len(outages))
	for i, o := range outages {
		if o.Up < in.Spec.Warmup {
			continue
		}
		up := in.TL.us(o.Up)
		horizon := in.TL.us(in.Spec.Total())
		if i+1 < len(outages) {
			horizon = in.TL.us(outages[i+1].Down)
		}
		first := int64(math.MaxInt64)
		for _, x := range recv {
			if x.Undecodable || x.CaptureUs < up || x.ReceivedUs <= 0 || x.ReceivedUs > horizon {
				continue
			}
			first = min(first, x.ReceivedUs)
		}
		if first != math.MaxInt64 {
			v := math.Round(float64(first-up)/1e3) / 1e3
			out[i] = &v
		}
	}
	return out
}
