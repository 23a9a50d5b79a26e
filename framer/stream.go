// Package framer turns encoded video into packets and back: RTP with VP8
// payload (RFC 7741) and the abs-capture-time header extension, RTCP
// feedback and sender reports, and RFC 4571 framing for stream transports.
//
// Every parser in this package returns an error on malformed or oversized
// input; none panics, and none allocates more than its documented cap.
package framer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxPacketSize is the largest packet RFC 4571 framing can carry: its length
// field is 16 bits.
const MaxPacketSize = 0xFFFF

// Errors returned by the RFC 4571 reader and writer.
var (
	ErrPacketTooLarge = errors.New("framer: packet larger than 65535 bytes")
	ErrEmptyPacket    = errors.New("framer: zero-length packet")
)

// AppendFramed appends pkt to dst preceded by its 16-bit big-endian length,
// as RFC 4571 frames RTP and RTCP over connection-oriented transports. It
// returns ErrEmptyPacket or ErrPacketTooLarge for a packet it cannot frame.
func AppendFramed(dst, pkt []byte) ([]byte, error) {
	switch {
	case len(pkt) == 0:
		return dst, ErrEmptyPacket
	case len(pkt) > MaxPacketSize:
		return dst, ErrPacketTooLarge
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(pkt)))
	return append(dst, pkt...), nil
}

// Reader reads RFC 4571 framed packets from a byte stream. It never holds
// more than one packet: its buffer is MaxPacketSize bytes at most. A Reader
// is not safe for concurrent use.
type Reader struct {
	r   io.Reader
	hdr [2]byte
	buf []byte
}

// NewReader returns a Reader that reads framed packets from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r}
}

// ReadPacket blocks until it has read one whole packet and returns it. The
// returned slice is valid until the next call. At a clean end of stream it
// returns io.EOF; a stream that ends inside a packet gives
// io.ErrUnexpectedEOF, and a zero length gives ErrEmptyPacket.
func (r *Reader) ReadPacket() ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(r.hdr[:]))
	if n == 0 {
		return nil, ErrEmptyPacket
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n, max(n, 2048))
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("framer: reading %d-byte packet: %w", n, err)
	}
	return r.buf, nil
}
