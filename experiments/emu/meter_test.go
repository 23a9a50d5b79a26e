package emu

import (
	"math"
	"testing"
	"time"

	"replenish/metrics"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<histMaxBits; v += 1 + v/97 {
		i := bucketOf(v)
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d, below bucketOf of a smaller value (%d)", v, i, prev)
		}
		prev = i
		mid := bucketMid(i)
		if v < 64 && mid != v {
			t.Fatalf("bucketMid(bucketOf(%d)) = %d, want exact", v, mid)
		}
		if rel := math.Abs(float64(mid-v)) / float64(max(v, 1)); rel > 1.0/64 {
			t.Fatalf("bucketMid(bucketOf(%d)) = %d, off by %.2f%%", v, mid, 100*rel)
		}
	}
	if i := bucketOf(math.MaxInt64); i != histBuckets-1 {
		t.Errorf("bucketOf(max) = %d, want the last bucket %d", i, histBuckets-1)
	}
	if i := bucketOf(-5); i != 0 {
		t.Errorf("bucketOf(-5) = %d, want 0", i)
	}
}

// durations are percentiles as durations, for the tests.
type durations struct{ P50, P95, P99, Max time.Duration }

// durationsOf returns the ms of p as durations, rounded to the nanosecond.
func durationsOf(p metrics.Percentiles) durations {
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }
	return durations{d(p.P50), d(p.P95), d(p.P99), d(p.Max)}
}

func TestHistogramPercentiles(t *testing.T) {
	tests := []struct {
		name   string
		values func(add func(time.Duration))
		want   durations
	}{{
		name:   "empty",
		values: func(func(time.Duration)) {},
	}, {
		name:   "all zero",
		values: func(add func(time.Duration)) { add(0); add(0) },
	}, {
		name: "uniform 1 to 10000 us",
		values: func(add func(time.Duration)) {
			for i := 1; i <= 10000; i++ {
				add(time.Duration(i) * time.Microsecond)
			}
		},
		want: durations{P50: 5 * ms, P95: 9500 * time.Microsecond, P99: 9900 * time.Microsecond, Max: 10 * ms},
	}, {
		name: "one outlier in a hundred",
		values: func(add func(time.Duration)) {
			for range 99 {
				add(ms)
			}
			add(time.Second)
		},
		want: durations{P50: ms, P95: ms, P99: ms, Max: time.Second},
	}, {
		name: "small values are exact",
		values: func(add func(time.Duration)) {
			for i := range 100 {
				add(time.Duration(i % 20))
			}
		},
		want: durations{P50: 9, P95: 18, P99: 19, Max: 19},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram
			tt.values(h.add)
			p := h.percentiles()
			if p.N != int(h.n) || p.Figures != metrics.All {
				t.Errorf("n %d, figures %b; want %d, all", p.N, p.Figures, h.n)
			}
			got := durationsOf(p)
			for _, c := range []struct {
				name      string
				got, want time.Duration
			}{{"p50", got.P50, tt.want.P50}, {"p95", got.P95, tt.want.P95}, {"p99", got.P99, tt.want.P99}, {"max", got.Max, tt.want.Max}} {
				if math.Abs(float64(c.got-c.want)) > float64(c.want)/64 {
					t.Errorf("%s = %v, want %v within 1.6%%", c.name, c.got, c.want)
				}
			}
		})
	}
}

func TestMeterWindow(t *testing.T) {
	m := newMeter(time.Second) // ten slots of 100 ms
	// One delivered 1000-byte packet every 10 ms for 3 s, its wait growing
	// with time; a drop every 100 ms.
	for i := range 300 {
		at := time.Duration(i) * 10 * ms
		m.deliver(Departure{At: at, Size: 1000, Wait: at / 100}, at+time.Microsecond)
		if i%10 == 0 {
			m.verdict(at, Dropped)
		}
	}
	m.verdict(2995*ms, Lost)
	total, window := m.counters(3 * time.Second)

	if total.Packets != 300 || total.Bytes != 300000 || total.Drops != 30 || total.Losses != 1 {
		t.Errorf("total %+v, want 300 packets, 300000 bytes, 30 drops, 1 loss", total)
	}
	if total.Span != 3*time.Second {
		t.Errorf("total span %v, want 3s", total.Span)
	}
	// At 3 s the window is the slots of [2.1 s, 3 s): the current slot
	// [3.0 s, 3.1 s) is empty and the nine before it are full.
	if window.Packets != 90 || window.Drops != 9 || window.Losses != 1 {
		t.Errorf("window %+v, want 90 packets, 9 drops, 1 loss", window)
	}
	if window.Span != 900*ms {
		t.Errorf("window span %v, want 900ms", window.Span)
	}
	if r := window.Rate(); math.Abs(r-800000) > 1 {
		t.Errorf("window rate %.0f b/s, want 800000", r)
	}
	// Waits in the window run from 21 ms to 29.9 ms.
	if p := durationsOf(window.Queue).P50; p < 25*ms || p > 26*ms {
		t.Errorf("window queue p50 %v, want about 25.5ms", p)
	}
	if p := durationsOf(total.Queue).P50; p < 14*ms || p > 16*ms {
		t.Errorf("total queue p50 %v, want about 15ms", p)
	}
	if total.Late.Max != 0.001 {
		t.Errorf("late max %v, want 1µs", total.Late.Max)
	}

	// Long after, the window is empty but the totals remain.
	total, window = m.counters(10 * time.Second)
	if window.Packets != 0 || window.Drops != 0 || total.Packets != 300 {
		t.Errorf("after 7 idle seconds: window %d packets, %d drops, total %d packets; want 0, 0, 300",
			window.Packets, window.Drops, total.Packets)
	}
	if window.Span != 900*ms {
		t.Errorf("window span %v, want 900ms", window.Span)
	}
	if _, window = m.counters(10*time.Second + 50*ms); window.Span != 950*ms {
		t.Errorf("window span %v, want 950ms", window.Span)
	}

	// Early on, the window covers only the time since the start.
	m = newMeter(time.Second)
	if _, window = m.counters(250 * ms); window.Span != 250*ms {
		t.Errorf("window span at 250ms = %v, want 250ms", window.Span)
	}
}

func TestMeterResetTotal(t *testing.T) {
	tests := []struct {
		name        string
		resetAt     time.Duration // 0: no reset
		now         time.Duration
		wantPackets int64
		wantSpan    time.Duration
		wantQueue   time.Duration // total queue p50
	}{
		{name: "no reset", now: 2 * time.Second, wantPackets: 200, wantSpan: 2 * time.Second, wantQueue: 1 * ms},
		{name: "reset at 1 s", resetAt: time.Second, now: 2 * time.Second, wantPackets: 100, wantSpan: time.Second, wantQueue: 50 * ms},
		{name: "reset at the end", resetAt: 2 * time.Second, now: 2 * time.Second, wantPackets: 0, wantSpan: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMeter(time.Second)
			// 200 packets, one every 10 ms: waits of 1 ms in the first
			// second and 50 ms in the second.
			for i := range 200 {
				at := time.Duration(i) * 10 * ms
				if tt.resetAt > 0 && at == tt.resetAt {
					m.resetTotal(at)
				}
				wait := ms
				if at >= time.Second {
					wait = 50 * ms
				}
				m.deliver(Departure{At: at, Size: 100, Wait: wait}, at)
			}
			if tt.resetAt == tt.now {
				m.resetTotal(tt.now)
			}
			total, window := m.counters(tt.now)
			if total.Packets != tt.wantPackets || total.Span != tt.wantSpan {
				t.Errorf("total %d packets over %v, want %d over %v", total.Packets, total.Span, tt.wantPackets, tt.wantSpan)
			}
			if d := durationsOf(total.Queue).P50 - tt.wantQueue; d < -ms || d > ms {
				t.Errorf("total queue p50 %v, want %v", total.Queue.P50, tt.wantQueue)
			}
			if window.Packets != 90 {
				t.Errorf("window %d packets, want 90 (a reset leaves the window alone)", window.Packets)
			}
		})
	}
}
