package tcp

import (
	"math/rand/v2"
	"testing"
	"time"

	"replenish/rate"
	"replenish/transport/drain"
)

func TestDecide(t *testing.T) {
	// A path whose drain rate is 8 Mb/s (1 MB/s): 15 ms is 15000 bytes.
	sampled := RuleInput{MSS: 1448, DrainRate: 8 * rate.Mbps, DrainSource: drain.SourceMeasured,
		ReplenishTime: 15 * time.Millisecond}
	// Seed 000's slow path: 100 kb/s (12500 B/s) makes 15 ms 187 bytes,
	// below one MSS of 1228.
	slow := RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceMeasured,
		ReplenishTime: 15 * time.Millisecond}
	// A peer window closed before any rate was measured: a known zero.
	closed := RuleInput{MSS: 1448, DrainSource: drain.SourceWindow, ReplenishTime: 15 * time.Millisecond}
	unknown := RuleInput{MSS: 1448, ReplenishTime: 15 * time.Millisecond}

	with := func(in RuleInput, f func(*RuleInput)) RuleInput { f(&in); return in }
	unsent := func(n int) func(*RuleInput) { return func(in *RuleInput) { in.Unsent = n } }
	lead := func(n int, d time.Duration) func(*RuleInput) {
		return func(in *RuleInput) { in.Unsent = n; in.Lead = d }
	}

	for _, tc := range []struct {
		name      string
		in        RuleInput
		invite    bool
		reason    Reason
		drain     rate.Bitrate
		threshold int
		limit     int
	}{
		{"empty backlog", with(sampled, unsent(0)), true, ReasonEmpty, 8 * rate.Mbps, 15000, 7500},
		{"empty backlog, closed window", with(closed, unsent(0)), true, ReasonEmpty, 0, 0, 0},
		{"at half the threshold", with(sampled, unsent(7500)), true, ReasonBelowThreshold, 8 * rate.Mbps, 15000, 7500},
		{"one byte over half the threshold", with(sampled, unsent(7501)), false, ReasonAboveThreshold, 8 * rate.Mbps, 15000, 7500},
		{"at the threshold", with(sampled, unsent(15000)), false, ReasonAboveThreshold, 8 * rate.Mbps, 15000, 7500},
		{"far over threshold", with(sampled, unsent(1<<20)), false, ReasonAboveThreshold, 8 * rate.Mbps, 15000, 7500},
		{"closed window", with(closed, unsent(1)), false, ReasonAboveThreshold, 0, 0, 0},
		{"no estimate", with(unknown, unsent(1<<20)), true, ReasonNoEstimate, 0, 0, MaxLimit},
		{"no estimate ignores a rate", with(unknown, func(in *RuleInput) { in.Unsent = 1 << 20; in.DrainRate = rate.Mbps }),
			true, ReasonNoEstimate, 0, 0, MaxLimit},

		// A 10 ms lead at 1 MB/s invites 10000 bytes earlier.
		{"lead: below half the threshold", with(sampled, lead(7500, 10*time.Millisecond)), true, ReasonBelowThreshold, 8 * rate.Mbps, 15000, 17500},
		{"lead: within it", with(sampled, lead(7501, 10*time.Millisecond)), true, ReasonLead, 8 * rate.Mbps, 15000, 17500},
		{"lead: at the limit", with(sampled, lead(17500, 10*time.Millisecond)), true, ReasonLead, 8 * rate.Mbps, 15000, 17500},
		{"lead: one byte over", with(sampled, lead(17501, 10*time.Millisecond)), false, ReasonAboveThreshold, 8 * rate.Mbps, 15000, 17500},
		{"lead: longer than the replenish time", with(sampled, lead(40000, 40*time.Millisecond)), true, ReasonLead, 8 * rate.Mbps, 15000, 47500},
		{"lead: no estimate", with(unknown, lead(1<<20, 10*time.Millisecond)), true, ReasonNoEstimate, 0, 0, MaxLimit},
		{"lead: closed window", with(closed, lead(1, 10*time.Millisecond)), false, ReasonAboveThreshold, 0, 0, 0},
		{"lead: huge lead clamps", with(sampled, lead(MaxLimit, time.Hour)), true, ReasonLead, 8 * rate.Mbps, 15000, MaxLimit},

		{"sub-MSS, nodelay", with(slow, unsent(412)), false, ReasonAboveThreshold, 100 * rate.Kbps, 187, 93},
		{"sub-MSS, nagle", with(slow, func(in *RuleInput) { in.Unsent = 412; in.Nagle = true }),
			true, ReasonSubMSS, 100 * rate.Kbps, 187, 1227},
		{"sub-MSS, nagle, clause dropped", with(slow, func(in *RuleInput) { in.Unsent = 412; in.Nagle = true; in.NoSubMSSClause = true }),
			false, ReasonAboveThreshold, 100 * rate.Kbps, 187, 93},
		{"MSS-1, nagle", with(slow, func(in *RuleInput) { in.Unsent = 1227; in.Nagle = true }),
			true, ReasonSubMSS, 100 * rate.Kbps, 187, 1227},
		{"one MSS, nagle", with(slow, func(in *RuleInput) { in.Unsent = 1228; in.Nagle = true }),
			false, ReasonAboveThreshold, 100 * rate.Kbps, 187, 1227},
		{"below threshold wins over sub-MSS", with(slow, func(in *RuleInput) { in.Unsent = 90; in.Nagle = true }),
			true, ReasonBelowThreshold, 100 * rate.Kbps, 187, 1227},
		{"nagle, threshold above MSS", with(sampled, func(in *RuleInput) { in.Unsent = 7501; in.Nagle = true }),
			false, ReasonAboveThreshold, 8 * rate.Mbps, 15000, 7500},
		// At 100 kb/s a 20 ms lead adds 250 bytes: 93+250.
		{"sub-MSS lead, nodelay", with(slow, lead(343, 20*time.Millisecond)), true, ReasonLead, 100 * rate.Kbps, 187, 343},
		{"sub-MSS lead, nodelay, over", with(slow, lead(344, 20*time.Millisecond)), false, ReasonAboveThreshold, 100 * rate.Kbps, 187, 343},
		{"sub-MSS lead, nagle", with(slow, func(in *RuleInput) { in.Unsent = 343; in.Lead = 20 * time.Millisecond; in.Nagle = true }),
			true, ReasonSubMSS, 100 * rate.Kbps, 187, 1227},
		{"lead past the MSS, nagle", with(slow, func(in *RuleInput) { in.Unsent = 1300; in.Lead = 100 * time.Millisecond; in.Nagle = true }),
			true, ReasonLead, 100 * rate.Kbps, 187, 1343},
		{"huge rate and time clamp", with(sampled, func(in *RuleInput) {
			in.Unsent = MaxLimit / 2
			in.DrainRate = rate.Bitrate(1 << 62)
			in.ReplenishTime = time.Hour
		}), true, ReasonBelowThreshold, rate.Bitrate(1 << 62), MaxLimit, MaxLimit / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Invite != tc.invite || d.Reason != tc.reason {
				t.Errorf("Decide = invite %v (%v), want %v (%v)", d.Invite, d.Reason, tc.invite, tc.reason)
			}
			if d.DrainRate != tc.drain || d.Threshold != tc.threshold || d.Limit != tc.limit {
				t.Errorf("Decide = drain %v threshold %d limit %d, want %v, %d, %d", d.DrainRate, d.Threshold, d.Limit, tc.drain, tc.threshold, tc.limit)
			}
		})
	}
}

// TestLeadKeepsTheKernelsPromise checks, in virtual input, what the lead is
// for: an application invited by the rule that writes one lead later finds
// about half a replenish time of backlog left, at every rate, as an
// application with no lead that writes at once does; and without the lead
// it finds the socket empty whenever its production time exceeds half the
// replenish time.
func TestLeadKeepsTheKernelsPromise(t *testing.T) {
	const replenish = 15 * time.Millisecond
	for _, r := range []rate.Bitrate{2 * rate.Mbps, 20 * rate.Mbps, 86 * rate.Mbps} {
		for _, lead := range []time.Duration{0, 5 * time.Millisecond, 17 * time.Millisecond, 40 * time.Millisecond} {
			in := RuleInput{MSS: 1448, DrainRate: r, DrainSource: drain.SourceMeasured, ReplenishTime: replenish}
			// Invited with a lead: the backlog at the invitation, drained
			// for one lead at the drain rate, is what the write finds.
			in.Lead = lead
			at := Decide(in).Limit
			left := r.Duration(max(at-r.Bytes(lead), 0))
			if d := left - replenish/2; d < -time.Millisecond/10 || d > time.Millisecond/10 {
				t.Errorf("%v, lead %v: the write finds %v of backlog, want %v", r, lead, left, replenish/2)
			}
			// Invited at the kernel's half threshold, the same
			// application finds what is left of 7.5 ms after its lead.
			in.Lead = 0
			kernel := r.Duration(max(Decide(in).Limit-r.Bytes(lead), 0))
			if lead > replenish/2 && kernel != 0 {
				t.Errorf("%v, lead %v: kernel rule leaves %v, want an empty socket", r, lead, kernel)
			}
		}
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
		{"sampled", RuleInput{MSS: 1448, DrainRate: 8 * rate.Mbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond}},
		{"sampled with lead", RuleInput{MSS: 1448, DrainRate: 8 * rate.Mbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond, Lead: 12 * time.Millisecond}},
		{"window", RuleInput{MSS: 1448, DrainRate: 4 * rate.Mbps, DrainSource: drain.SourceWindow, ReplenishTime: 15 * time.Millisecond}},
		{"zero threshold", RuleInput{MSS: 1448, DrainSource: drain.SourceWindow, ReplenishTime: 15 * time.Millisecond}},
		{"sub-MSS nagle", RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond, Nagle: true}},
		{"sub-MSS nagle with lead", RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond, Nagle: true, Lead: 50 * time.Millisecond}},
		{"sub-MSS nodelay", RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond}},
		{"sub-MSS nodelay with lead", RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond, Lead: 17 * time.Millisecond}},
		{"sub-MSS clause dropped", RuleInput{MSS: 1228, DrainRate: 100 * rate.Kbps, DrainSource: drain.SourceStack, ReplenishTime: 15 * time.Millisecond, Nagle: true, NoSubMSSClause: true}},
		{"loopback", RuleInput{MSS: 65483, DrainRate: 40 * rate.Gbps, DrainSource: drain.SourceMeasured, ReplenishTime: 15 * time.Millisecond}},
		{"no estimate", RuleInput{MSS: 1448, ReplenishTime: 15 * time.Millisecond, Lead: 10 * time.Millisecond}},
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
				ReplenishTime:  time.Duration(r.IntN(int(100 * time.Millisecond))),
				Nagle:          r.IntN(2) == 0,
				NoSubMSSClause: r.IntN(4) == 0,
			}
			if r.IntN(2) == 0 {
				in.Lead = time.Duration(r.IntN(int(50 * time.Millisecond)))
			}
			if r.IntN(4) > 0 {
				in.DrainSource = drain.Source(1 + r.IntN(5))
				in.DrainRate = rate.Bitrate(r.Int64N(int64(100 * rate.Gbps)))
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
	in := RuleInput{Unsent: 20000, MSS: 1448, DrainRate: 8 * rate.Mbps, DrainSource: drain.SourceMeasured,
		ReplenishTime: 15 * time.Millisecond, Lead: 10 * time.Millisecond}
	for b.Loop() {
		Decide(in)
	}
}
