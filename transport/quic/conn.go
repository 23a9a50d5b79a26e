package quic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
	"replenish/transport/drain"
)

// Conn is a QUIC connection to a viewer that carries RoQ framed RTP and
// invites frames according to its Config's buffer policy.
//
// Wait, WriteFrame and Poll belong to one goroutine, on which send records
// are delivered (Config.Handler.Sent); the viewer's packets are delivered
// on a goroutine of the Conn's own. Counters, SetLead and Close are safe
// from any goroutine.
type Conn struct {
	qc   *quic.Conn
	cfg  Config
	log  *slog.Logger
	path *pathState
	pace *pacer    // nil unless Config.Pace
	hold *holdGate // nil unless in replenish mode

	wake    chan struct{} // capacity 1: the backlog shrank or a frame finished
	queued  chan struct{} // capacity 1: a frame was queued for the writer
	closing chan struct{} // closed by Close, once
	closeMu sync.Once
	wg      sync.WaitGroup // the writer and the feedback reader

	// Updated by the write limiter on quic-go's goroutine.
	accepted  atomic.Int64 // bytes handed to WriteFrame, framing included
	packed    atomic.Int64 // of those, bytes packetized
	discarded atomic.Int64 // of those, bytes of expired frames never to be sent
	limit     atomic.Int64 // wake the waiter when unsent <= limit; -1: never
	drained   atomic.Int64 // the measured drain rate, b/s; 0 until measured

	// heads pairs the media stream's frames with their predecessors'
	// acknowledgements (transport.HeadWatch), keyed by c.packed. Its own
	// lock, taken on quic-go's goroutine, is never held while calling
	// quic-go.
	headsMu sync.Mutex
	heads   transport.HeadWatch

	mu      sync.Mutex // guards the fields below
	queue   []*frame   // accepted and not yet handed to quic-go, oldest first
	done    []transport.SendRecord
	err     error // why the connection failed; nil while it works
	est     *drain.Estimator
	drainIn drain.Sample // the estimator's latest input
	share   streamShare  // the stream bytes in the packet bytes delivered
	lead    time.Duration
	header  bool // the media stream's flow identifier is written
	stats   transport.Counters
	expired expiry
}

// expiry counts what the expire mode threw away.
type expiry struct {
	dropped    uint64 // frames dropped before any byte was sent
	reset      uint64 // frames whose stream was reset part way
	bytesReset uint64 // bytes packetized for frames then reset
}

// frame is one WriteFrame's data on its way to quic-go.
type frame struct {
	id             uint64
	buf            []byte
	end            int64 // c.packed once the whole frame is packetized; set by the writer
	writeStart     time.Time
	writeEnd       time.Time
	retrans        int
	leftHost       atomic.Int64 // UnixNano of the last byte's packetization; 0 until then
	perFrameStream bool
	expiresAt      time.Time // expire mode only
}

var _ transport.Conn = (*Conn)(nil)

func newConn(qc *quic.Conn, cfg Config, path *pathState) (*Conn, error) {
	c := &Conn{
		qc:      qc,
		cfg:     cfg,
		log:     cfg.Logger,
		path:    path,
		wake:    make(chan struct{}, 1),
		queued:  make(chan struct{}, 1),
		closing: make(chan struct{}),
		est:     drain.New(drain.Config{}),
	}
	c.limit.Store(-1)
	if cfg.Pace {
		c.pace = &pacer{}
	}
	if cfg.Mode.Policy == transport.Replenish {
		c.hold = &holdGate{path: path, drained: func() rate.Bitrate { return rate.Bitrate(c.drained.Load()) }}
	}
	path.packed.Store(&c.packed)
	path.acks.setOnAcked(func(upTo int64, at time.Time) {
		c.headsMu.Lock()
		defer c.headsMu.Unlock()
		c.heads.Acked(uint32(upTo-1), at)
	})
	var media *quic.SendStream
	if cfg.Mode.Policy != transport.Expire {
		var err error
		if media, err = qc.OpenUniStream(); err != nil {
			return nil, fmt.Errorf("quic: opening the media stream: %w", err)
		}
		if err := c.probeBase(media); err != nil {
			return nil, err
		}
	}
	c.wg.Go(func() { c.writeLoop(media) })
	c.wg.Go(c.readFeedback)
	c.wg.Go(c.watchStall)
	return c, nil
}

// watchStall ends the connection with ErrStalled once its packets have
// gone unacknowledged past stallLimit, checking four times per
// StallTimeout, until the connection ends.
func (c *Conn) watchStall() {
	tick := time.NewTicker(c.cfg.StallTimeout / 4)
	defer tick.Stop()
	start := time.Now() // the handshake's waits are not the media's
	for {
		select {
		case <-c.qc.Context().Done():
			return
		case <-c.closing:
			return
		case now := <-tick.C:
			d, ahead := c.path.unanswered(now)
			d = min(d, now.Sub(start))
			drained := rate.Bitrate(c.drained.Load())
			if d <= stallLimit(c.cfg.StallTimeout, c.qc.ConnectionStats(), ahead, drained) {
				continue
			}
			if c.cfg.onStall != nil {
				c.cfg.onStall(drained)
			}
			c.fail(fmt.Errorf("%w: nothing acknowledged for %v", ErrStalled, d.Round(time.Millisecond)))
			c.qc.CloseWithError(codeClosed, "stalled")
			return
		}
	}
}

// stallLimit is how long packets may go unacknowledged before the
// connection counts as stalled: timeout, but at least three of quic-go's
// probe timeouts (smoothed RTT, four mean deviations and the viewer's
// 25 ms maximum ACK delay), so that a round trip grown long with a deep
// queue (a default mode sender fills it) is not taken for a stall; and
// more by the time the bytes in flight when the wait began take at the
// drain rate. At 30 kb/s a packet takes 341 ms to cross the bottleneck,
// and a keyframe's first acknowledgement came over a second after the
// one before it, while the smoothed RTT, measured on small packets,
// stayed near the path's. Until the drain rate is measured (a
// connection's first round trips) the rate taken is stallFloorRate, the
// slowest path the sender serves: at 30 kb/s the estimate's first value,
// cwnd over the round trip, was many times the path's, and every
// connection stalled a second after it began.
func stallLimit(timeout time.Duration, st quic.ConnectionStats, inFlight int64, drained rate.Bitrate) time.Duration {
	if drained <= 0 {
		drained = stallFloorRate
	}
	return max(timeout, 3*(st.SmoothedRTT+4*st.MeanDeviation+maxAckDelay)) + drained.Duration(int(inFlight))
}

// stallFloorRate stands for an unknown drain rate in stallLimit: below
// the 30 kb/s of the scenario set's slowest paths.
const stallFloorRate = 20 * rate.Kbps

// Small packets start the media stream: baseProbes of them, once the
// handshake's packets are acknowledged (at most baseSettle), each waiting
// up to baseProbeWait for the one before to leave.
const (
	baseProbes    = 2
	baseProbeWait = 50 * time.Millisecond
	baseSettle    = time.Second
)

// probeBase starts the media stream with small packets (empty RTCP
// receiver reports, which the viewer ignores), each written once the one
// before has left, so that quic-go's minimum RTT is a small packet's from
// the start, as TCP's is its handshake's. Otherwise it is the handshake's,
// whose Initial packets are padded to 1200 bytes (96 ms at 100 kb/s), and
// then a data packet's, as large as a frame there: at 100 kb/s it read
// 100 to 140 ms above the path's for the first 2 to 5 s and 10 to 20 ms
// above it for the rest of a run, and the rate controller did not see the
// queue it built at the start. The packets wait until the
// handshake's have been acknowledged, or they would queue behind them at
// the bottleneck; two packets in a row are acknowledged at once (quic-go
// acknowledges every second ack-eliciting packet), one alone waits for the
// peer's ACK delay.
func (c *Conn) probeBase(s *quic.SendStream) error {
	rr, err := (&rtcp.ReceiverReport{}).Marshal()
	if err != nil {
		return fmt.Errorf("quic: %w", err)
	}
	if err := c.settle(); err != nil {
		return err
	}
	for range baseProbes {
		c.mu.Lock()
		b, err := c.frameBytesLocked(&frame{}, [][]byte{rr}) // the flow identifier first
		c.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-c.path.sent: // an earlier packet's
		default:
		}
		if _, err := s.Write(b); err != nil {
			return fmt.Errorf("quic: writing the media stream: %w", err)
		}
		select {
		case <-c.path.sent:
		case <-time.After(baseProbeWait):
		}
	}
	return nil
}

// settle waits, at most baseSettle, until nothing the connection sent is
// unacknowledged (pathState.sending: after a handshake that lost packets,
// quic-go's count keeps them until the next packet sent, and settle
// waited out all of baseSettle after every reconnection across an
// outage).
func (c *Conn) settle() error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(baseSettle); c.path.sending() > 0 && time.Now().Before(end); {
		select {
		case <-c.qc.Context().Done():
			return fmt.Errorf("quic: %w", context.Cause(c.qc.Context()))
		case <-tick.C:
		}
	}
	return nil
}

// SetLead declares how long the sender needs from an invitation to its
// write (its encode time): the rule then invites that much earlier. It is
// safe for concurrent use; a negative lead is an error wrapping ErrConfig
// and changes nothing.
func (c *Conn) SetLead(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative lead %v", ErrConfig, d)
	}
	c.mu.Lock()
	c.lead = d
	c.mu.Unlock()
	return nil
}

// WriteFrame queues pkts (control packets, then one frame's media packets)
// as one unit and returns without waiting for the network. The frame's
// send record reaches Config.Handler.Sent once its last byte is in a
// packet. It returns ErrEmptyFrame, ErrQueueFull, or the error that ended
// the connection.
func (c *Conn) WriteFrame(id uint64, pkts [][]byte) error {
	start := time.Now()
	if len(pkts) == 0 {
		return ErrEmptyFrame
	}
	f := &frame{id: id, writeStart: start, perFrameStream: c.cfg.Mode.Policy == transport.Expire}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	var err error
	if f.buf, err = c.frameBytesLocked(f, pkts); err != nil {
		return err
	}
	if unsent := c.unsent(); unsent+int64(len(f.buf)) > 2*int64(c.cfg.MaxQueue) {
		return fmt.Errorf("%w: %d bytes unsent", ErrQueueFull, unsent)
	}
	st := c.sampleLocked(start) // before the backlog grows: see sampleLocked
	c.accepted.Add(int64(len(f.buf)))
	if f.perFrameStream {
		f.expiresAt = start.Add(c.cfg.Mode.Expire)
	}
	f.retrans = int(st.PacketsLost)
	f.writeEnd = time.Now()
	c.queue = append(c.queue, f)
	c.stats.Frames++
	c.stats.BytesWritten += uint64(len(f.buf))
	select {
	case c.queued <- struct{}{}:
	default:
	}
	return nil
}

// frameBytesLocked frames pkts for the wire: RoQ length-prefixed packets,
// after the flow identifier at the start of each stream.
func (c *Conn) frameBytesLocked(f *frame, pkts [][]byte) ([]byte, error) {
	var b []byte
	var err error
	if f.perFrameStream || !c.header {
		if b, err = framer.AppendRoQStreamHeader(b, FlowID); err != nil {
			return nil, err
		}
		c.header = c.header || !f.perFrameStream
	}
	for _, p := range pkts {
		if b, err = framer.AppendRoQPacket(b, p); err != nil {
			return nil, fmt.Errorf("quic: %w", err)
		}
	}
	return b, nil
}

// writeLoop hands queued frames to quic-go, one at a time, until the
// connection fails or closes. media is the connection's media stream, or
// nil when each frame gets a stream of its own.
func (c *Conn) writeLoop(media *quic.SendStream) {
	for {
		f := c.nextFrame()
		if f == nil {
			return
		}
		var err error
		if f.perFrameStream {
			err = c.writeOwnStream(f)
		} else {
			err = c.writeOn(media, f)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// nextFrame returns the oldest queued frame, waiting for one; nil once the
// Conn is closing or failed.
func (c *Conn) nextFrame() *frame {
	for {
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return nil
		}
		if len(c.queue) > 0 {
			f := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return f
		}
		c.mu.Unlock()
		select {
		case <-c.queued:
		case <-c.closing:
			return nil
		}
	}
}

// limiter returns the write limiter for f: it counts the bytes quic-go
// packetizes, and limits them only to pace them (Config.Pace), to all or
// none of a packet's. It runs on quic-go's goroutine and must not block.
func (c *Conn) limiter(f *frame) func(int) int {
	return func(n int) int {
		if c.hold != nil {
			if n = c.hold.allow(time.Now(), n); n == 0 {
				return 0
			}
		}
		if c.pace != nil {
			if n = c.pace.allow(time.Now(), n); n == 0 {
				return 0
			}
		}
		p := c.packed.Add(int64(n))
		if p >= f.end && f.leftHost.Load() == 0 {
			// Not passed to c.heads (HeadWatch.Departed), as TCP does:
			// at 320 kb/s and 60 fps the controller then took its own
			// queue for another flow's in two runs of three
			// (experiments/NOTEBOOK.md).
			f.leftHost.Store(time.Now().UnixNano())
		}
		if l := c.limit.Load(); l >= 0 && c.accepted.Load()-c.discarded.Load()-p <= l {
			c.signal()
		}
		return n
	}
}

// writeOn writes f on the connection's media stream; it returns when every
// byte of f is in a packet. Paced, quic-go takes what the pacer allows,
// and the rest waits until it allows more.
func (c *Conn) writeOn(s *quic.SendStream, f *frame) error {
	f.end = c.packed.Load() + int64(len(f.buf)) // the writer packetizes one frame at a time
	lost := int64(c.qc.ConnectionStats().PacketsLost)
	c.headsMu.Lock()
	c.heads.Written(uint32(f.end-1), f.writeStart, lost)
	c.headsMu.Unlock()
	limit := c.limiter(f)
	for buf := f.buf; len(buf) > 0; {
		if c.pace != nil {
			st := c.qc.ConnectionStats()
			c.pace.setRate(st.CongestionWindow, st.SmoothedRTT)
		}
		n, err := s.WriteWithLimit(buf, limit)
		buf = buf[n:]
		switch {
		case errors.Is(err, quic.ErrWriteLimitReached):
			if !c.sleep(c.retryDelay(time.Now())) {
				return ErrClosed
			}
		case err != nil:
			return fmt.Errorf("quic: writing the media stream: %w", err)
		}
	}
	c.finish(f, false)
	return nil
}

// retryDelay returns how long a writer the limiter stopped waits before
// it tries again: holdRecheck while the hold holds, else until the pacer
// allows more.
func (c *Conn) retryDelay(now time.Time) time.Duration {
	if c.hold != nil && c.hold.held(now) {
		return holdRecheck
	}
	if c.pace != nil {
		return c.pace.delay(now)
	}
	return holdRecheck // not reached: only the hold and the pacer stop a write
}

// sleep waits for d; false if the Conn closed first.
func (c *Conn) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closing:
		return false
	}
}

// writeOwnStream writes f on a new stream and resets the stream if f is
// not all packetized when it expires. A frame already expired is dropped
// unsent.
func (c *Conn) writeOwnStream(f *frame) error {
	if !time.Now().Before(f.expiresAt) {
		c.mu.Lock()
		c.expired.dropped++
		c.mu.Unlock()
		c.discarded.Add(int64(len(f.buf))) // never to be sent: no longer backlog
		c.finish(f, true)
		return nil
	}
	s, err := c.qc.OpenUniStreamSync(context.Background())
	if err != nil {
		return fmt.Errorf("quic: opening a frame's stream: %w", err)
	}
	first := c.packed.Load() // the writer packetizes one frame at a time
	f.end = first + int64(len(f.buf))
	timer := time.AfterFunc(time.Until(f.expiresAt), func() { s.CancelWrite(codeExpired) })
	_, err = s.WriteWithLimit(f.buf, c.limiter(f))
	stopped := timer.Stop()
	var serr *quic.StreamError
	switch {
	case err == nil:
		s.Close()
		c.finish(f, false)
		return nil
	case !stopped && errors.As(err, &serr) && serr.ErrorCode == codeExpired:
		sent := c.packed.Load() - first
		c.discarded.Add(int64(len(f.buf)) - sent) // the rest is no longer backlog
		c.mu.Lock()
		c.expired.reset++
		c.expired.bytesReset += uint64(sent)
		c.mu.Unlock()
		c.finish(f, true)
		return nil
	}
	return fmt.Errorf("quic: writing a frame's stream: %w", err)
}

// finish makes f's send record and wakes the sending goroutine to deliver
// it. A frame that did not go out whole (expired) has no departure.
func (c *Conn) finish(f *frame, expired bool) {
	r := transport.SendRecord{
		ID: f.id, Bytes: len(f.buf), WriteStart: f.writeStart, WriteEnd: f.writeEnd, Retransmits: f.retrans,
	}
	if ns := f.leftHost.Load(); ns != 0 && !expired {
		r.LeftHost = time.Unix(0, ns)
	}
	c.mu.Lock()
	if r.LeftHost.IsZero() {
		c.stats.RecordsUnstamped++
	}
	c.done = append(c.done, r)
	c.mu.Unlock()
	c.signal()
}

func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// fail records why the connection stopped working, once, and wakes
// everyone waiting.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.signal()
}

// Poll delivers the send records that completed since the last call and
// returns the error that ended the connection, if it has ended.
func (c *Conn) Poll() error {
	c.deliver()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) deliver() {
	c.mu.Lock()
	recs := c.done
	c.done = nil
	c.mu.Unlock()
	if c.cfg.Handler.Sent != nil {
		for _, r := range recs {
			c.cfg.Handler.Sent(r)
		}
	}
}

// Counters returns the Conn's totals. Retransmits counts packets quic-go
// declared lost.
func (c *Conn) Counters() transport.Counters {
	st := c.qc.ConnectionStats()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.stats
	n.Retransmits, n.BytesRetrans = int(st.PacketsLost), st.BytesLost
	return n
}

// Expired returns, for the expire mode, the frames dropped before any byte
// was sent, the frames whose stream was reset part way, and the bytes that
// were sent for those.
func (c *Conn) Expired() (dropped, reset, bytesReset uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired.dropped, c.expired.reset, c.expired.bytesReset
}

// Close closes the connection and waits for the Conn's goroutines. Wait and
// WriteFrame then return ErrClosed.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	c.closeMu.Do(func() { close(c.closing) })
	err := c.qc.CloseWithError(codeClosed, "")
	c.wg.Wait()
	return err
}

// unsent returns the bytes accepted by WriteFrame that quic-go has not yet
// put into packets (and that are still to be sent).
func (c *Conn) unsent() int64 {
	return c.accepted.Load() - c.discarded.Load() - c.packed.Load()
}
