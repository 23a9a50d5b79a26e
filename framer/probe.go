package framer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// A time probe is one datagram of the clock side channel, 32 or 40 bytes,
// all big-endian:
//
//	0x0E "RPL", u8 version (1), u8 kind (1 request, 2 reply), u16 reserved (0),
//	i64 origin_us    sender's clock when it sent the request
//	i64 receive_us   viewer's clock when the request arrived (replies)
//	i64 transmit_us  viewer's clock when it sent the reply (replies)
//	u64 clock        optional: an identifier of the clock of the probe's
//	                 writer (requests: the sender's, replies: the
//	                 viewer's), present when not 0
//
// Times are µs since the Unix epoch; 0 stands for the zero Time. A reply
// is never larger than the request it answers (Answer): it carries the
// viewer's clock identifier only in reply to a request that carries the
// sender's, so that a forged source address cannot make the viewer send
// more than it received.
//
// The first byte, 0x0E, has its two high bits clear, so that a probe can
// share a UDP port with QUIC: QUIC sets the second bit of every packet's
// first byte (RFC 9000 section 17, RFC 9443), and quic-go hands packets
// without either high bit to Transport.ReadNonQUICPacket. The range 4 to 15
// is used by none of the protocols RFC 9443 demultiplexes.
const (
	// TimeProbeSize is the size of a marshalled TimeProbe in bytes, without
	// its optional clock identifier (which adds 8).
	TimeProbeSize = 32
	// TimeProbeMagic opens every time probe.
	TimeProbeMagic = "\x0eRPL"
	// TimeProbeVersion is the probe layout this package writes and reads.
	TimeProbeVersion = 1

	probeRequest = 1
	probeReply   = 2
)

// Errors returned by ParseTimeProbe and OffsetEstimator.Add.
var (
	ErrNotTimeProbe = errors.New("framer: not a time probe")
	ErrBadTimeProbe = errors.New("framer: malformed time probe")
	ErrBadSample    = errors.New("framer: inconsistent clock sample")
)

// TimeProbe is a request from the sender (Reply false, with Origin) or the
// viewer's reply to it (Reply true, with the request's Origin and the
// viewer's Receive and Transmit times). Times travel in whole microseconds.
type TimeProbe struct {
	Reply    bool
	Origin   time.Time // sender's clock, when it sent the request
	Receive  time.Time // viewer's clock, when the request arrived
	Transmit time.Time // viewer's clock, when it sent the reply
	// Clock identifies the clock of the probe's writer (see package
	// hostclock); 0 if unknown. A reply whose Clock equals the sender's
	// own comes from a viewer on the same clock: the offset is zero.
	Clock uint64
}

// Answer returns the reply to request p, which arrived at receive and
// leaves at transmit, both on the viewer's clock, whose identifier is clock
// (0 if unknown). The reply carries clock only if p carries the sender's
// clock identifier, so that it is no larger than p.
func (p TimeProbe) Answer(receive, transmit time.Time, clock uint64) TimeProbe {
	if p.Clock == 0 {
		clock = 0
	}
	return TimeProbe{Reply: true, Origin: p.Origin, Receive: receive, Transmit: transmit, Clock: clock}
}

// Size returns the length of p's wire form in bytes.
func (p TimeProbe) Size() int {
	if p.Clock != 0 {
		return TimeProbeSize + 8
	}
	return TimeProbeSize
}

// Marshal returns p's wire form: 32 bytes, and 8 more for a non-zero Clock.
// Times are truncated to whole microseconds.
func (p TimeProbe) Marshal() []byte {
	b := make([]byte, 0, p.Size())
	b = append(b, TimeProbeMagic...)
	kind := byte(probeRequest)
	if p.Reply {
		kind = probeReply
	}
	b = append(b, TimeProbeVersion, kind, 0, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(unixMicro(p.Origin)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixMicro(p.Receive)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixMicro(p.Transmit)))
	if p.Clock != 0 {
		b = binary.BigEndian.AppendUint64(b, p.Clock)
	}
	return b
}

// ParseTimeProbe reads a time probe from a datagram. It returns
// ErrNotTimeProbe if b does not start with the magic, and an error wrapping
// ErrBadTimeProbe for a wrong length, an unknown version or an unknown
// kind. The reserved field is ignored.
func ParseTimeProbe(b []byte) (TimeProbe, error) {
	if len(b) < len(TimeProbeMagic) || string(b[:len(TimeProbeMagic)]) != TimeProbeMagic {
		return TimeProbe{}, ErrNotTimeProbe
	}
	if len(b) != TimeProbeSize && len(b) != TimeProbeSize+8 {
		return TimeProbe{}, fmt.Errorf("%w: %d bytes, want %d or %d", ErrBadTimeProbe, len(b), TimeProbeSize, TimeProbeSize+8)
	}
	if b[4] != TimeProbeVersion {
		return TimeProbe{}, fmt.Errorf("%w: unknown version %d", ErrBadTimeProbe, b[4])
	}
	var p TimeProbe
	switch b[5] {
	case probeRequest:
	case probeReply:
		p.Reply = true
	default:
		return TimeProbe{}, fmt.Errorf("%w: unknown kind %d", ErrBadTimeProbe, b[5])
	}
	p.Origin = fromUnixMicro(int64(binary.BigEndian.Uint64(b[8:])))
	p.Receive = fromUnixMicro(int64(binary.BigEndian.Uint64(b[16:])))
	p.Transmit = fromUnixMicro(int64(binary.BigEndian.Uint64(b[24:])))
	if len(b) > TimeProbeSize {
		p.Clock = binary.BigEndian.Uint64(b[32:])
		if p.Clock == 0 {
			return TimeProbe{}, fmt.Errorf("%w: a clock identifier of 0 is sent as none", ErrBadTimeProbe)
		}
	}
	return p, nil
}

// DefaultOffsetSamples is the number of recent samples an OffsetEstimator
// chooses from unless told otherwise.
const DefaultOffsetSamples = 16

// OffsetEstimator estimates the viewer's clock minus the sender's from
// probe exchanges, as NTP does (RFC 5905 section 8): of the last N samples
// it trusts the one with the smallest round trip, whose offset error is at
// most half that round trip. The zero value keeps DefaultOffsetSamples
// samples. It is a pure function of the samples it is
// given and is not safe for concurrent use.
type OffsetEstimator struct {
	samples []offsetSample // ring of the last N samples
	next    int            // index in samples of the next write
	n       int            // samples held, up to len(samples)
}

type offsetSample struct {
	offset, rtt time.Duration
}

// NewOffsetEstimator returns an estimator that chooses among the last n
// samples (n <= 0 means DefaultOffsetSamples).
func NewOffsetEstimator(n int) *OffsetEstimator {
	if n <= 0 {
		n = DefaultOffsetSamples
	}
	return &OffsetEstimator{samples: make([]offsetSample, n)}
}

// Add records one exchange: t1 when the sender sent the request and t4 when
// it received the reply (sender's clock), t2 when the viewer received the
// request and t3 when it sent the reply (viewer's clock). It returns an
// error wrapping ErrBadSample, and records nothing, if a time is zero, if
// t4 is before t1 or t3 before t2, or if the viewer's turnaround t3-t2
// exceeds the round trip t4-t1.
func (e *OffsetEstimator) Add(t1, t2, t3, t4 time.Time) error {
	switch {
	case t1.IsZero() || t2.IsZero() || t3.IsZero() || t4.IsZero():
		return fmt.Errorf("%w: missing time", ErrBadSample)
	case t4.Before(t1):
		return fmt.Errorf("%w: reply received %v before the request was sent", ErrBadSample, t1.Sub(t4))
	case t3.Before(t2):
		return fmt.Errorf("%w: reply sent %v before the request arrived", ErrBadSample, t2.Sub(t3))
	}
	rtt := t4.Sub(t1) - t3.Sub(t2)
	if rtt < 0 {
		return fmt.Errorf("%w: viewer turnaround %v exceeds the round trip %v", ErrBadSample, t3.Sub(t2), t4.Sub(t1))
	}
	// ((t2-t1) + (t3-t4)) / 2, halved term by term so that it cannot
	// overflow for any times a Duration can hold.
	offset := t2.Sub(t1)/2 + t3.Sub(t4)/2
	if e.samples == nil {
		e.samples = make([]offsetSample, DefaultOffsetSamples)
	}
	e.samples[e.next] = offsetSample{offset: offset, rtt: rtt}
	e.next = (e.next + 1) % len(e.samples)
	e.n = min(e.n+1, len(e.samples))
	return nil
}

// Offset returns the viewer's clock minus the sender's from the sample with
// the smallest round trip among the last N, and that round trip, which
// bounds the error to half of it. ok is false before the first sample.
func (e *OffsetEstimator) Offset() (offset, rtt time.Duration, ok bool) {
	if e.n == 0 {
		return 0, 0, false
	}
	best := e.samples[0]
	for _, s := range e.samples[1:e.n] {
		if s.rtt < best.rtt {
			best = s
		}
	}
	return best.offset, best.rtt, true
}
