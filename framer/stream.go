// Package framer turns encoded video into packets and back: RTP with VP8
// payload (RFC 7741, with the temporal layer of each frame: Layer) and the
// abs-capture-time header extension, RTCP
// feedback and sender reports, and the framing every transport uses: RFC
// 4571 over TCP (AppendFramed; Reader, or Deframer for non-blocking reads)
// and RoQ over QUIC, RTP over QUIC streams and datagrams
// (draft-ietf-avtcore-rtp-over-quic: AppendRoQStreamHeader,
// AppendRoQPacket, RoQReader or RoQDeframer; AppendRoQDatagram,
// ParseRoQDatagram), with QUIC variable-length integers (AppendVarint,
// ParseVarint).
//
// Every parser in this package returns an error on malformed or oversized
// input; none panics, and none allocates more than its documented cap. The
// stream readers allocate for bytes as they arrive, never for a length a
// peer announces.
package framer

import (
	"encoding/binary"
	"errors"
	"io"
)

// MaxPacketSize is the largest packet RFC 4571 framing can carry: its length
// field is 16 bits. The RoQ framing here caps packets at the same size.
const MaxPacketSize = 0xFFFF

// Errors of the framing writers and readers.
var (
	ErrPacketTooLarge = errors.New("framer: packet larger than 65535 bytes")
	ErrEmptyPacket    = errors.New("framer: zero-length packet")
)

// AppendFramed appends pkt to dst preceded by its 16-bit big-endian length,
// as RFC 4571 frames RTP and RTCP over connection-oriented transports. It
// returns ErrEmptyPacket or ErrPacketTooLarge for a packet it cannot frame.
func AppendFramed(dst, pkt []byte) ([]byte, error) {
	if err := checkPacket(pkt); err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(pkt)))
	return append(dst, pkt...), nil
}

// checkPacket returns the error for a packet no framing here carries.
func checkPacket(pkt []byte) error {
	switch {
	case len(pkt) == 0:
		return ErrEmptyPacket
	case len(pkt) > MaxPacketSize:
		return ErrPacketTooLarge
	}
	return nil
}

// Reader reads RFC 4571 framed packets from a byte stream: a Deframer fed
// by blocking reads. It reads ahead, up to 16 KiB at a time, so nothing
// else may read from the same stream; it holds at most one partial packet
// besides one read's bytes. A Reader is not safe for concurrent use.
type Reader struct {
	src puller
	d   Deframer
}

// NewReader returns a Reader that reads framed packets from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: puller{r: r}}
}

// ReadPacket blocks until it has one whole packet and returns it. The
// returned slice is valid until the next call. At a clean end of stream it
// returns io.EOF; a stream that ends inside a packet gives an error
// wrapping io.ErrUnexpectedEOF, and a zero length gives ErrEmptyPacket
// (the stream may be read on). Any other error of the underlying reader is
// returned as is, once the packets before it have been read; a later call
// reads again, so a transient error such as a deadline loses nothing.
func (r *Reader) ReadPacket() ([]byte, error) {
	return r.src.next(&r.d)
}
