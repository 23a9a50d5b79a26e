package framer

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// parsed is one packet as pion's own parsers see it, independent of the
// Assembler.
type parsed struct {
	hdr     rtp.Header
	desc    codecs.VP8Packet
	payload []byte
	capture time.Time
	size    int
}

func parsePackets(t *testing.T, pkts [][]byte) []parsed {
	t.Helper()
	out := make([]parsed, len(pkts))
	for i, b := range pkts {
		var p rtp.Packet
		if err := p.Unmarshal(b); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		out[i].hdr = p.Header
		out[i].size = len(b)
		pl, err := out[i].desc.Unmarshal(p.Payload)
		if err != nil {
			t.Fatalf("packet %d: descriptor: %v", i, err)
		}
		out[i].payload = pl
		if out[i].desc.S == 0 { // not a frame's first packet: no extension
			if p.Extension {
				t.Fatalf("packet %d: a continuation packet with header extensions (%d bytes of them)", i, p.MarshalSize()-12-len(p.Payload))
			}
			continue
		}
		if !p.Extension {
			continue // the capture time is left to interpolation
		}
		if p.ExtensionProfile != rtp.ExtensionProfileOneByte {
			t.Fatalf("packet %d: extension profile %#x, want one-byte", i, p.ExtensionProfile)
		}
		raw := p.GetExtension(AbsCaptureTimeID)
		var ext rtp.AbsCaptureTimeExtension
		if err := ext.Unmarshal(raw); err != nil {
			t.Fatalf("packet %d: abs-capture-time: %v", i, err)
		}
		out[i].capture = ext.CaptureTime()
	}
	return out
}

func TestPacketizeRoundTrip(t *testing.T) {
	const (
		ssrc    = 0x5eed1234
		maxSize = 1200
	)
	// The first packet of a frame with its capture time: header 12 +
	// extension 4+1+8+3 padding = 28; the others: header 12 alone; each a
	// descriptor of 4. Keyframes and the first frame carry the capture
	// time; the delta frames after it, within a second and exactly on the
	// RTP clock, leave it to interpolation.
	const perPacket = maxSize - 28 - vp8DescriptorSize
	const perRest = maxSize - 12 - vp8DescriptorSize
	packets := func(size int, stamped bool) int {
		if !stamped {
			return (size + perRest - 1) / perRest
		}
		return 1 + (max(size-perPacket, 0)+perRest-1)/perRest
	}
	for _, tc := range []struct {
		name     string
		size     int
		key      bool
		w, h     int
		interval time.Duration
	}{
		{"smallest delta frame", 3, false, 0, 0, 33 * time.Millisecond},
		{"small keyframe", 10, true, 640, 360, 33 * time.Millisecond},
		{"exactly one packet", perPacket, true, 320, 180, 33 * time.Millisecond},
		{"one byte over one packet", perPacket + 1, false, 0, 0, 33 * time.Millisecond},
		{"8 KB delta", 8 << 10, false, 0, 0, 33 * time.Millisecond},
		{"100 KB keyframe", 100 << 10, true, 1280, 720, 40 * time.Millisecond},
		{"1 MB keyframe", 1 << 20, true, 16383, 16383, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacketizer(PacketizerConfig{SSRC: ssrc, MaxPacketSize: maxSize})
			a := NewAssembler(0)
			var lastSeq uint16
			var lastTS uint32
			var lastPicID uint16
			for n := range 3 {
				frame := vp8Frame(tc.key, tc.w, tc.h, tc.size, byte(n))
				capture := testEpoch.Add(time.Duration(n) * tc.interval)
				pkts, ts, err := p.Packetize(frame, capture)
				if err != nil {
					t.Fatal(err)
				}
				stamped := n == 0 || tc.key
				if len(pkts) != packets(tc.size, stamped) {
					t.Fatalf("frame %d: %d packets, want %d", n, len(pkts), packets(tc.size, stamped))
				}
				ps := parsePackets(t, pkts)
				if ps[0].capture.IsZero() == stamped {
					t.Fatalf("frame %d: capture time carried %v, want %v", n, !ps[0].capture.IsZero(), stamped)
				}
				var joined []byte
				for i, q := range ps {
					last := i == len(ps)-1
					switch {
					case q.size > maxSize:
						t.Errorf("frame %d packet %d: %d bytes, limit %d", n, i, q.size, maxSize)
					case q.hdr.Version != 2 || q.hdr.PayloadType != DefaultPayloadType || q.hdr.SSRC != ssrc:
						t.Errorf("frame %d packet %d: version %d pt %d ssrc %#x", n, i, q.hdr.Version, q.hdr.PayloadType, q.hdr.SSRC)
					case q.hdr.Timestamp != ts:
						t.Errorf("frame %d packet %d: timestamp %d, want %d", n, i, q.hdr.Timestamp, ts)
					case q.hdr.Marker != last:
						t.Errorf("frame %d packet %d: marker %v", n, i, q.hdr.Marker)
					case i == 0 && stamped && !q.capture.Equal(capture) && q.capture.Sub(capture).Abs() > time.Nanosecond:
						t.Errorf("frame %d packet %d: capture %v, want %v", n, i, q.capture, capture)
					case (q.desc.S == 1) != (i == 0) || q.desc.PID != 0:
						t.Errorf("frame %d packet %d: S=%d PID=%d", n, i, q.desc.S, q.desc.PID)
					case q.desc.I != 1 || q.desc.PictureID != ps[0].desc.PictureID:
						t.Errorf("frame %d packet %d: PictureID present %d value %d", n, i, q.desc.I, q.desc.PictureID)
					}
					if i > 0 && q.hdr.SequenceNumber != ps[i-1].hdr.SequenceNumber+1 {
						t.Errorf("frame %d packet %d: seq %d after %d", n, i, q.hdr.SequenceNumber, ps[i-1].hdr.SequenceNumber)
					}
					joined = append(joined, q.payload...)
				}
				if !bytes.Equal(joined, frame) {
					t.Fatalf("frame %d: payloads do not join to the frame", n)
				}
				if n > 0 {
					if ps[0].hdr.SequenceNumber != lastSeq+1 {
						t.Errorf("frame %d: first seq %d after %d", n, ps[0].hdr.SequenceNumber, lastSeq)
					}
					if want := lastTS + uint32(durationTicks(tc.interval)); ts != want {
						t.Errorf("frame %d: timestamp %d, want %d", n, ts, want)
					}
					if ps[0].desc.PictureID != (lastPicID+1)&0x7FFF {
						t.Errorf("frame %d: PictureID %d after %d", n, ps[0].desc.PictureID, lastPicID)
					}
				}
				lastSeq, lastTS, lastPicID = ps[len(ps)-1].hdr.SequenceNumber, ts, ps[0].desc.PictureID

				var got *Frame
				for i, b := range pkts {
					f, err := a.Push(b)
					if err != nil {
						t.Fatalf("frame %d packet %d: Push: %v", n, i, err)
					}
					if f != nil && i != len(pkts)-1 {
						t.Fatalf("frame %d: completed at packet %d of %d", n, i, len(pkts))
					}
					got = f
				}
				if got == nil {
					t.Fatalf("frame %d: not assembled", n)
				}
				want := Frame{SSRC: ssrc, Timestamp: ts, Capture: capture, Key: tc.key, Width: tc.w, Height: tc.h, Packets: packets(tc.size, stamped)}
				if got.SSRC != want.SSRC || got.Timestamp != want.Timestamp || got.Key != want.Key ||
					got.Width != want.Width || got.Height != want.Height || got.Packets != want.Packets ||
					got.Capture.Sub(want.Capture).Abs() > time.Nanosecond {
					t.Errorf("frame %d: got %+v", n, *got)
				}
				if !bytes.Equal(got.Data, frame) {
					t.Errorf("frame %d: data differs", n)
				}
			}
			if st := a.Stats(); st != (AssemblerStats{Frames: 3}) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestPacketizeTimestamps(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		captures []time.Duration // offsets from testEpoch
		deltas   []uint32        // RTP timestamp steps from the previous frame
	}{
		{"30 fps", []time.Duration{0, 33 * ms, 66 * ms, 100 * ms}, []uint32{2970, 2970, 3060}},
		{"irregular", []time.Duration{0, 10 * ms, 250 * ms}, []uint32{900, 21600}},
		{"same capture", []time.Duration{0, 0, 33 * ms}, []uint32{1, 2969}},
		{"same capture thrice", []time.Duration{0, 0, 0, 33 * ms}, []uint32{1, 1, 2968}},
		{"within one tick", []time.Duration{0, 5 * time.Microsecond, 33 * ms}, []uint32{1, 2969}},
		{"clock steps back", []time.Duration{0, 33 * ms, -time.Hour, -time.Hour + 33*ms}, []uint32{2970, 1, 2970}},
		{"clock steps back a little", []time.Duration{0, 33 * ms, 20 * ms, 53 * ms}, []uint32{2970, 1, 2970}},
		{"long gap", []time.Duration{0, time.Hour}, []uint32{324000000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacketizer(PacketizerConfig{})
			frame := vp8Frame(false, 0, 0, 100, 0)
			var prev uint32
			for i, c := range tc.captures {
				_, ts, err := p.Packetize(frame, testEpoch.Add(c))
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 {
					if got := ts - prev; got != tc.deltas[i-1] {
						t.Errorf("frame %d: timestamp step %d, want %d", i, got, tc.deltas[i-1])
					}
				}
				prev = ts
			}
		})
	}
}

func TestPacketizeErrors(t *testing.T) {
	frame := vp8Frame(true, 64, 64, 500, 0)
	for _, tc := range []struct {
		name    string
		cfg     PacketizerConfig
		frame   []byte
		capture time.Time
		want    error
	}{
		{"empty frame", PacketizerConfig{}, nil, testEpoch, ErrEmptyFrame},
		{"zero capture time", PacketizerConfig{}, frame, time.Time{}, ErrBadCaptureTime},
		{"capture before 1970", PacketizerConfig{}, frame, time.Unix(-1, 0), ErrBadCaptureTime},
		{"packet size too small", PacketizerConfig{MaxPacketSize: 32}, frame, testEpoch, ErrBadPacketSize},
		{"packet size negative", PacketizerConfig{MaxPacketSize: -1}, frame, testEpoch, ErrBadPacketSize},
		{"packet size over RFC 4571", PacketizerConfig{MaxPacketSize: MaxPacketSize + 1}, frame, testEpoch, ErrBadPacketSize},
		{"payload type over 127", PacketizerConfig{PayloadType: 128}, frame, testEpoch, ErrBadPayloadType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacketizer(tc.cfg)
			seq := p.seq
			if _, _, err := p.Packetize(tc.frame, tc.capture); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if p.seq != seq || p.started {
				t.Errorf("failed Packetize changed state")
			}
		})
	}
}

func TestPacketizeSizes(t *testing.T) {
	// The smallest and largest valid sizes, and a custom payload type.
	for _, size := range []int{33, 200, MaxPacketSize} {
		p := NewPacketizer(PacketizerConfig{PayloadType: 100, MaxPacketSize: size})
		frame := vp8Frame(true, 8, 8, 3000, 1)
		pkts, _, err := p.Packetize(frame, testEpoch)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		a := NewAssembler(0)
		var got *Frame
		for _, q := range parsePackets(t, pkts) {
			if q.size > size || q.hdr.PayloadType != 100 {
				t.Fatalf("size %d: packet of %d bytes, pt %d", size, q.size, q.hdr.PayloadType)
			}
		}
		for _, b := range pkts {
			if got, err = a.Push(b); err != nil {
				t.Fatal(err)
			}
		}
		if got == nil || !bytes.Equal(got.Data, frame) {
			t.Fatalf("size %d: frame not reassembled", size)
		}
	}
}

func TestSequenceWraps(t *testing.T) {
	p := NewPacketizer(PacketizerConfig{})
	p.seq = 0xFFFE
	a := NewAssembler(0)
	frame := vp8Frame(false, 0, 0, 5000, 3)
	pkts, _, err := p.Packetize(frame, testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	var got *Frame
	for _, b := range pkts {
		if got, err = a.Push(b); err != nil {
			t.Fatal(err)
		}
	}
	if got == nil || !bytes.Equal(got.Data, frame) {
		t.Fatalf("frame across sequence wrap not reassembled; stats %+v", a.Stats())
	}
}

func TestIsRTCP(t *testing.T) {
	pli := MarshalPLI(1, 2)
	rtpPkt, _, err := NewPacketizer(PacketizerConfig{}).Packetize(vp8Frame(false, 0, 0, 10, 0), testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pkt  []byte
		want bool
	}{
		{"PLI", pli, true},
		{"VP8 RTP with marker", rtpPkt[0], false},
		{"sender report type 200", []byte{0x80, 200}, true},
		{"type 192", []byte{0x80, 192}, true},
		{"type 223", []byte{0x80, 223}, true},
		{"RTP pt 63 with marker", []byte{0x80, 0x80 | 63}, false},
		{"RTP pt 96 with marker", []byte{0x80, 0x80 | 96}, false},
		{"RTP pt 72 without marker", []byte{0x80, 72}, true}, // RFC 5761: pt 64-95 is ambiguous
		{"one byte", []byte{0x80}, false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsRTCP(tc.pkt); got != tc.want {
				t.Errorf("IsRTCP = %v, want %v", got, tc.want)
			}
		})
	}
}
