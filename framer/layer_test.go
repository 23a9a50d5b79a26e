package framer

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/pion/rtp"
)

// TestLayerDescriptor checks the payload descriptor's bytes against RFC
// 7741's layout, written out by hand.
func TestLayerDescriptor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		picID uint16
		layer Layer
		want  []byte // descriptor of the first packet
	}{
		{"no layer", 0x1234, Layer{}, []byte{0x90, 0x80, 0x92, 0x34}},
		{"TL0", 0x0001, Layer{Present: true, TL0PicIdx: 0xAB}, []byte{0x90, 0xE0, 0x80, 0x01, 0xAB, 0x00}},
		{"TL2 sync", 0x7FFF, Layer{Present: true, TID: 2, Sync: true, TL0PicIdx: 0xFF}, []byte{0x90, 0xE0, 0xFF, 0xFF, 0xFF, 0xA0}},
		{"TL1", 0x0080, Layer{Present: true, TID: 1, TL0PicIdx: 0}, []byte{0x90, 0xE0, 0x80, 0x80, 0x00, 0x40}},
		{"TL3 sync", 0, Layer{Present: true, TID: 3, Sync: true, TL0PicIdx: 7}, []byte{0x90, 0xE0, 0x80, 0x00, 0x07, 0xE0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacketizer(PacketizerConfig{MaxPacketSize: 60})
			p.pictureID = tc.picID
			pkts, _, err := p.PacketizeLayer(vp8Frame(false, 0, 0, 100, 1), testEpoch, tc.layer)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range pkts {
				var h rtp.Header
				n, err := h.Unmarshal(b)
				if err != nil {
					t.Fatal(err)
				}
				want := bytes.Clone(tc.want)
				if i > 0 {
					want[0] = 0x80 // S only on the first packet
				}
				if got := b[n : n+len(want)]; !bytes.Equal(got, want) {
					t.Fatalf("packet %d: descriptor % x, want % x", i, got, want)
				}
			}
		})
	}
}

// TestLayerRoundTrip sends frames with and without layers through the
// Packetizer and the Assembler, across the PictureID wrap (15 bits) and
// the TL0PICIDX wrap (8 bits), in one packet and in several, and requires
// each frame's layer back as sent, and pion's parser to read the same
// descriptor fields from every packet.
func TestLayerRoundTrip(t *testing.T) {
	layers := []Layer{
		{},
		{Present: true, TID: 0, TL0PicIdx: 254},
		{Present: true, TID: 2, Sync: true, TL0PicIdx: 254},
		{Present: true, TID: 1, Sync: true, TL0PicIdx: 254},
		{Present: true, TID: 2, TL0PicIdx: 254},
		{Present: true, TID: 0, TL0PicIdx: 255},
		{Present: true, TID: 3, Sync: true, TL0PicIdx: 255},
		{Present: true, TID: 0, TL0PicIdx: 0},
		{Present: true, TID: 1, TL0PicIdx: 0},
		{},
		{Present: true, TID: 0, TL0PicIdx: 1},
	}
	for _, start := range []uint16{0, 0x7F, 0x7FFA, 0x7FFF} {
		for _, size := range []int{20, 700} {
			t.Run(fmt.Sprintf("PictureID %d/%d bytes", start, size), func(t *testing.T) {
				p := NewPacketizer(PacketizerConfig{SSRC: 9, MaxPacketSize: 200})
				p.pictureID = start
				a := NewAssembler(0)
				for n, l := range layers {
					frame := vp8Frame(n == 0, 16, 16, size, byte(n))
					pkts, _, err := p.PacketizeLayer(frame, testEpoch, l)
					if err != nil {
						t.Fatal(err)
					}
					wantID := (start + uint16(n)) & 0x7FFF
					for i, q := range parsePackets(t, pkts) {
						d := q.desc
						got := Layer{Present: d.T == 1 && d.L == 1, TID: d.TID, Sync: d.Y == 1, TL0PicIdx: d.TL0PICIDX}
						if got != l || d.T != d.L || d.I != 1 || d.PictureID != wantID || d.K != 0 || d.N != 0 {
							t.Fatalf("frame %d packet %d: descriptor %+v, want layer %+v, PictureID %d", n, i, d, l, wantID)
						}
					}
					var fr *Frame
					for _, b := range pkts {
						if fr, err = a.Push(b); err != nil {
							t.Fatal(err)
						}
					}
					if fr == nil || fr.Layer != l || !bytes.Equal(fr.Data, frame) {
						t.Fatalf("frame %d: got %+v, want layer %+v", n, fr, l)
					}
				}
			})
		}
	}
}

// TestLayerDescriptorsFromElsewhere feeds the Assembler descriptors this
// Packetizer never writes: a 7-bit PictureID, no PictureID, KEYIDX, and
// TID without TL0PICIDX or the reverse, which give no layer.
func TestLayerDescriptorsFromElsewhere(t *testing.T) {
	body := vp8Frame(false, 0, 0, 40, 3)
	for _, tc := range []struct {
		name string
		desc []byte
		want Layer
	}{
		{"7-bit PictureID, L, T", []byte{0x90, 0xE0, 0x05, 0x10, 0x60}, Layer{Present: true, TID: 1, Sync: true, TL0PicIdx: 0x10}},
		{"no PictureID, L, T", []byte{0x90, 0x60, 0x22, 0x80}, Layer{Present: true, TID: 2, TL0PicIdx: 0x22}},
		{"L, T and K", []byte{0x90, 0x70, 0x09, 0xDF}, Layer{Present: true, TID: 3, TL0PicIdx: 9}},
		{"T without L", []byte{0x90, 0x20, 0x80}, Layer{}},
		{"L without T", []byte{0x90, 0x40, 0x09}, Layer{}},
		{"K only", []byte{0x90, 0x10, 0x1F}, Layer{}},
		{"no extension", []byte{0x10}, Layer{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: 1, Timestamp: 3, SSRC: 4, Marker: true}
			pkt, err := (&rtp.Packet{Header: h, Payload: append(bytes.Clone(tc.desc), body...)}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			fr, err := NewAssembler(0).Push(pkt)
			if err != nil || fr == nil {
				t.Fatalf("Push = %v, %v", fr, err)
			}
			if fr.Layer != tc.want || !bytes.Equal(fr.Data, body) {
				t.Fatalf("layer %+v, want %+v; data equal %v", fr.Layer, tc.want, bytes.Equal(fr.Data, body))
			}
		})
	}
}

func TestLayerErrors(t *testing.T) {
	frame := vp8Frame(false, 0, 0, 50, 0)
	for _, tc := range []struct {
		name  string
		size  int
		layer Layer
		want  error
	}{
		{"TID 4", 0, Layer{Present: true, TID: 4}, ErrBadLayer},
		{"TID without Present", 0, Layer{TID: 1}, ErrBadLayer},
		{"Sync without Present", 0, Layer{Sync: true}, ErrBadLayer},
		{"TL0PicIdx without Present", 0, Layer{TL0PicIdx: 1}, ErrBadLayer},
		// 28 bytes of RTP header, 6 of descriptor and one of frame.
		{"packet too small for the layer", 34, Layer{Present: true}, ErrBadPacketSize},
		{"smallest packet with a layer", 35, Layer{Present: true}, nil},
		{"smallest packet without", 33, Layer{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacketizer(PacketizerConfig{MaxPacketSize: tc.size})
			seq := p.seq
			pkts, _, err := p.PacketizeLayer(frame, testEpoch, tc.layer)
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && (p.seq != seq || p.started || p.pictureID != 0) {
				t.Errorf("failed PacketizeLayer changed state")
			}
			for _, b := range pkts {
				if tc.size > 0 && len(b) > tc.size {
					t.Errorf("packet of %d bytes, limit %d", len(b), tc.size)
				}
			}
		})
	}
}
