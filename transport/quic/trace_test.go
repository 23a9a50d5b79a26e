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

// virtualMetrics puts st on a virtual clock from its base: at returns the
// time d after it, and report records quic-go's metrics m at that time.
func virtualMetrics(st *pathState) (at func(d time.Duration) time.Time, report func(d time.Duration, m qlog.MetricsUpdated)) {
	at = func(d time.Duration) time.Time { return st.base.Add(d) }
	report = func(d time.Duration, m qlog.MetricsUpdated) {
		st.now = func() time.Time { return at(d) }
		st.RecordEvent(m)
	}
	return at, report
}

// TestPathStateUnanswered: the time bytes have been in flight unanswered
// runs from the later of the last acknowledgement and the moment bytes in
// flight rose from zero, and is zero with nothing in flight.
func TestPathStateUnanswered(t *testing.T) {
	st := newPathState()
	at, report := virtualMetrics(st)
	set := func(d time.Duration, inFlight int) { report(d, qlog.MetricsUpdated{BytesInFlight: inFlight}) }
	check := func(now, want time.Duration, wantAhead int64) {
		t.Helper()
		if got, ahead := st.unanswered(at(now)); got != want || ahead != wantAhead {
			t.Errorf("unanswered at %v = %v, %d bytes ahead; want %v, %d", now, got, ahead, want, wantAhead)
		}
	}
	check(time.Second, 0, 0)
	set(100*time.Millisecond, 3000) // sent
	check(400*time.Millisecond, 300*time.Millisecond, 3000)
	set(500*time.Millisecond, 4200) // more sent: the wait runs on, behind the same bytes
	check(600*time.Millisecond, 500*time.Millisecond, 3000)
	set(700*time.Millisecond, 1200) // acknowledged
	check(time.Second, 300*time.Millisecond, 1200)
	set(time.Second, 0) // all acknowledged
	check(5*time.Second, 0, 0)
	set(5*time.Second, 1200) // sent after a pause
	check(5200*time.Millisecond, 200*time.Millisecond, 1200)
}

// TestPathStateDroppedKeys: once quic-go discards the handshake's keys,
// the bytes in flight it last reported may be packets it dropped with
// them without a word, so they count as none until its next report.
func TestPathStateDroppedKeys(t *testing.T) {
	st := newPathState()
	st.RecordEvent(qlog.MetricsUpdated{BytesInFlight: 2400}) // two lost Initial packets
	st.RecordEvent(qlog.KeyDiscarded{KeyType: qlog.KeyTypeServerInitial})
	if got := st.sending(); got != 2400 {
		t.Fatalf("after the server's keys were discarded: sending %d, want 2400", got)
	}
	st.RecordEvent(qlog.KeyDiscarded{KeyType: qlog.KeyTypeClientHandshake})
	if got, u := st.sending(), first(st.unanswered(time.Now().Add(time.Hour))); got != 0 || u != 0 {
		t.Fatalf("after the handshake keys were discarded: sending %d, unanswered %v; want none", got, u)
	}
	// The next report, a packet sent 5 s on, starts the wait afresh
	// even though the count it replaces (2400) was not zero.
	t0 := st.base
	st.now = func() time.Time { return t0.Add(5 * time.Second) }
	st.RecordEvent(qlog.MetricsUpdated{BytesInFlight: 3600})
	if got, u := st.sending(), first(st.unanswered(t0.Add(5200*time.Millisecond))); got != 3600 || u != 200*time.Millisecond {
		t.Fatalf("after the next report: sending %d, unanswered %v; want 3600, 200ms", got, u)
	}
}

func first(d time.Duration, _ int64) time.Duration { return d }
