package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"replenish/records"
	"replenish/transport"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runRole runs s in a goroutine and returns its stdout, line by line, and
// a function that waits for its end and returns its error.
func runRole(ctx context.Context, s Spec) (<-chan string, func() error) {
	r, w := io.Pipe()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody is reading: drop
			}
		}
		close(lines)
	}()
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { err = Run(ctx, s, w); w.Close() })
	return lines, func() error { wg.Wait(); return err }
}

// TestLoopback runs each pair of processes' code on loopback, in this
// process, until the sender's status shows a few writes, and checks what
// they recorded.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		recv, send Role
		kinds      []string // of the sender's records, at least one each
	}{
		{BulkSink, BulkSend, []string{records.KindWrite, records.KindConn}},
		{RRServer, RRClient, []string{records.KindWrite, records.KindRequest, records.KindConn}},
	} {
		t.Run(string(tc.send), func(t *testing.T) {
			dir := t.TempDir()
			addr := freeAddr(t)
			rctx, stopRecv := context.WithCancel(t.Context())
			recv := Spec{Role: tc.recv, Addr: addr}
			if tc.recv == BulkSink {
				recv.Records = filepath.Join(dir, records.SinkFile)
			}
			rlines, rwait := runRole(rctx, recv)
			if l := <-rlines; l != ReadyLine {
				t.Fatalf("receiver printed %q first, want %q", l, ReadyLine)
			}
			sctx, stopSend := context.WithCancel(t.Context())
			send := Spec{Role: tc.send, Addr: addr, Mode: transport.DefaultMode, Size: 4096, Records: filepath.Join(dir, records.SendFile)}
			slines, swait := runRole(sctx, send)
			for l := range slines {
				var st Status
				if err := json.Unmarshal([]byte(l), &st); err != nil {
					t.Fatalf("status line %q: %v", l, err)
				}
				if st.Writes >= 4 {
					break
				}
			}
			stopSend()
			if err := swait(); err != nil {
				t.Fatalf("sender: %v", err)
			}
			stopRecv()
			if err := rwait(); err != nil {
				t.Fatalf("receiver: %v", err)
			}
			seen := map[string]int{}
			err := records.ReadFile(send.Records, func(kind string, line []byte) error {
				seen[kind]++
				if kind == records.KindConn {
					var c records.Conn
					if err := json.Unmarshal(line, &c); err != nil || c.Transport != "tcp" || c.Frames == 0 {
						t.Errorf("conn line %s (%v)", line, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.kinds {
				if seen[k] == 0 {
					t.Errorf("no %q records: %v", k, seen)
				}
			}
		})
	}
}
