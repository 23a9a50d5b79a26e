package tcp

import (
	"context"
	"log/slog"
	"net"
	"time"

	"replenish/transport"
)

// Waiter applies a buffer policy's invitation rule to a TCP connection that
// something else reads and writes, such as a WebSocket library: it only
// waits. Its Wait is Conn.Wait (the same rule, drain estimator, kernel wake
// and arming), without the reading of the peer's packets and the departure
// timestamps that a Conn's own writes have.
//
// Wait and BeforeWrite belong to the goroutine that writes the connection;
// Stats and Info are safe from any goroutine. The Waiter never closes the
// connection: its owner does, and a Wait blocked on it then returns an error
// wrapping net.ErrClosed.
type Waiter struct {
	c *Conn
}

// WaiterConfig configures a Waiter. The zero value is replenish mode with a
// 15 ms replenish time, TCP_NODELAY on and a 1 s safety timer.
type WaiterConfig struct {
	// Mode is the buffer policy, as Config.Mode: replenish (the zero
	// value), lowat (Linux then gates the owner's writes at the mark) or
	// default (Wait waits for send-buffer space only).
	Mode transport.Mode
	// SafetyTimeout bounds each wait for a kernel wake before the rule is
	// re-evaluated; it is a safety net, not a clock. Zero means 1 s.
	SafetyTimeout time.Duration
	// Logger receives debug messages about socket setup; nil discards them.
	Logger *slog.Logger
}

// NewWaiter sets tc's socket options for cfg.Mode and reads them back, as
// New does (TCP_NODELAY unless the mode keeps Nagle, an explicit
// TCP_NOTSENT_LOWAT), without SO_TIMESTAMPING. It returns an error wrapping
// ErrConfig, ErrOption, ErrNotTCP or ErrUnsupported; tc stays usable either
// way. The owner keeps reading and writing tc, from one writing goroutine
// that calls Wait before its writes.
func NewWaiter(tc *net.TCPConn, cfg WaiterConfig) (*Waiter, error) {
	c, err := newConn(tc, Config{Mode: cfg.Mode, SafetyTimeout: cfg.SafetyTimeout, NoTimestamps: true, Logger: cfg.Logger}, true)
	if err != nil {
		return nil, err
	}
	return &Waiter{c: c}, nil
}

// CheckMode returns an error wrapping ErrConfig if m is not a buffer policy
// a Conn or a Waiter takes (replenish, lowat or default, with valid
// parameters).
func CheckMode(m transport.Mode) error {
	return Config{Mode: m}.validate()
}

// Wait blocks until the policy invites a write, ctx is done, or the
// connection fails, as Conn.Wait does, and returns the invitation. In
// replenish mode TCP_NOTSENT_LOWAT is back at no limit when it returns, so
// the owner's next write is never gated; a write the owner makes from
// another goroutine while a Wait is parked may be (Linux gates writes at a
// small TCP_NOTSENT_LOWAT), so writes belong to the waiting goroutine.
// Wait sets and clears the connection's write deadline; an owner that uses
// write deadlines sets them before each write. It returns ctx's error,
// ErrPeerClosed when the connection can no longer carry data, or an error
// wrapping net.ErrClosed once the owner has closed the connection.
func (w *Waiter) Wait(ctx context.Context) (transport.Invitation, error) {
	return w.c.Wait(ctx)
}

// BeforeWrite reads TCP_INFO for the drain estimator; the owner calls it
// just before each write, so that the estimator can tell a backlog that
// lasted from one that a write renewed (Conn.Write does the same). A failed
// reading is skipped.
func (w *Waiter) BeforeWrite() { w.c.sampleBeforeWrite() }

// Stats returns a snapshot of the Waiter's counters: the invitation and
// wake counts, parks, re-arms and the latest TCP_INFO retransmissions; the
// write and timestamp counters stay zero. It is safe for concurrent use.
func (w *Waiter) Stats() Stats { return w.c.Stats() }

// Info returns a fresh TCP_INFO reading of the connection. It is safe for
// concurrent use.
func (w *Waiter) Info() (Info, error) { return w.c.Info() }

// Mode returns the buffer policy, with defaults filled in.
func (w *Waiter) Mode() transport.Mode { return w.c.cfg.Mode }

// Options returns the socket options NewWaiter set, as read back.
func (w *Waiter) Options() Options { return w.c.Options() }
