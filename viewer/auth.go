package viewer

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"replenish/framer"
)

// Reasons a media connection is refused before it may carry a stream.
var (
	// errAuth wraps every failure to prove the token.
	errAuth = errors.New("viewer: media authentication failed")
	// errTooManyConns is returned by admit at a connection limit.
	errTooManyConns = errors.New("viewer: too many media connections")
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

// admit counts a new media connection from addr against MaxSenderConns and
// MaxSenderConnsPerAddr. It returns a function that releases it, or an
// error wrapping errTooManyConns.
func (s *Server) admit(addr netip.Addr) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.senderConns >= s.cfg.MaxSenderConns:
		return nil, fmt.Errorf("%w: %d open", errTooManyConns, s.senderConns)
	case s.senderConnsBy[addr] >= s.cfg.MaxSenderConnsPerAddr:
		return nil, fmt.Errorf("%w: %d open from %v", errTooManyConns, s.senderConnsBy[addr], addr)
	}
	s.senderConns++
	s.senderConnsBy[addr]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.senderConns--
		if s.senderConnsBy[addr]--; s.senderConnsBy[addr] == 0 {
			delete(s.senderConnsBy, addr)
		}
	}, nil
}

// refusals logs refused media connections at most once per second, with
// the number refused since the last message, so that a flood of
// connections does not flood the log.
type refusals struct {
	mu         sync.Mutex // guards following fields
	last       time.Time
	suppressed int
}

// log logs err for the connection from remote, unless it logged one less
// than a second before now.
func (r *refusals) log(log *slog.Logger, remote string, err error, now time.Time) {
	r.mu.Lock()
	if now.Sub(r.last) < time.Second {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	log.Warn("sender refused", "sender", remote, "err", err, "refused_since_last_message", n)
}
