package viewer

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// busyUDP returns a ListenConfig whose first n UDP binds fail as if another
// socket held the port, and counts them.
func busyUDP(n int) (*net.ListenConfig, *int) {
	tried := 0
	return &net.ListenConfig{Control: func(network, _ string, _ syscall.RawConn) error {
		if strings.HasPrefix(network, "udp") {
			tried++
			if tried <= n {
				return syscall.EADDRINUSE
			}
		}
		return nil
	}}, &tried
}

// TestListenMediaPort checks that a port the kernel picked for TCP but
// held on UDP is picked again, that TCP and UDP end on the same port, and
// that a port given, or a run of busy picks, is refused with the reason.
func TestListenMediaPort(t *testing.T) {
	ctx := context.Background()
	lc, tried := busyUDP(2)
	tl, ul, err := listenMedia(ctx, lc, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("two busy picks: %v", err)
	}
	tp, up := tl.Addr().(*net.TCPAddr).Port, ul.LocalAddr().(*net.UDPAddr).Port
	tl.Close()
	ul.Close()
	if tp != up || *tried != 3 {
		t.Errorf("TCP port %d, UDP port %d after %d UDP binds; want the same port on the third", tp, up, *tried)
	}

	lc, tried = busyUDP(1)
	if _, _, err := listenMedia(ctx, lc, net.JoinHostPort("127.0.0.1", strconv.Itoa(tp))); err == nil ||
		!errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "QUIC and clock probe socket") || *tried != 1 {
		t.Errorf("a given port held on UDP: %v after %d binds, want the reason after one", err, *tried)
	}

	lc, tried = busyUDP(1 << 10)
	if _, _, err := listenMedia(ctx, lc, "127.0.0.1:0"); err == nil || *tried != mediaPortTries {
		t.Errorf("every pick busy: %v after %d binds, want an error after %d", err, *tried, mediaPortTries)
	}
}
