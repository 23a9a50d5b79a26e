package viewer

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"replenish/framer"
)

// dialFrom connects to the viewer's media port over TCP from the loopback
// address local (127.0.0.0/8 holds many).
func dialFrom(t *testing.T, ts *testServer, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", ts.media)
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// admitted reports whether the viewer took conn: it sends its challenge
// to a connection it took and closes one it refused without a word.
func admitted(t *testing.T, conn net.Conn) bool {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(waitLimit))
	pkt, err := framer.NewReader(conn).ReadPacket()
	switch {
	case err == nil:
		if _, err := framer.ParseAuthChallenge(pkt); err != nil {
			t.Fatalf("first packet: %v", err)
		}
		return true
	case errors.Is(err, io.EOF), isReset(err):
		return false
	}
	t.Fatalf("reading the challenge: %v", err)
	return false
}

// TestSenderConnLimits: connections beyond the per-address cap, and beyond
// the total cap from other addresses, are closed at once; a slot freed is
// taken again.
func TestSenderConnLimits(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		withToken(c)
		c.AuthTimeout = time.Minute // the connections wait for their proofs throughout
		c.MaxSenderConnsPerAddr = 2
		c.MaxSenderConns = 3
	})
	a1, a2 := dialFrom(t, ts, "127.0.0.1"), dialFrom(t, ts, "127.0.0.1")
	for _, c := range []net.Conn{a1, a2} {
		if !admitted(t, c) {
			t.Fatal("a connection within the caps was refused")
		}
	}
	if admitted(t, dialFrom(t, ts, "127.0.0.1")) {
		t.Fatal("a third connection from one address was admitted (cap 2)")
	}
	qc, err := dialQUIC(t, ts.media, ts.Fingerprint())
	if err == nil {
		_, err = qc.AcceptUniStream(context.Background())
	}
	if err == nil {
		t.Fatal("a QUIC connection over the per-address cap was not closed")
	}
	if !admitted(t, dialFrom(t, ts, "127.0.0.2")) {
		t.Fatal("a connection from another address was refused within the total cap")
	}
	if admitted(t, dialFrom(t, ts, "127.0.0.3")) {
		t.Fatal("a fourth connection was admitted (total cap 3)")
	}
	a1.Close()
	eventually(t, "the freed slot taken again", func() bool { return admitted(t, dialFrom(t, ts, "127.0.0.1")) })
}
