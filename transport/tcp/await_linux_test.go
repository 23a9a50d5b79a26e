package tcp

import (
	"errors"
	"net"
	"testing"

	"replenish/framer"
	"replenish/transport"
)

// answer writes one RFC 4571 framed packet from the peer.
func answer(t *testing.T, e endpoint, p []byte) {
	t.Helper()
	b, err := framer.AppendFramed(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.peer.Write(b); err != nil {
		t.Error(err)
	}
}

// TestAwaitPeer checks that AwaitPeer returns once the peer's packet has
// reached OnPacket, with the departure stamps that came meanwhile delivered
// to OnSent, and ends on the peer's close and on Close.
func TestAwaitPeer(t *testing.T) {
	var got []byte
	var sent int
	cfg := Config{
		Mode:     transport.Mode{Policy: transport.Default},
		OnPacket: func(p []byte) { got = append(got[:0], p...) },
		OnSent:   func(transport.SendRecord) { sent++ },
	}
	e := newPair(t, cfg, pairOptions{})
	if err := e.c.Write(1, []byte("request")); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 7)
		if _, err := e.peer.Read(buf); err == nil {
			answer(t, e, []byte("OK"))
		}
	}()
	if err := e.c.AwaitPeer(func() bool { return got != nil }); err != nil {
		t.Fatalf("AwaitPeer: %v", err)
	}
	if string(got) != "OK" {
		t.Errorf("packet %q, want OK", got)
	}
	// The write's stamp came before the answer, which the peer sent only
	// after reading the write; one more Poll collects it if the answer's
	// wake came first.
	e.c.Poll()
	if sent != 1 {
		t.Errorf("%d send records, want 1", sent)
	}

	// Already done: no wait.
	if err := e.c.AwaitPeer(func() bool { return true }); err != nil {
		t.Errorf("AwaitPeer when done: %v", err)
	}

	// The peer closes: the wait ends with ErrPeerClosed.
	e.peer.CloseWrite()
	if err := e.c.AwaitPeer(func() bool { return false }); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("AwaitPeer after the peer closed: %v", err)
	}

	// Close from elsewhere ends a wait.
	e2 := newPair(t, Config{}, pairOptions{})
	done := make(chan error, 1)
	go func() { done <- e2.c.AwaitPeer(func() bool { return false }) }()
	e2.c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("AwaitPeer after Close: %v", err)
	}
}
