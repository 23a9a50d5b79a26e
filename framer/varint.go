package framer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxVarint is the largest value a QUIC variable-length integer can hold.
const MaxVarint = 1<<62 - 1

// Errors of the QUIC variable-length integer codec. ErrVarintTruncated
// wraps io.ErrUnexpectedEOF.
var (
	ErrVarintRange     = errors.New("framer: value larger than 2^62-1 for a variable-length integer")
	ErrVarintTruncated = fmt.Errorf("framer: truncated variable-length integer: %w", io.ErrUnexpectedEOF)
)

// VarintLen returns the number of bytes AppendVarint uses for v: 1, 2, 4
// or 8, or 0 if v is larger than MaxVarint.
func VarintLen(v uint64) int {
	switch {
	case v <= 1<<6-1:
		return 1
	case v <= 1<<14-1:
		return 2
	case v <= 1<<30-1:
		return 4
	case v <= MaxVarint:
		return 8
	}
	return 0
}

// AppendVarint appends v to dst as a QUIC variable-length integer (RFC 9000
// section 16) in the fewest bytes that hold it: the top two bits of the
// first byte give the length (1, 2, 4 or 8 bytes), the rest is v in network
// byte order. A v larger than MaxVarint gives ErrVarintRange and dst
// unchanged.
func AppendVarint(dst []byte, v uint64) ([]byte, error) {
	switch VarintLen(v) {
	case 1:
		return append(dst, byte(v)), nil
	case 2:
		return binary.BigEndian.AppendUint16(dst, uint16(v)|0x4000), nil
	case 4:
		return binary.BigEndian.AppendUint32(dst, uint32(v)|0x8000_0000), nil
	case 8:
		return binary.BigEndian.AppendUint64(dst, v|0xC000_0000_0000_0000), nil
	}
	return dst, ErrVarintRange
}

// ParseVarint decodes the QUIC variable-length integer at the start of b and
// returns it with the number of bytes it took. As RFC 9000 allows, an
// encoding longer than it needs to be is accepted. A b shorter than the
// length its first byte announces gives ErrVarintTruncated, the only error:
// every encoding in range holds a value no larger than MaxVarint.
func ParseVarint(b []byte) (v uint64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, ErrVarintTruncated
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, ErrVarintTruncated
	}
	v = uint64(b[0] & 0x3F)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, nil
}
