package framer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"testing"
)

func TestVarint(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    uint64
		enc  string // hex
	}{
		// RFC 9000 appendix A.1 gives the first four.
		{"RFC 9000 eight bytes", 151288809941952652, "c2197c5eff14e88c"},
		{"RFC 9000 four bytes", 494878333, "9d7f3e7d"},
		{"RFC 9000 two bytes", 15293, "7bbd"},
		{"RFC 9000 one byte", 37, "25"},
		{"zero", 0, "00"},
		{"largest of one byte", 63, "3f"},
		{"smallest of two bytes", 64, "4040"},
		{"largest of two bytes", 16383, "7fff"},
		{"smallest of four bytes", 16384, "80004000"},
		{"largest of four bytes", 1<<30 - 1, "bfffffff"},
		{"smallest of eight bytes", 1 << 30, "c000000040000000"},
		{"MaxVarint", MaxVarint, "ffffffffffffffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := hex.DecodeString(tc.enc)
			got, err := AppendVarint([]byte{0xAA}, tc.v)
			if err != nil || !bytes.Equal(got[1:], want) || got[0] != 0xAA {
				t.Fatalf("AppendVarint(%d) = %x, %v; want aa%s", tc.v, got, err, tc.enc)
			}
			if n := VarintLen(tc.v); n != len(want) {
				t.Errorf("VarintLen = %d, want %d", n, len(want))
			}
			v, n, err := ParseVarint(append(want, 0x55))
			if err != nil || v != tc.v || n != len(want) {
				t.Fatalf("ParseVarint = %d, %d, %v; want %d, %d", v, n, err, tc.v, len(want))
			}
		})
	}
}

func TestVarintNotMinimal(t *testing.T) {
	// RFC 9000 section 16: any length may encode a small value.
	for _, enc := range []string{"4025", "80000025", "c000000000000025"} {
		b, _ := hex.DecodeString(enc)
		if v, n, err := ParseVarint(b); err != nil || v != 37 || n != len(b) {
			t.Errorf("ParseVarint(%s) = %d, %d, %v; want 37, %d", enc, v, n, err, len(b))
		}
	}
}

func TestVarintErrors(t *testing.T) {
	for _, v := range []uint64{MaxVarint + 1, 1 << 63, math.MaxUint64} {
		if got, err := AppendVarint([]byte{1}, v); !errors.Is(err, ErrVarintRange) || !bytes.Equal(got, []byte{1}) {
			t.Errorf("AppendVarint(%#x) = %x, %v; want 01, ErrVarintRange", v, got, err)
		}
		if n := VarintLen(v); n != 0 {
			t.Errorf("VarintLen(%#x) = %d, want 0", v, n)
		}
	}
	full, _ := hex.DecodeString("c2197c5eff14e88c")
	for _, enc := range [][]byte{full, full[:0:0], {0x7b, 0xbd}, {0x9d, 0x7f, 0x3e, 0x7d}} {
		for k := range len(enc) {
			v, n, err := ParseVarint(enc[:k])
			if !errors.Is(err, ErrVarintTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) || v != 0 || n != 0 {
				t.Errorf("ParseVarint(%x) = %d, %d, %v; want ErrVarintTruncated", enc[:k], v, n, err)
			}
		}
	}
}
