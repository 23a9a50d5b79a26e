package tcp

import "fmt"

// AwaitPeer blocks until done reports true, reading what the peer sends as
// Poll does each time the socket becomes readable (a packet from the peer,
// or a departure stamp on the error queue): a request/response client
// waits so for its answer, which its OnPacket sees. done is called on the
// calling goroutine, after each Poll; like Poll, AwaitPeer belongs to the
// sending goroutine, and OnPacket and OnSent are called from it.
//
// It returns nil once done reports true (at once if it already does), an
// error wrapping ErrPeerClosed once the peer has closed its side first, or
// an error wrapping net.ErrClosed when c is closed meanwhile.
func (c *Conn) AwaitPeer(done func() bool) error {
	var perr error
	err := c.raw.Read(func(uintptr) bool {
		perr = c.Poll()
		return done() || perr != nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("tcp: awaiting the peer: %w", err)
	case done():
		return nil
	}
	return perr
}
