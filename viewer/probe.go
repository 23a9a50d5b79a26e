package viewer

import (
	"context"
	"errors"
	"net"

	"replenish/framer"
	"replenish/internal/hostclock"
)

// serveProbes answers senders' clock probes on pc until ctx is done and pc
// is closed: each request gets a reply with the viewer's clock at its
// arrival and at the reply's departure, and the identifier of its clock.
// Anything else is ignored.
func (s *Server) serveProbes(ctx context.Context, pc net.PacketConn) {
	buf := make([]byte, 2048)
	for {
		n, addr, err := pc.ReadFrom(buf)
		recv := s.now()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Debug("reading clock probe", "err", err)
			continue
		}
		p, err := framer.ParseTimeProbe(buf[:n])
		if err != nil || p.Reply {
			s.log.Debug("ignored datagram", "from", addr.String(), "bytes", n, "err", err)
			continue
		}
		if _, err := pc.WriteTo(p.Answer(recv, s.now(), hostclock.ID()).Marshal(), addr); err != nil {
			s.log.Debug("answering clock probe", "to", addr.String(), "err", err)
		}
	}
}
