package viewer

import (
	"context"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/hostclock"
)

// serveProbes answers senders' clock probes that arrive on the QUIC
// socket, until ctx is done or the transport is closed: each request gets
// a reply with the viewer's clock at its arrival and at the reply's
// departure, and the identifier of its clock. Probes share the socket
// with QUIC because their first byte has both high bits clear (see
// framer.TimeProbeMagic), which quic-go passes to ReadNonQUICPacket.
// Anything else that reaches it is ignored.
func (s *Server) serveProbes(ctx context.Context, tr *quic.Transport) {
	buf := make([]byte, 2048)
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
		if _, err := tr.WriteTo(p.Answer(recv, s.now(), hostclock.ID()).Marshal(), addr); err != nil {
			s.log.Debug("answering clock probe", "to", addr.String(), "err", err)
		}
	}
}
