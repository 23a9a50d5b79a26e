package sender

import (
	"testing"
	"time"
)

func TestLeadMeter(t *testing.T) {
	var m LeadMeter
	ms := time.Millisecond
	if got := m.Add(5 * ms); got != 6*ms {
		t.Fatalf("first lead %v, want the encode plus the margin, 6ms", got)
	}
	// 29 fast encodes and 3 slow ones (keyframes): the lead covers the
	// 90th percentile, not the slowest.
	for i := range 31 {
		d := 4 * ms
		if i%10 == 5 {
			d = 20 * ms
		}
		m.Add(d)
	}
	if got := m.Add(4 * ms); got != 5*ms {
		t.Errorf("lead %v after 3 slow encodes in 32, want 5ms (p90 4ms + margin)", got)
	}
	// Encodes slow down for good: the lead follows within the window.
	var got time.Duration
	for range leadSamples {
		got = m.Add(12 * ms)
	}
	if got != 13*ms {
		t.Errorf("lead %v after a window of 12ms encodes, want 13ms", got)
	}
	if got := m.Add(-ms); got < 0 {
		t.Errorf("negative encode time gave lead %v", got)
	}
}
