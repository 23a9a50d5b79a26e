// Package tcpsend runs a sender.Sender over TCP to a viewer: it connects,
// feeds the viewer's keyframe requests back to the sender, probes the
// viewer's clock on the side, and reconnects with backoff when the viewer
// goes away.
package tcpsend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"replenish/framer"
	"replenish/sender"
	"replenish/transport/tcp"
)

// Config configures Run. Zero values mean the stated defaults.
type Config struct {
	Addr   string         // the viewer's media address, host:port; required
	TCP    tcp.Config     // the buffer policy; its OnSent is replaced by the Sender's
	Sender *sender.Sender // required
	// ClockProbeInterval is the period of clock probes; zero means 1 s,
	// negative disables them.
	ClockProbeInterval time.Duration
	// OnConnect and OnDisconnect, if set, are told of each connection; the
	// error says why it ended. OnDisconnect gets the connection's final
	// counters before it is closed.
	OnConnect    func(c *tcp.Conn)
	OnDisconnect func(c *tcp.Conn, err error)
	Logger       *slog.Logger
}

// userTimeout ends a connection whose sent data has gone unacknowledged
// this long (the viewer's host vanished), so that the sender reconnects
// rather than wait out the kernel's retransmissions (about 15 minutes). An
// outage shorter than this recovers on the same connection.
const userTimeout = 20 * time.Second

// Backoff bounds between reconnection attempts.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Run sends until ctx is done, reconnecting after failures with exponential
// backoff (reset after a connection that lasted 10 s). It returns ctx's
// error, or an error if the configuration is unusable.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Sender == nil || cfg.Addr == "" {
		return errors.New("tcpsend: Sender and Addr are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.TCP.OnSent = cfg.Sender.Sent
	if cfg.TCP.UserTimeout == 0 {
		cfg.TCP.UserTimeout = userTimeout
	}
	if cfg.TCP.Logger == nil {
		cfg.TCP.Logger = cfg.Logger
	}
	probeDone := make(chan struct{})
	if cfg.ClockProbeInterval >= 0 {
		every := orDefault(cfg.ClockProbeInterval, time.Second)
		go func() {
			defer close(probeDone)
			sender.ProbeClock(ctx, cfg.Addr, every, func(offset, rtt time.Duration) {
				cfg.Sender.SetClockOffset(offset)
			})
		}()
	} else {
		close(probeDone)
	}
	defer func() { <-probeDone }()

	backoff := minBackoff
	for ctx.Err() == nil {
		start := time.Now()
		err := runConn(ctx, cfg)
		if ctx.Err() != nil {
			break
		}
		if time.Since(start) > 10*time.Second {
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

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// runConn runs one connection. The sender loop owns it: the viewer's
// feedback arrives through the transport's OnPacket on the same goroutine.
func runConn(ctx context.Context, cfg Config) error {
	s := cfg.Sender
	cctx, cancelConn := context.WithCancelCause(ctx)
	defer cancelConn(nil)
	tcfg := cfg.TCP
	tcfg.OnPacket = func(pkt []byte) {
		if err := feedback(pkt, s, cfg.Logger); err != nil {
			cancelConn(err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := tcp.Dial(dctx, cfg.Addr, tcfg)
	cancel()
	if err != nil {
		return err
	}
	cfg.Logger.Info("connected", "viewer", cfg.Addr, "mode", cfg.TCP.Mode.String())
	if cfg.OnConnect != nil {
		cfg.OnConnect(conn)
	}
	err = s.Run(cctx, conn)
	if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	conn.Poll() // departures that arrived since the last write
	if cfg.OnDisconnect != nil {
		cfg.OnDisconnect(conn, err)
	}
	conn.Close()
	return err
}

// feedback handles one packet from the viewer: RTCP, possibly asking for a
// keyframe. Anything else is an error that ends the connection.
func feedback(pkt []byte, s *sender.Sender, log *slog.Logger) error {
	if !framer.IsRTCP(pkt) {
		return errors.New("tcpsend: the viewer sent a packet that is not RTCP")
	}
	pkts, err := framer.ParseControl(pkt)
	if err != nil {
		return fmt.Errorf("tcpsend: the viewer sent bad RTCP: %w", err)
	}
	if framer.WantsKeyframe(pkts, s.SSRC()) {
		log.Debug("keyframe requested by the viewer")
		s.RequestKeyframe()
	}
	return nil
}
