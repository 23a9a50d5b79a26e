// Package tcp practises Source Buffer Management on stock Linux TCP from
// user space. A Conn invites the sender loop to produce a frame only when the
// socket's unsent backlog will drain within the replenish time
// (draft-cheshire-sbm's TCP_REPLENISH_TIME, emulated with TCP_INFO and
// TCP_NOTSENT_LOWAT), writes each frame whole as RFC 4571 framed RTP, and
// reports when each frame's last byte left the host (SO_TIMESTAMPING).
//
// The invitation rule lives in one pure function, Decide, so that a kernel
// with a real TCP_REPLENISH_TIME could replace it. Its drain rate comes from
// transport/drain's estimator, fed a TCP_INFO reading at every wake and
// before every write, rather than from the kernel's tcpi_delivery_rate
// (Mode.Kernel keeps the kernel's, as the measured kernel implementation
// does). An application that needs time to produce what it writes declares
// it with SetLead and is invited that much earlier. Invitations are
// notification only: they never limit a write.
//
// A Waiter applies the same rule to a connection something else reads and
// writes (the viewer's WebSocket to a page, say): it only waits, and its
// owner writes after each invitation.
//
// Conn and Waiter need Linux; elsewhere New, Dial and NewWaiter return
// ErrUnsupported.
package tcp

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"replenish/transport"
)

// Errors returned by this package.
var (
	// ErrUnsupported is returned on platforms other than Linux.
	ErrUnsupported = errors.New("tcp: socket management is only supported on Linux")
	// ErrNotTCP is returned by New for a socket that is not plain TCP
	// (MPTCP, say, which Go may choose by default): the socket options
	// the invitation rule rests on have other meanings there.
	ErrNotTCP = errors.New("tcp: not a plain TCP socket")
	// ErrConfig is returned by New and Dial for an invalid Config.
	ErrConfig = errors.New("tcp: invalid configuration")
	// ErrOption is returned by New when a socket option reads back
	// different from what was set.
	ErrOption = errors.New("tcp: socket option did not take effect")
	// ErrShortInfo is returned by ParseInfo for a struct tcp_info too short
	// to hold the fields the invitation rule uses.
	ErrShortInfo = errors.New("tcp: TCP_INFO too short")
	// ErrEmptyFrame is returned by WriteFrame for a frame with no packets.
	ErrEmptyFrame = errors.New("tcp: empty frame")
	// ErrPeerClosed is returned by Wait when the connection can no longer
	// carry data (reset, or both directions shut down).
	ErrPeerClosed = errors.New("tcp: connection closed")
)

// Defaults for the zero values of Config.
const (
	DefaultSafetyTimeout = time.Second
	// DefaultMaxPending is how many written frames may await their
	// departure timestamp; beyond it the oldest is reported without one.
	DefaultMaxPending = 4096
)

// Config configures a Conn. The zero value is replenish mode with a 15 ms
// replenish time, TCP_NODELAY on, a 1 s safety timer and departure
// timestamps on.
type Config struct {
	// Mode is the buffer policy: transport.Replenish (the zero value),
	// transport.Lowat or transport.Default, with its parameters and the
	// +kernel, +nagle, +nosubmss and +sndbuf options. A zero ReplenishTime means
	// transport.DefaultReplenishTime. With SendBuffer set, SO_SNDBUF is
	// fixed (Linux doubles the value and caps it at net.core.wmem_max;
	// Options reports what it took) instead of autotuned: comparison runs
	// use it to reproduce an application's large buffer.
	Mode transport.Mode
	// SafetyTimeout bounds each wait for a kernel wake before the rule is
	// re-evaluated; it is a safety net, not a clock. Zero means 1 s.
	SafetyTimeout time.Duration
	// UserTimeout, if positive, sets TCP_USER_TIMEOUT: the connection
	// fails when sent data stays unacknowledged this long (a peer that
	// vanished), instead of after the kernel's many retransmissions.
	UserTimeout time.Duration
	// RTOMax, if positive, sets TCP_RTO_MAX_MS (Linux 6.15 and later):
	// the longest the retransmission timer waits, however often it has
	// backed off. From 1 s (the kernel's minimum) to 120 s, in whole
	// milliseconds. A kernel without the option refuses it, and the Conn
	// carries on without it (Options.RTOMax reads 0).
	RTOMax time.Duration
	// UncappedUserTimeout, if positive, replaces UserTimeout where RTOMax
	// was asked for and the kernel lacks TCP_RTO_MAX_MS: the connection
	// fails this soon into an outage, and the sender reconnects, instead
	// of waiting out a retransmission timeout that doubles through it.
	UncappedUserTimeout time.Duration
	// Congestion, if set, is the congestion control the Conn sets
	// (TCP_CONGESTION), such as "cubic" or "bbr"; empty keeps the one the
	// socket has (the system's net.ipv4.tcp_congestion_control, unless
	// the caller set another). Options.Congestion reads it back either
	// way. CheckCongestion tells whether the kernel has one.
	Congestion string
	// NoTimestamps disables SO_TIMESTAMPING; SendRecords then carry no
	// LeftHost.
	NoTimestamps bool
	// Pace turns on the kernel's own pacing (SO_MAX_PACING_RATE, set to
	// no cap): Linux then spreads what cwnd lets go at 1.2 times cwnd a
	// smoothed round trip (2 times early in slow start) instead of sending
	// it at once, as it does under the fq qdisc. BBR paces either way. It
	// cannot be turned off for the connection. See LongFrame, and
	// CapPacing for a cap.
	Pace bool
	// MaxPending bounds the frames awaiting a departure timestamp. Zero
	// means DefaultMaxPending.
	MaxPending int
	// OnSent, if set, receives a SendRecord for every frame written. It is
	// called from Wait, WriteFrame and Poll, on the caller's goroutine,
	// never with a lock held.
	OnSent func(transport.SendRecord)
	// OnPacket, if set, receives each RFC 4571 framed packet the peer sends
	// (RTCP feedback, typically), in order; pkt is valid only during the
	// call. Like OnSent it is called from Wait, WriteFrame and Poll on the
	// caller's goroutine. The Conn never reads from a goroutine of its own:
	// a blocked reader on a socket with SO_TIMESTAMPING gets spurious
	// errors from Go's netpoller whenever the error queue alone is ready.
	OnPacket func(pkt []byte)
	// Token, when set, is proved to the viewer by Dial: it reads the
	// viewer's challenge (its first packet) and, if the viewer requires
	// a token, answers with framer's RPLA proof, bound to the
	// challenge's nonce; the token itself is not sent. A viewer with a
	// token refuses a connection without the proof. New ignores it.
	Token string
	// Logger receives debug messages about socket setup; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with zero values replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Mode.Policy == transport.Replenish {
		c.Mode.ReplenishTime = c.Mode.Replenishing()
	}
	if c.SafetyTimeout == 0 {
		c.SafetyTimeout = DefaultSafetyTimeout
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// LongFrame is the frame interval from which a stream in replenish mode
// should pace its socket (Config.Pace). A stream that fills its path
// writes frames about a frame interval long at the path's rate, and an
// unpaced socket sends each as one burst as far as cwnd allows; where the
// bottleneck's buffer is shorter than the frame, the burst loses its tail.
// Buffers of 20 to 60 ms are common. Paced, the frame leaves at about 1.2
// times the path's rate, and the queue it builds is a sixth as long. At
// 30 fps the frames fit most buffers, and pacing them measured neither
// clearly better nor worse (experiments/NOTEBOOK.md, "Pacing long
// frames").
const LongFrame = 50 * time.Millisecond

// LongFrames says a source of fps frames a second writes long frames: a
// frame interval of LongFrame or more.
func LongFrames(fps int) bool { return fps > 0 && time.Second/time.Duration(fps) >= LongFrame }

// Bounds of Config.RTOMax: those Linux accepts for TCP_RTO_MAX_MS.
const (
	MinRTOMax = time.Second
	MaxRTOMax = 120 * time.Second
)

// validate reports the first problem with c, wrapped in ErrConfig.
func (c Config) validate() error {
	switch {
	case c.Mode.Policy != transport.Replenish && c.Mode.Policy != transport.Lowat && c.Mode.Policy != transport.Default:
		return fmt.Errorf("%w: mode %v is not a TCP mode (want replenish, lowat or default)", ErrConfig, c.Mode.Policy)
	case c.Mode.Kernel && c.Mode.Policy != transport.Replenish:
		return fmt.Errorf("%w: the kernel-faithful rule applies to replenish mode only", ErrConfig)
	case c.Mode.ReplenishTime < 0:
		return fmt.Errorf("%w: negative replenish time %v", ErrConfig, c.Mode.ReplenishTime)
	case c.Mode.Policy == transport.Lowat && (c.Mode.Lowat <= 0 || c.Mode.Lowat > math.MaxInt32):
		return fmt.Errorf("%w: lowat %d bytes out of range (1 to %d)", ErrConfig, c.Mode.Lowat, math.MaxInt32)
	case c.Mode.SendBuffer < 0 || c.Mode.SendBuffer > math.MaxInt32/2:
		return fmt.Errorf("%w: send buffer %d bytes out of range", ErrConfig, c.Mode.SendBuffer)
	case c.SafetyTimeout < 0:
		return fmt.Errorf("%w: negative safety timeout %v", ErrConfig, c.SafetyTimeout)
	case c.MaxPending < 0:
		return fmt.Errorf("%w: negative MaxPending %d", ErrConfig, c.MaxPending)
	case c.Congestion != "" && !validCongestionName(c.Congestion):
		return fmt.Errorf("%w: congestion control %q: want a kernel module's name (letters, digits, '_', at most %d bytes)", ErrConfig, c.Congestion, maxCongestionName)
	case c.UserTimeout < 0 || c.UncappedUserTimeout < 0:
		return fmt.Errorf("%w: negative UserTimeout or UncappedUserTimeout", ErrConfig)
	case c.RTOMax != 0 && (c.RTOMax < MinRTOMax || c.RTOMax > MaxRTOMax || c.RTOMax%time.Millisecond != 0):
		return fmt.Errorf("%w: RTOMax %v out of range (whole milliseconds, %v to %v)", ErrConfig, c.RTOMax, MinRTOMax, MaxRTOMax)
	}
	return nil
}

// maxCongestionName is the longest congestion control name Linux takes
// (TCP_CA_NAME_MAX less its terminating NUL).
const maxCongestionName = 15

// validCongestionName says name could name a congestion control module.
func validCongestionName(name string) bool {
	if name == "" || len(name) > maxCongestionName {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
