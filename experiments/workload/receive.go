package workload

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"replenish/experiments/scenario"
	"replenish/records"
)

// bulkSink accepts connections on spec's address one after another, reads
// and discards everything, and records the running total of bytes read at
// most every sinkEvery.
func bulkSink(ctx context.Context, spec Spec, stdout io.Writer) error {
	rec, err := records.Create(spec.Records, maxRecords)
	if err != nil {
		return err
	}
	ln, err := listenUntil(ctx, spec.Addr, stdout)
	if err != nil {
		rec.Close()
		return err
	}
	buf := make([]byte, 1<<20)
	var total int64
	var last time.Time
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				total += int64(n)
				if now := time.Now(); now.Sub(last) >= sinkEvery {
					rec.Write(records.Sink{Us: now.UnixMicro(), Total: total})
					last = now
				}
			}
			if err != nil {
				break
			}
		}
		stop()
		conn.Close()
	}
	rec.Write(records.Sink{Us: time.Now().UnixMicro(), Total: total})
	if err := rec.Close(); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	return nil
}

// rrServer, for each connection, reads requests of a header and a body and
// answers each once it has all of it.
func rrServer(ctx context.Context, spec Spec, stdout io.Writer) error {
	ln, err := listenUntil(ctx, spec.Addr, stdout)
	if err != nil {
		return err
	}
	req := make([]byte, scenario.RRHeader+scenario.RRBody)
	for {
		conn, err := ln.Accept()
		if err != nil {
			return nil
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		for {
			if _, err := io.ReadFull(conn, req); err != nil {
				break
			}
			if _, err := conn.Write(rrAnswer); err != nil {
				break
			}
		}
		stop()
		conn.Close()
	}
}

// listenUntil listens on addr, prints ReadyLine to stdout and closes the
// listener when ctx is done.
func listenUntil(ctx context.Context, addr string, stdout io.Writer) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	fmt.Fprintln(stdout, ReadyLine)
	return ln, nil
}
