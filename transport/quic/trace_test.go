package quic

import (
	"testing"
	"time"

	"github.com/quic-go/quic-go/qlog"
)

// TestPathStateAcked: bytes in flight falling (an acknowledgement) dates
// the latest acknowledgement; rising (a packet sent) does not.
func TestPathStateAcked(t *testing.T) {
	st := newPathState()
	if !st.acked().IsZero() {
		t.Fatalf("acked before any acknowledgement: %v", st.acked())
	}
	st.RecordEvent(qlog.MetricsUpdated{BytesInFlight: 3000})
	if !st.acked().IsZero() {
		t.Fatalf("a send dated an acknowledgement: %v", st.acked())
	}
	before := time.Now()
	st.RecordEvent(qlog.MetricsUpdated{BytesInFlight: 1200})
	a := st.acked()
	if a.Before(before) || a.After(time.Now()) {
		t.Fatalf("acked %v, want between %v and now", a, before)
	}
	st.RecordEvent(qlog.MetricsUpdated{BytesInFlight: 2400})
	if got := st.acked(); !got.Equal(a) {
		t.Errorf("a send moved the acknowledgement's time: %v, was %v", got, a)
	}
	if got := st.inFlight.Load(); got != 2400 {
		t.Errorf("in flight %d, want 2400", got)
	}
}
