package viewer

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// dialHTTPFrom connects to the viewer's HTTP port from the loopback
// address local.
func dialHTTPFrom(t *testing.T, ts *testServer, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", ts.http)
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// served reports whether the viewer answers a request on conn (keeping
// the connection open), or closes it unanswered.
func served(t *testing.T, conn net.Conn) bool {
	t.Helper()
	conn.SetDeadline(time.Now().Add(waitLimit))
	defer conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "GET /api/time HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/time: %s", resp.Status)
		}
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
		return false
	}
	t.Fatalf("reading the response: %v", err)
	return false
}

// HTTP connections beyond the per-address cap, and beyond the total cap
// from other addresses, are closed unanswered; a page's WebSocket counts
// until it closes.
func TestHTTPConnLimits(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.MaxHTTPConnsPerAddr = 2
		c.MaxHTTPConns = 3
	})
	a1 := dialHTTPFrom(t, ts, "127.0.0.1")
	if !served(t, a1) {
		t.Fatal("a connection within the caps was refused")
	}
	p := mustDialPage(t, ts) // from 127.0.0.1 too
	p.hello(t)
	if served(t, dialHTTPFrom(t, ts, "127.0.0.1")) {
		t.Fatal("a third connection from one address was served (cap 2)")
	}
	if !served(t, dialHTTPFrom(t, ts, "127.0.0.2")) {
		t.Fatal("a connection from another address was refused within the total cap")
	}
	if served(t, dialHTTPFrom(t, ts, "127.0.0.3")) {
		t.Fatal("a fourth connection was served (total cap 3)")
	}
	p.conn.Close()
	eventually(t, "the page's slot freed", func() bool { return served(t, dialHTTPFrom(t, ts, "127.0.0.1")) })
}

// trickle sends prefix on conn, then a byte every 10 ms, and reports
// whether the viewer closed the connection before waitLimit.
func trickle(t *testing.T, conn net.Conn, prefix string) bool {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn) // until the viewer closes it, or cleanup does
		close(closed)
	}()
	if _, err := io.WriteString(conn, prefix); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for {
		select {
		case <-closed:
			return true
		case <-deadline:
			return false
		case <-tick.C:
			if _, err := conn.Write([]byte("a")); err != nil {
				return true // reset by the viewer
			}
		}
	}
}

// A client that sends its request slowly, or keeps its connection idle,
// is disconnected after the configured timeouts.
func TestHTTPTimeouts(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.HTTPReadTimeout = 200 * time.Millisecond
		c.HTTPIdleTimeout = 200 * time.Millisecond
	})
	t.Run("slow headers", func(t *testing.T) {
		if !trickle(t, dialHTTPFrom(t, ts, "127.0.0.1"), "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") {
			t.Fatal("a request whose headers never end was not cut off")
		}
	})
	t.Run("slow body", func(t *testing.T) {
		const head = "POST /whip HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sdp\r\nContent-Length: 60000\r\n\r\n"
		if !trickle(t, dialHTTPFrom(t, ts, "127.0.0.1"), head) {
			t.Fatal("a request whose body trickles was not cut off")
		}
	})
	t.Run("idle", func(t *testing.T) {
		conn := dialHTTPFrom(t, ts, "127.0.0.1")
		if !served(t, conn) {
			t.Fatal("refused")
		}
		conn.SetReadDeadline(time.Now().Add(waitLimit))
		_, err := conn.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("an idle connection was kept open")
		}
	})
	eventually(t, "every connection released", func() bool { return ts.httpLimits.open() == 0 })
}

// With the default caps, a page beyond MaxClients from one address, whose
// pages also hold connections for their fetches, gets the close 1013 the
// page shows, not a connection closed unanswered.
func TestPageOverCapFromOneAddress(t *testing.T) {
	ts := startServer(t, nil)
	for range DefaultMaxClients {
		mustDialPage(t, ts).hello(t)
	}
	for range 6 { // what a browser opens per host for the pages' fetches
		if !served(t, dialHTTPFrom(t, ts, "127.0.0.1")) {
			t.Fatal("a fetch beside the pages was refused")
		}
	}
	p, _, err := dialPage(t, ts, nil, nil)
	if err != nil {
		t.Fatalf("the page over MaxClients: %v; want its WebSocket, closed with 1013", err)
	}
	p.conn.SetReadDeadline(time.Now().Add(waitLimit))
	_, _, err = p.conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "too many pages open") {
		t.Fatalf("the page over MaxClients: %v; want a close 1013 saying too many pages are open", err)
	}
}
