package sender

import (
	"context"
	"net"
	"testing"
	"time"

	"replenish/framer"
	"replenish/internal/hostclock"
)

// TestProbeClock answers probes with a viewer clock 5 s ahead: a viewer on
// another host gives an offset of about 5 s; one that reports this host's
// clock identifier gives exactly 0, whatever its times say.
func TestProbeClock(t *testing.T) {
	if hostclock.ID() == 0 {
		t.Skip("no boot id on this system")
	}
	for _, tc := range []struct {
		name  string
		clock uint64
		want  func(time.Duration) bool
	}{
		{"other host", hostclock.ID() + 1, func(d time.Duration) bool { return d > 4900*time.Millisecond && d < 5100*time.Millisecond }},
		{"same host", hostclock.ID(), func(d time.Duration) bool { return d == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			go func() {
				buf := make([]byte, 64)
				for {
					n, addr, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					p, err := framer.ParseTimeProbe(buf[:n])
					if err != nil {
						continue
					}
					now := time.Now().Add(5 * time.Second)
					pc.WriteTo(p.Answer(now, now, tc.clock).Marshal(), addr)
				}
			}()
			ctx, cancel := context.WithCancel(t.Context())
			got := make(chan time.Duration, 1)
			go ProbeClock(ctx, pc.LocalAddr().String(), 100*time.Millisecond, func(off, rtt time.Duration) {
				select {
				case got <- off:
				default:
				}
				cancel()
			})
			select {
			case off := <-got:
				if !tc.want(off) {
					t.Errorf("offset %v", off)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no estimate")
			}
			cancel()
		})
	}
}
