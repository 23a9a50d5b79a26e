package tcp

import (
	"context"
	"testing"
	"time"

	"replenish/transport"
)

// BenchmarkWaitImmediate measures one Wait that invites at once: a TCP_INFO
// read, the rule, and an error-queue drain.
func BenchmarkWaitImmediate(b *testing.B) {
	for _, cfg := range []Config{{}, {NoTimestamps: true}} {
		b.Run(cfg.Mode.String()+map[bool]string{true: "/nots", false: "/ts"}[cfg.NoTimestamps], func(b *testing.B) {
			e := newPair(b, cfg, pairOptions{})
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.c.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendLoop runs the sender loop (Wait, then WriteFrame) against a
// peer that reads as fast as loopback allows, and reports frames per
// second and the mean source delay.
func BenchmarkSendLoop(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
		size int
	}{
		{"replenish=15ms/10KB", Config{}, 10000},
		{"replenish=100us/60KB", Config{Mode: transport.Mode{ReplenishTime: 100 * time.Microsecond}}, 60000},
		{"default/60KB", Config{Mode: transport.Mode{Policy: transport.Default}}, 60000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var delay time.Duration
			var stamped int
			tc.cfg.OnSent = func(r transport.SendRecord) {
				if d := r.SourceDelay(); d >= 0 {
					delay += d
					stamped++
				}
			}
			e := newPair(b, tc.cfg, pairOptions{})
			done := discard(e.peer)
			pkts := frame(1, tc.size, 1)
			ctx := context.Background()
			var id uint64
			for b.Loop() {
				if _, err := e.c.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				id++
				if err := e.c.WriteFrame(id, pkts); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(tc.size + 2))
			if stamped > 0 {
				b.ReportMetric(float64(delay.Microseconds())/float64(stamped), "µs-source-delay")
			}
			e.tc.CloseWrite()
			<-done
		})
	}
}
