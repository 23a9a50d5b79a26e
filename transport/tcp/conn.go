package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"replenish/framer"
	"replenish/transport"
	"replenish/transport/drain"
)

// Options are the socket options a Conn set, as read back from the kernel.
type Options struct {
	NoDelay      bool   // TCP_NODELAY
	NotsentLowat uint32 // TCP_NOTSENT_LOWAT at setup; NoLowat means no limit
	SendBuffer   int    // SO_SNDBUF as read back when Config.SendBuffer set it; 0 otherwise
	Timestamping int    // SO_TIMESTAMPING flags; 0 when off
	// Congestion is the congestion control the socket uses
	// (TCP_CONGESTION), Config.Congestion's or the system's default.
	Congestion string
	// RTOMax is TCP_RTO_MAX_MS as read back when Config.RTOMax set it; 0
	// otherwise, or when the kernel does not have the option.
	RTOMax time.Duration
	// UserTimeout is TCP_USER_TIMEOUT as the Conn set it (Config's
	// UserTimeout, or its UncappedUserTimeout without TCP_RTO_MAX_MS);
	// 0 when it set none.
	UserTimeout time.Duration
	// Paced says the socket asked for the kernel's pacing (Config.Pace).
	Paced bool
	// KeyBase is the OPT_ID key of the first byte the Conn writes: 0 when
	// the kernel supports SOF_TIMESTAMPING_OPT_ID_TCP, otherwise the bytes
	// still unacknowledged when timestamping was enabled.
	KeyBase uint32
}

// Stats are a Conn's counters since it was created.
type Stats struct {
	// Invitations by what ended the wait: already inviting when asked, a
	// kernel readiness event, or the safety timer.
	InvitedImmediate, InvitedKernel, InvitedTimer uint64
	// Parks counts how often a wait parked to await a kernel event.
	Parks uint64
	// Netpoller wakes during waits, by what poll(2) then showed: the socket
	// writable (EPOLLOUT), only an error-queue entry (a timestamp, which
	// also wakes writers), or neither.
	KernelWakes, ErrQueueWakes, OtherWakes uint64
	// TimerWakes counts expiries of the safety timer.
	TimerWakes uint64
	// Rearms counts wakes after which the rule still did not invite, so the
	// wait re-armed TCP_NOTSENT_LOWAT and parked again.
	Rearms uint64
	// Rechecks counts re-evaluations because poll(2) reported the socket
	// writable while arming.
	Rechecks uint64

	PacketsIn    uint64 // packets received from the peer
	Frames       uint64 // frames written
	BytesWritten uint64 // bytes written, framing included

	// Send records delivered with a departure time, without one (timestamps
	// off, or evicted), and evicted from the bounded pending queue.
	RecordsStamped, RecordsUnstamped, RecordsEvicted uint64
	// Pending is how many records await their departure stamp now.
	Pending int
	// Timestamps read from the error queue: SCM_TSTAMP_SND (departures),
	// SCM_TSTAMP_ACK (acknowledgements, see transport.HeadWatch), others,
	// SND stamps that matched no pending record, and messages that failed
	// to parse.
	StampsSent, StampsAcked, StampsOther, StampsUnmatched, ErrQueueErrors uint64

	// From the latest TCP_INFO reading a Wait took.
	TotalRetrans int    // segments retransmitted
	BytesRetrans uint64 // bytes retransmitted
	// Lowat is TCP_NOTSENT_LOWAT as the Conn last set it.
	Lowat uint32
}

// Conn is a TCP connection that carries RFC 4571 framed RTP and invites
// frames according to its Config's buffer policy.
//
// Wait, WriteFrame, Write and Poll belong to one goroutine, which also
// receives the peer's packets (Config.OnPacket) and send records
// (Config.OnSent) from them; Info, Stats, Options and Close are safe from
// any goroutine.
type Conn struct {
	tc   *net.TCPConn
	raw  syscall.RawConn
	cfg  Config
	opts Options
	// passive: the Conn belongs to a Waiter and never reads the socket
	// (neither the peer's packets nor, since timestamps are off, the
	// error queue); its owner reads and writes it.
	passive bool

	wbuf []byte // WriteFrame's framing buffer; sending goroutine only
	// pacingCap is the SO_MAX_PACING_RATE CapPacing set last, bytes a
	// second; 0 before it set one.
	pacingCap atomic.Uint64
	// testHookBeforeWrite, if set, runs just before WriteFrame's write.
	testHookBeforeWrite func()
	// testHookStamp, if set, sees every stamp read from the error queue,
	// with c.mu held.
	testHookStamp func(stamp)
	// testHookSample, if set, sees every TCP_INFO reading with the drain
	// estimator's sample and estimate, with c.mu held.
	testHookSample func(Info, drain.Sample, drain.Estimate)

	lead atomic.Int64 // the application's lead (SetLead), in nanoseconds

	mu      sync.Mutex // guards the fields below
	stats   Stats
	lowat   uint32 // TCP_NOTSENT_LOWAT as last set
	offset  uint64 // bytes written since timestamping was enabled
	pending *pendingQueue
	heads   transport.HeadWatch    // frames' writes against their predecessors' acknowledgements
	done    []transport.SendRecord // completed records awaiting OnSent
	infoBuf [infoBufLen]byte
	oob     [oobLen]byte
	data    [oobDataLen]byte
	in      framer.Deframer // bytes read from the peer, not yet a whole packet
	inbox   [][]byte        // whole packets from the peer awaiting OnPacket
	peerErr error           // why the peer's side of the stream ended; nil while open

	est      *drain.Estimator
	segsIn   uint32 // tcpi_segs_in at the latest reading
	acks     uint64 // segments received, unwrapped
	drainIn  drain.Sample
	drainOut drain.Estimate
}

// Buffer sizes for reading the error queue.
const (
	oobLen     = 512
	oobDataLen = 64
)

var _ transport.Conn = (*Conn)(nil)

// aLongTimeAgo is a deadline in the past, used to wake a parked wait.
var aLongTimeAgo = time.Unix(1, 0)

// Dial connects to addr ("host:port") over TCP, proves cfg.Token to the
// viewer if it is set, and returns a Conn set up by New. It blocks until
// connected (and the proof sent) or ctx is done. A failed proof is an error
// wrapping ErrAuth.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var d net.Dialer
	d.SetMultipathTCP(false) // the rule reads plain TCP's state
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp: dialing %s: %w", addr, err)
	}
	if cfg.Token != "" {
		if err := proveToken(ctx, nc, cfg.Token); err != nil {
			nc.Close()
			return nil, err
		}
	}
	c, err := New(nc.(*net.TCPConn), cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// senderUserTimeout is the TCP_USER_TIMEOUT a Dialer sets unless its
// Config has one: a connection whose sent data stays unacknowledged this
// long (the viewer's host vanished) fails, so that the sender reconnects
// rather than wait out the kernel's retransmissions (about 15 minutes). An
// outage shorter than this recovers on the same connection.
const senderUserTimeout = 20 * time.Second

// senderRTOMax is the TCP_RTO_MAX_MS a Dialer sets unless its Config has
// one. Linux doubles the retransmission timeout at each expiry (from
// about 200 ms plus the round trip: 0.3, 0.6, 1.2, 2.4, 4.8 s ... at
// 80 ms), so after an outage of a few seconds the next retransmission,
// the first packet that can tell the sender the path is back, may come
// seconds after the path did: measured at 2 Mb/s and 80 ms, nothing
// crossed for more than 2 s after a 3 s outage ended, until the viewer
// gave the silent connection up. Capped at 1 s, the kernel retries at
// least every second, one segment each time, so frames flow again within
// about a second and a few round trips of the path's return on the same
// connection, with no reconnection and no keyframe. The alternatives
// weighed: TCP_THIN_LINEAR_TIMEOUTS applies only while fewer than four
// segments are in flight, which a video frame exceeds; a sender that
// reconnects when nothing is acknowledged for a while pays a handshake
// and a keyframe, and its new connection's SYNs back off from 1 s too;
// a short TCP_USER_TIMEOUT does the same by failing the connection.
// Where the kernel lacks the option (before Linux 6.15), the sender takes
// that path (senderUncappedUserTimeout).
const senderRTOMax = time.Second

// senderUncappedUserTimeout is the TCP_USER_TIMEOUT a Dialer sets, unless
// its Config has one, where the kernel cannot cap the retransmission
// timeout: a connection fails 2 s into an outage (Linux counts from the
// first retransmission, and ends the connection at a retransmission
// timer's expiry, which it clamps to the user timeout), and the sender
// dials again, its SYNs retried after 1 and 2 s, so that after the path
// returns frames wait for a SYN and a keyframe rather than for a
// retransmission timer that doubled through the outage (up to the
// outage's length, and past the viewer's 5 s before it drops a silent
// sender: a 10 s outage then took until the next retransmission, about
// 19 s into it, to be noticed). Data acknowledged late but steadily (a
// deep queue) never starts the count: only retransmissions do.
const senderUncappedUserTimeout = 2 * time.Second

// Dialer returns a transport.Dialer for the sender's connection loop: each
// call dials addr with cfg, its send records and the viewer's packets going
// to the handler (replacing cfg.OnSent and cfg.OnPacket). Unless cfg sets
// them, it sets a 20 s TCP_USER_TIMEOUT and a 1 s TCP_RTO_MAX_MS, or,
// where the kernel lacks the latter, a 2 s TCP_USER_TIMEOUT.
func Dialer(addr string, cfg Config) transport.Dialer {
	if cfg.UserTimeout == 0 {
		cfg.UserTimeout = senderUserTimeout
	}
	if cfg.RTOMax == 0 {
		cfg.RTOMax = senderRTOMax
	}
	if cfg.UncappedUserTimeout == 0 {
		cfg.UncappedUserTimeout = senderUncappedUserTimeout
	}
	return func(ctx context.Context, h transport.Handler) (transport.Conn, error) {
		c := cfg
		c.OnSent, c.OnPacket = h.Sent, h.Packet
		conn, err := Dial(ctx, addr, c)
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
}

// New takes over the connected tc, sets its socket options for cfg and reads
// them back: TCP_NODELAY unless cfg.Mode.Nagle, an explicit TCP_NOTSENT_LOWAT in
// every mode (never the sysctl's), and SO_TIMESTAMPING unless
// cfg.NoTimestamps. It returns an error wrapping ErrConfig, ErrOption,
// ErrNotTCP (an MPTCP socket, for one) or ErrUnsupported; on error tc is
// left open. The caller must not read from or
// write to tc directly afterwards.
func New(tc *net.TCPConn, cfg Config) (*Conn, error) {
	return newConn(tc, cfg, false)
}

// newConn is New; a passive Conn (a Waiter's) never reads the socket,
// whose owner does.
func newConn(tc *net.TCPConn, cfg Config, passive bool) (*Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("tcp: %w", err)
	}
	c := &Conn{
		tc:      tc,
		raw:     raw,
		cfg:     cfg,
		passive: passive,
		pending: newPendingQueue(cfg.MaxPending),
		est:     drain.New(drain.Config{}),
	}
	if err := c.setup(); err != nil {
		return nil, err
	}
	c.lowat = c.opts.NotsentLowat
	c.stats.Lowat = c.lowat
	cfg.Logger.Debug("tcp: socket set up", "mode", cfg.Mode.String(),
		"congestion", c.opts.Congestion, "nodelay", c.opts.NoDelay, "paced", c.opts.Paced, "notsent_lowat", c.opts.NotsentLowat,
		"timestamping", c.opts.Timestamping, "key_base", c.opts.KeyBase)
	return c, nil
}

// SetLead declares the application's production time: how long it takes
// from an invitation to the write that follows (capture and encode, for
// video; a measured recent high percentile plus a margin serves). In
// replenish mode the rule then invites that much earlier, so that the write
// finds about half a replenish time of backlog still ahead of it, as a
// writer that writes at once would (see Decide); the kernel-faithful mode
// (Mode.Kernel) and the other policies ignore it. The zero lead, the
// default, suits an application that writes as soon as it is invited. It
// takes effect at the next decision and is safe to call from any goroutine,
// typically the sending one between Wait calls. It returns an error
// wrapping ErrConfig, and changes nothing, for a negative lead.
func (c *Conn) SetLead(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative lead %v", ErrConfig, d)
	}
	c.lead.Store(int64(d))
	return nil
}

// Lead returns the lead SetLead declared last.
func (c *Conn) Lead() time.Duration { return time.Duration(c.lead.Load()) }

// ruleLead is the lead the rule applies: SetLead's, except in the
// kernel-faithful mode.
func (c *Conn) ruleLead() time.Duration {
	if c.cfg.Mode.Kernel {
		return 0
	}
	return c.Lead()
}

// Options returns the socket options New set, as read back.
func (c *Conn) Options() Options { return c.opts }

// Config returns the Conn's configuration with defaults filled in.
func (c *Conn) Config() Config { return c.cfg }

// WriteFrame writes the packets of one frame, each RFC 4571 framed, in one
// write, as Write does. It returns an error wrapping framer.ErrEmptyPacket or
// framer.ErrPacketTooLarge for a packet it cannot frame, ErrEmptyFrame for no
// packets, or the write's error.
func (c *Conn) WriteFrame(id uint64, pkts [][]byte) error {
	if len(pkts) == 0 {
		return ErrEmptyFrame
	}
	buf := c.wbuf[:0]
	for i, p := range pkts {
		var err error
		if buf, err = framer.AppendFramed(buf, p); err != nil {
			return fmt.Errorf("tcp: frame %d, packet %d: %w", id, i, err)
		}
	}
	if cap(buf) <= maxKeptWriteBuffer {
		c.wbuf = buf
	}
	return c.Write(id, buf)
}

// Write writes b as it is, in one write call, and tracks it as one record
// with the given id (bulk workloads use it; media goes through WriteFrame).
// With TCP_NODELAY and timestamps on, the write ends its own segment
// (MSG_EOR): Linux would otherwise append the next write to the same unsent
// skb and move the departure stamp to it, so that this write would take the
// later write's departure time. With Nagle on, merging small writes is
// Nagle's purpose, so writes are left to merge, and a merged write reports
// the departure of the write that completed its segment (a later time).
// It blocks until the kernel has taken every byte: in replenish and default
// modes only a full send buffer can hold it up (an invitation never limits a
// write); in lowat mode Linux gates the write at Config.Lowat. The
// SendRecord reaches OnSent once the last byte has left the host (from this
// or a later Wait, Write or Poll). It returns ErrEmptyFrame for an empty b,
// or the write's error.
func (c *Conn) Write(id uint64, b []byte) error {
	if len(b) == 0 {
		return ErrEmptyFrame
	}
	if h := c.testHookBeforeWrite; h != nil {
		h()
	}
	c.sampleBeforeWrite()
	start := time.Now()
	n, werr := c.write(b)
	end := time.Now()

	c.mu.Lock()
	rec := transport.SendRecord{ID: id, Bytes: n, WriteStart: start, WriteEnd: end, Retransmits: c.stats.TotalRetrans}
	c.stats.Frames++
	c.stats.BytesWritten += uint64(n)
	if n > 0 {
		c.offset += uint64(n)
		if c.opts.Timestamping == 0 {
			c.finishLocked(rec)
		} else {
			key := c.opts.KeyBase + uint32(c.offset-1)
			c.heads.Written(key, start, int64(c.stats.TotalRetrans))
			if old, evicted := c.pending.push(rec, key); evicted {
				c.stats.RecordsEvicted++
				c.finishLocked(old)
			}
		}
	}
	c.stats.Pending = c.pending.Len()
	c.mu.Unlock()
	c.Poll()
	if werr != nil {
		return fmt.Errorf("tcp: write %d: %d of %d bytes written: %w", id, n, len(b), werr)
	}
	return nil
}

// maxKeptWriteBuffer caps the framing buffer WriteFrame keeps between calls.
const maxKeptWriteBuffer = 4 << 20

// finishLocked queues r for OnSent. c.mu must be held.
func (c *Conn) finishLocked(r transport.SendRecord) {
	if r.LeftHost.IsZero() {
		c.stats.RecordsUnstamped++
	} else {
		c.stats.RecordsStamped++
	}
	c.done = append(c.done, r)
}

// Poll collects, without waiting, the departure timestamps and the peer's
// packets that have arrived, and passes them to OnSent and OnPacket. It
// returns an error wrapping ErrPeerClosed once the peer has closed its side
// or sent a stream that is not RFC 4571 framing (after delivering what came
// before).
func (c *Conn) Poll() error {
	c.raw.Control(func(fd uintptr) {
		c.mu.Lock()
		if c.opts.Timestamping != 0 {
			c.drainLocked(int(fd))
		}
		if !c.passive {
			c.drainInLocked(int(fd))
		}
		c.mu.Unlock()
	})
	c.deliver()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerErr
}

// deliver passes completed records to OnSent and the peer's packets to
// OnPacket, outside the lock.
func (c *Conn) deliver() {
	c.mu.Lock()
	recs, pkts := c.done, c.inbox
	c.done, c.inbox = nil, nil
	c.mu.Unlock()
	if c.cfg.OnSent != nil {
		for _, r := range recs {
			c.cfg.OnSent(r)
		}
	}
	if c.cfg.OnPacket != nil {
		for _, p := range pkts {
			c.cfg.OnPacket(p)
		}
	}
}

// Counters returns the Conn's totals in the terms every transport reports.
// It is safe for concurrent use.
func (c *Conn) Counters() transport.Counters {
	st := c.Stats()
	return transport.Counters{
		Frames: st.Frames, BytesWritten: st.BytesWritten,
		Retransmits: st.TotalRetrans, BytesRetrans: st.BytesRetrans,
		InvitedImmediate: st.InvitedImmediate, InvitedKernel: st.InvitedKernel, InvitedTimer: st.InvitedTimer,
		RecordsUnstamped: st.RecordsUnstamped,
	}
}

// Info returns a fresh TCP_INFO reading of the connection. It is safe for
// concurrent use.
func (c *Conn) Info() (Info, error) {
	return ReadInfo(c.tc)
}

// Stats returns a snapshot of the Conn's counters. It is safe for concurrent
// use.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// LocalAddr returns the local network address.
func (c *Conn) LocalAddr() net.Addr { return c.tc.LocalAddr() }

// RemoteAddr returns the peer's network address.
func (c *Conn) RemoteAddr() net.Addr { return c.tc.RemoteAddr() }

// Close closes the connection. A Wait or WriteFrame blocked on it returns an
// error wrapping net.ErrClosed. Records still awaiting a
// departure stamp are dropped without reaching OnSent.
func (c *Conn) Close() error {
	err := c.tc.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("tcp: closing: %w", err)
	}
	return err
}

// Abort closes the connection at once with a reset (SO_LINGER 0),
// discarding what the socket has not sent, as an application that quits
// mid-transfer does; Close instead lets the socket send it first.
func (c *Conn) Abort() error {
	if err := c.tc.SetLinger(0); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("tcp: abort: %w", err)
	}
	return c.Close()
}

// invitationLocked builds the Invitation for a decision taken on info with
// input in.
func (c *Conn) invitationLocked(info Info, in RuleInput, d Decision, w transport.Wake) transport.Invitation {
	inv := transport.Invitation{
		At:     time.Now(),
		Unsent: info.NotsentBytes,
		Wake:   w,
		Drain: transport.DrainRecord{
			Input: c.drainIn, Estimate: c.drainOut,
			StackRate: info.DeliveryRate, StackAppLimited: info.AppLimited,
		},
	}
	switch c.cfg.Mode.Policy {
	case transport.Replenish:
		// Only source buffer management tells the application what the
		// path carries; the other modes model an application without it,
		// which learns of congestion only from writes that block.
		inv.DrainRate = d.DrainRate
		inv.AppLimited, inv.Aged = c.drainOut.AppLimited, c.drainOut.Aged
		if c.cfg.Mode.Kernel {
			inv.AppLimited, inv.Aged = info.AppLimited, false
		}
		inv.RTT, inv.MinRTT = info.RTT, info.MinRTT
		inv.Sent, inv.Lost = int64(info.DataSegsOut), int64(info.TotalRetrans)
		inv.Threshold = d.Limit
		inv.Lead = in.Lead
		if gap, at, ok := c.heads.Newest(); ok && info.MinRTT > 0 {
			inv.HeadWait, inv.HeadWaitAt = gap-info.MinRTT, at
			inv.HeadWaitRepaired = c.heads.Repaired(int64(info.TotalRetrans))
		}
		if rtt, at, ok := c.heads.LatestRTT(); ok {
			inv.LatestRTT, inv.LatestRTTAt = rtt, at
		}
	case transport.Lowat:
		inv.Threshold = (c.cfg.Mode.Lowat - 1) / 2
	default:
		inv.Threshold = -1
	}
	switch w {
	case transport.WakeImmediate:
		c.stats.InvitedImmediate++
	case transport.WakeKernel:
		c.stats.InvitedKernel++
	case transport.WakeTimer:
		c.stats.InvitedTimer++
	}
	return inv
}

// noteInfoLocked keeps the counters that come from TCP_INFO and feeds the
// reading to the drain estimator. c.mu must be held.
func (c *Conn) noteInfoLocked(info Info) {
	c.stats.TotalRetrans = info.TotalRetrans
	c.stats.BytesRetrans = info.BytesRetrans
	c.acks += uint64(info.SegsIn - c.segsIn)
	c.segsIn = info.SegsIn
	c.drainIn = SampleOf(info, time.Now(), c.acks, c.cfg.Mode.Nagle)
	c.drainOut = c.est.Add(c.drainIn)
	if h := c.testHookSample; h != nil {
		h(info, c.drainIn, c.drainOut)
	}
}

// sampleBeforeWrite reads TCP_INFO for the drain estimator just before a
// write, so that the estimator can tell a backlog that lasted from one that
// a write renewed. A failed reading is skipped: the write reports the
// socket's errors.
func (c *Conn) sampleBeforeWrite() {
	c.raw.Control(func(fd uintptr) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if info, err := readInfo(int(fd), c.infoBuf[:]); err == nil {
			c.noteInfoLocked(info)
		}
	})
}
