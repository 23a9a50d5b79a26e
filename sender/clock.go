package sender

import (
	"context"
	"net"
	"time"

	"replenish/framer"
	"replenish/internal/hostclock"
)

// ProbeClock estimates the viewer's clock minus the sender's with NTP-style
// time probes over UDP to addr (the viewer answers on the same address as
// its media port), on a side channel so that probes never wait behind media.
// It sends a probe every interval (a quick burst first), calls set with each
// new estimate and its round trip, and returns when ctx is done. Probes that
// go unanswered are simply retried; nothing accumulates. A viewer that
// answers with this host's clock identifier shares the sender's clock, and
// the offset is then zero. Each request carries this host's clock
// identifier, which also makes it as large as the reply (the viewer never
// answers with more bytes than it received).
func ProbeClock(ctx context.Context, addr string, interval time.Duration, set func(offset, rtt time.Duration)) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()

	est := framer.NewOffsetEstimator(0)
	buf := make([]byte, 64)
	for i := 0; ctx.Err() == nil; i++ {
		t1 := time.Now()
		if _, err := conn.Write(framer.TimeProbe{Origin: t1, Clock: hostclock.ID()}.Marshal()); err == nil {
			conn.SetReadDeadline(t1.Add(interval))
			for {
				n, err := conn.Read(buf)
				if err != nil {
					break // timed out, refused (no viewer yet) or closed
				}
				t4 := time.Now()
				p, err := framer.ParseTimeProbe(buf[:n])
				if err != nil || !p.Reply || !p.Origin.Equal(t1.Truncate(time.Microsecond)) {
					continue // garbage or a late reply to an earlier probe
				}
				if p.Clock != 0 && p.Clock == hostclock.ID() {
					// The viewer reads this host's clock: the offset
					// is exactly zero, whatever the path's asymmetry
					// would make the probes say.
					set(0, t4.Sub(t1))
					break
				}
				if est.Add(p.Origin, p.Receive, p.Transmit, t4) == nil {
					if off, rtt, ok := est.Offset(); ok {
						set(off, rtt)
					}
				}
				break
			}
		}
		wait := interval
		if i < 5 {
			wait = interval / 10 // a quick burst for a first estimate
		}
		if next := time.Until(t1.Add(wait)); next > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(next):
			}
		}
	}
	return nil
}
