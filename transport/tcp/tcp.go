// Package tcp practises Source Buffer Management on stock Linux TCP from
// user space. A Conn invites the sender loop to produce a frame only when the
// socket's unsent backlog will drain within the replenish time
// (draft-cheshire-sbm's TCP_REPLENISH_TIME, emulated with TCP_INFO and
// TCP_NOTSENT_LOWAT), writes each frame whole as RFC 4571 framed RTP, and
// reports when each frame's last byte left the host (SO_TIMESTAMPING).
//
// The invitation rule lives in one pure function, Decide, so that a kernel
// with a real TCP_REPLENISH_TIME could replace it. Invitations are
// notification only: they never limit a write.
//
// Conn needs Linux; elsewhere New and Dial return ErrUnsupported.
package tcp

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
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
	// ErrMode is returned by ParseMode for a string that is not a mode.
	ErrMode = errors.New("tcp: invalid mode (want replenish[=DUR], lowat=BYTES or default, optionally +nagle)")
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
	DefaultReplenishTime = 15 * time.Millisecond
	DefaultSafetyTimeout = time.Second
	// DefaultMaxPending is how many written frames may await their
	// departure timestamp; beyond it the oldest is reported without one.
	DefaultMaxPending = 4096
)

// Mode selects how a Conn manages its send buffer.
type Mode int

const (
	// ModeReplenish invites a frame when the unsent backlog drains within
	// Config.ReplenishTime at the estimated drain rate. Writes are never
	// gated. It is the zero value.
	ModeReplenish Mode = iota
	// ModeLowat fixes TCP_NOTSENT_LOWAT at Config.Lowat for the whole
	// connection, with Linux semantics: poll reports writable when the
	// unsent backlog is below half of it, and writes are gated by it.
	ModeLowat
	// ModeDefault does no management: TCP_NOTSENT_LOWAT is set to no limit
	// and a frame is invited whenever the send buffer has room.
	ModeDefault
)

// String returns "replenish", "lowat" or "default".
func (m Mode) String() string {
	switch m {
	case ModeReplenish:
		return "replenish"
	case ModeLowat:
		return "lowat"
	case ModeDefault:
		return "default"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Config configures a Conn. The zero value is replenish mode with a 15 ms
// replenish time, TCP_NODELAY on, a 1 s safety timer and departure
// timestamps on.
type Config struct {
	// Mode selects the buffer policy; the zero value is ModeReplenish.
	Mode Mode
	// ReplenishTime is the time the unsent backlog may take to drain before
	// the next frame is invited (ModeReplenish only). Zero means 15 ms.
	ReplenishTime time.Duration
	// Lowat is the fixed TCP_NOTSENT_LOWAT in bytes for ModeLowat; it must
	// be positive there and is ignored otherwise.
	Lowat int
	// Nagle leaves Nagle's algorithm on. False, the default, sets
	// TCP_NODELAY.
	Nagle bool
	// NoSubMSSClause drops the rule's sub-MSS clause while Nagle is on. It
	// exists for diagnostic comparisons only: without the clause a Nagle
	// sender can lock at one write per RTT.
	NoSubMSSClause bool
	// SafetyTimeout bounds each wait for a kernel wake before the rule is
	// re-evaluated; it is a safety net, not a clock. Zero means 1 s.
	SafetyTimeout time.Duration
	// SendBuffer, if positive, fixes SO_SNDBUF at this many bytes (Linux
	// doubles the value and caps it at net.core.wmem_max; Options reports
	// what it took) instead of letting the kernel autotune the send buffer.
	// Comparison runs use it to reproduce an application's large buffer.
	SendBuffer int
	// UserTimeout, if positive, sets TCP_USER_TIMEOUT: the connection
	// fails when sent data stays unacknowledged this long (a peer that
	// vanished), instead of after the kernel's many retransmissions.
	UserTimeout time.Duration
	// NoTimestamps disables SO_TIMESTAMPING; SendRecords then carry no
	// LeftHost.
	NoTimestamps bool
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
	// Logger receives debug messages about socket setup; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with zero values replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.ReplenishTime == 0 {
		c.ReplenishTime = DefaultReplenishTime
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

// validate reports the first problem with c, wrapped in ErrConfig.
func (c Config) validate() error {
	switch {
	case c.Mode < ModeReplenish || c.Mode > ModeDefault:
		return fmt.Errorf("%w: unknown mode %d", ErrConfig, int(c.Mode))
	case c.ReplenishTime < 0:
		return fmt.Errorf("%w: negative replenish time %v", ErrConfig, c.ReplenishTime)
	case c.Mode == ModeLowat && (c.Lowat <= 0 || c.Lowat > math.MaxInt32):
		return fmt.Errorf("%w: lowat %d bytes out of range (1 to %d)", ErrConfig, c.Lowat, math.MaxInt32)
	case c.SafetyTimeout < 0:
		return fmt.Errorf("%w: negative safety timeout %v", ErrConfig, c.SafetyTimeout)
	case c.MaxPending < 0:
		return fmt.Errorf("%w: negative MaxPending %d", ErrConfig, c.MaxPending)
	}
	return nil
}

// ParseMode parses a buffer policy as the command line gives it:
// "replenish=15ms", "replenish" (15 ms), "lowat=15000" (bytes) or "default",
// each optionally followed by "+nagle" to leave Nagle's algorithm on (and
// then "+nosubmss", a diagnostic that drops the rule's sub-MSS clause). It
// fills the Mode, ReplenishTime, Lowat, Nagle and NoSubMSSClause fields of
// the returned Config and leaves the rest zero. Errors wrap ErrMode.
func ParseMode(s string) (Config, error) {
	var cfg Config
	parts := strings.Split(strings.TrimSpace(s), "+")
	name, arg, hasArg := strings.Cut(parts[0], "=")
	switch name {
	case "replenish":
		cfg.Mode = ModeReplenish
		cfg.ReplenishTime = DefaultReplenishTime
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil {
				return Config{}, fmt.Errorf("%w: replenish time %q is not a duration (e.g. 15ms)", ErrMode, arg)
			}
			if d <= 0 {
				return Config{}, fmt.Errorf("%w: replenish time %v must be positive (use \"default\" for no management)", ErrMode, d)
			}
			cfg.ReplenishTime = d
		}
	case "lowat":
		cfg.Mode = ModeLowat
		if !hasArg {
			return Config{}, fmt.Errorf("%w: lowat needs a byte count, as in lowat=16384", ErrMode)
		}
		n, err := strconv.Atoi(arg)
		if err != nil {
			return Config{}, fmt.Errorf("%w: lowat %q is not a byte count", ErrMode, arg)
		}
		if n <= 0 || n > math.MaxInt32 {
			return Config{}, fmt.Errorf("%w: lowat %d bytes out of range (1 to %d)", ErrMode, n, math.MaxInt32)
		}
		cfg.Lowat = n
	case "default":
		cfg.Mode = ModeDefault
		if hasArg {
			return Config{}, fmt.Errorf("%w: default takes no value", ErrMode)
		}
	case "":
		return Config{}, fmt.Errorf("%w: empty", ErrMode)
	default:
		return Config{}, fmt.Errorf("%w: unknown mode %q", ErrMode, name)
	}
	for _, opt := range parts[1:] {
		if v, ok := strings.CutPrefix(opt, "sndbuf="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > math.MaxInt32/2 || cfg.SendBuffer != 0 {
				return Config{}, fmt.Errorf("%w: +sndbuf=%s: want one byte count from 1 to %d", ErrMode, v, math.MaxInt32/2)
			}
			cfg.SendBuffer = n
			continue
		}
		switch {
		case opt == "nagle" && !cfg.Nagle:
			cfg.Nagle = true
		case opt == "nosubmss" && cfg.Nagle && !cfg.NoSubMSSClause:
			cfg.NoSubMSSClause = true
		case opt == "nosubmss":
			return Config{}, fmt.Errorf("%w: +nosubmss needs a preceding +nagle and may appear once", ErrMode)
		case opt == "nagle":
			return Config{}, fmt.Errorf("%w: +nagle repeated", ErrMode)
		default:
			return Config{}, fmt.Errorf("%w: unknown option %q (want +nagle, +nosubmss or +sndbuf=BYTES)", ErrMode, "+"+opt)
		}
	}
	return cfg, nil
}

// String returns the canonical form of c's buffer policy, as ParseMode
// reads it: "replenish=15ms", "lowat=15000" or "default", with "+nagle"
// (and "+nosubmss") appended when set. A zero ReplenishTime prints as its
// 15 ms default.
func (c Config) String() string {
	var b strings.Builder
	switch c.Mode {
	case ModeReplenish:
		d := c.ReplenishTime
		if d == 0 {
			d = DefaultReplenishTime
		}
		b.WriteString("replenish=" + d.String())
	case ModeLowat:
		b.WriteString("lowat=" + strconv.Itoa(c.Lowat))
	default:
		b.WriteString(c.Mode.String())
	}
	if c.Nagle {
		b.WriteString("+nagle")
		if c.NoSubMSSClause {
			b.WriteString("+nosubmss")
		}
	}
	if c.SendBuffer > 0 {
		b.WriteString("+sndbuf=" + strconv.Itoa(c.SendBuffer))
	}
	return b.String()
}
