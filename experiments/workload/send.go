package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"replenish/experiments/scenario"
	"replenish/records"
	"replenish/transport"
	"replenish/transport/tcp"
)

// maxRecords caps a workload process's records file.
const maxRecords = 4_000_000

// maxPendingWrites bounds the writes a sending process tracks until their
// departure: every write in flight keeps its record, however deep the send
// buffer (8 MiB of 512-byte writes is 16384 of them).
const maxPendingWrites = 1 << 18

// dialTimeout bounds a sending process's connection to its receiver.
const dialTimeout = 10 * time.Second

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

func (r *recentDelays) status(now time.Time) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.at) && now.Sub(r.at[i]) > statusSpan {
		i++
	}
	r.at, r.delays = r.at[i:], r.delays[i:]
	st := Status{Writes: r.n, P50Ms: -1}
	if len(r.delays) > 0 {
		v := slices.Clone(r.delays)
		slices.Sort(v)
		st.P50Ms = v[(len(v)-1)/2]
	}
	return st
}

// sendState tracks a sending process's writes: each write awaiting its
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
	s.rec.Write(records.ConnOf(time.Now(), "tcp", c.Counters()))
}

// sender is what the sending processes (bulk-send, rr-client) share: their
// records, the connection, the stop signal and the status printer.
type sender struct {
	rec         *records.Writer
	s           *sendState
	c           *tcp.Conn
	stopped     atomic.Bool
	stopWriting chan struct{} // closed by the stop signal
	stopSignals func()
	unclose     func() bool // undoes the close of c when ctx ends
	endStatus   context.CancelFunc
	wg          sync.WaitGroup
}

// startSending creates the records file, connects to spec's address in its
// mode, recording every write (with part, if not nil, naming each write's
// part), and starts printing status lines to stdout. onPacket, if not nil,
// receives the peer's packets.
func startSending(ctx context.Context, spec Spec, part func(uint64) string, onPacket func([]byte), stdout io.Writer) (*sender, error) {
	rec, err := records.Create(spec.Records, maxRecords)
	if err != nil {
		return nil, err
	}
	sc := &sender{rec: rec, s: newSendState(rec, part), stopWriting: make(chan struct{})}
	cfg := tcp.Config{Mode: spec.Mode, OnSent: sc.s.sent, OnPacket: onPacket, MaxPending: maxPendingWrites}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	sc.c, err = tcp.Dial(dctx, spec.Addr, cfg)
	cancel()
	if err != nil {
		rec.Close()
		return nil, err
	}
	// A write blocked on a full send buffer ends when the context does.
	sc.unclose = context.AfterFunc(ctx, func() { sc.c.Close() })
	sc.stopSignals = sc.onStopSignal()
	sctx, cancelStatus := context.WithCancel(ctx)
	sc.endStatus = cancelStatus
	sc.wg.Go(func() { sc.printStatus(sctx, stdout) })
	return sc, nil
}

// onStopSignal closes stopWriting and sets stopped when StopSignal
// arrives. The returned function stops the handling.
func (sc *sender) onStopSignal() func() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, StopSignal)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-c:
			sc.stopped.Store(true)
			close(sc.stopWriting)
		case <-quit:
		}
	})
	return func() {
		signal.Stop(c)
		close(quit)
		wg.Wait()
	}
}

// printStatus prints a status line to w every statusEvery until ctx is
// done.
func (sc *sender) printStatus(ctx context.Context, w io.Writer) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st := sc.s.recent.status(now)
			st.Pending, st.Stopped = sc.s.waiting(), sc.stopped.Load()
			if enc.Encode(st) != nil {
				return
			}
		}
	}
}

// drain collects the departures of the connection's writes every
// pollEvery until ctx is done.
func (sc *sender) drain(ctx context.Context) {
	const pollEvery = 50 * time.Millisecond
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sc.c.Poll()
		}
	}
}

// finish records what is left (writes still pending, the connection's
// closing line), closes the connection, waits for the process's
// goroutines and closes the records, returning the records' error.
func (sc *sender) finish() error {
	sc.stopSignals()
	sc.c.Poll()
	sc.s.end(sc.c)
	sc.unclose()
	sc.c.Close()
	sc.endStatus()
	sc.wg.Wait()
	if err := sc.rec.Close(); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	return nil
}

// bulkSend connects to a sink and writes spec.Size bytes at every
// invitation until stopped, or until spec.For has passed.
func bulkSend(ctx context.Context, spec Spec, stdout io.Writer) error {
	sc, err := startSending(ctx, spec, nil, nil, stdout)
	if err != nil {
		return err
	}
	buf := make([]byte, spec.Size)
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
	if spec.For > 0 {
		// The download ends: what the socket holds is dropped with a
		// reset, so that the path is the video's from then on (a send
		// buffer's backlog would take seconds more). The process then
		// stays, as drain does, until the run stops it.
		t := time.AfterFunc(spec.For, func() {
			cancelWrites()
			sc.c.Abort()
		})
		defer t.Stop()
	}
	for id := uint64(0); wctx.Err() == nil; id++ {
		inv, err := sc.c.Wait(wctx)
		if err != nil {
			break
		}
		sc.s.writing(id, spec.Size, inv, sc.c.Stats().TotalRetrans)
		if err := sc.c.Write(id, buf); err != nil {
			break
		}
	}
	cancelWrites()
	sc.drain(ctx)
	return sc.finish()
}

// rrAnswer is the server's answer to a request: "OK", RFC 4571 framed so
// that the client reads it with the Conn it writes with.
var rrAnswer = []byte{0, 2, 'O', 'K'}

// rrPart names the writes of a request: even IDs are headers, odd ones
// bodies.
func rrPart(id uint64) string {
	if id%2 == 0 {
		return records.PartHeader
	}
	return records.PartBody
}

// rrClient writes requests of a header and a body as two writes, waiting
// for the answer to each before the next, until stopped.
func rrClient(ctx context.Context, spec Spec, stdout io.Writer) error {
	answered := false
	sc, err := startSending(ctx, spec, rrPart, func([]byte) { answered = true }, stdout)
	if err != nil {
		return err
	}
	c, s := sc.c, sc.s
	header := make([]byte, scenario.RRHeader)
	body := make([]byte, scenario.RRBody)
	for req := uint64(0); !sc.stopped.Load(); req++ {
		answered = false
		inv, err := c.Wait(ctx)
		if err != nil {
			break
		}
		start := time.Now()
		s.writing(2*req, len(header), inv, c.Stats().TotalRetrans)
		if c.Write(2*req, header) != nil {
			break
		}
		s.writing(2*req+1, len(body), inv, c.Stats().TotalRetrans)
		if c.Write(2*req+1, body) != nil {
			break
		}
		if err := c.AwaitPeer(func() bool { return answered }); err != nil {
			break
		}
		sc.rec.Write(records.Request{Kind: records.KindRequest, ID: req, StartUs: start.UnixMicro(), EndUs: time.Now().UnixMicro()})
		c.Poll()
	}
	select {
	case <-sc.stopWriting:
		sc.drain(ctx)
	case <-ctx.Done():
	}
	return sc.finish()
}
