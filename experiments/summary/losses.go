package summary

import (
	"math"
	"slices"
	"sort"

	"replenish/experiments/report"
	"replenish/records"
	"replenish/transport"
)

// lossFields sets what a video run lost, over every transport: the
// freezes the viewer saw, the frames it found lost and those it could not
// decode, and in QUIC's expire mode what expiry cost.
func lossFields(r *report.Run, in Input, v videoData) {
	r.Freezes = freezes(in.TL, v.Received)
	lost, undecodable := 0, 0
	for _, l := range v.Lost {
		if in.TL.in(l.ReceivedUs) {
			lost += l.LostFrames
		}
	}
	for _, x := range v.Received {
		if x.Undecodable && in.TL.in(x.ReceivedUs) {
			undecodable++
		}
	}
	r.FramesLost, r.Undecodable = &lost, &undecodable
	if in.Spec.Mode.Policy == transport.Expire {
		r.Expiry = expiry(v.Conns)
	}
}

// freezes counts the gaps of more than report.FreezeMs between
// consecutive decodable frames the viewer received, and sums their
// lengths, within the measured window. A gap that crosses an edge of the
// window counts (with its part inside); without a frame before the window
// (or after it) its edge stands in.
func freezes(tl Timeline, recv []records.ViewerFrame) *report.Freezes {
	var at []int64
	for _, x := range recv {
		if !x.Undecodable && x.ReceivedUs > 0 {
			at = append(at, x.ReceivedUs)
		}
	}
	slices.Sort(at)
	from, to := tl.window()
	lo := sort.Search(len(at), func(i int) bool { return at[i] >= from })
	hi := sort.Search(len(at), func(i int) bool { return at[i] > to })
	times := []int64{from}
	if lo > 0 {
		times[0] = at[lo-1]
	}
	times = append(times, at[lo:hi]...)
	if hi < len(at) {
		times = append(times, at[hi])
	} else {
		times = append(times, to)
	}
	f := &report.Freezes{}
	for i := 1; i < len(times); i++ {
		a, b := times[i-1], times[i]
		if b-a <= report.FreezeMs*1000 {
			continue
		}
		f.Count++
		f.TotalMs += ms(min(b, to) - max(a, from))
	}
	f.TotalMs = math.Round(f.TotalMs*1000) / 1000
	return f
}

// expiry sums the expire mode's counters of the connections.
func expiry(conns []records.Conn) *report.Expiry {
	e := &report.Expiry{}
	var written uint64
	for _, c := range conns {
		e.Dropped += c.ExpiredDropped
		e.Reset += c.ExpiredReset
		e.BytesReset += c.BytesReset
		written += c.BytesWritten
	}
	if written > 0 {
		e.Waste = float64(e.BytesReset) / float64(written)
	}
	return e
}
