package quic

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go/qlog"

	"replenish/rate"
)

// TestHoldGate: the stream's data goes while the path answers; once
// nothing has been acknowledged for a probe timeout plus the time the
// bytes in flight then take at the drain rate, only a keepalive goes,
// once every keepaliveEvery; an acknowledgement ends the hold.
func TestHoldGate(t *testing.T) {
	st := newPathState()
	at, report := virtualMetrics(st)
	metrics := func(d time.Duration, inFlight int) {
		report(d, qlog.MetricsUpdated{SmoothedRTT: 80 * time.Millisecond, RTTVariance: 10 * time.Millisecond, BytesInFlight: inFlight})
	}
	g := &holdGate{path: st, drained: func() rate.Bitrate { return 1 * rate.Mbps }}
	// 80 + 4×10 + 25 ms, and 12,500 bytes at 1 Mb/s: 100 ms.
	const limit = 245 * time.Millisecond
	if got := holdLimit(80*time.Millisecond, 10*time.Millisecond, 12500, rate.Mbps); got != limit {
		t.Fatalf("holdLimit = %v, want %v", got, limit)
	}
	steps := []struct {
		at   time.Duration
		want int
	}{
		{0, 1200}, // nothing in flight
		{limit - time.Millisecond, 1200},
		{limit + time.Millisecond, keepaliveBytes},
		{limit + 2*time.Millisecond, 0},
		{limit + 50*time.Millisecond, 0},
		{limit + time.Millisecond + keepaliveEvery, keepaliveBytes},
		{limit + 2*time.Millisecond + keepaliveEvery, 0},
	}
	metrics(0, 12500)
	for _, s := range steps {
		if got := g.allow(at(s.at), 1200); got != s.want {
			t.Errorf("allow at %v = %d, want %d", s.at, got, s.want)
		}
	}
	metrics(time.Second, 6000) // acknowledged: the wait starts again behind 6000 bytes
	if got := g.allow(at(time.Second+100*time.Millisecond), 1200); got != 1200 {
		t.Errorf("after an acknowledgement: allow = %d, want 1200", got)
	}
	// No drain rate measured yet: the bytes in flight count at
	// stallFloorRate, 2.4 s for 6000 bytes.
	g.drained = func() rate.Bitrate { return 0 }
	if got := g.allow(at(3*time.Second), 1200); got != 1200 {
		t.Errorf("with no drain rate, 2 s after the acknowledgement: allow = %d, want 1200", got)
	}
	if got := g.allow(at(3600*time.Millisecond), 1200); got != keepaliveBytes {
		t.Errorf("with no drain rate, 2.6 s after the acknowledgement: allow = %d, want %d", got, keepaliveBytes)
	}
}

// TestHeldThroughOutage: in replenish mode, once a viewer goes deaf the
// stream soon stops handing its frames' data to packets, but for a
// keepalive every keepaliveEvery, and nothing more is invited; when the
// viewer hears again, the frames flow again.
func TestHeldThroughOutage(t *testing.T) {
	dc := &deafConn{PacketConn: loopbackUDP(t)}
	v := newTestViewerOn(t, dc)
	c := dialTest(t, v, Config{StallTimeout: time.Minute, IdleTimeout: time.Minute})
	conn := v.accepted(t)
	go func() {
		s, err := conn.AcceptUniStream(context.Background())
		if err == nil {
			io.Copy(io.Discard, s)
		}
	}()
	// send offers frames for d, each once invited; it returns how many
	// were invited.
	var id uint64
	send := func(d time.Duration) int {
		n := 0
		for end := time.Now().Add(d); time.Now().Before(end); {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			_, err := c.Wait(ctx)
			cancel()
			if err != nil {
				continue
			}
			id++
			if err := c.WriteFrame(id, [][]byte{packet(3000, byte(id))}); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
			n++
			time.Sleep(10 * time.Millisecond)
		}
		return n
	}
	if n := send(time.Second); n < 20 {
		t.Fatalf("on a working path: %d frames in 1 s", n)
	}
	dc.deaf.Store(true)
	first := send(time.Second)
	before := c.packed.Load()
	invited := send(time.Second)
	held := c.packed.Load() - before
	// The hold begins a probe timeout after the last acknowledgement,
	// about 30 ms on loopback: three frames then, a few more on a slow
	// machine. Unheld, quic-go's initial window (40 KB) takes thirteen.
	if first > 8 {
		t.Errorf("the path deaf: %d frames invited in the first second, want at most 8", first)
	}
	// A keepalive every keepaliveEvery: ten in the second, and one for
	// the timing's slack.
	if max := int64(11 * keepaliveBytes); held > max {
		t.Errorf("the path deaf for a second: %d bytes packetized in the next, want at most %d (keepalives)", held, max)
	}
	if invited > 1 {
		t.Errorf("the path deaf for a second: %d frames invited in the next, want at most 1", invited)
	}
	dc.deaf.Store(false)
	if n := send(2 * time.Second); n < 10 {
		t.Errorf("the path back: %d frames in 2 s", n)
	}
}
