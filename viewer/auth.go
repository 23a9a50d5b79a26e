package viewer

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"replenish/framer"
)

// Reasons a media connection is refused before it may carry a stream.
var (
	// errAuth wraps every failure to prove the token.
	errAuth = errors.New("viewer: media authentication failed")
)

// authLink is a sender's link on which the sender proves the token (TCP
// and QUIC; WHIP publishers prove it over HTTP).
type authLink interface {
	senderLink
	// authBinding starts the connection's authentication and returns
	// what the sender's proof is bound to (framer.TCPAuthBinding or
	// framer.QUICAuthBinding). Over TCP it writes the challenge c from
	// ssrc, blocking until deadline at most; over QUIC it sends nothing.
	authBinding(ssrc uint32, c framer.AuthChallenge, deadline time.Time) ([]byte, error)
	// authenticated says the sender has proved the token, or that the
	// viewer has none: the link may then read and hold what a proved
	// sender may (over QUIC, every stream and its whole budget; over TCP
	// nothing changes).
	authenticated()
}

// authenticate runs the media authentication of a new connection (see
// framer's RPLA packets). Over TCP it sends the challenge, marked
// required when the viewer has a token. With a token it then waits, until
// Config.AuthTimeout, for the sender's first packet, which must be an
// answer that proves the token for this connection; it returns an error
// wrapping errAuth if it is anything else, wrong, or late. Without a
// token it returns at once.
func (s *Server) authenticate(link authLink) error {
	c := framer.AuthChallenge{Required: s.cfg.Token != ""}
	rand.Read(c.Nonce[:])
	deadline := time.Now().Add(s.cfg.AuthTimeout)
	binding, err := link.authBinding(s.ssrc, c, deadline)
	if err != nil {
		return fmt.Errorf("%w: %w", errAuth, err)
	}
	if s.cfg.Token == "" {
		return nil
	}
	in, err := link.next(deadline)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: no proof of the token within %v", errAuth, s.cfg.AuthTimeout)
	case err != nil:
		return fmt.Errorf("%w: %w", errAuth, err)
	case in.lost:
		return fmt.Errorf("%w: a lost frame before the proof of the token", errAuth)
	}
	_, proof, err := framer.ParseAuthAnswer(in.pkt)
	if err != nil {
		return fmt.Errorf("%w: the first packet is not a proof of the token (does the sender have -token?): %w", errAuth, err)
	}
	if !framer.VerifyAuthProof(proof, s.cfg.Token, binding) {
		return fmt.Errorf("%w: wrong token", errAuth)
	}
	return nil
}
