package tcp

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"replenish/framer"
)

// viewerSide plays the viewer's part on a pipe: it sends first, then
// returns what the sender wrote within a short wait.
func viewerSide(t *testing.T, first []byte) (sender net.Conn, answer <-chan []byte) {
	t.Helper()
	v, s := net.Pipe()
	t.Cleanup(func() { v.Close(); s.Close() })
	out := make(chan []byte, 1)
	go func() {
		v.SetDeadline(time.Now().Add(200 * time.Millisecond))
		if first != nil {
			v.Write(first)
		}
		r := framer.NewReader(v)
		pkt, err := r.ReadPacket()
		if err != nil {
			out <- nil
			return
		}
		out <- append([]byte(nil), pkt...)
	}()
	return s, out
}

func TestProveToken(t *testing.T) {
	nonce := [framer.AuthNonceSize]byte{1, 2, 3}
	framed := func(pkt []byte) []byte { b, _ := framer.AppendFramed(nil, pkt); return b }
	challenge := framed(framer.MarshalAuthChallenge(5, framer.AuthChallenge{Required: true, Nonce: nonce}))
	for _, tc := range []struct {
		name       string
		first      []byte
		wantErr    error
		wantAnswer bool
	}{
		{"required", challenge, nil, true},
		{"not required", framed(framer.MarshalAuthChallenge(5, framer.AuthChallenge{Nonce: nonce})), nil, false},
		{"no challenge", nil, ErrAuth, false},
		{"another packet first", framed(framer.MarshalPLI(1, 2)), ErrAuth, false},
		{"a challenge of the right size but wrong", framed(append([]byte{0x80, 96}, make([]byte, framer.AuthPacketSize-2)...)), ErrAuth, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, answer := viewerSide(t, tc.first)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := proveToken(ctx, conn, "secret")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("proveToken: %v, want %v", err, tc.wantErr)
			}
			got := <-answer
			if !tc.wantAnswer {
				if got != nil {
					t.Fatalf("sent % x, want nothing", got)
				}
				return
			}
			_, proof, err := framer.ParseAuthAnswer(got)
			if err != nil {
				t.Fatalf("the answer: %v", err)
			}
			if !framer.VerifyAuthProof(proof, "secret", framer.TCPAuthBinding(nonce)) {
				t.Fatal("the answer does not prove the token for the challenge's nonce")
			}
		})
	}
}

// proveToken reads exactly the challenge: what the viewer sends after it
// is left for the Conn.
func TestProveTokenReadsOnlyTheChallenge(t *testing.T) {
	v, s := net.Pipe()
	defer v.Close()
	defer s.Close()
	c, _ := framer.AppendFramed(nil, framer.MarshalAuthChallenge(5, framer.AuthChallenge{}))
	pli, _ := framer.AppendFramed(nil, framer.MarshalPLI(1, 2))
	go v.Write(append(c, pli...))
	if err := proveToken(context.Background(), s, "secret"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(pli))
	if _, err := io.ReadFull(s, got); err != nil || string(got) != string(pli) {
		t.Fatalf("after the challenge: % x, %v; want the PLI", got, err)
	}
}
