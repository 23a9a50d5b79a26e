package quic

import (
	"testing"
	"time"
)

// A frame offered to the pacer all at once leaves at the pacing rate, not
// as a burst: after the first two packets each waits for its time, and
// the whole takes its size at the rate, less the burst.
func TestPacerSpreadsAFrame(t *testing.T) {
	const (
		pkt   = 1250
		frame = 16 * pkt
	)
	var p pacer
	p.setRate(25000, 100*time.Millisecond) // 312.5 kB/s
	rate := paceGain * 25000 / 0.1
	start := time.Unix(1000, 0)
	now := start
	var sent, atOnce int
	for sent < frame {
		if n := p.allow(now, pkt); n > 0 {
			sent += n
			if now.Equal(start) {
				atOnce += n
			}
			continue
		}
		d := p.delay(now)
		if d <= 0 {
			t.Fatalf("at %v: allowed nothing, and no delay", now.Sub(start))
		}
		now = now.Add(d)
	}
	if atOnce > paceMinBurst+pkt {
		t.Errorf("%d bytes at once, want at most %d", atOnce, paceMinBurst+pkt)
	}
	want := time.Duration(float64(frame-paceMinBurst-pkt) / rate * float64(time.Second))
	if took := now.Sub(start); took < want*9/10 || took > want*11/10 {
		t.Errorf("the frame took %v, want about %v", took, want)
	}
	// A pause refills the budget to the burst, not more.
	now = now.Add(time.Second)
	atOnce = 0
	for i := 0; i < 100 && p.allow(now, pkt) > 0; i++ {
		atOnce += pkt
	}
	if atOnce > paceMinBurst+pkt {
		t.Errorf("after a pause %d bytes at once, want at most %d", atOnce, paceMinBurst+pkt)
	}
}

// Without a congestion window or a round trip the pacer holds nothing
// back; at a high rate its burst is a millisecond's worth.
func TestPacerRates(t *testing.T) {
	var p pacer
	now := time.Unix(1000, 0)
	for range 100 {
		if p.allow(now, 1250) != 1250 || p.delay(now) != 0 {
			t.Fatal("an unknown rate held bytes back")
		}
	}
	p.setRate(1_000_000, 10*time.Millisecond) // 125 MB/s: 125 kB a millisecond
	sent := 0
	for i := 0; i < 1000 && p.allow(now, 1250) > 0; i++ {
		sent += 1250
	}
	if burst := paceGain * 1e8 * paceBurst.Seconds(); float64(sent) < burst || float64(sent) > burst+1250 {
		t.Errorf("burst %d bytes, want %.0f", sent, burst)
	}
	p.setRate(0, 10*time.Millisecond)
	if p.allow(now, 1250) != 1250 {
		t.Error("a zero window held bytes back")
	}
	// At a rate a collapsed window gives (two packets a second), the
	// writer still looks again within paceRecheck.
	p.setRate(2*1280, time.Second)
	now = now.Add(time.Second) // the budget refills to two packets
	for i := 0; i < 10 && p.allow(now, 1250) > 0; i++ {
	}
	if d := p.delay(now); d <= 0 || d > paceRecheck {
		t.Errorf("at %.0f B/s: delay %v, want (0, %v]", p.rate, d, paceRecheck)
	}
}

// Paced, the limiter passes none of a packet's bytes once the budget is
// spent, and counts only what it passes.
func TestLimiterPaced(t *testing.T) {
	c := &Conn{wake: make(chan struct{}, 1), pace: &pacer{}}
	c.limit.Store(-1)
	c.pace.setRate(25000, 100*time.Millisecond)
	c.accepted.Store(20000)
	lim := c.limiter(&frame{end: 20000})
	passed := 0
	for range 16 {
		passed += lim(1250)
	}
	if passed == 0 || passed > paceMinBurst+1250 {
		t.Errorf("passed %d bytes at once, want one to %d", passed, paceMinBurst+1250)
	}
	if c.packed.Load() != int64(passed) {
		t.Errorf("packed %d, want %d", c.packed.Load(), passed)
	}
}
