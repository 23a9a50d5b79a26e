package viewer

import (
	"testing"
	"time"

	"replenish/rate"
	"replenish/transport/tcp"
)

// TestUppersAllowed checks the gate on a 1 Mb/s leg with a 40 ms minimum
// round trip (5000 B in flight hold no queue) and a 50 ms target.
func TestUppersAllowed(t *testing.T) {
	const target = 50 * time.Millisecond
	info := func(sent, retrans, acked uint64, unsent int) tcp.Info {
		return tcp.Info{BytesSent: sent, BytesRetrans: retrans, BytesAcked: acked, NotsentBytes: unsent, MinRTT: 40 * time.Millisecond}
	}
	for _, tc := range []struct {
		name   string
		target time.Duration
		info   tcp.Info
		drain  rate.Bitrate
		want   bool
	}{
		{"nothing ahead", target, info(9000, 0, 9000, 0), rate.Mbps, true},
		{"a round trip's worth in flight", target, info(15000, 0, 10000, 0), rate.Mbps, true},
		{"90 ms in flight: 50 ms of queue", target, info(21250, 0, 10000, 0), rate.Mbps, true},
		{"100 ms in flight: 60 ms of queue", target, info(22500, 0, 10000, 0), rate.Mbps, false},
		{"unsent bytes count", target, info(15000, 0, 10000, 7500), rate.Mbps, false},
		{"retransmitted bytes count once", target, info(25000, 7500, 10000, 0), rate.Mbps, true},
		{"a faster drain", target, info(22500, 0, 10000, 0), 2 * rate.Mbps, true},
		{"unknown drain rate", target, info(900000, 0, 0, 0), 0, true},
		{"unknown minimum round trip", target, tcp.Info{BytesSent: 900000}, rate.Mbps, true},
		{"no byte counts", target, tcp.Info{MinRTT: 40 * time.Millisecond, NotsentBytes: 900000}, rate.Mbps, true},
		{"no target", 0, info(900000, 0, 0, 0), rate.Mbps, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uppersAllowed(tc.target, tc.info, tc.drain); got != tc.want {
				t.Errorf("uppers allowed %v, want %v", got, tc.want)
			}
		})
	}
}
