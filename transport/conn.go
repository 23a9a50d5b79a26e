package transport

import (
	"context"
	"time"
)

// Handler receives what a connection reports besides its invitations. The
// transport calls each function from the goroutine that drives the
// connection (within Wait, WriteFrame or Poll) or from a goroutine of its
// own; neither is called concurrently with itself. Nil functions are not
// called.
type Handler struct {
	// Sent receives one SendRecord for every frame written, once the
	// frame's departure is known (or known to be unknown).
	Sent func(SendRecord)
	// Packet receives each RTP or RTCP packet the peer sends (the viewer's
	// feedback), in order. pkt is valid only during the call.
	Packet func(pkt []byte)
}

// Conn is one connection to a viewer, as the sender's connection loop
// drives it. Wait, WriteFrame and Poll belong to one goroutine; Counters
// and Close are safe from any.
type Conn interface {
	// Wait blocks until the transport invites one more frame, ctx is done
	// or the connection fails.
	Wait(ctx context.Context) (Invitation, error)
	// WriteFrame writes one frame's packets (control packets first, then
	// the frame's media packets) as one unit. In replenish mode it never
	// blocks on the network. id names the frame in its SendRecord.
	WriteFrame(id uint64, pkts [][]byte) error
	// SetLead declares how long the sender needs from an invitation to
	// its write (its production time: the encode), so that a managed
	// transport invites that much earlier; see transport/tcp's Decide. It
	// returns an error for a negative lead.
	SetLead(d time.Duration) error
	// Poll delivers the send records and peer packets that arrived since
	// the last call and returns the error that ended the peer's side of
	// the connection, if it has ended.
	Poll() error
	// Counters returns the connection's counters so far.
	Counters() Counters
	// Close closes the connection; Wait and WriteFrame then fail.
	Close() error
}

// Dialer opens one connection to a viewer, whose records and packets go to
// h. It blocks until connected or ctx is done.
type Dialer func(ctx context.Context, h Handler) (Conn, error)

// Counters are a connection's totals, in the same terms for every
// transport.
type Counters struct {
	Frames       uint64 // frames written
	BytesWritten uint64 // bytes written, framing included
	// Retransmits counts retransmitted segments (TCP) or packets declared
	// lost (QUIC); BytesRetrans the bytes they carried.
	Retransmits  int
	BytesRetrans uint64
	// Invitations by what ended the wait.
	InvitedImmediate, InvitedKernel, InvitedTimer uint64
	// RecordsUnstamped counts send records delivered without a departure
	// time.
	RecordsUnstamped uint64
}
