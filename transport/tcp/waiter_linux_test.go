package tcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"replenish/transport"
)

// newWaiterPair connects a socket to a peer as newPair does and puts a
// Waiter configured by cfg on it; the test owns the socket's reads and
// writes.
func newWaiterPair(t *testing.T, cfg WaiterConfig, o pairOptions) (*Waiter, *net.TCPConn, *net.TCPConn) {
	t.Helper()
	tc, peer := connectPair(t, o)
	w, err := NewWaiter(tc, cfg)
	if err != nil {
		t.Fatalf("NewWaiter(%+v): %v", cfg, err)
	}
	return w, tc, peer
}

// ownerFill writes to tc, as the Waiter's owner would, until the kernel
// holds at least target unsent bytes. The peer must not be reading.
func ownerFill(t *testing.T, w *Waiter, tc *net.TCPConn, target int) {
	t.Helper()
	tc.SetWriteDeadline(time.Now().Add(guard))
	defer tc.SetWriteDeadline(time.Time{})
	chunk := bytes.Repeat([]byte{0xA5}, 32000)
	for {
		i, err := w.Info()
		if err != nil {
			t.Fatal(err)
		}
		if i.NotsentBytes >= target {
			return
		}
		w.BeforeWrite()
		if _, err := tc.Write(chunk); err != nil {
			t.Fatalf("filling to %d unsent bytes: %v", target, err)
		}
	}
}

// TestWaiterKernelWake checks a Waiter on a socket its owner reads and
// writes: a parked Wait is ended by the kernel's write-space wake once the
// peer reads (not by the safety timer), at or below the rule's limit, with
// TCP_NOTSENT_LOWAT back at no limit for the owner's write; and the bytes
// the peer sent meanwhile are still there for the owner to read (the
// Waiter never reads the socket).
func TestWaiterKernelWake(t *testing.T) {
	w, tc, peer := newWaiterPair(t, WaiterConfig{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: 3 * time.Second},
		backlogged(transport.Replenish))
	if o := w.Options(); !o.NoDelay || o.NotsentLowat != NoLowat || o.Timestamping != 0 {
		t.Fatalf("options %+v, want TCP_NODELAY, no lowat limit, no timestamps", o)
	}
	ownerFill(t, w, tc, 512<<10)
	settleNetpoll(t, w.c)
	fromPeer := []byte("a report from the page")
	if _, err := peer.Write(fromPeer); err != nil {
		t.Fatal(err)
	}
	parks := w.Stats().Parks
	ch := make(chan waitOutcome, 1)
	go func() {
		inv, err := w.Wait(context.Background())
		ch <- waitOutcome{inv, err}
	}()
	eventually(t, "Wait to park", func() bool { return w.Stats().Parks > parks })
	select {
	case o := <-ch:
		t.Fatalf("Wait returned on a backlogged socket: %+v, %v", o.inv, o.err)
	default:
	}
	if lw := w.Stats().Lowat; lw == NoLowat {
		t.Fatal("the parked wait armed no lowat")
	}
	done := discard(peer)
	o := receive(t, ch)
	if o.err != nil {
		t.Fatalf("Wait: %v", o.err)
	}
	st := w.Stats()
	t.Logf("invitation %+v; stats %+v", o.inv, st)
	if o.inv.Wake != transport.WakeKernel || st.TimerWakes != 0 || st.KernelWakes == 0 {
		t.Errorf("Wake = %v with %d EPOLLOUT wakes and %d timer wakes, want a kernel wake", o.inv.Wake, st.KernelWakes, st.TimerWakes)
	}
	if o.inv.Unsent > o.inv.Threshold {
		t.Errorf("invited with %d unsent above the limit %d", o.inv.Unsent, o.inv.Threshold)
	}
	var lowat uint32
	var lerr error
	w.c.raw.Control(func(fd uintptr) { lowat, lerr = getLowat(int(fd)) })
	if lerr != nil || lowat != NoLowat {
		t.Errorf("TCP_NOTSENT_LOWAT after the wait = %d, %v; want no limit", lowat, lerr)
	}
	tc.SetReadDeadline(time.Now().Add(guard))
	got := make([]byte, len(fromPeer))
	if _, err := io.ReadFull(tc, got); err != nil || !bytes.Equal(got, fromPeer) {
		t.Errorf("the owner read %q, %v; want the peer's %q", got, err, fromPeer)
	}
	tc.CloseWrite()
	<-done
}

// TestWaiterOwnerCloses checks that a parked Wait ends, with an error
// wrapping net.ErrClosed, when the owner closes the connection.
func TestWaiterOwnerCloses(t *testing.T) {
	w, tc, _ := newWaiterPair(t, WaiterConfig{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: guard},
		backlogged(transport.Replenish))
	ownerFill(t, w, tc, 512<<10)
	ch := make(chan error, 1)
	go func() {
		_, err := w.Wait(context.Background())
		ch <- err
	}()
	eventually(t, "Wait to park", func() bool { return w.Stats().Parks > 0 })
	tc.Close()
	select {
	case err := <-ch:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Wait after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(guard):
		t.Fatal("Wait did not return after Close")
	}
}

func TestNewWaiterRejectsBadConfig(t *testing.T) {
	tc, _ := connectPair(t, pairOptions{})
	for _, cfg := range []WaiterConfig{
		{Mode: transport.Mode{Policy: transport.Expire, Expire: time.Second}},
		{Mode: transport.Mode{Policy: transport.Lowat}},
		{SafetyTimeout: -time.Second},
	} {
		if _, err := NewWaiter(tc, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("NewWaiter(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}
