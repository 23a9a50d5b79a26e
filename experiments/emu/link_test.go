package emu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"replenish/rate"
)

const ms = time.Millisecond

// op is one event of a virtual-time scenario: an arrival of size bytes, or
// a live Set when set is true.
type op struct {
	at    time.Duration
	size  int
	set   bool
	rate  rate.Bitrate
	delay time.Duration
	sched []Step // Schedule at at
}

func arrive(at time.Duration, size int) op { return op{at: at, size: size} }

func burst(at time.Duration, size, n int) []op {
	ops := make([]op, n)
	for i := range ops {
		ops[i] = arrive(at, size)
	}
	return ops
}

// runLink plays ops on a Link for cfg and then drains it by following Next,
// and returns the verdicts and the departures.
func runLink(t *testing.T, cfg LinkConfig, ops []op) ([]Verdict, []Departure) {
	t.Helper()
	l, err := NewLink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []Verdict
	var deps []Departure
	drain := func(until time.Duration) {
		for i := 0; ; i++ {
			if i > 1e6 {
				t.Fatal("drain does not end")
			}
			next, ok := l.Next()
			if !ok || next > until {
				return
			}
			if d, ok := l.Depart(next); ok {
				deps = append(deps, d)
			}
		}
	}
	for _, o := range ops {
		drain(o.at)
		if o.set {
			l.Set(o.at, o.rate, o.delay)
			continue
		}
		if o.sched != nil {
			l.Schedule(o.at, o.sched)
			continue
		}
		verdicts = append(verdicts, l.Arrive(o.at, o.size))
	}
	drain(math.MaxInt64)
	return verdicts, deps
}

func TestLinkScenarios(t *testing.T) {
	const A, D, L = Accepted, Dropped, Lost
	type dep struct{ at, wait time.Duration }
	tests := []struct {
		name     string
		cfg      LinkConfig
		ops      []op
		verdicts []Verdict // nil: all accepted
		deps     []dep
	}{{
		name: "idle link: serialization then delay",
		cfg:  LinkConfig{Rate: rate.Mbps, Delay: 10 * ms},
		ops:  []op{arrive(5*ms, 1500)},
		deps: []dep{{27 * ms, 0}},
	}, {
		name: "unlimited rate: delay only, no queue",
		cfg:  LinkConfig{Delay: 10 * ms},
		ops:  burst(0, 1500, 3),
		deps: []dep{{10 * ms, 0}, {10 * ms, 0}, {10 * ms, 0}},
	}, {
		name: "zero value: passes through at once",
		ops:  []op{arrive(3*ms, 100)},
		deps: []dep{{3 * ms, 0}},
	}, {
		name: "back-to-back packets queue behind each other",
		cfg:  LinkConfig{Rate: rate.Mbps},
		ops:  burst(0, 1500, 3),
		deps: []dep{{12 * ms, 0}, {24 * ms, 12 * ms}, {36 * ms, 24 * ms}},
	}, {
		name: "gap longer than serialization: no wait",
		cfg:  LinkConfig{Rate: rate.Mbps, Delay: ms},
		ops:  []op{arrive(0, 1500), arrive(20*ms, 1500)},
		deps: []dep{{13 * ms, 0}, {33 * ms, 0}},
	}, {
		name: "small packet: serialization rounded up to the nanosecond",
		cfg:  LinkConfig{Rate: 3 * rate.Mbps},
		ops:  []op{arrive(0, 1)},
		deps: []dep{{2667, 0}},
	}, {
		name:     "queue full in bytes",
		cfg:      LinkConfig{Rate: rate.Mbps, QueueBytes: 4500},
		ops:      burst(0, 1500, 5),
		verdicts: []Verdict{A, A, A, D, D},
		deps:     []dep{{12 * ms, 0}, {24 * ms, 12 * ms}, {36 * ms, 24 * ms}},
	}, {
		name: "queue counts only the unsent part of the packet in service",
		cfg:  LinkConfig{Rate: rate.Mbps, QueueBytes: 4500},
		// At 6 ms half of the first packet is sent: 750 + 3000 queued.
		ops:      append(burst(0, 1500, 3), arrive(6*ms, 1500), arrive(6*ms, 750)),
		verdicts: []Verdict{A, A, A, D, A},
		deps:     []dep{{12 * ms, 0}, {24 * ms, 12 * ms}, {36 * ms, 24 * ms}, {42 * ms, 30 * ms}},
	}, {
		name:     "queue full in time",
		cfg:      LinkConfig{Rate: rate.Mbps, QueueTime: 36 * ms}, // 4500 bytes
		ops:      burst(0, 1500, 5),
		verdicts: []Verdict{A, A, A, D, D},
		deps:     []dep{{12 * ms, 0}, {24 * ms, 12 * ms}, {36 * ms, 24 * ms}},
	}, {
		name:     "default queue is 200 ms",
		cfg:      LinkConfig{Rate: rate.Mbps}, // 25000 bytes
		ops:      burst(0, 1000, 27),
		verdicts: append(slices.Repeat([]Verdict{A}, 25), D, D),
	}, {
		name:     "time limit never under two packets",
		cfg:      LinkConfig{Rate: 100 * rate.Kbps, QueueTime: 10 * ms}, // 125 bytes
		ops:      burst(0, 1500, 3),
		verdicts: []Verdict{A, A, D},
		deps:     []dep{{120 * ms, 0}, {240 * ms, 120 * ms}},
	}, {
		name:     "byte limit never under two packets",
		cfg:      LinkConfig{Rate: 100 * rate.Kbps, QueueBytes: 100},
		ops:      burst(0, 1500, 3),
		verdicts: []Verdict{A, A, D},
	}, {
		name: "rate step mid-burst: packet in service finishes at the new rate",
		cfg: LinkConfig{Rate: rate.Mbps, Schedule: []Step{
			{At: 18 * ms, Rate: 2 * rate.Mbps},
		}},
		// The second packet is half sent at 18 ms; 750 bytes at 2 Mb/s take 3 ms.
		ops:  burst(0, 1500, 3),
		deps: []dep{{12 * ms, 0}, {21 * ms, 12 * ms}, {27 * ms, 21 * ms}},
	}, {
		name: "step scheduled later, timed from then",
		cfg:  LinkConfig{Rate: rate.Mbps},
		// The step applies at 5 + 13 = 18 ms, as in the case above.
		ops:  append(burst(0, 1500, 3), op{at: 5 * ms, sched: []Step{{At: 13 * ms, Rate: 2 * rate.Mbps}}}),
		deps: []dep{{12 * ms, 0}, {21 * ms, 12 * ms}, {27 * ms, 21 * ms}},
	}, {
		name: "scheduled step and configured step, in time order",
		cfg:  LinkConfig{Rate: rate.Mbps, Schedule: []Step{{At: 30 * ms, Rate: 4 * rate.Mbps}}},
		ops: []op{{at: 2 * ms, sched: []Step{{At: 3 * ms, Rate: 2 * rate.Mbps}}},
			arrive(10*ms, 1500), arrive(40*ms, 1500)},
		deps: []dep{{16 * ms, 0}, {43 * ms, 0}},
	}, {
		name: "rate step while idle",
		cfg:  LinkConfig{Rate: rate.Mbps, Schedule: []Step{{At: 5 * ms, Rate: 2 * rate.Mbps}}},
		ops:  []op{arrive(10*ms, 1500)},
		deps: []dep{{16 * ms, 0}},
	}, {
		name: "schedule need not be sorted",
		cfg: LinkConfig{Rate: rate.Mbps, Schedule: []Step{
			{At: 50 * ms, Rate: 4 * rate.Mbps},
			{At: 5 * ms, Rate: 2 * rate.Mbps},
		}},
		ops:  []op{arrive(10*ms, 1500), arrive(60*ms, 1500)},
		deps: []dep{{16 * ms, 0}, {63 * ms, 0}},
	}, {
		name: "step to unlimited releases the queue",
		cfg:  LinkConfig{Rate: rate.Mbps, Schedule: []Step{{At: 6 * ms, Rate: -1}}},
		ops:  burst(0, 1500, 3),
		deps: []dep{{6 * ms, 0}, {6 * ms, 6 * ms}, {6 * ms, 6 * ms}},
	}, {
		name: "step that keeps the rate and changes the delay",
		cfg: LinkConfig{Rate: rate.Mbps, Delay: 10 * ms, Schedule: []Step{
			{At: 15 * ms, Delay: 30 * ms},
		}},
		// The first packet is serialized at 12 ms, before the step.
		ops:  burst(0, 1500, 2),
		deps: []dep{{22 * ms, 0}, {54 * ms, 12 * ms}},
	}, {
		name: "delay decrease never reorders",
		cfg: LinkConfig{Rate: rate.Mbps, Delay: 50 * ms, Schedule: []Step{
			{At: 13 * ms, Delay: ms},
		}},
		ops:  append(burst(0, 1500, 2), arrive(100*ms, 1500)),
		deps: []dep{{62 * ms, 0}, {62 * ms, 12 * ms}, {113 * ms, 0}},
	}, {
		name: "step to no delay",
		cfg:  LinkConfig{Rate: rate.Mbps, Delay: 10 * ms, Schedule: []Step{{At: ms, Delay: -1}}},
		ops:  []op{arrive(2*ms, 1500)},
		deps: []dep{{14 * ms, 0}},
	}, {
		name: "live set mid-serialization",
		cfg:  LinkConfig{Rate: rate.Mbps},
		ops: append(burst(0, 1500, 2),
			op{at: 6 * ms, set: true, rate: 2 * rate.Mbps, delay: 5 * ms}),
		deps: []dep{{14 * ms, 0}, {20 * ms, 9 * ms}},
	}, {
		name: "live set to unlimited",
		cfg:  LinkConfig{Rate: rate.Mbps},
		ops: append(burst(0, 1500, 2),
			op{at: 6 * ms, set: true, rate: 0, delay: 0}),
		deps: []dep{{6 * ms, 0}, {6 * ms, 6 * ms}},
	}, {
		name: "live set from unlimited",
		cfg:  LinkConfig{Delay: 5 * ms},
		ops: []op{arrive(0, 1500), {at: ms, set: true, rate: rate.Mbps, delay: 5 * ms},
			arrive(2*ms, 1500)},
		deps: []dep{{5 * ms, 0}, {19 * ms, 0}},
	}, {
		name: "time limit follows a rate step",
		cfg: LinkConfig{Rate: rate.Mbps, QueueTime: 36 * ms, Schedule: []Step{
			{At: ms, Rate: 2 * rate.Mbps}, // 9000 bytes from 1 ms on
		}},
		ops:      burst(2*ms, 1500, 7),
		verdicts: []Verdict{A, A, A, A, A, A, D},
	}, {
		name:     "loss 1 loses everything",
		cfg:      LinkConfig{Rate: rate.Mbps, Loss: 1},
		ops:      burst(0, 1500, 3),
		verdicts: []Verdict{L, L, L},
	}, {
		name: "time going backwards is taken as the latest time",
		cfg:  LinkConfig{Rate: rate.Mbps},
		ops:  []op{arrive(10*ms, 1500), arrive(5*ms, 1500)},
		deps: []dep{{22 * ms, 0}, {34 * ms, 12 * ms}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdicts, deps := runLink(t, tt.cfg, tt.ops)
			want := tt.verdicts
			if want == nil {
				want = slices.Repeat([]Verdict{Accepted}, len(verdicts))
			}
			if !slices.Equal(verdicts, want) {
				t.Errorf("verdicts %v, want %v", verdicts, want)
			}
			if tt.deps == nil {
				return
			}
			var got []dep
			for _, d := range deps {
				got = append(got, dep{d.At, d.Wait})
			}
			if !slices.Equal(got, tt.deps) {
				t.Errorf("departures (at, wait) %v, want %v", got, tt.deps)
			}
		})
	}
}

func TestLinkOutage(t *testing.T) {
	const A, L = Accepted, Lost
	type dep struct {
		at   time.Duration
		lost bool
	}
	outage := []Step{{At: 30 * ms, Carrier: CarrierDown}, {At: 100 * ms, Carrier: CarrierUp}}
	tests := []struct {
		name     string
		cfg      LinkConfig
		ops      []op
		verdicts []Verdict
		deps     []dep
	}{{
		// 1500 bytes take 12 ms: the first packet has left by 22 ms, the
		// second is in propagation at 30 ms, the third and fourth end
		// their serialization while the link is down; the fifth arrives
		// while it is down; the sixth after it came back.
		name:     "rate-limited",
		cfg:      LinkConfig{Rate: rate.Mbps, Delay: 10 * ms, Schedule: outage},
		ops:      append(burst(0, 1500, 4), arrive(50*ms, 1500), arrive(100*ms, 1500)),
		verdicts: []Verdict{A, A, A, A, L, A},
		deps:     []dep{{22 * ms, false}, {34 * ms, true}, {46 * ms, true}, {58 * ms, true}, {122 * ms, false}},
	}, {
		name:     "unlimited rate: what is in propagation is lost",
		cfg:      LinkConfig{Delay: 40 * ms, Schedule: outage},
		ops:      []op{arrive(0, 100), arrive(29*ms, 100), arrive(30*ms, 100), arrive(99*ms, 100), arrive(101*ms, 100)},
		verdicts: []Verdict{A, A, L, L, A},
		deps:     []dep{{40 * ms, true}, {69 * ms, true}, {141 * ms, false}},
	}, {
		name:     "a packet leaving as the link goes down leaves",
		cfg:      LinkConfig{Delay: 30 * ms, Schedule: outage},
		ops:      []op{arrive(0, 100), arrive(ms, 100)},
		verdicts: []Verdict{A, A},
		deps:     []dep{{30 * ms, false}, {31 * ms, true}},
	}, {
		name: "down and up scheduled live",
		cfg:  LinkConfig{Loss: 0.5, Seed: 3},
		ops: []op{{at: 0, sched: []Step{{At: 0, Carrier: CarrierDown}, {At: 10 * ms, Carrier: CarrierUp}}},
			arrive(5*ms, 100), arrive(5*ms, 100), arrive(5*ms, 100)},
		verdicts: []Verdict{L, L, L},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdicts, deps := runLink(t, tt.cfg, tt.ops)
			if !slices.Equal(verdicts, tt.verdicts) {
				t.Errorf("verdicts %v, want %v", verdicts, tt.verdicts)
			}
			var got []dep
			for _, d := range deps {
				got = append(got, dep{d.At, d.Lost})
			}
			if !slices.Equal(got, tt.deps) {
				t.Errorf("departures (at, lost) %v, want %v", got, tt.deps)
			}
		})
	}
}

func TestLinkDown(t *testing.T) {
	l, err := NewLink(LinkConfig{Rate: rate.Mbps, Schedule: []Step{{At: 10 * ms, Carrier: CarrierDown}, {At: 20 * ms, Carrier: CarrierUp}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		down bool
	}{{0, false}, {10 * ms, true}, {19 * ms, true}, {20 * ms, false}} {
		if got := l.Down(c.at); got != c.down {
			t.Errorf("Down(%v) = %v, want %v", c.at, got, c.down)
		}
	}
	if l.Rate() != rate.Mbps {
		t.Errorf("rate %v after the outage, want it kept", l.Rate())
	}
}

func TestLinkOverflow(t *testing.T) {
	tests := []struct {
		name           string
		bytes, packets int
		want           []Verdict
	}{
		{"packet cap", 1 << 20, 3, []Verdict{Accepted, Accepted, Accepted, Overflowed, Overflowed}},
		{"byte cap", 2500, 100, []Verdict{Accepted, Overflowed, Overflowed, Overflowed, Overflowed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(b, p int) { maxHeldBytes, maxHeldPackets = b, p }(maxHeldBytes, maxHeldPackets)
			maxHeldBytes, maxHeldPackets = tt.bytes, tt.packets
			// Unlimited rate, long delay: everything waits in propagation.
			verdicts, deps := runLink(t, LinkConfig{Delay: time.Second}, burst(0, 1500, 5))
			if !slices.Equal(verdicts, tt.want) {
				t.Errorf("verdicts %v, want %v", verdicts, tt.want)
			}
			accepted := 0
			for _, v := range verdicts {
				if v == Accepted {
					accepted++
				}
			}
			if len(deps) != accepted {
				t.Errorf("%d departures for %d accepted", len(deps), accepted)
			}
		})
	}
}

func TestLinkConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  LinkConfig
	}{
		{"negative rate", LinkConfig{Rate: -1}},
		{"negative delay", LinkConfig{Delay: -ms}},
		{"negative jitter", LinkConfig{Jitter: -ms}},
		{"negative queue bytes", LinkConfig{QueueBytes: -1}},
		{"negative queue time", LinkConfig{QueueTime: -ms}},
		{"loss above 1", LinkConfig{Loss: 1.5}},
		{"negative loss", LinkConfig{Loss: -0.1}},
		{"NaN loss", LinkConfig{Loss: math.NaN()}},
		{"step at negative time", LinkConfig{Schedule: []Step{{At: -ms, Rate: rate.Mbps}}}},
		{"unknown carrier change", LinkConfig{Schedule: []Step{{At: ms, Carrier: CarrierUp + 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewLink(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("NewLink: %v, want ErrConfig", err)
			}
		})
	}
}

// TestLinkJitter checks a jittered link: each packet's extra delay lies in
// [0, Jitter) and spreads over it when packets are far apart, packets never
// leave out of order when they are close, and the loss draws stay those of
// the same seed without jitter.
func TestLinkJitter(t *testing.T) {
	const n, size = 2000, 1250 // 10 ms at 1 Mb/s
	cfg := LinkConfig{Rate: rate.Mbps, Delay: 20 * ms, Jitter: 30 * ms, QueueTime: time.Second, Seed: 3}
	var sparse []op
	for i := range n {
		sparse = append(sparse, arrive(time.Duration(i)*100*ms, size))
	}
	_, deps := runLink(t, cfg, sparse)
	if len(deps) != n {
		t.Fatalf("%d departures, want %d", len(deps), n)
	}
	var sum, lo, hi time.Duration = 0, time.Hour, 0
	for _, d := range deps {
		extra := d.At - d.Arrived - 10*ms - cfg.Delay
		if extra < 0 || extra >= cfg.Jitter {
			t.Fatalf("packet that arrived at %v: extra delay %v, want in [0, %v)", d.Arrived, extra, cfg.Jitter)
		}
		sum += extra
		lo, hi = min(lo, extra), max(hi, extra)
	}
	if mean := sum / n; mean < 13*ms || mean > 17*ms || lo > ms || hi < 29*ms {
		t.Errorf("extra delay mean %v over [%v, %v], want about 15 ms over [0, 30 ms)", mean, lo, hi)
	}

	_, deps = runLink(t, cfg, burst(0, size, 200))
	for i := 1; i < len(deps); i++ {
		if deps[i].At < deps[i-1].At || deps[i].Arrived < deps[i-1].Arrived {
			t.Fatalf("departure %d at %v before departure %d at %v", i, deps[i].At, i-1, deps[i-1].At)
		}
	}

	lossy := LinkConfig{Rate: rate.Mbps, Loss: 0.2, Seed: 7}
	plain, _ := runLink(t, lossy, sparse[:500])
	lossy.Jitter = 30 * ms
	jittered, _ := runLink(t, lossy, sparse[:500])
	if !slices.Equal(plain, jittered) {
		t.Error("jitter changed which packets were lost")
	}
}

// verdictsFor offers n packets, one per millisecond, to a link with loss p
// and seed, and returns the verdicts.
func verdictsFor(t *testing.T, p float64, seed int64, n int) []Verdict {
	l, err := NewLink(LinkConfig{Loss: p, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	v := make([]Verdict, n)
	for i := range v {
		now := time.Duration(i) * ms
		v[i] = l.Arrive(now, 100)
		l.Depart(now)
	}
	return v
}

func TestLinkLossReproducible(t *testing.T) {
	a, b := verdictsFor(t, 0.1, 7, 5000), verdictsFor(t, 0.1, 7, 5000)
	if !slices.Equal(a, b) {
		t.Error("same seed, different losses")
	}
	if c := verdictsFor(t, 0.1, 8, 5000); slices.Equal(a, c) {
		t.Error("different seeds, same losses")
	}
}

func TestLinkLossRate(t *testing.T) {
	const n = 20000
	for _, p := range []float64{0.001, 0.01, 0.1, 0.5} {
		t.Run(fmt.Sprintf("loss %g", p), func(t *testing.T) {
			lost := 0
			for _, v := range verdictsFor(t, p, 1, n) {
				switch v {
				case Lost:
					lost++
				case Accepted:
				default:
					t.Fatalf("verdict %v on an unlimited link", v)
				}
			}
			// Five standard deviations of a binomial count.
			mean, sd := n*p, math.Sqrt(n*p*(1-p))
			if math.Abs(float64(lost)-mean) > 5*sd {
				t.Errorf("loss %v: lost %d of %d, want %.0f ± %.0f", p, lost, n, mean, 5*sd)
			}
		})
	}
}

// TestLinkInvariants drives links with random traffic, rates and limits and
// checks what must hold whatever the input: packets leave in order, never
// before their arrival plus serialization plus delay, the serializer never
// idles while packets wait, and the queue never exceeds its limit.
func TestLinkInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		r := rate.Bitrate(rng.Int64N(int64(200*rate.Mbps))) + 10*rate.Kbps
		cfg := LinkConfig{
			Rate:       r,
			Delay:      time.Duration(rng.Int64N(int64(200 * ms))),
			QueueBytes: rng.IntN(100000),
			Loss:       rng.Float64() * 0.1,
			Seed:       int64(run),
		}
		l, err := NewLink(cfg)
		if err != nil {
			t.Fatal(err)
		}
		limit := l.Limit()
		ser := func(size int) time.Duration { return l.serialization(size) }
		var now, lastAt, lastDone time.Duration
		accepted, departed := 0, 0
		check := func(d Departure) {
			t.Helper()
			departed++
			start := d.Arrived + d.Wait
			done := start + ser(d.Size)
			switch {
			case d.At < lastAt:
				t.Fatalf("run %d: departure at %v before the previous one at %v", run, d.At, lastAt)
			case d.At != done+cfg.Delay:
				t.Fatalf("run %d: departs at %v, want %v (start %v, size %d)", run, d.At, done+cfg.Delay, start, d.Size)
			case start < lastDone:
				t.Fatalf("run %d: serialization starts at %v before the previous one ends at %v", run, start, lastDone)
			case d.Wait > 0 && start != lastDone:
				t.Fatalf("run %d: waited %v but started at %v, not when the previous one ended at %v", run, d.Wait, start, lastDone)
			}
			lastAt, lastDone = d.At, done
		}
		mean := ser(1500) * time.Duration(1+rng.IntN(3)) / 2
		for range 2000 {
			now += time.Duration(rng.ExpFloat64() * float64(mean))
			for {
				d, ok := l.Depart(now)
				if !ok {
					break
				}
				check(d)
			}
			if l.Arrive(now, 40+rng.IntN(1461)) == Accepted {
				accepted++
			}
			if b := l.Backlog(now); b > limit {
				t.Fatalf("run %d: backlog %d above the limit %d", run, b, limit)
			}
		}
		for {
			next, ok := l.Next()
			if !ok {
				break
			}
			if d, ok := l.Depart(next); ok {
				check(d)
			} else {
				t.Fatalf("run %d: nothing departs at Next %v", run, next)
			}
		}
		if departed != accepted {
			t.Fatalf("run %d: %d accepted, %d departed", run, accepted, departed)
		}
		if l.MaxBacklog() > limit {
			t.Fatalf("run %d: max backlog %d above the limit %d", run, l.MaxBacklog(), limit)
		}
	}
}

// TestLinkSaturatedRate checks that a saturated link delivers exactly its
// rate, across a schedule of rate steps.
func TestLinkSaturatedRate(t *testing.T) {
	tests := []struct {
		name string
		rate rate.Bitrate
	}{
		{"100 kb/s", 100 * rate.Kbps},
		{"2 Mb/s", 2 * rate.Mbps},
		{"86 Mb/s", 86 * rate.Mbps},
		{"200 Mb/s", 200 * rate.Mbps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// T is the time the first rate takes to send 1000 packets of
			// 1500 bytes. Offer three times that rate for 3.5 T, double
			// the rate at 1.5 T, and count the bytes that leave in the
			// windows [0.25 T, 1.25 T) and [2 T, 3 T), shifted by the delay.
			T := tt.rate.Duration(1500) * 1000
			const delay = 20 * ms
			l, err := NewLink(LinkConfig{Rate: tt.rate, Delay: delay, Schedule: []Step{
				{At: T * 3 / 2, Rate: tt.rate * 2},
			}})
			if err != nil {
				t.Fatal(err)
			}
			windows := [2][2]time.Duration{{T / 4, T * 5 / 4}, {2 * T, 3 * T}}
			gap := tt.rate.Duration(1500) / 3
			var bytes [2]int
			for now := time.Duration(0); now < T*7/2; now += gap {
				for {
					d, ok := l.Depart(now)
					if !ok {
						break
					}
					for i, w := range windows {
						if d.At >= w[0]+delay && d.At < w[1]+delay {
							bytes[i] += d.Size
						}
					}
				}
				l.Arrive(now, 1500)
			}
			for i, want := range []rate.Bitrate{tt.rate, 2 * tt.rate} {
				got := float64(bytes[i]) * 8 / T.Seconds()
				// One packet of quantization at each end of the window.
				if tol := 2 * 1500 * 8 / T.Seconds(); math.Abs(got-float64(want)) > tol {
					t.Errorf("window %d: %.0f b/s, want %d ± %.0f", i, got, want, tol)
				}
			}
		})
	}
}

func TestMulDivCeil(t *testing.T) {
	tests := []struct {
		name    string
		a, b, c int64
		want    int64
	}{
		{"exact", 1500 * 8, 1e9, 1e6, 12e6},
		{"rounds up", 1, 1, 3, 1},
		{"zero", 0, 5, 3, 0},
		{"wide product", 1 << 40, 1 << 40, 1 << 30, 1 << 50},
		{"saturates", math.MaxInt64, math.MaxInt64, 1, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mulDivCeil(tt.a, tt.b, tt.c); got != tt.want {
				t.Errorf("mulDivCeil(%d, %d, %d) = %d, want %d", tt.a, tt.b, tt.c, got, tt.want)
			}
		})
	}
}

func TestFifo(t *testing.T) {
	var q fifo[int]
	next := 0
	for i := range 1000 {
		q.Push(i)
		if i%3 == 0 {
			if got := q.Pop(); got != next {
				t.Fatalf("Pop = %d, want %d", got, next)
			}
			next++
		}
	}
	for q.Len() > 0 {
		if got := q.Pop(); got != next {
			t.Fatalf("Pop = %d, want %d", got, next)
		}
		next++
	}
	if next != 1000 {
		t.Fatalf("popped %d elements, want 1000", next)
	}
}

// TestLinkIdle checks the idle spans of the serializer in virtual time:
// gaps before arrivals, none while a queue drains, the span open at the
// time of the call, none on an unlimited link, and the cap.
func TestLinkIdle(t *testing.T) {
	l, err := NewLink(LinkConfig{Rate: rate.Mbps}) // 1500 B: 12 ms
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []time.Duration{10 * ms, 30 * ms, 35 * ms} {
		if v := l.Arrive(a, 1500); v != Accepted {
			t.Fatalf("arrival at %v: %v", a, v)
		}
	}
	spans, lost := l.TakeIdle(100 * ms)
	want := []Idle{{0, 10 * ms}, {22 * ms, 30 * ms}, {54 * ms, 100 * ms}}
	if !slices.Equal(spans, want) || lost != 0 {
		t.Errorf("spans %v (lost %d), want %v", spans, lost, want)
	}
	if spans, _ = l.TakeIdle(120 * ms); !slices.Equal(spans, []Idle{{100 * ms, 120 * ms}}) {
		t.Errorf("the open span continues from the last call: %v", spans)
	}
	l.Arrive(130*ms, 1500)
	if spans, _ = l.TakeIdle(135 * ms); !slices.Equal(spans, []Idle{{120 * ms, 130 * ms}}) {
		t.Errorf("busy at the call: %v", spans)
	}
	if spans, _ = l.TakeIdle(135 * ms); len(spans) != 0 {
		t.Errorf("a second call at the same time: %v", spans)
	}

	free, _ := NewLink(LinkConfig{})
	free.Arrive(10*ms, 1500)
	free.Arrive(20*ms, 1500)
	if spans, _ := free.TakeIdle(30 * ms); len(spans) != 0 {
		t.Errorf("an unlimited link has idle spans %v", spans)
	}

	capped, _ := NewLink(LinkConfig{Rate: 100 * rate.Mbps}) // 1500 B: 120 µs
	const n = maxIdleSpans + 10
	for i := range n {
		at := time.Duration(i+1) * ms
		capped.Arrive(at, 1500)
		capped.Depart(at) // what left, so that the link holds no more than a packet
	}
	spans, lost = capped.TakeIdle(time.Duration(n+1) * ms)
	if len(spans) != maxIdleSpans || lost != n+1-maxIdleSpans {
		t.Errorf("%d spans kept, %d lost; want %d and %d", len(spans), lost, maxIdleSpans, n+1-maxIdleSpans)
	}
}
