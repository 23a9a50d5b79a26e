package viewer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"replenish/framer"
)

// senderLink is one connection from a sender as the per-connection loop
// (readSender, writeFeedback) uses it, whatever the transport: packets in,
// RTCP feedback out. next is called from one goroutine and writeControl
// from one other; close and the accessors are safe from any goroutine.
type senderLink interface {
	// next blocks until the next packet from the sender, or a frame the
	// transport knows is lost, and returns it. It returns an error
	// wrapping os.ErrDeadlineExceeded when nothing arrives by deadline,
	// one wrapping io.EOF when the sender closed the connection, and the
	// error that ended the connection otherwise. The packet is valid until
	// the next call.
	next(deadline time.Time) (arrival, error)
	// writeControl sends one RTCP packet to the sender, blocking until
	// deadline at most.
	writeControl(pkt []byte, deadline time.Time) error
	// close ends the connection; cause says why (nil, io.EOF or
	// errShutdown for an orderly end). It makes next and writeControl
	// return, and may be called more than once.
	close(cause error)
	remote() string    // the sender's address
	transport() string // "tcp", "quic" or "webrtc"
}

// arrival is what senderLink.next returns: a packet (RTP or RTCP), or
// word that a frame was lost on the way.
type arrival struct {
	pkt  []byte
	lost bool // a frame did not arrive whole (its QUIC stream was reset)
}

// Transport names, as /api/stats and the page show them.
const (
	transportTCP    = "tcp"
	transportQUIC   = "quic"
	transportWebRTC = "webrtc"
)

// tcpLink is a sender's TCP connection: RFC 4571 framed RTP and RTCP in
// both directions.
type tcpLink struct {
	conn net.Conn
	r    *framer.Reader

	wmu  sync.Mutex // guards following fields and serializes writes
	wbuf []byte
}

var _ authLink = (*tcpLink)(nil)

func newTCPLink(conn net.Conn) *tcpLink {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true) // feedback is small and urgent
	}
	return &tcpLink{conn: conn, r: framer.NewReader(conn)}
}

func (l *tcpLink) next(deadline time.Time) (arrival, error) {
	if err := l.conn.SetReadDeadline(deadline); err != nil {
		return arrival{}, err
	}
	pkt, err := l.r.ReadPacket()
	if errors.Is(err, framer.ErrEmptyPacket) {
		return arrival{}, fmt.Errorf("framing: %w", err)
	}
	return arrival{pkt: pkt}, err
}

func (l *tcpLink) writeControl(pkt []byte, deadline time.Time) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	var err error
	if l.wbuf, err = framer.AppendFramed(l.wbuf[:0], pkt); err != nil {
		return err
	}
	l.conn.SetWriteDeadline(deadline)
	_, err = l.conn.Write(l.wbuf)
	return err
}

func (l *tcpLink) authBinding(ssrc uint32, c framer.AuthChallenge, deadline time.Time) ([]byte, error) {
	if err := l.writeControl(framer.MarshalAuthChallenge(ssrc, c), deadline); err != nil {
		return nil, fmt.Errorf("sending the challenge: %w", err)
	}
	return framer.TCPAuthBinding(c.Nonce), nil
}

// authenticated does nothing: a TCP link reads one packet at a time,
// proved or not.
func (l *tcpLink) authenticated() {}

// refuse tells the sender why the viewer ends the connection, in an RTCP
// BYE from ssrc, then closes it: it shuts its side down and discards what
// the sender still sends until the sender closes too, for refuseLinger at
// most, so that the close is a FIN after the BYE rather than a reset that
// could destroy the BYE unread.
func (l *tcpLink) refuse(ssrc uint32, why error) {
	if l.writeControl(framer.MarshalBye(ssrc, why.Error()), time.Now().Add(refuseLinger)) == nil {
		if tc, ok := l.conn.(*net.TCPConn); ok && tc.CloseWrite() == nil {
			l.conn.SetReadDeadline(time.Now().Add(refuseLinger))
			io.Copy(io.Discard, l.conn)
		}
	}
	l.conn.Close()
}

// refuseLinger bounds how long refuse waits for the sender to close.
const refuseLinger = time.Second

func (l *tcpLink) close(error)       { l.conn.Close() }
func (l *tcpLink) remote() string    { return l.conn.RemoteAddr().String() }
func (l *tcpLink) transport() string { return transportTCP }
