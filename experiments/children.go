package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"replenish/experiments/scenario"
	"replenish/records"
	"replenish/transport"
	"replenish/transport/tcp"
)

// The bulk and request/response workloads run as this program re-executed
// inside the namespaces (hidden commands below), as the sender and the
// viewer do: a crash of either leaves the runner alive to clean up, and
// neither shares a process, a scheduler or a garbage collector with the
// emulator's mover. Each writes its records to a JSON Lines file, and the
// sender side prints a status line (statusLine, JSON) to stdout every
// statusEvery for the runner's progress display. The receiving side prints
// "ready" once it listens. SIGTERM (the command's context) ends each.

// childEnv is set in the environment of re-executed children, so that a
// test binary standing in for this program runs the command instead of its
// tests.
const childEnv = "REPLENISH_EXPERIMENTS_CHILD"

// maxChildRecords caps a child's records file.
const maxChildRecords = 4_000_000

// statusEvery is how often a sending child prints its status line.
const statusEvery = 500 * time.Millisecond

// statusSpan is the span of the source delays a status line summarizes.
const statusSpan = 2 * time.Second

// readyLine is what a receiving child prints once it accepts connections.
const readyLine = "ready"

// maxPendingWrites bounds the writes a sending child tracks until their
// departure.
const maxPendingWrites = 1 << 18

// sinkEvery is the least time between two points the sink records.
const sinkEvery = 10 * time.Millisecond

// statusLine is what a sending child prints to stdout.
type statusLine struct {
	Writes  int     `json:"writes"`
	P50Ms   float64 `json:"p50_ms"`  // source delay over the last statusSpan; -1 when none
	Pending int     `json:"pending"` // writes awaiting their departure
	Stopped bool    `json:"stopped"` // no longer writing (after SIGUSR1)
}

// recentDelays keeps the source delays of the last statusSpan for the
// status line. It is safe for concurrent use.
type recentDelays struct {
	mu     sync.Mutex // guards the fields below
	at     []time.Time
	delays []float64
	n      int
}

func (r *recentDelays) add(at time.Time, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if d < 0 {
		return
	}
	r.at = append(r.at, at)
	r.delays = append(r.delays, float64(d)/float64(time.Millisecond))
	const keep = 4096
	if len(r.at) > keep {
		r.at = slices.Delete(r.at, 0, len(r.at)-keep)
		r.delays = slices.Delete(r.delays, 0, len(r.delays)-keep)
	}
}

func (r *recentDelays) status(now time.Time) statusLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.at) && now.Sub(r.at[i]) > statusSpan {
		i++
	}
	r.at, r.delays = r.at[i:], r.delays[i:]
	st := statusLine{Writes: r.n, P50Ms: -1}
	if len(r.delays) > 0 {
		v := slices.Clone(r.delays)
		slices.Sort(v)
		st.P50Ms = v[(len(v)-1)/2]
	}
	return st
}

// printStatus prints s's status line to w every statusEvery until ctx is
// done.
func printStatus(ctx context.Context, w io.Writer, s *sendState, stopped *atomic.Bool) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st := s.recent.status(now)
			st.Pending, st.Stopped = s.waiting(), stopped.Load()
			if enc.Encode(st) != nil {
				return
			}
		}
	}
}

// stopSignal is the signal that tells a sending child to stop writing and
// only collect the departures of what it wrote, until SIGTERM.
const stopSignal = syscall.SIGUSR1

// onStopSignal returns a channel closed when stopSignal arrives, and sets
// stopped then. The returned function stops the handling.
func onStopSignal(stopped *atomic.Bool) (<-chan struct{}, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, stopSignal)
	ch := make(chan struct{})
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-c:
			stopped.Store(true)
			close(ch)
		case <-quit:
		}
	})
	return ch, func() {
		signal.Stop(c)
		close(quit)
		wg.Wait()
	}
}

// drain collects the departures of c's writes every pollEvery until ctx is
// done.
func drain(ctx context.Context, c *tcp.Conn) {
	const pollEvery = 50 * time.Millisecond
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Poll()
		}
	}
}

// childFlags parses a child command's flags.
func childFlags(name string, args []string, stderr io.Writer, def func(fs *flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	def(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// sendState tracks a sending child's writes: each write awaiting its
// departure, by ID, and the records file.
type sendState struct {
	rec    *records.Writer
	recent recentDelays
	part   func(id uint64) string

	mu      sync.Mutex // guards pending
	pending map[uint64]pendingWrite
}

// pendingWrite is a write whose record has not arrived.
type pendingWrite struct {
	start time.Time
	bytes int
	inv   transport.Invitation
	// retrans is the connection's retransmit count before the write,
	// which a write still pending at the end has no send record for.
	retrans int
}

func newSendState(rec *records.Writer, part func(uint64) string) *sendState {
	return &sendState{rec: rec, part: part, pending: map[uint64]pendingWrite{}}
}

// writing notes a write about to start, with the connection's retransmit
// count before it.
func (s *sendState) writing(id uint64, n int, inv transport.Invitation, retrans int) {
	s.mu.Lock()
	s.pending[id] = pendingWrite{start: time.Now(), bytes: n, inv: inv, retrans: retrans}
	s.mu.Unlock()
}

// sent is the Conn's OnSent.
func (s *sendState) sent(r transport.SendRecord) {
	s.mu.Lock()
	pw := s.pending[r.ID]
	delete(s.pending, r.ID)
	s.mu.Unlock()
	us := records.Micros
	l := records.Write{
		Kind: records.KindWrite, ID: r.ID, WriteStartUs: us(r.WriteStart), WriteEndUs: us(r.WriteEnd), LeftHostUs: us(r.LeftHost),
		Bytes: r.Bytes, DrainBps: int64(pw.inv.DrainRate), Unsent: pw.inv.Unsent, Retransmits: r.Retransmits,
	}
	if s.part != nil {
		l.Part = s.part(r.ID)
	}
	s.rec.Write(l)
	if s.part == nil || l.Part == records.PartBody {
		s.recent.add(r.WriteStart, r.SourceDelay())
	}
}

// waiting returns how many writes await their record.
func (s *sendState) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// end writes a line for every write still awaiting its departure (marked
// pending) and the connection's closing line.
func (s *sendState) end(c *tcp.Conn) {
	s.mu.Lock()
	ids := make([]uint64, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pw := s.pending[id]
		l := records.Write{Kind: records.KindWrite, ID: id, WriteStartUs: records.Micros(pw.start), Bytes: pw.bytes,
			DrainBps: int64(pw.inv.DrainRate), Unsent: pw.inv.Unsent, Retransmits: pw.retrans, Pending: true}
		if s.part != nil {
			l.Part = s.part(id)
		}
		s.rec.Write(l)
	}
	clear(s.pending)
	s.mu.Unlock()
	s.rec.Write(records.TCPConn(time.Now(), c.Stats()))
}

// dialSender connects to addr with the mode's configuration and records
// every write through s. onPacket, if not nil, receives the peer's packets.
// It also returns the connection's raw socket, for waiting until the peer
// has sent something (see awaitPacket).
func dialSender(ctx context.Context, addr string, mode transport.Mode, s *sendState, onPacket func([]byte)) (*tcp.Conn, syscall.RawConn, error) {
	cfg := tcp.Config{Mode: mode}
	cfg.OnSent = s.sent
	cfg.OnPacket = onPacket
	// Every write in flight keeps its record, however deep the send
	// buffer (8 MiB of 512-byte writes is 16384 of them).
	cfg.MaxPending = maxPendingWrites
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	d.SetMultipathTCP(false)
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	tc := nc.(*net.TCPConn)
	raw, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	c, err := tcp.New(tc, cfg)
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	return c, raw, nil
}

// awaitPacket blocks until c has delivered a packet from the peer to its
// OnPacket (got reports whether it has), the peer has closed, or c is
// closed. The Conn reads the peer only within its own calls, so this parks
// on the socket's read readiness and lets Poll read: every wake (data, or
// a departure stamp on the error queue) polls once more.
func awaitPacket(c *tcp.Conn, raw syscall.RawConn, got func() bool) error {
	var perr error
	err := raw.Read(func(uintptr) bool {
		perr = c.Poll()
		return got() || perr != nil
	})
	if err != nil {
		return err
	}
	if got() {
		return nil
	}
	return perr
}

// sendingChild is what the sending children (bulk-send, rr-client) share:
// their records, the connection, the stop signal and the status printer.
type sendingChild struct {
	rec         *records.Writer
	s           *sendState
	c           *tcp.Conn
	raw         syscall.RawConn
	stopped     atomic.Bool
	stopWriting <-chan struct{} // closed by the stop signal
	stopSignals func()
	unclose     func() bool // undoes the close of c when ctx ends
	endStatus   context.CancelFunc
	wg          sync.WaitGroup
}

// startSending creates the records file, connects to addr in mode (see
// dialSender for part and onPacket) and starts printing status lines to
// stdout.
func startSending(ctx context.Context, addr string, mode transport.Mode, recPath string, part func(uint64) string, onPacket func([]byte), stdout io.Writer) (*sendingChild, error) {
	rec, err := records.Create(recPath, maxChildRecords)
	if err != nil {
		return nil, err
	}
	sc := &sendingChild{rec: rec, s: newSendState(rec, part)}
	if sc.c, sc.raw, err = dialSender(ctx, addr, mode, sc.s, onPacket); err != nil {
		rec.Close()
		return nil, err
	}
	// A write blocked on a full send buffer ends when the context does.
	sc.unclose = context.AfterFunc(ctx, func() { sc.c.Close() })
	sc.stopWriting, sc.stopSignals = onStopSignal(&sc.stopped)
	sctx, cancel := context.WithCancel(ctx)
	sc.endStatus = cancel
	sc.wg.Go(func() { printStatus(sctx, stdout, sc.s, &sc.stopped) })
	return sc, nil
}

// finish records what is left (writes still pending, the connection's
// closing line), closes the connection, waits for the child's goroutines
// and closes the records, returning the records' error.
func (sc *sendingChild) finish() error {
	sc.stopSignals()
	sc.c.Poll()
	sc.s.end(sc.c)
	sc.unclose()
	sc.c.Close()
	sc.endStatus()
	sc.wg.Wait()
	return sc.rec.Close()
}

// bulkSendMain is the hidden command "bulk-send": it connects to a sink and
// writes -size bytes at every invitation until stopped.
func bulkSendMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var to, recPath string
	var mode transport.Mode
	var size int
	err := childFlags("bulk-send", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&to, "to", "", "sink `host:port`")
		fs.TextVar(&mode, "mode", transport.Mode{Policy: transport.Default}, "send-buffer `mode`")
		fs.IntVar(&size, "size", scenario.DefaultBulkWrite, "`bytes` per write")
		fs.StringVar(&recPath, "records", "", "records `file`")
	})
	if err == nil && (size < 1 || size > scenario.MaxBulkWrite || recPath == "" || to == "") {
		err = errors.New("need -to, -records and -size from 1 B to 64 MiB")
	}
	if err != nil {
		fmt.Fprintf(stderr, "bulk-send: %v\n", err)
		return 2
	}
	sc, err := startSending(ctx, to, mode, recPath, nil, nil, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "bulk-send: %v\n", err)
		return 1
	}
	c, s := sc.c, sc.s

	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	wctx, cancelWrites := context.WithCancel(ctx)
	sc.wg.Go(func() {
		select {
		case <-sc.stopWriting:
			cancelWrites()
		case <-wctx.Done():
		}
	})
	for id := uint64(0); wctx.Err() == nil; id++ {
		inv, err := c.Wait(wctx)
		if err != nil {
			break
		}
		s.writing(id, size, inv, c.Stats().TotalRetrans)
		if err := c.Write(id, buf); err != nil {
			break
		}
	}
	cancelWrites()
	drain(ctx, c)
	if err := sc.finish(); err != nil {
		fmt.Fprintf(stderr, "bulk-send: records: %v\n", err)
		return 1
	}
	return 0
}

// bulkSinkMain is the hidden command "bulk-sink": it accepts connections on
// -listen one after another, reads and discards everything, and records the
// running total of bytes read at most every sinkEvery.
func bulkSinkMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var listen, recPath string
	err := childFlags("bulk-sink", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "", "`host:port` to listen on")
		fs.StringVar(&recPath, "records", "", "records `file`")
	})
	if err == nil && (listen == "" || recPath == "") {
		err = errors.New("need -listen and -records")
	}
	if err != nil {
		fmt.Fprintf(stderr, "bulk-sink: %v\n", err)
		return 2
	}
	rec, err := records.Create(recPath, maxChildRecords)
	if err != nil {
		fmt.Fprintf(stderr, "bulk-sink: %v\n", err)
		return 1
	}
	ln, err := listenUntil(ctx, listen, stdout)
	if err != nil {
		rec.Close()
		fmt.Fprintf(stderr, "bulk-sink: %v\n", err)
		return 1
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
		fmt.Fprintf(stderr, "bulk-sink: records: %v\n", err)
		return 1
	}
	return 0
}

// listenUntil listens on addr, prints readyLine to stdout and closes the
// listener when ctx is done.
func listenUntil(ctx context.Context, addr string, stdout io.Writer) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	fmt.Fprintln(stdout, readyLine)
	return ln, nil
}

// rrAnswer is the server's answer to a request: "OK", RFC 4571 framed so
// that the client reads it with the Conn it writes with.
var rrAnswer = []byte{0, 2, 'O', 'K'}

// rrClientMain is the hidden command "rr-client": it writes requests of a
// 16-byte header and a 32-byte body as two writes, waiting for the answer
// to each before the next, until stopped.
func rrClientMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var to, recPath string
	var mode transport.Mode
	err := childFlags("rr-client", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&to, "to", "", "server `host:port`")
		fs.TextVar(&mode, "mode", transport.Mode{Policy: transport.Default}, "send-buffer `mode`")
		fs.StringVar(&recPath, "records", "", "records `file`")
	})
	if err == nil && (recPath == "" || to == "") {
		err = errors.New("need -to and -records")
	}
	if err != nil {
		fmt.Fprintf(stderr, "rr-client: %v\n", err)
		return 2
	}
	part := func(id uint64) string {
		if id%2 == 0 {
			return records.PartHeader
		}
		return records.PartBody
	}
	answered := false
	sc, err := startSending(ctx, to, mode, recPath, part, func([]byte) { answered = true }, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "rr-client: %v\n", err)
		return 1
	}
	c, s, raw, rec := sc.c, sc.s, sc.raw, sc.rec

	header := make([]byte, scenario.RRHeader)
	body := make([]byte, scenario.RRBody)
	for req := uint64(0); !sc.stopped.Load(); req++ {
		answered = false
		inv, err := c.Wait(ctx)
		if err != nil {
			break
		}
		start := time.Now()
		s.writing(2*req, scenario.RRHeader, inv, c.Stats().TotalRetrans)
		if c.Write(2*req, header) != nil {
			break
		}
		s.writing(2*req+1, scenario.RRBody, inv, c.Stats().TotalRetrans)
		if c.Write(2*req+1, body) != nil {
			break
		}
		if err := awaitPacket(c, raw, func() bool { return answered }); err != nil {
			break
		}
		rec.Write(records.Request{Kind: records.KindRequest, ID: req, StartUs: start.UnixMicro(), EndUs: time.Now().UnixMicro()})
		c.Poll()
	}
	select {
	case <-sc.stopWriting:
		drain(ctx, c)
	case <-ctx.Done():
	}
	if err := sc.finish(); err != nil {
		fmt.Fprintf(stderr, "rr-client: records: %v\n", err)
		return 1
	}
	return 0
}

// rrServerMain is the hidden command "rr-server": for each connection it
// reads requests of 48 bytes and answers each once it has all of it.
func rrServerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var listen string
	err := childFlags("rr-server", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "", "`host:port` to listen on")
	})
	if err == nil && listen == "" {
		err = errors.New("need -listen")
	}
	if err != nil {
		fmt.Fprintf(stderr, "rr-server: %v\n", err)
		return 2
	}
	ln, err := listenUntil(ctx, listen, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "rr-server: %v\n", err)
		return 1
	}
	req := make([]byte, scenario.RRHeader+scenario.RRBody)
	for {
		conn, err := ln.Accept()
		if err != nil {
			return 0
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
