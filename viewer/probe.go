package viewer

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/hostclock"
)

// Clock probe limits: each source address may have ProbeBurst replies at
// once and ProbeRate more per second; the viewer remembers at most
// probeAddrs addresses.
const (
	ProbeRate  = 10
	ProbeBurst = 10
	probeAddrs = 1024
)

// serveProbes answers senders' clock probes that arrive on the QUIC
// socket, until ctx is done or the transport is closed: each request gets
// a reply with the viewer's clock at its arrival and at the reply's
// departure, and the identifier of its clock if the request carried the
// sender's (so that the reply is never larger than the request). Replies
// are rate-limited per source address (ProbeRate, ProbeBurst). Probes
// share the socket with QUIC because their first byte has both high bits
// clear (see framer.TimeProbeMagic), which quic-go passes to
// ReadNonQUICPacket. Anything else that reaches it is ignored.
func (s *Server) serveProbes(ctx context.Context, tr *quic.Transport) {
	buf := make([]byte, 2048)
	limit := newAddrLimiter(ProbeRate, ProbeBurst, probeAddrs)
	for {
		n, addr, err := tr.ReadNonQUICPacket(ctx, buf)
		recv := s.now()
		if err != nil {
			return // ctx is done, or the transport stopped reading
		}
		p, err := framer.ParseTimeProbe(buf[:n])
		if err != nil || p.Reply {
			s.log.Debug("ignored datagram", "from", addr.String(), "bytes", n, "err", err)
			continue
		}
		if !limit.allow(addrOf(addr), recv) {
			continue // no log: a flood would flood it
		}
		if _, err := tr.WriteTo(p.Answer(recv, s.now(), hostclock.ID()).Marshal(), addr); err != nil {
			s.log.Debug("answering clock probe", "to", addr.String(), "err", err)
		}
	}
}

// addrOf returns the IP address of a UDP or TCP address, IPv4 unmapped;
// the zero Addr for anything else.
func addrOf(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// addrLimiter is a token bucket per source address: each address may take
// burst tokens at once, refilled at rate per second. It remembers at most
// max addresses; when it is full it forgets those whose buckets have
// refilled (they carry nothing a new bucket would not), at most once per
// refill time, and until then refuses addresses it does not know. It is a
// pure function of the calls and times given, and is not safe for
// concurrent use.
type addrLimiter struct {
	rate, burst float64
	max         int
	refill      time.Duration // an empty bucket's time to fill
	buckets     map[netip.Addr]*tokenBucket
	swept       time.Time // when a full map was last swept
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

func newAddrLimiter(rate, burst float64, max int) *addrLimiter {
	return &addrLimiter{
		rate: rate, burst: burst, max: max,
		refill:  time.Duration(burst / rate * float64(time.Second)),
		buckets: make(map[netip.Addr]*tokenBucket),
	}
}

// allow reports whether a packet from a at now may be answered, and takes
// a token if so.
func (l *addrLimiter) allow(a netip.Addr, now time.Time) bool {
	b := l.buckets[a]
	if b == nil {
		if len(l.buckets) >= l.max && !l.sweep(now) {
			return false
		}
		b = &tokenBucket{tokens: l.burst, last: now}
		l.buckets[a] = b
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(l.burst, b.tokens+dt.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep forgets the addresses whose buckets are full again, unless the
// map was swept less than a refill time ago; it reports whether there is
// room for a new address.
func (l *addrLimiter) sweep(now time.Time) bool {
	if !l.swept.IsZero() && now.Sub(l.swept) < l.refill {
		return false
	}
	l.swept = now
	for a, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, a)
		}
	}
	return len(l.buckets) < l.max
}
