package sender

import (
	"testing"
	"time"

	"replenish/rate"
)

// TestFreshRTT: the largest of the transport's last three round-trip
// samples replaces a smoothed RTT above it, if the newest is recent;
// otherwise the smoothed RTT is read as it is.
func TestFreshRTT(t *testing.T) {
	const srtt = 600 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		age     time.Duration // of the newest sample
		want    time.Duration
	}{
		{"three below", []time.Duration{ms(280), ms(300), ms(290)}, ms(50), ms(300)},
		{"one of three above", []time.Duration{ms(280), ms(700), ms(290)}, ms(50), srtt},
		{"two samples only", []time.Duration{ms(280), ms(290)}, ms(50), srtt},
		{"newest older than a round trip", []time.Duration{ms(280), ms(300), ms(290)}, srtt + ms(1), srtt},
		{"a newer sample above", []time.Duration{ms(280), ms(300), ms(290), ms(650)}, ms(50), srtt},
		{"a newer sample below", []time.Duration{ms(650), ms(280), ms(300), ms(290)}, ms(50), ms(300)},
	} {
		c := NewController(testLadder, rate.Mbps)
		now := time.Unix(1000, 0)
		var got time.Duration
		for i, s := range tc.samples {
			at := now.Add(-tc.age - time.Duration(len(tc.samples)-1-i)*ms(100))
			// Each sample is seen twice: a repeat is not a new sample.
			for range 2 {
				got = c.freshRTT(Observation{Now: now, RTT: srtt, LatestRTT: s, LatestRTTAt: at})
			}
		}
		if got != tc.want {
			t.Errorf("%s: read %v, want %v", tc.name, got, tc.want)
		}
	}
}
