package framer

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFramedRoundTrip(t *testing.T) {
	pkts := [][]byte{{1}, bytes.Repeat([]byte{2}, 1200), bytes.Repeat([]byte{3}, MaxPacketSize)}
	var stream []byte
	for _, p := range pkts {
		var err error
		if stream, err = AppendFramed(stream, p); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(bytes.NewReader(stream))
	for i, want := range pkts {
		got, err := r.ReadPacket()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("packet %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := r.ReadPacket(); err != io.EOF {
		t.Fatalf("at end: err = %v, want io.EOF", err)
	}
}

func TestFramedErrors(t *testing.T) {
	if _, err := AppendFramed(nil, nil); !errors.Is(err, ErrEmptyPacket) {
		t.Errorf("empty packet: err = %v", err)
	}
	if _, err := AppendFramed(nil, make([]byte, MaxPacketSize+1)); !errors.Is(err, ErrPacketTooLarge) {
		t.Errorf("oversized packet: err = %v", err)
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		want   error
	}{
		{"zero length", []byte{0, 0, 1}, ErrEmptyPacket},
		{"truncated body", []byte{0, 5, 1, 2}, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.stream)).ReadPacket()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 1, 0x80})
	f.Add([]byte{0, 0})
	f.Add([]byte{0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for {
			p, err := r.ReadPacket()
			if err != nil {
				return
			}
			if len(p) == 0 || len(p) > MaxPacketSize {
				t.Fatalf("packet of %d bytes", len(p))
			}
		}
	})
}
