package sender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"replenish/framer"
	"replenish/transport"
)

// ConnectConfig configures Connect. Zero values mean the stated defaults.
type ConnectConfig struct {
	// Dial opens one connection to the viewer; required. It is the only
	// part of the loop that knows the transport.
	Dial transport.Dialer
	// ProbeAddr is where clock probes go over UDP: the viewer's media
	// host:port. Empty disables them.
	ProbeAddr string
	// ProbeInterval is the period of clock probes; zero means 1 s.
	ProbeInterval time.Duration
	// OnConnect and OnDisconnect, if set, are told of each connection;
	// the error says why it ended, with the connection's final counters.
	OnConnect    func()
	OnDisconnect func(c transport.Counters, err error)
	Logger       *slog.Logger
}

// Backoff bounds between reconnection attempts, and how long a connection
// must last for the backoff to start again from its minimum. The cap
// bounds how long a viewer that comes back (a restart) waits for the
// sender: at most a second, plus the dial and the keyframe. A refused
// dial costs a SYN and a reset, so trying once a second for as long as
// the viewer is away costs nothing that matters.
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = time.Second
	stableAfter = 10 * time.Second
	dialTimeout = 5 * time.Second
)

// Connect sends the stream until ctx is done: it dials, runs the sender
// over the connection (starting with a keyframe), feeds the viewer's
// keyframe requests back, probes the viewer's clock on the side, and after
// a failure reconnects with exponential backoff. It returns ctx's error, or
// an error at once if cfg is unusable. Connect must not run concurrently
// with itself or with Run.
func (s *Sender) Connect(ctx context.Context, cfg ConnectConfig) error {
	if cfg.Dial == nil {
		return errors.New("sender: ConnectConfig.Dial is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = time.Second
	}
	probeDone := make(chan struct{})
	if cfg.ProbeAddr != "" {
		go func() {
			defer close(probeDone)
			ProbeClock(ctx, cfg.ProbeAddr, cfg.ProbeInterval, func(offset, rtt time.Duration) {
				s.SetClockOffset(offset)
			})
		}()
	} else {
		close(probeDone)
	}
	defer func() { <-probeDone }()

	backoff := minBackoff
	for ctx.Err() == nil {
		start := time.Now()
		err := s.runConn(ctx, cfg)
		if ctx.Err() != nil {
			break
		}
		if time.Since(start) > stableAfter {
			backoff = minBackoff
		}
		cfg.Logger.Warn("connection ended; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return ctx.Err()
}

// runConn runs one connection. The viewer's feedback may arrive on the
// sending goroutine (within Wait and WriteFrame) or on the transport's own;
// feedback that cannot be understood ends the connection.
func (s *Sender) runConn(ctx context.Context, cfg ConnectConfig) error {
	cctx, cancelConn := context.WithCancelCause(ctx)
	defer cancelConn(nil)
	h := transport.Handler{
		Sent: s.Sent,
		Packet: func(pkt []byte) {
			if err := s.feedback(pkt); err != nil {
				cancelConn(err)
			}
		},
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	conn, err := cfg.Dial(dctx, h)
	cancel()
	if err != nil {
		return err
	}
	cfg.Logger.Info("connected")
	if cfg.OnConnect != nil {
		cfg.OnConnect()
	}
	err = s.Run(cctx, conn)
	if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	conn.Poll() // departures that arrived since the last write
	if cfg.OnDisconnect != nil {
		cfg.OnDisconnect(conn.Counters(), err)
	}
	conn.Close()
	return err
}

// ErrTokenRequired is the error of a connection to a viewer that requires
// a token the connection did not prove (its challenge reached the sender's
// feedback, where a transport with a token would have answered it).
var ErrTokenRequired = errors.New("sender: the viewer requires a token")

// ErrViewerBye is the error of a connection the viewer ended with an RTCP
// BYE; the error says its reason.
var ErrViewerBye = errors.New("sender: the viewer ended the connection")

// feedback handles one packet from the viewer: RTCP, possibly asking for a
// keyframe. Anything else is an error, and so are the viewer's challenge
// when it requires a token (ErrTokenRequired) and its BYE (ErrViewerBye,
// with the viewer's reason).
func (s *Sender) feedback(pkt []byte) error {
	if !framer.IsRTCP(pkt) {
		return errors.New("sender: the viewer sent a packet that is not RTCP")
	}
	if c, err := framer.ParseAuthChallenge(pkt); err == nil && c.Required {
		return ErrTokenRequired
	}
	pkts, err := framer.ParseControl(pkt)
	if err != nil {
		return fmt.Errorf("sender: the viewer sent bad RTCP: %w", err)
	}
	if reason, ok := framer.ByeReason(pkts); ok {
		return fmt.Errorf("%w: %q", ErrViewerBye, reason)
	}
	if framer.WantsKeyframe(pkts, s.SSRC()) {
		s.log.Debug("keyframe requested by the viewer")
		s.RequestKeyframe()
	}
	return nil
}
