// Package quic carries the sender's frames over QUIC (quic-go) as RTP over
// QUIC (RoQ, draft-ietf-avtcore-rtp-over-quic) and practises Source Buffer
// Management there as transport/tcp does over TCP.
//
// quic-go packetizes stream data only when its congestion controller and
// pacer allow, and a stream Write blocks until its data is packetized. So
// the unsent backlog is what the application has handed over and quic-go
// has not yet put into packets, and this package owns it: WriteFrame queues
// a frame without blocking, one goroutine feeds the queue to quic-go, and a
// write limiter tells, at packetization time, how many bytes went into each
// packet (it limits them only to pace them, Config.Pace, and in replenish
// mode while the path answers nothing: see holdLimit). From that count the
// Conn knows the unsent backlog exactly, measures the rate at which it drains, stamps each
// frame's departure (its last byte packetized), and invites the next frame
// with the same rule as the TCP transport: notification only, when the
// backlog will drain within the replenish time. Its tracer also follows
// which packets the peer acknowledged (ackLog), for each frame's wait at
// the bottleneck behind the frame before (transport.HeadWatch).
//
// Media goes on one unidirectional stream for the whole connection in the
// replenish and default modes: every frame depends on the ones before it
// (VP8's reference chain), so a stream per frame would only add overhead,
// and one stream gives the same in-order delivery that TCP gives, which
// keeps the comparison between the two transports about buffering alone.
// The expire mode writes each frame on a stream of its own and resets the
// stream (RESET_STREAM with the draft's ROQ_FRAME_CANCELLED) when the frame
// is older than the expiry, as Media over QUIC relays do. The viewer's
// feedback (RTCP) arrives on a unidirectional stream it opens.
package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
)

// ALPN is the application protocol RoQ negotiates.
const ALPN = framer.RoQALPN

// FlowID is the RoQ flow identifier of the media and its RTCP (one RTP
// session, RTP and RTCP multiplexed per RFC 5761).
const FlowID = framer.RoQSessionFlow

// Errors returned by this package.
var (
	// ErrConfig is returned by Dial for an invalid Config.
	ErrConfig = errors.New("quic: invalid configuration")
	// ErrEmptyFrame is returned by WriteFrame for a frame with no packets.
	ErrEmptyFrame = errors.New("quic: empty frame")
	// ErrQueueFull is returned by WriteFrame when the frames the Conn
	// holds unsent would exceed twice Config.MaxQueue.
	ErrQueueFull = errors.New("quic: send queue full")
	// ErrClosed is returned by Wait and WriteFrame after Close.
	ErrClosed = errors.New("quic: connection closed")
	// ErrStalled ends a connection whose packets have gone
	// unacknowledged for longer than Config.StallTimeout.
	ErrStalled = errors.New("quic: path stalled")
)

// Defaults for the zero values of Config.
const (
	DefaultSafetyTimeout = time.Second
	// DefaultMaxQueue is the unsent bytes a default or expire mode Conn
	// holds before it stops inviting: the analogue of the largest send
	// buffer Linux autotunes a TCP socket to (net.ipv4.tcp_wmem's
	// default maximum).
	DefaultMaxQueue = 4 << 20
	// DefaultIdleTimeout ends a connection whose viewer has gone silent.
	DefaultIdleTimeout = 20 * time.Second
	// DefaultStallTimeout is Config.StallTimeout's default: TCP's
	// retransmission timeout as the sender caps it (TCP_RTO_MAX_MS).
	DefaultStallTimeout = time.Second
	// After a connection stalled, the Dialer's next dials abandon a
	// handshake that has heard nothing from the viewer for
	// redialIdleTimeout (quic-go's default is 5 s), so that the sender's
	// connection loop dials afresh: quic-go resends a dial's first packet
	// after 0.2, 0.6 and 1.4 s and then 3 s, and a path back from an
	// outage would otherwise wait up to 1.6 s for the next one. On a slow
	// path it is longer (redialIdle): a handshake moves about
	// handshakeBytes, and at 30 kb/s its first answer came after the
	// queue the stalled connection left (the emulator's holds eight full
	// packets, 3.2 s there), so that 1.5 s refused every dial of a run.
	redialIdleTimeout = 1500 * time.Millisecond
	maxRedialIdle     = 5 * time.Second
	handshakeBytes    = 4096
)

// redialIdle is the handshake's idle timeout for a dial after a
// connection that stalled while draining at drained: redialIdleTimeout,
// or five handshakes' time at that rate, up to quic-go's default, which
// is also the timeout when the rate is unknown.
func redialIdle(drained rate.Bitrate) time.Duration {
	if drained <= 0 {
		return maxRedialIdle
	}
	return min(max(redialIdleTimeout, 5*drained.Duration(handshakeBytes)), maxRedialIdle)
}

// Error codes the Conn sends, the draft's (framer.RoQErrorCode).
const (
	codeClosed     = quic.ApplicationErrorCode(framer.RoQNoError)
	codeBadPackets = quic.ApplicationErrorCode(framer.RoQPacketError)
	codeExpired    = quic.StreamErrorCode(framer.RoQFrameCancelled) // a frame's stream reset on expiry
)

// Config configures a Conn. The zero value is not usable: TLS is required.
type Config struct {
	// Mode is the buffer policy: transport.Replenish (the zero value),
	// transport.Default or transport.Expire. A zero ReplenishTime means
	// transport.DefaultReplenishTime. For Default and Expire a positive
	// Mode.SendBuffer replaces MaxQueue.
	Mode transport.Mode
	// TLS verifies the viewer (see internal/certs.ClientTLS); required.
	// Its NextProtos are replaced by ALPN.
	TLS *tls.Config
	// MaxQueue is, in the default and expire modes, how many unsent bytes
	// the Conn holds before it stops inviting; zero means
	// DefaultMaxQueue. In replenish mode it only bounds a misbehaving
	// caller.
	MaxQueue int
	// SafetyTimeout bounds each wait before the rule is re-evaluated; it
	// is a safety net, not a clock. Zero means 1 s.
	SafetyTimeout time.Duration
	// IdleTimeout ends the connection when nothing arrives from the viewer
	// for this long (its acknowledgements included). Zero means 20 s.
	IdleTimeout time.Duration
	// StallTimeout ends the connection (ErrStalled) when packets have
	// been in flight this long with nothing acknowledged, and for three of
	// quic-go's probe timeouts at least (see stallLimit); zero means 1 s.
	// After an outage of the path quic-go would resend only at its probe
	// timeout, which doubles through the outage (capped at 60 s): its
	// first packet after the path's return can come seconds late. A new
	// connection's first packet goes at once, and the viewer gives a
	// reconnecting sender its stream back (same name and SSRC). Shorter
	// outages are noticed by the replenish mode's keepalives (see
	// holdLimit).
	StallTimeout time.Duration
	// Token, when set, is proved to the viewer at the start of every
	// connection (framer's RPLA answer, bound to the connection's TLS
	// session, on a stream of its own before the media's); the token
	// itself is not sent. A viewer with a token refuses a connection
	// without the proof.
	Token string
	// Pace spreads the media stream's packets at quic-go's own pacing rate
	// (1.25 times cwnd a smoothed round trip) without the ten packets
	// quic-go lets go at once after a pause (see pacer). The expire
	// mode's streams are not paced.
	Pace bool
	// Handler receives send records and the viewer's packets.
	Handler transport.Handler
	// handshakeIdle, if set, replaces quic-go's handshake idle timeout,
	// and onStall, if set, is told the drain rate of a connection that
	// ended stalled (see Dialer).
	handshakeIdle time.Duration
	onStall       func(drained rate.Bitrate)
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Mode.Policy == transport.Replenish {
		c.Mode.ReplenishTime = c.Mode.Replenishing()
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.Mode.SendBuffer > 0 && c.Mode.Policy != transport.Replenish {
		c.MaxQueue = c.Mode.SendBuffer
	}
	if c.SafetyTimeout == 0 {
		c.SafetyTimeout = DefaultSafetyTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.TLS == nil:
		return fmt.Errorf("%w: TLS is required (pin the viewer's certificate or give authorities)", ErrConfig)
	case c.Mode.Policy != transport.Replenish && c.Mode.Policy != transport.Default && c.Mode.Policy != transport.Expire:
		return fmt.Errorf("%w: mode %v is not a QUIC mode (want replenish, default or expire)", ErrConfig, c.Mode.Policy)
	case c.Mode.Nagle:
		return fmt.Errorf("%w: +nagle is a TCP option", ErrConfig)
	case c.Mode.ReplenishTime < 0 || c.Mode.Expire < 0:
		return fmt.Errorf("%w: negative duration in mode %v", ErrConfig, c.Mode)
	case c.Mode.Policy == transport.Expire && c.Mode.Expire == 0:
		return fmt.Errorf("%w: expire needs a duration", ErrConfig)
	case c.MaxQueue < 0 || c.SafetyTimeout < 0 || c.IdleTimeout < 0 || c.StallTimeout < 0:
		return fmt.Errorf("%w: negative MaxQueue, SafetyTimeout, IdleTimeout or StallTimeout", ErrConfig)
	}
	return nil
}

// maxAckDelay is the longest the viewer holds an acknowledgement back
// (quic-go's max_ack_delay, the protocol's default): it acknowledges every
// second ack-eliciting packet at once, and a lone one after this, so it
// holds a packet at most; the drain estimate's slack is that packet
// (drain.Sample.SlackTime). datagramSize is the size of quic-go's packets
// without path MTU discovery (see quicConfig).
const (
	maxAckDelay  = 25 * time.Millisecond
	datagramSize = 1280
)

// quicConfig is the quic-go configuration of a sender's connection; its
// tracer keeps st.
//
// Path MTU discovery is off: its probes are full-size packets the sender
// did not write (up to 1452 bytes, one every five round trips, about four
// after the handshake), and on a slow path each is a step in the
// bottleneck's queue, 110 ms of a 100 kb/s link, that the rate controller
// reads as congestion. Over QUIC at 100 kb/s and 172 ms the smoothed RTT
// rose by 13 to 21 ms at each of them, 3.5 to 6 s into every run, and the
// cuts they drew held the stream at 59 to 67% of the link from 5 to 10 s
// (86 to 89% without the probes; TCP, whose MSS comes with the
// handshake, has no such steps). Without it packets stay at quic-go's
// initial 1280-byte datagrams, which every IPv4 and IPv6 path carries;
// at 2 Mb/s a frame takes one packet more than with 1452-byte datagrams,
// which did not move utilization there beyond its run-to-run spread.
func (c Config) quicConfig(st *pathState) *quic.Config {
	return &quic.Config{
		Tracer:                  st.tracer(),
		DisablePathMTUDiscovery: true,
		HandshakeIdleTimeout:    c.handshakeIdle,
		MaxIdleTimeout:          c.IdleTimeout,
		KeepAlivePeriod:         c.IdleTimeout / 4,
		MaxIncomingStreams:      -1, // the viewer opens no bidirectional streams
		MaxIncomingUniStreams:   4,  // its feedback stream, with room for a reopened one
	}
}

// Dial connects to the viewer at addr ("host:port", UDP) and returns a
// Conn with its media stream open. It blocks until the handshake is done
// (the viewer verified by cfg.TLS) or ctx is done.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tlsConf := cfg.TLS.Clone()
	tlsConf.NextProtos = []string{ALPN}
	st := newPathState()
	qc, err := quic.DialAddr(ctx, addr, tlsConf, cfg.quicConfig(st))
	if err != nil {
		return nil, fmt.Errorf("quic: dialing %s: %w", addr, err)
	}
	if cfg.Token != "" {
		if err := proveToken(qc, cfg.Token); err != nil {
			qc.CloseWithError(codeClosed, "")
			return nil, err
		}
	}
	c, err := newConn(qc, cfg, st)
	if err != nil {
		qc.CloseWithError(codeClosed, "")
		return nil, err
	}
	return c, nil
}

// proveToken sends the proof of token on a stream of its own, which the
// viewer reads before the media stream opened after it: the RoQ flow
// identifier and framer's RPLA answer, bound to keying material exported
// from qc's TLS session, so that it proves nothing on another connection.
func proveToken(qc *quic.Conn, token string) error {
	tlsState := qc.ConnectionState().TLS
	ekm, err := tlsState.ExportKeyingMaterial(framer.AuthExporterLabel, nil, framer.AuthExporterSize)
	if err != nil {
		return fmt.Errorf("quic: exporting TLS keying material: %w", err)
	}
	answer := framer.MarshalAuthAnswer(0, framer.NewAuthProof(token, framer.QUICAuthBinding(ekm)))
	b, _ := framer.AppendRoQStreamHeader(nil, FlowID) // in range
	if b, err = framer.AppendRoQPacket(b, answer); err != nil {
		return err
	}
	s, err := qc.OpenUniStream()
	if err != nil {
		return fmt.Errorf("quic: opening the authentication stream: %w", err)
	}
	if _, err := s.Write(b); err != nil {
		return fmt.Errorf("quic: proving the token: %w", err)
	}
	return s.Close()
}

// Dialer returns a transport.Dialer for the sender's connection loop: each
// call dials addr with cfg, its records and the viewer's packets going to
// the handler given to the call. After a connection that stalled
// (ErrStalled), its dials give up a handshake that hears nothing for
// redialIdle, until one succeeds.
func Dialer(addr string, cfg Config) transport.Dialer {
	var mu sync.Mutex
	var idle time.Duration // after a stall; 0: quic-go's default
	return func(ctx context.Context, h transport.Handler) (transport.Conn, error) {
		c := cfg
		c.Handler = h
		mu.Lock()
		c.handshakeIdle = idle
		mu.Unlock()
		c.onStall = func(drained rate.Bitrate) {
			mu.Lock()
			idle = redialIdle(drained)
			mu.Unlock()
		}
		conn, err := Dial(ctx, addr, c)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		idle = 0
		mu.Unlock()
		return conn, nil
	}
}
