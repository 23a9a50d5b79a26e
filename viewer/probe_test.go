package viewer

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"replenish/framer"
)

func TestAddrLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	l := newAddrLimiter(10, 3, 2)
	for i := range 3 {
		if !l.allow(a, t0) {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if l.allow(a, t0) {
		t.Fatal("a fourth request at once allowed")
	}
	if !l.allow(b, t0) {
		t.Fatal("another address refused")
	}
	if l.allow(a, t0.Add(99*time.Millisecond)) {
		t.Fatal("a token before 100 ms at 10/s")
	}
	if !l.allow(a, t0.Add(100*time.Millisecond)) {
		t.Fatal("no token after 100 ms at 10/s")
	}
	// The map is full (a, b): a third address waits until a bucket has
	// refilled and can be forgotten.
	for range 2 {
		l.allow(b, t0) // b's bucket empty at t0
	}
	c := netip.MustParseAddr("192.0.2.3")
	if l.allow(c, t0.Add(200*time.Millisecond)) {
		t.Fatal("a third address with the map full of busy buckets")
	}
	// A refused sweep is not retried within a refill time (300 ms),
	// however many new addresses come.
	if l.allow(c, t0.Add(450*time.Millisecond)) {
		t.Fatal("swept again within the refill time")
	}
	// By then both buckets are full again: the next sweep forgets them.
	if !l.allow(c, t0.Add(500*time.Millisecond)) {
		t.Fatal("a third address refused although the buckets had refilled")
	}
	if len(l.buckets) > 2 {
		t.Fatalf("%d buckets, want at most 2", len(l.buckets))
	}
}

// TestClockProbeRateLimited sends a burst of probes from one address: no
// more than ProbeBurst are answered at once, and each reply is no larger
// than its request.
func TestClockProbeRateLimited(t *testing.T) {
	ts := startServer(t, nil)
	conn, err := net.Dial("udp", ts.media)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The viewer drops what arrives before it starts reading probes:
	// wait for one reply first.
	buf := make([]byte, 100)
	eventually(t, "a first reply", func() bool {
		conn.Write(framer.TimeProbe{Origin: time.UnixMicro(2)}.Marshal())
		conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := conn.Read(buf)
		return err == nil
	})
	const sent = 3 * ProbeBurst
	for i := range sent {
		req := framer.TimeProbe{Origin: time.UnixMicro(int64(i + 1))}
		if i%2 == 1 {
			req.Clock = 42 // the larger request
		}
		if _, err := conn.Write(req.Marshal()); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for {
		conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		p, err := framer.ParseTimeProbe(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		reqSize := framer.TimeProbeSize
		if p.Origin.UnixMicro()%2 == 0 {
			reqSize += 8
		}
		if n > reqSize {
			t.Errorf("a %d-byte reply to a %d-byte request", n, reqSize)
		}
		got++
	}
	// The bucket refills at ProbeRate per second while the first reply
	// is awaited and the burst read: a few more than the burst may pass,
	// never the whole burst.
	if got < ProbeBurst/2 || got > ProbeBurst+5 {
		t.Errorf("%d of %d probes answered, want %d to %d", got, sent, ProbeBurst/2, ProbeBurst+5)
	}
}
