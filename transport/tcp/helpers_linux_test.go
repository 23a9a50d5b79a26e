package tcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"replenish/framer"
)

// guard bounds every wait for an event a test expects; reaching it means
// the event never came, not that something was slow.
const guard = 20 * time.Second

// endpoint is a test connection: the Conn under test, its socket, and the
// peer's end.
type endpoint struct {
	c    *Conn
	tc   *net.TCPConn // the socket the Conn took over
	peer *net.TCPConn
}

// pairOptions adjusts sockets before New.
type pairOptions struct {
	peerRcvBuf int                // SO_RCVBUF on the listener, inherited by the peer; 0 leaves it
	before     func(fd int) error // runs on the sender's socket before New
}

// newPair connects a Conn configured by cfg to a peer on 127.0.0.1 and
// closes both at the end of the test.
func newPair(t testing.TB, cfg Config, o pairOptions) endpoint {
	t.Helper()
	tc, peer := connectPair(t, o)
	c, err := New(tc, cfg)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	return endpoint{c: c, tc: tc, peer: peer}
}

// connectPair connects a socket to a peer on 127.0.0.1, applies o, and
// closes both at the end of the test.
func connectPair(t testing.TB, o pairOptions) (tc, peer *net.TCPConn) {
	t.Helper()
	lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		if o.peerRcvBuf == 0 {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, o.peerRcvBuf)
		})
		return errors.Join(err, serr)
	}}
	// Go listeners default to MPTCP where the kernel has it; the peer
	// here is plain TCP, as the sender is.
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tc, err = net.DialTCP("tcp4", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := ln.Accept()
	if err != nil {
		tc.Close()
		t.Fatal(err)
	}
	peer = pc.(*net.TCPConn)
	t.Cleanup(func() { tc.Close(); peer.Close() })
	if o.before != nil {
		raw, _ := tc.SyscallConn()
		var berr error
		if err := raw.Control(func(fd uintptr) { berr = o.before(int(fd)) }); err != nil || berr != nil {
			t.Fatal(err, berr)
		}
	}
	return tc, peer
}

// eventually polls cond until it holds, failing the test at the guard.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// frame returns a frame of n packets of size bytes each, every byte of
// packet i set to fill+i.
func frame(n, size int, fill byte) [][]byte {
	pkts := make([][]byte, n)
	for i := range pkts {
		pkts[i] = bytes.Repeat([]byte{fill + byte(i)}, size)
	}
	return pkts
}

// info reads TCP_INFO or fails the test.
func info(t testing.TB, c *Conn) Info {
	t.Helper()
	i, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// fillUnsent writes frames of one size-byte packet until the kernel holds at
// least target unsent bytes. The peer must not be reading. A write that
// blocks past the guard fails the test rather than hanging it.
func fillUnsent(t testing.TB, e endpoint, size, target int) (frames int) {
	t.Helper()
	e.tc.SetWriteDeadline(time.Now().Add(guard))
	defer e.tc.SetWriteDeadline(time.Time{})
	pkt := frame(1, size, 0xA0)
	for info(t, e.c).NotsentBytes < target {
		if err := e.c.WriteFrame(uint64(1000000+frames), pkt); err != nil {
			t.Fatalf("filling to %d unsent bytes: %v", target, err)
		}
		frames++
	}
	return frames
}

// writable reports what poll(2) says about the Conn's socket now.
func writable(t testing.TB, c *Conn) bool {
	t.Helper()
	var (
		rev  int16
		perr error
	)
	if err := c.raw.Control(func(fd uintptr) { rev, perr = pollOut(int(fd)) }); err != nil || perr != nil {
		t.Fatal(err, perr)
	}
	return rev&unix.POLLOUT != 0
}

// fillUnwritable writes frames of one size-byte packet until poll(2)
// reports the socket not writable. The peer must not be reading.
func fillUnwritable(t testing.TB, e endpoint, size int) (frames int) {
	t.Helper()
	e.tc.SetWriteDeadline(time.Now().Add(guard))
	defer e.tc.SetWriteDeadline(time.Time{})
	pkt := frame(1, size, 0xA0)
	for writable(t, e.c) {
		if err := e.c.WriteFrame(uint64(1000000+frames), pkt); err != nil {
			t.Fatalf("filling the socket: %v", err)
		}
		frames++
	}
	return frames
}

// drainPeer reads everything the peer receives, as framed packets, until
// EOF or error, and returns the packets' sizes and first bytes.
func drainPeer(peer net.Conn) <-chan []pktSummary {
	ch := make(chan []pktSummary, 1)
	go func() {
		var got []pktSummary
		r := framer.NewReader(peer)
		for {
			p, err := r.ReadPacket()
			if err != nil {
				ch <- got
				return
			}
			uniform := bytes.Count(p, p[:1]) == len(p)
			got = append(got, pktSummary{size: len(p), first: p[0], uniform: uniform})
		}
	}()
	return ch
}

// pktSummary describes one packet the peer received.
type pktSummary struct {
	size    int
	first   byte
	uniform bool // every byte equals first
}

// discard reads and drops everything from peer until EOF or error.
func discard(peer net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, peer)
		close(done)
	}()
	return done
}
