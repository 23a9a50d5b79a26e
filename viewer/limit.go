package viewer

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// errTooManyConns is the reason a connection is refused at a cap.
var errTooManyConns = errors.New("viewer: too many connections")

// connLimits counts open connections, in total and per IP address, against
// caps. It is safe for concurrent use.
type connLimits struct {
	max, perAddr int // read-only

	mu sync.Mutex // guards following fields
	n  int
	by map[netip.Addr]int // no zero entries
}

func newConnLimits(max, perAddr int) *connLimits {
	return &connLimits{max: max, perAddr: perAddr, by: make(map[netip.Addr]int)}
}

// admit counts a new connection from a. It returns a function that
// releases it (call it once), or an error wrapping errTooManyConns at
// either cap.
func (l *connLimits) admit(a netip.Addr) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.n >= l.max:
		return nil, fmt.Errorf("%w: %d open", errTooManyConns, l.n)
	case l.by[a] >= l.perAddr:
		return nil, fmt.Errorf("%w: %d open from %v", errTooManyConns, l.by[a], a)
	}
	l.n++
	l.by[a]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n--
		if l.by[a]--; l.by[a] == 0 {
			delete(l.by, a)
		}
	}, nil
}

// open returns the number of connections counted.
func (l *connLimits) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// limitListener is a listener whose connections are counted against
// limits: one beyond a cap is closed as soon as it is accepted, and Accept
// goes on to the next.
type limitListener struct {
	net.Listener
	limits  *connLimits
	refused func(remote net.Addr, err error)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		release, err := l.limits.admit(addrOf(c.RemoteAddr()))
		if err != nil {
			l.refused(c.RemoteAddr(), err)
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: release}, nil
	}
}

// limitedConn releases its count when it is first closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// NetConn returns the connection c wraps, so that the page's writer can
// reach its TCP socket.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// refusals logs refused connections at most once per second, with the
// number refused since the last message, so that a flood of connections
// does not flood the log.
type refusals struct {
	mu         sync.Mutex // guards following fields
	last       time.Time
	suppressed int
}

// log logs err for the connection from remote, unless it logged one less
// than a second before now.
func (r *refusals) log(log *slog.Logger, what, remote string, err error, now time.Time) {
	r.mu.Lock()
	if now.Sub(r.last) < time.Second {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	log.Warn(what+" refused", "remote", remote, "err", err, "refused_since_last_message", n)
}
