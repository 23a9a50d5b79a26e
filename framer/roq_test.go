package framer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

var flowCases = []struct {
	name string
	flow uint64
	len  int
}{
	{"flow 0", 0, 1},
	{"flow 63", 63, 1},
	{"flow 64", 64, 2},
	{"flow 16383", 16383, 2},
	{"flow 16384", 16384, 4},
	{"flow MaxVarint", MaxVarint, 8},
}

func TestRoQStreamHeader(t *testing.T) {
	for _, tc := range flowCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := AppendRoQStreamHeader(nil, tc.flow)
			if err != nil || len(s) != tc.len {
				t.Fatalf("header %x, %v; want %d bytes", s, err, tc.len)
			}
			s, _ = AppendRoQPacket(s, []byte{0x80, 0x60})
			r := NewRoQReader(iotest.OneByteReader(bytes.NewReader(s)))
			if id, err := r.FlowID(); err != nil || id != tc.flow {
				t.Fatalf("FlowID = %d, %v", id, err)
			}
			if id, err := r.FlowID(); err != nil || id != tc.flow {
				t.Fatalf("FlowID again = %d, %v", id, err)
			}
			if p, err := r.ReadPacket(); err != nil || !bytes.Equal(p, []byte{0x80, 0x60}) {
				t.Fatalf("ReadPacket = %x, %v", p, err)
			}
			var d RoQDeframer
			for i := range s {
				if _, ok := d.Flow(); ok != (i >= tc.len) {
					t.Fatalf("after %d bytes Flow ok = %v", i, ok)
				}
				d.Feed(s[i : i+1])
			}
			if id, ok := d.Flow(); !ok || id != tc.flow {
				t.Fatalf("Flow = %d, %v", id, ok)
			}
		})
	}
	if _, err := AppendRoQStreamHeader(nil, MaxVarint+1); !errors.Is(err, ErrVarintRange) {
		t.Errorf("flow MaxVarint+1: err = %v", err)
	}
}

func TestAppendRoQPacket(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		hdrLen int
		err    error
	}{
		{"empty", 0, 0, ErrEmptyPacket},
		{"1 byte", 1, 1, nil},
		{"63 bytes", 63, 1, nil},
		{"64 bytes", 64, 2, nil},
		{"16383 bytes", 16383, 2, nil},
		{"16384 bytes", 16384, 4, nil},
		{"MaxPacketSize", MaxPacketSize, 4, nil},
		{"MaxPacketSize+1", MaxPacketSize + 1, 0, ErrPacketTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := pattern(tc.size, 3)
			got, err := AppendRoQPacket([]byte{7}, pkt)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !bytes.Equal(got, []byte{7}) {
					t.Fatalf("got %d bytes, %v; want %v", len(got), err, tc.err)
				}
				return
			}
			if err != nil || len(got) != 1+tc.hdrLen+tc.size || !bytes.Equal(got[1+tc.hdrLen:], pkt) {
				t.Fatalf("got %d bytes, %v; want %d", len(got), err, 1+tc.hdrLen+tc.size)
			}
			if v, n, err := ParseVarint(got[1:]); err != nil || v != uint64(tc.size) || n != tc.hdrLen {
				t.Fatalf("length %d in %d bytes, %v", v, n, err)
			}
		})
	}
}

// TestRoQStreamTooLarge checks that a length over MaxPacketSize is refused
// as soon as it arrives, before any of its bytes, and without a buffer of
// that size.
func TestRoQStreamTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length string // hex varint
	}{
		{"MaxPacketSize+1", "80010000"},
		{"2^30", "c000000040000000"},
		{"MaxVarint", "ffffffffffffffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr, _ := hex.DecodeString("00" + tc.length)
			stream := append(hdr, 0x80, 0x60, 0, 1)
			var d RoQDeframer
			d.Feed(stream[:len(hdr)])
			_, err := d.Next()
			if !errors.Is(err, ErrPacketTooLarge) {
				t.Fatalf("Next = %v, want ErrPacketTooLarge", err)
			}
			d.Feed(stream[len(hdr):])
			if _, err2 := d.Next(); err2 != err {
				t.Errorf("Next again = %v, want %v", err2, err)
			}
			if end := d.End(); end != err {
				t.Errorf("End = %v, want %v", end, err)
			}
			if c := cap(d.in.b); c > 64 {
				t.Errorf("buffer of %d bytes for %d bytes fed", c, len(stream))
			}
			r := NewRoQReader(bytes.NewReader(stream))
			if _, err := r.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
				t.Errorf("ReadPacket = %v, want ErrPacketTooLarge", err)
			}
			if c := cap(r.d.in.b); c > 2*readSize {
				t.Errorf("reader buffer of %d bytes", c)
			}
		})
	}
}

func TestRoQStreamEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stream  string // hex
		flowErr error
		pktErr  error
	}{
		{"no bytes", "", io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
		{"half a flow identifier", "40", io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
		{"flow identifier only", "4040", nil, io.EOF},
		{"half a length", "0040", nil, io.ErrUnexpectedEOF},
		{"length only", "0003", nil, io.ErrUnexpectedEOF},
		{"zero length", "0000", nil, ErrEmptyPacket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.stream)
			if _, err := NewRoQReader(bytes.NewReader(b)).FlowID(); !errors.Is(err, tc.flowErr) && err != tc.flowErr {
				t.Errorf("FlowID: err = %v, want %v", err, tc.flowErr)
			}
			if _, err := NewRoQReader(bytes.NewReader(b)).ReadPacket(); !errors.Is(err, tc.pktErr) {
				t.Errorf("ReadPacket: err = %v, want %v", err, tc.pktErr)
			}
		})
	}
}

func TestRoQDeframerReset(t *testing.T) {
	var d RoQDeframer
	d.Feed([]byte{0x05, 0xC0}) // flow 5, then the start of a long length
	d.Reset()
	d.Feed([]byte{0x07, 0x01, 0xAB})
	pkt, err := d.Next()
	if id, ok := d.Flow(); err != nil || !bytes.Equal(pkt, []byte{0xAB}) || id != 7 || !ok || d.End() != nil {
		t.Fatalf("after Reset: %x, %v, flow %d %v, End %v", pkt, err, id, ok, d.End())
	}
}

func TestRoQDatagram(t *testing.T) {
	for _, fc := range flowCases {
		for _, size := range []int{1, 63, 64, 1200, MaxPacketSize} {
			pkt := pattern(size, byte(fc.len))
			dg, err := AppendRoQDatagram([]byte{9}, fc.flow, pkt)
			if err != nil || len(dg) != 1+fc.len+size {
				t.Fatalf("%s, %d bytes: %d bytes, %v", fc.name, size, len(dg), err)
			}
			flow, got, err := ParseRoQDatagram(dg[1:])
			if err != nil || flow != fc.flow || !bytes.Equal(got, pkt) {
				t.Fatalf("%s, %d bytes: parsed flow %d, %d bytes, %v", fc.name, size, flow, len(got), err)
			}
		}
	}
}

func TestRoQDatagramErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		flow uint64
		pkt  []byte
		err  error
	}{
		{"empty packet", 1, nil, ErrEmptyPacket},
		{"packet too large", 1, make([]byte, MaxPacketSize+1), ErrPacketTooLarge},
		{"flow too large", MaxVarint + 1, []byte{1}, ErrVarintRange},
	} {
		t.Run("append "+tc.name, func(t *testing.T) {
			if got, err := AppendRoQDatagram([]byte{9}, tc.flow, tc.pkt); !errors.Is(err, tc.err) || !bytes.Equal(got, []byte{9}) {
				t.Fatalf("%x, %v; want 09, %v", got, err, tc.err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		dg   []byte
		err  error
	}{
		{"no bytes", nil, ErrVarintTruncated},
		{"half a flow identifier", []byte{0x80, 0, 1}, ErrVarintTruncated},
		{"no packet", []byte{0x40, 0x01}, ErrEmptyPacket},
		{"packet too large", make([]byte, 1+MaxPacketSize+1), ErrPacketTooLarge},
	} {
		t.Run("parse "+tc.name, func(t *testing.T) {
			if flow, pkt, err := ParseRoQDatagram(tc.dg); !errors.Is(err, tc.err) || flow != 0 || pkt != nil {
				t.Fatalf("%d, %x, %v; want %v", flow, pkt, err, tc.err)
			}
		})
	}
}

func TestRoQErrorCodeString(t *testing.T) {
	for c, want := range map[RoQErrorCode]string{
		RoQNoError:          "ROQ_NO_ERROR",
		RoQPacketError:      "ROQ_PACKET_ERROR",
		RoQExpectationUnmet: "ROQ_EXPECTATION_UNMET",
		0x42:                "ROQ_ERROR(0x42)",
	} {
		if got := c.String(); got != want {
			t.Errorf("%d: %q, want %q", uint64(c), got, want)
		}
	}
}
