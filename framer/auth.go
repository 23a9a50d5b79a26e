package framer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Media authentication: before the viewer accepts a stream from a
// connection, the sender proves that it knows the viewer's token, without
// sending the token and without a proof that could be replayed on another
// connection. The proof is
//
//	HMAC-SHA256(key: the token, message: AuthContext || binding)
//
// where the binding is unique to the connection:
//
//   - over TCP, "tcp" and a 32-byte random nonce the viewer sends first, in
//     a challenge;
//   - over QUIC, "quic" and 32 bytes of keying material exported from the
//     connection's TLS session (RFC 8446 section 7.5, label
//     AuthExporterLabel, no context), which both ends know and no one else
//     does; no challenge is needed.
//
// Both travel as RTCP APP packets (RFC 3550 section 6.7) named "RPLA", 48
// bytes each, all fields big-endian:
//
//	challenge (subtype 0, viewer to sender, TCP only, the viewer's first packet):
//	  RTCP header (V=2, P=0, subtype 0, PT 204, length 11), viewer's SSRC, "RPLA",
//	  u8 version (1), u8 flags (bit 0: a token is required), u16 reserved (0),
//	  32-byte nonce
//	answer (subtype 1, sender to viewer, the sender's first packet):
//	  RTCP header (V=2, P=0, subtype 1, PT 204, length 11), the sender's SSRC
//	  (0 where the transport does not know it; the viewer ignores it), "RPLA",
//	  u8 version (1), 3 bytes reserved (0), 32-byte proof
//
// A viewer without a token still sends the challenge (without the flag),
// so that a sender configured with a token never waits for one in vain,
// and ignores answers. The proof carries no secret: an eavesdropper learns
// only that the sender knew the token, though a short token can be
// guessed offline from a recorded exchange (use a long random one).
const (
	// AuthName is the APP packet name of the challenge and the answer.
	AuthName = "RPLA"
	// AuthVersion is the layout this package writes and reads.
	AuthVersion = 1
	// AuthNonceSize is the size of the TCP challenge's nonce, in bytes.
	AuthNonceSize = 32
	// AuthPacketSize is the size of a challenge and of an answer.
	AuthPacketSize = 48
	// AuthExporterLabel is the TLS exporter label of the QUIC binding.
	AuthExporterLabel = "EXPORTER-replenish-media-auth"
	// AuthExporterSize is the length of the exported keying material.
	AuthExporterSize = 32
	// AuthContext opens the message every proof is computed over.
	AuthContext = "replenish media auth 1\x00"

	authSubtypeChallenge = 0
	authSubtypeAnswer    = 1
	authFlagRequired     = 1
	rtcpTypeAPP          = 204
)

// Errors of the media authentication packets.
var (
	// ErrNotAuth is returned by the parsers for a packet that is not an
	// RPLA packet of the kind asked for.
	ErrNotAuth = errors.New("framer: not an authentication packet")
	// ErrBadAuth wraps the reasons an RPLA packet is malformed.
	ErrBadAuth = errors.New("framer: malformed authentication packet")
)

// AuthProof is a sender's proof that it knows the token.
type AuthProof [sha256.Size]byte

// AuthChallenge is the viewer's opening packet on a TCP connection.
type AuthChallenge struct {
	// Required reports that the viewer has a token and accepts no stream
	// without a proof of it.
	Required bool
	Nonce    [AuthNonceSize]byte
}

// TCPAuthBinding returns the binding of a TCP connection's proof: "tcp"
// and the viewer's nonce.
func TCPAuthBinding(nonce [AuthNonceSize]byte) []byte {
	return append([]byte("tcp"), nonce[:]...)
}

// QUICAuthBinding returns the binding of a QUIC connection's proof: "quic"
// and the keying material exported from its TLS session with
// AuthExporterLabel and no context (AuthExporterSize bytes).
func QUICAuthBinding(exported []byte) []byte {
	return append([]byte("quic"), exported...)
}

// NewAuthProof returns the proof of token for a connection with binding.
func NewAuthProof(token string, binding []byte) AuthProof {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(AuthContext))
	m.Write(binding)
	var p AuthProof
	m.Sum(p[:0])
	return p
}

// VerifyAuthProof reports whether p proves token for binding. It takes the
// same time whatever p holds.
func VerifyAuthProof(p AuthProof, token string, binding []byte) bool {
	want := NewAuthProof(token, binding)
	return hmac.Equal(p[:], want[:])
}

// MarshalAuthChallenge returns the challenge c from the viewer's ssrc.
func MarshalAuthChallenge(ssrc uint32, c AuthChallenge) []byte {
	var flags byte
	if c.Required {
		flags |= authFlagRequired
	}
	b := authHeader(authSubtypeChallenge, ssrc)
	b = append(b, AuthVersion, flags, 0, 0)
	return append(b, c.Nonce[:]...)
}

// MarshalAuthAnswer returns the answer carrying proof from the sender's
// ssrc.
func MarshalAuthAnswer(ssrc uint32, proof AuthProof) []byte {
	b := authHeader(authSubtypeAnswer, ssrc)
	b = append(b, AuthVersion, 0, 0, 0)
	return append(b, proof[:]...)
}

func authHeader(subtype byte, ssrc uint32) []byte {
	b := make([]byte, 0, AuthPacketSize)
	b = append(b, 0x80|subtype, rtcpTypeAPP)
	b = binary.BigEndian.AppendUint16(b, AuthPacketSize/4-1)
	b = binary.BigEndian.AppendUint32(b, ssrc)
	return append(b, AuthName...)
}

// ParseAuthChallenge reads a challenge. It returns ErrNotAuth for a packet
// that is not an RPLA challenge (another RTCP packet, an answer), and an
// error wrapping ErrBadAuth for a wrong length, version or padding bit.
// Reserved bits and fields are ignored.
func ParseAuthChallenge(pkt []byte) (AuthChallenge, error) {
	body, err := authBody(pkt, authSubtypeChallenge)
	if err != nil {
		return AuthChallenge{}, err
	}
	c := AuthChallenge{Required: body[1]&authFlagRequired != 0}
	copy(c.Nonce[:], body[4:])
	return c, nil
}

// ParseAuthAnswer reads an answer and returns its sender's SSRC and proof.
// It returns ErrNotAuth for a packet that is not an RPLA answer, and an
// error wrapping ErrBadAuth for a wrong length, version or padding bit.
// Reserved fields are ignored.
func ParseAuthAnswer(pkt []byte) (ssrc uint32, p AuthProof, err error) {
	body, err := authBody(pkt, authSubtypeAnswer)
	if err != nil {
		return 0, AuthProof{}, err
	}
	copy(p[:], body[4:])
	return binary.BigEndian.Uint32(pkt[4:]), p, nil
}

// authBody checks pkt's RTCP header, name and version and returns the 36
// bytes after the name.
func authBody(pkt []byte, subtype byte) ([]byte, error) {
	if len(pkt) < 12 || pkt[0]>>6 != 2 || pkt[1] != rtcpTypeAPP || pkt[0]&0x1f != subtype || string(pkt[8:12]) != AuthName {
		return nil, ErrNotAuth
	}
	switch {
	case len(pkt) != AuthPacketSize:
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrBadAuth, len(pkt), AuthPacketSize)
	case binary.BigEndian.Uint16(pkt[2:]) != AuthPacketSize/4-1:
		return nil, fmt.Errorf("%w: length field %d, want %d", ErrBadAuth, binary.BigEndian.Uint16(pkt[2:]), AuthPacketSize/4-1)
	case pkt[0]&0x20 != 0:
		return nil, fmt.Errorf("%w: padding bit set", ErrBadAuth)
	case pkt[12] != AuthVersion:
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadAuth, pkt[12])
	}
	return pkt[12:], nil
}
