package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"replenish/framer"
)

// ErrAuth wraps the reasons Dial could not prove the token to the viewer.
var ErrAuth = errors.New("tcp: proving the token to the viewer")

// authWait bounds the wait for the viewer's challenge when ctx has no
// deadline.
const authWait = 5 * time.Second

// proveToken reads the viewer's challenge, its first packet, and answers
// it with the proof of token if the viewer requires one. It reads exactly
// the challenge, so that nothing the viewer sends after it is lost to the
// Conn. It returns an error wrapping ErrAuth if the challenge does not
// come before ctx's deadline (or authWait) or is not a challenge.
func proveToken(ctx context.Context, nc net.Conn, token string) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(authWait)
	}
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(aLongTimeAgo) })
	defer func() {
		stop()
		nc.SetDeadline(time.Time{})
	}()
	var buf [2 + framer.AuthPacketSize]byte
	if _, err := io.ReadFull(nc, buf[:2]); err != nil {
		return fmt.Errorf("%w: reading its challenge: %w", ErrAuth, challengeErr(ctx, err))
	}
	if n := binary.BigEndian.Uint16(buf[:2]); n != framer.AuthPacketSize {
		return fmt.Errorf("%w: its first packet (%d bytes) is not a challenge", ErrAuth, n)
	}
	if _, err := io.ReadFull(nc, buf[2:]); err != nil {
		return fmt.Errorf("%w: reading its challenge: %w", ErrAuth, challengeErr(ctx, err))
	}
	c, err := framer.ParseAuthChallenge(buf[2:])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	if !c.Required {
		return nil // a viewer without a token
	}
	answer, _ := framer.AppendFramed(nil, framer.MarshalAuthAnswer(0, framer.NewAuthProof(token, framer.TCPAuthBinding(c.Nonce))))
	if _, err := nc.Write(answer); err != nil {
		return fmt.Errorf("%w: sending the answer: %w", ErrAuth, err)
	}
	return nil
}

// challengeErr says why no challenge came.
func challengeErr(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("none came in time (a viewer without media authentication?): %w", err)
	}
	return err
}
