package transport

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultReplenishTime is the replenish time of "replenish" without a
// value, and of a Mode whose ReplenishTime is zero.
const DefaultReplenishTime = 15 * time.Millisecond

// DefaultMode is the sender's default: source buffer management with the
// default replenish time, TCP_NODELAY on.
var DefaultMode = Mode{Policy: Replenish, ReplenishTime: DefaultReplenishTime}

// ErrMode is returned by ParseMode for text that is not a mode.
var ErrMode = errors.New("transport: invalid mode (want replenish[=DUR], lowat=BYTES, expire=DUR or default, with options +kernel, +nagle, +nosubmss, +sndbuf=BYTES)")

// Policy says how a transport manages the sender's buffer.
type Policy int

const (
	// Replenish invites a frame when the unsent backlog drains within the
	// replenish time at the estimated drain rate (draft-cheshire-sbm).
	// Invitations never limit a write. It is the zero value.
	Replenish Policy = iota
	// Lowat fixes TCP_NOTSENT_LOWAT at a byte count, with Linux semantics:
	// poll reports writable below half of it and writes are gated by it.
	Lowat
	// Default does no management: every frame is written as produced,
	// and the transport's buffer takes what it will.
	Default
	// Expire writes every frame on a stream of its own and resets the
	// stream when the frame is older than the expiry (QUIC only).
	Expire
)

// String returns "replenish", "lowat", "default" or "expire".
func (p Policy) String() string {
	switch p {
	case Replenish:
		return "replenish"
	case Lowat:
		return "lowat"
	case Default:
		return "default"
	case Expire:
		return "expire"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// Mode is a transport's buffer policy with its parameters: the value that a
// -mode flag or a scenario line names. Parse it once with ParseMode where it
// enters, pass it as a value, and print it with String, which ParseMode
// reads back. Each transport accepts the policies and options it supports
// and rejects the others.
type Mode struct {
	Policy Policy
	// ReplenishTime is the replenish time for Replenish; zero means
	// DefaultReplenishTime.
	ReplenishTime time.Duration
	// Lowat is TCP_NOTSENT_LOWAT in bytes for Lowat.
	Lowat int
	// Expire is the age at which Expire resets a frame's stream.
	Expire time.Duration
	// Nagle leaves Nagle's algorithm on (TCP); the default sets TCP_NODELAY.
	Nagle bool
	// NoSubMSS drops the invitation rule's sub-MSS clause while Nagle is
	// on: a diagnostic that reproduces the Nagle trap of seeds/000.
	NoSubMSS bool
	// SendBuffer, if positive, fixes SO_SNDBUF in bytes (TCP).
	SendBuffer int
	// Kernel makes Replenish's invitation rule exactly that of the
	// measured kernel implementation of TCP_REPLENISH_TIME (seeds/000):
	// the stack's own delivery-rate sample as the drain rate and half the
	// threshold as the wake, with no lead for the application's production
	// time. It reproduces that kernel's behaviour (the Nagle trap among
	// it) for comparison runs.
	Kernel bool
}

// Replenishing returns the replenish time of a Replenish mode, with the
// default for zero, and zero for every other policy.
func (m Mode) Replenishing() time.Duration {
	switch {
	case m.Policy != Replenish:
		return 0
	case m.ReplenishTime == 0:
		return DefaultReplenishTime
	}
	return m.ReplenishTime
}

// ParseMode reads a mode as the command line and scenario files give it:
// "replenish=15ms", "replenish" (15 ms), "lowat=15000" (bytes),
// "expire=100ms" or "default", each optionally followed by "+kernel"
// (replenish only), "+nagle" (then "+nosubmss") and "+sndbuf=BYTES". Errors
// wrap ErrMode.
func ParseMode(s string) (Mode, error) {
	parts := strings.Split(strings.TrimSpace(s), "+")
	m, err := parsePolicy(parts[0])
	if err != nil {
		return Mode{}, err
	}
	for _, opt := range parts[1:] {
		if err := m.parseOption(opt); err != nil {
			return Mode{}, err
		}
	}
	if m.Kernel && m.Policy != Replenish {
		return Mode{}, fmt.Errorf("%w: +kernel applies to replenish only, not %v", ErrMode, m.Policy)
	}
	return m, nil
}

func parsePolicy(s string) (Mode, error) {
	name, arg, hasArg := strings.Cut(s, "=")
	var m Mode
	switch name {
	case "replenish":
		m.Policy, m.ReplenishTime = Replenish, DefaultReplenishTime
		if hasArg {
			d, err := positiveDuration("replenish time", arg)
			if err != nil {
				return Mode{}, err
			}
			m.ReplenishTime = d
		}
	case "lowat":
		m.Policy = Lowat
		if !hasArg {
			return Mode{}, fmt.Errorf("%w: lowat needs a byte count, as in lowat=16384", ErrMode)
		}
		n, err := strconv.Atoi(arg)
		if err != nil {
			return Mode{}, fmt.Errorf("%w: lowat %q is not a byte count", ErrMode, arg)
		}
		if n <= 0 || n > math.MaxInt32 {
			return Mode{}, fmt.Errorf("%w: lowat %d bytes out of range (1 to %d)", ErrMode, n, math.MaxInt32)
		}
		m.Lowat = n
	case "expire":
		m.Policy = Expire
		if !hasArg {
			return Mode{}, fmt.Errorf("%w: expire needs a duration, as in expire=100ms", ErrMode)
		}
		d, err := positiveDuration("expiry", arg)
		if err != nil {
			return Mode{}, err
		}
		m.Expire = d
	case "default":
		m.Policy = Default
		if hasArg {
			return Mode{}, fmt.Errorf("%w: default takes no value", ErrMode)
		}
	case "":
		return Mode{}, fmt.Errorf("%w: empty", ErrMode)
	default:
		return Mode{}, fmt.Errorf("%w: unknown mode %q", ErrMode, name)
	}
	return m, nil
}

func positiveDuration(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a duration (e.g. 15ms)", ErrMode, what, s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %s %v must be positive (use \"default\" for no management)", ErrMode, what, d)
	}
	return d, nil
}

func (m *Mode) parseOption(opt string) error {
	if v, ok := strings.CutPrefix(opt, "sndbuf="); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > math.MaxInt32/2 || m.SendBuffer != 0 {
			return fmt.Errorf("%w: +sndbuf=%s: want one byte count from 1 to %d", ErrMode, v, math.MaxInt32/2)
		}
		m.SendBuffer = n
		return nil
	}
	switch {
	case opt == "kernel" && !m.Kernel:
		m.Kernel = true
	case opt == "kernel":
		return fmt.Errorf("%w: +kernel repeated", ErrMode)
	case opt == "nagle" && !m.Nagle:
		m.Nagle = true
	case opt == "nosubmss" && m.Nagle && !m.NoSubMSS:
		m.NoSubMSS = true
	case opt == "nosubmss":
		return fmt.Errorf("%w: +nosubmss needs a preceding +nagle and may appear once", ErrMode)
	case opt == "nagle":
		return fmt.Errorf("%w: +nagle repeated", ErrMode)
	default:
		return fmt.Errorf("%w: unknown option %q (want +kernel, +nagle, +nosubmss or +sndbuf=BYTES)", ErrMode, "+"+opt)
	}
	return nil
}

// String returns m's canonical form, which ParseMode reads back:
// "replenish=15ms", "lowat=15000", "expire=100ms" or "default", with
// "+kernel" (replenish only), "+nagle", "+nosubmss" and "+sndbuf=BYTES"
// appended in that order when set. A zero ReplenishTime prints as its
// default.
func (m Mode) String() string {
	var b strings.Builder
	switch m.Policy {
	case Replenish:
		b.WriteString("replenish=" + m.Replenishing().String())
		if m.Kernel {
			b.WriteString("+kernel")
		}
	case Lowat:
		b.WriteString("lowat=" + strconv.Itoa(m.Lowat))
	case Expire:
		b.WriteString("expire=" + m.Expire.String())
	default:
		b.WriteString(m.Policy.String())
	}
	if m.Nagle {
		b.WriteString("+nagle")
		if m.NoSubMSS {
			b.WriteString("+nosubmss")
		}
	}
	if m.SendBuffer > 0 {
		b.WriteString("+sndbuf=" + strconv.Itoa(m.SendBuffer))
	}
	return b.String()
}

// MarshalText returns String's form, so that a Mode is a string in JSON.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses text with ParseMode; with flag.TextVar a Mode is a
// command-line flag.
func (m *Mode) UnmarshalText(text []byte) error {
	v, err := ParseMode(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
