package viewer

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// idleConns is how many idle connections of each kind
// TestIdleConnMemory opens.
const idleConns = 200

// maxIdleConnMemory bounds the memory one idle connection may hold in
// TestIdleConnMemory, in bytes: a generous bound, a few times what the
// goroutines and buffers behind a connection take.
const maxIdleConnMemory = 64 << 10

// inUse returns the bytes of heap spans and goroutine stacks in use,
// after a garbage collection.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// openIdleMedia opens n media connections that never prove the token:
// each waits, once the viewer has sent its challenge, for AuthTimeout.
func openIdleMedia(t *testing.T, ts *testServer, n int) {
	t.Helper()
	buf := make([]byte, 1)
	for i := range n {
		conn, err := net.Dial("tcp", ts.media)
		if err != nil {
			t.Fatalf("media connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetReadDeadline(time.Now().Add(waitLimit))
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatalf("media connection %d: no challenge: %v", i, err)
		}
	}
}

// openIdleHTTP opens n HTTP connections, each of which makes one request
// and then stays open, idle.
func openIdleHTTP(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for i := range n {
		conn, err := net.Dial("tcp", ts.http)
		if err != nil {
			t.Fatalf("HTTP connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(waitLimit))
		io.WriteString(conn, "GET /api/time HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("HTTP connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestIdleConnMemory measures the memory the viewer holds for idle
// connections, idleConns media connections waiting to authenticate and
// idleConns idle HTTP connections, and checks it against
// maxIdleConnMemory each. The measure counts this process's client ends
// too, so it overstates the viewer's share.
func TestIdleConnMemory(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		withToken(c)
		c.AuthTimeout = time.Minute // the media connections stay throughout
		c.HTTPReadTimeout, c.HTTPIdleTimeout = time.Minute, time.Minute
		c.MaxSenderConns, c.MaxSenderConnsPerAddr = 2*idleConns, 2*idleConns
		c.MaxHTTPConns, c.MaxHTTPConnsPerAddr = 2*idleConns, 2*idleConns
	})
	// One of each first, so that what the first connection sets up once
	// is not counted.
	openIdleMedia(t, ts, 1)
	openIdleHTTP(t, ts, 1)

	before := inUse()
	openIdleMedia(t, ts, idleConns)
	afterMedia := inUse()
	openIdleHTTP(t, ts, idleConns)
	afterHTTP := inUse()

	perConn := func(from, to uint64) int64 { return (int64(to) - int64(from)) / idleConns }
	media, web := perConn(before, afterMedia), perConn(afterMedia, afterHTTP)
	t.Logf("per idle connection: media %s, HTTP %s; %s in all for %d connections",
		kib(media), kib(web), kib(int64(afterHTTP)-int64(before)), 2*idleConns)
	if ts.senderLimits.open() != idleConns+1 || ts.httpLimits.open() != idleConns+1 {
		t.Fatalf("open: %d media, %d HTTP; want %d each", ts.senderLimits.open(), ts.httpLimits.open(), idleConns+1)
	}
	for _, m := range []struct {
		what string
		n    int64
	}{{"media", media}, {"HTTP", web}} {
		if m.n > maxIdleConnMemory {
			t.Errorf("an idle %s connection holds %s, more than %s", m.what, kib(m.n), kib(maxIdleConnMemory))
		}
	}
}

func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }
