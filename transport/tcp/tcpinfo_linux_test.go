package tcp

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"replenish/transport"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite testdata/tcpinfo from live loopback sockets")

// rawInfo returns the raw struct tcp_info bytes of the Conn's socket.
func rawInfo(t testing.TB, c *Conn) []byte {
	t.Helper()
	buf := make([]byte, infoBufLen)
	var (
		n    int
		gerr error
	)
	if err := c.raw.Control(func(fd uintptr) { n, gerr = getsockoptBytes(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO, buf) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return buf[:n]
}

// writeRecorded stores raw tcp_info bytes with a comment header.
func writeRecorded(t testing.TB, name, comment string, raw []byte) {
	t.Helper()
	var b strings.Builder
	var uts unix.Utsname
	unix.Uname(&uts)
	fmt.Fprintf(&b, "# %s\n# struct tcp_info, %d bytes, host byte order (little-endian), Linux %s\n",
		comment, len(raw), unix.ByteSliceToString(uts.Release[:]))
	h := hex.EncodeToString(raw)
	for len(h) > 64 {
		b.WriteString(h[:64] + "\n")
		h = h[64:]
	}
	b.WriteString(h + "\n")
	if err := os.WriteFile(filepath.Join("testdata", "tcpinfo", name+".hex"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureInfo records TCP_INFO from loopback sockets in the states the
// recorded-info tests replay. It runs only with -update.
func TestCaptureInfo(t *testing.T) {
	if !*update {
		t.Skip("run with -update to re-record testdata/tcpinfo")
	}
	if err := os.MkdirAll(filepath.Join("testdata", "tcpinfo"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newPair(t, Config{NoTimestamps: true}, pairOptions{peerRcvBuf: 64 << 10})
	writeRecorded(t, "fresh", "fresh connection on 127.0.0.1: connected, nothing written, no rate sample", rawInfo(t, e.c))

	fillUnsent(t, e, 32000, 512<<10)
	writeRecorded(t, "backlogged", "sender on 127.0.0.1 whose peer does not read: >= 512 KiB unsent", rawInfo(t, e.c))

	done := discard(e.peer)
	eventually(t, "the backlog to drain", func() bool {
		i := info(t, e.c)
		return i.NotsentBytes == 0 && i.Unacked == 0
	})
	writeRecorded(t, "drained", "the same sender after its peer read everything: nothing unsent or in flight", rawInfo(t, e.c))
	e.tc.CloseWrite()
	<-done

	// A Nagle sender whose peer stopped reading, caught with less than
	// one MSS unsent.
	n := newPair(t, Config{Mode: transport.Mode{Nagle: true}, NoTimestamps: true}, pairOptions{peerRcvBuf: 64 << 10})
	pkt := frame(1, 4000, 1)
	for i := 0; ; i++ {
		in := info(t, n.c)
		if in.NotsentBytes > 0 {
			if in.NotsentBytes >= in.MSS {
				t.Fatalf("overshot: %d unsent, MSS %d", in.NotsentBytes, in.MSS)
			}
			break
		}
		if i > 10000 {
			t.Fatal("the window never closed")
		}
		if err := n.c.WriteFrame(uint64(i), pkt); err != nil {
			t.Fatal(err)
		}
	}
	writeRecorded(t, "nagle-submss", "Nagle sender on 127.0.0.1 whose peer does not read, with less than one MSS unsent", rawInfo(t, n.c))
}
