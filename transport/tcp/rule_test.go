package tcp

import (
	"math/rand/v2"
	"testing"
	"time"

	"replenish/rate"
)

func TestDecide(t *testing.T) {
	// A path with a delivery-rate sample of 8 Mb/s (1 MB/s): 15 ms is
	// 15000 bytes.
	sampled := RuleInput{MSS: 1448, Cwnd: 1000, SndWnd: 1 << 30, SRTT: 10 * time.Millisecond,
		DeliveryRate: 8 * rate.Mbps, ReplenishTime: 15 * time.Millisecond}
	// Before the first sample: cwnd 10 × 1448 B per 10 ms = 1.448 MB/s, so
	// 15 ms is 21720 bytes.
	fresh := RuleInput{MSS: 1448, Cwnd: 10, SndWnd: 1 << 20, SRTT: 10 * time.Millisecond,
		ReplenishTime: 15 * time.Millisecond}
	// Seed 000's slow path: 100 kb/s (12500 B/s) makes 15 ms 187 bytes,
	// below one MSS of 1228.
	slow := RuleInput{MSS: 1228, Cwnd: 10, SndWnd: 1 << 20, SRTT: 172 * time.Millisecond,
		DeliveryRate: 100 * rate.Kbps, ReplenishTime: 15 * time.Millisecond}

	with := func(in RuleInput, f func(*RuleInput)) RuleInput { f(&in); return in }
	unsent := func(n int) func(*RuleInput) { return func(in *RuleInput) { in.Unsent = n } }

	for _, tc := range []struct {
		name      string
		in        RuleInput
		invite    bool
		reason    Reason
		source    DrainSource
		drain     rate.Bitrate
		threshold int
		limit     int
	}{
		{"empty backlog", with(sampled, unsent(0)), true, ReasonEmpty, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"empty backlog, zero window", with(fresh, func(in *RuleInput) { in.SndWnd = 0 }), true, ReasonEmpty, DrainWindow, 0, 0, 0},
		{"at half the threshold", with(sampled, unsent(7500)), true, ReasonBelowThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"one byte over half the threshold", with(sampled, unsent(7501)), false, ReasonAboveThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"at the threshold", with(sampled, unsent(15000)), false, ReasonAboveThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"far over threshold", with(sampled, unsent(1<<20)), false, ReasonAboveThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"sample preferred over window", with(sampled, func(in *RuleInput) { in.Unsent = 7501; in.Cwnd = 1 << 20 }),
			false, ReasonAboveThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"no sample: cwnd/srtt at half the threshold", with(fresh, unsent(10860)), true, ReasonBelowThreshold, DrainWindow, 11584 * rate.Kbps, 21720, 10860},
		{"no sample: cwnd/srtt over half the threshold", with(fresh, unsent(10861)), false, ReasonAboveThreshold, DrainWindow, 11584 * rate.Kbps, 21720, 10860},
		{"no sample: peer window limits", with(fresh, func(in *RuleInput) { in.Unsent = 3751; in.SndWnd = 5000 }),
			false, ReasonAboveThreshold, DrainWindow, 4 * rate.Mbps, 7500, 3750},
		{"no sample: peer window limits, at half the threshold", with(fresh, func(in *RuleInput) { in.Unsent = 3750; in.SndWnd = 5000 }),
			true, ReasonBelowThreshold, DrainWindow, 4 * rate.Mbps, 7500, 3750},
		{"no sample: window unknown", with(fresh, func(in *RuleInput) { in.Unsent = 10860; in.SndWnd = -1 }),
			true, ReasonBelowThreshold, DrainWindow, 11584 * rate.Kbps, 21720, 10860},
		{"no sample: zero window", with(fresh, func(in *RuleInput) { in.Unsent = 1; in.SndWnd = 0 }),
			false, ReasonAboveThreshold, DrainWindow, 0, 0, 0},
		{"no rtt at all", with(fresh, func(in *RuleInput) { in.Unsent = 1 << 20; in.SRTT = 0 }),
			true, ReasonNoEstimate, DrainUnknown, 0, 0, MaxLimit},
		{"no cwnd at all", with(fresh, func(in *RuleInput) { in.Unsent = 1 << 20; in.Cwnd = 0 }),
			true, ReasonNoEstimate, DrainUnknown, 0, 0, MaxLimit},
		{"sub-MSS, nodelay", with(slow, unsent(412)), false, ReasonAboveThreshold, DrainDelivery, 100 * rate.Kbps, 187, 93},
		{"sub-MSS, nagle", with(slow, func(in *RuleInput) { in.Unsent = 412; in.Nagle = true }),
			true, ReasonSubMSS, DrainDelivery, 100 * rate.Kbps, 187, 1227},
		{"sub-MSS, nagle, clause dropped", with(slow, func(in *RuleInput) { in.Unsent = 412; in.Nagle = true; in.NoSubMSSClause = true }),
			false, ReasonAboveThreshold, DrainDelivery, 100 * rate.Kbps, 187, 93},
		{"MSS-1, nagle", with(slow, func(in *RuleInput) { in.Unsent = 1227; in.Nagle = true }),
			true, ReasonSubMSS, DrainDelivery, 100 * rate.Kbps, 187, 1227},
		{"one MSS, nagle", with(slow, func(in *RuleInput) { in.Unsent = 1228; in.Nagle = true }),
			false, ReasonAboveThreshold, DrainDelivery, 100 * rate.Kbps, 187, 1227},
		{"below threshold wins over sub-MSS", with(slow, func(in *RuleInput) { in.Unsent = 90; in.Nagle = true }),
			true, ReasonBelowThreshold, DrainDelivery, 100 * rate.Kbps, 187, 1227},
		{"nagle, threshold above MSS", with(sampled, func(in *RuleInput) { in.Unsent = 7501; in.Nagle = true }),
			false, ReasonAboveThreshold, DrainDelivery, 8 * rate.Mbps, 15000, 7500},
		{"huge rate and time clamp", with(sampled, func(in *RuleInput) {
			in.Unsent = MaxLimit / 2
			in.DeliveryRate = rate.Bitrate(1 << 62)
			in.ReplenishTime = time.Hour
		}), true, ReasonBelowThreshold, DrainDelivery, rate.Bitrate(1 << 62), MaxLimit, MaxLimit / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Invite != tc.invite || d.Reason != tc.reason || d.Source != tc.source {
				t.Errorf("Decide = invite %v (%v, %v), want %v (%v, %v)", d.Invite, d.Reason, d.Source, tc.invite, tc.reason, tc.source)
			}
			if d.DrainRate != tc.drain || d.Threshold != tc.threshold || d.Limit != tc.limit {
				t.Errorf("Decide = drain %v threshold %d limit %d, want %v, %d, %d", d.DrainRate, d.Threshold, d.Limit, tc.drain, tc.threshold, tc.limit)
			}
		})
	}
}

// kernelWritable is Linux's poll() test for TCP_NOTSENT_LOWAT
// (tcp_stream_memory_free with wake=1), in the kernel's u32 arithmetic.
func kernelWritable(notsent int, lowat uint32) bool {
	return uint32(notsent)<<1 < lowat
}

func TestLowatAgreesWithDecide(t *testing.T) {
	bases := []struct {
		name string
		in   RuleInput
	}{
		{"sampled", RuleInput{MSS: 1448, Cwnd: 100, SndWnd: 1 << 20, SRTT: 10 * time.Millisecond, DeliveryRate: 8 * rate.Mbps, ReplenishTime: 15 * time.Millisecond}},
		{"window", RuleInput{MSS: 1448, Cwnd: 10, SndWnd: 5000, SRTT: 10 * time.Millisecond, ReplenishTime: 15 * time.Millisecond}},
		{"zero threshold", RuleInput{MSS: 1448, Cwnd: 10, SndWnd: 0, SRTT: 10 * time.Millisecond, ReplenishTime: 15 * time.Millisecond}},
		{"sub-MSS nagle", RuleInput{MSS: 1228, Cwnd: 10, SndWnd: 1 << 20, SRTT: 172 * time.Millisecond, DeliveryRate: 100 * rate.Kbps, ReplenishTime: 15 * time.Millisecond, Nagle: true}},
		{"sub-MSS nodelay", RuleInput{MSS: 1228, Cwnd: 10, SndWnd: 1 << 20, SRTT: 172 * time.Millisecond, DeliveryRate: 100 * rate.Kbps, ReplenishTime: 15 * time.Millisecond}},
		{"sub-MSS clause dropped", RuleInput{MSS: 1228, Cwnd: 10, SndWnd: 1 << 20, SRTT: 172 * time.Millisecond, DeliveryRate: 100 * rate.Kbps, ReplenishTime: 15 * time.Millisecond, Nagle: true, NoSubMSSClause: true}},
		{"loopback", RuleInput{MSS: 65483, Cwnd: 10, SndWnd: 1 << 20, SRTT: 50 * time.Microsecond, DeliveryRate: 40 * rate.Gbps, ReplenishTime: 15 * time.Millisecond}},
		{"no estimate", RuleInput{MSS: 1448, ReplenishTime: 15 * time.Millisecond}},
	}
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			d := Decide(b.in)
			lowat := Lowat(b.in)
			if lowat == 0 {
				t.Fatal("Lowat = 0, which would mean the sysctl's value")
			}
			var points []int
			for _, p := range []int{0, 1, d.Threshold, d.Limit, b.in.MSS, 1 << 20} {
				points = append(points, p-1, p, p+1)
			}
			for _, u := range points {
				if u < 0 || u >= 1<<30 {
					continue
				}
				in := b.in
				in.Unsent = u
				if got, want := kernelWritable(u, lowat), Decide(in).Invite; got != want {
					t.Errorf("unsent %d: kernel writable with lowat %d = %v, Decide invites = %v", u, lowat, got, want)
				}
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			in := RuleInput{
				MSS:            r.IntN(9000),
				Cwnd:           r.IntN(2000),
				SndWnd:         r.IntN(1<<22) - 1,
				SRTT:           time.Duration(r.IntN(int(time.Second))),
				ReplenishTime:  time.Duration(r.IntN(int(100 * time.Millisecond))),
				Nagle:          r.IntN(2) == 0,
				NoSubMSSClause: r.IntN(4) == 0,
			}
			if r.IntN(3) > 0 {
				in.DeliveryRate = rate.Bitrate(r.Int64N(int64(100 * rate.Gbps)))
			}
			lowat := Lowat(in)
			limit := Decide(in).Limit
			for _, u := range []int{0, 1, limit - 1, limit, limit + 1, r.IntN(1 << 24)} {
				if u < 0 || u >= 1<<30 {
					continue
				}
				in.Unsent = u
				if got, want := kernelWritable(u, lowat), Decide(in).Invite; got != want {
					t.Fatalf("%+v: kernel writable with lowat %d = %v, Decide invites = %v", in, lowat, got, want)
				}
			}
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	in := RuleInput{Unsent: 20000, MSS: 1448, Cwnd: 100, SndWnd: 1 << 20, SRTT: 10 * time.Millisecond,
		DeliveryRate: 8 * rate.Mbps, ReplenishTime: 15 * time.Millisecond}
	for b.Loop() {
		Decide(in)
	}
}
