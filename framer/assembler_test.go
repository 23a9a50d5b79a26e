package framer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// stream builds test packet sequences: frames of a few small packets from
// one Packetizer.
type stream struct {
	t      *testing.T
	p      *Packetizer
	frames [][]byte
	n      int
}

func newStream(t *testing.T) *stream {
	// 100-byte packets carry 68 bytes of frame in a frame's first packet
	// (with the capture time) and 84 in each of the rest.
	return &stream{t: t, p: NewPacketizer(PacketizerConfig{SSRC: 7, MaxPacketSize: 100})}
}

// frame packetizes a new frame of size bytes and returns its packets; the
// frame's data is remembered as s.frames[i] for the i-th call.
func (s *stream) frame(key bool, size int) [][]byte {
	s.t.Helper()
	f := vp8Frame(key, 32, 32, size, byte(s.n))
	pkts, _, err := s.p.Packetize(f, testEpoch.Add(time.Duration(s.n)*33*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	s.frames = append(s.frames, f)
	s.n++
	// Copies, so that cases can change bytes freely.
	out := make([][]byte, len(pkts))
	for i, b := range pkts {
		out[i] = slices.Clone(b)
	}
	return out
}

func setSeq(b []byte, seq uint16) []byte {
	binary.BigEndian.PutUint16(b[2:], seq)
	return b
}

func addTS(b []byte, d uint32) []byte {
	binary.BigEndian.PutUint32(b[4:], binary.BigEndian.Uint32(b[4:])+d)
	return b
}

func clearMarker(b []byte) []byte {
	b[1] &^= 0x80
	return b
}

// rawRTP marshals an RTP packet with the given payload (descriptor
// included) and optional abs-capture-time payload.
func rawRTP(t *testing.T, seq uint16, marker bool, payload, ext []byte) []byte {
	t.Helper()
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: 1234, SSRC: 7, Marker: marker}, Payload: payload}
	if ext != nil {
		if err := p.SetExtension(AbsCaptureTimeID, ext); err != nil {
			t.Fatal(err)
		}
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAssemblerCases(t *testing.T) {
	type want struct {
		frames []int          // indexes into stream.frames, in order
		errs   map[int]error  // packet index -> error it must give
		stats  AssemblerStats // final counters
	}
	for _, tc := range []struct {
		name    string
		maxSize int
		build   func(s *stream) [][]byte
		want    want
	}{
		{
			name: "clean stream",
			build: func(s *stream) [][]byte {
				return slices.Concat(s.frame(true, 200), s.frame(false, 50), s.frame(false, 300))
			},
			want: want{frames: []int{0, 1, 2}, stats: AssemblerStats{Frames: 3}},
		},
		{
			name: "starts mid-frame",
			build: func(s *stream) [][]byte {
				return slices.Concat(s.frame(true, 200)[1:], s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Skipped: 2}},
		},
		{
			name: "starts at the last packet of a frame",
			build: func(s *stream) [][]byte {
				return slices.Concat(s.frame(true, 200)[2:], s.frame(false, 10))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Skipped: 1}},
		},
		{
			name: "starts at a later partition of a frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				a[1][12+16] |= 0x10 | 1 // S=1 with partition index 1
				return slices.Concat(a[1:], s.frame(false, 100))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Skipped: 2}},
		},
		{
			name: "sequence gap",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				return slices.Concat([][]byte{a[0], a[2]}, s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1, Skipped: 1}},
		},
		{
			name: "repeated packet",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				return slices.Concat([][]byte{a[0], a[1], a[1], a[2]}, s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1, Skipped: 2}},
		},
		{
			name: "gap between frames",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				s.frame(false, 200) // lost entirely
				return slices.Concat(a, s.frame(false, 200))
			},
			want: want{frames: []int{0, 2}, stats: AssemblerStats{Frames: 2}},
		},
		{
			name: "timestamp change mid-frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				a[1] = addTS(a[1], 1)
				return slices.Concat(a, s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1, Skipped: 2}},
		},
		{
			name: "SSRC change mid-frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				a[2][11]++
				return slices.Concat(a, s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1, Skipped: 1}},
		},
		{
			name: "missing marker",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				a[2] = clearMarker(a[2])
				return slices.Concat(a, s.frame(false, 200))
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1}},
		},
		{
			name: "new frame start inside a frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				b := s.frame(false, 200)
				// b continues a's sequence numbers and timestamp: only the
				// S bit shows that a new frame began.
				for i, p := range b {
					setSeq(p, binary.BigEndian.Uint16(a[1][2:])+1+uint16(i))
					copy(p[4:8], a[0][4:8])
				}
				return slices.Concat(a[:2], b)
			},
			want: want{frames: []int{1}, stats: AssemblerStats{Frames: 1, Dropped: 1}},
		},
		{
			name:    "oversized frame",
			maxSize: 150,
			build: func(s *stream) [][]byte {
				// 68 + 83 bytes: over on its second packet, the last.
				return slices.Concat(s.frame(true, 151), s.frame(false, 150), s.frame(false, 151))
			},
			want: want{
				frames: []int{1},
				errs:   map[int]error{1: ErrFrameTooLarge, 5: ErrFrameTooLarge},
				stats:  AssemblerStats{Frames: 1, Dropped: 2, Oversized: 2},
			},
		},
		{
			name: "not VP8",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				a[0][28+vp8DescriptorSize+3] = 0 // break the keyframe start code
				return slices.Concat(a, s.frame(false, 200))
			},
			want: want{
				frames: []int{1},
				errs:   map[int]error{2: ErrNotVP8},
				stats:  AssemblerStats{Frames: 1, BadFrames: 1},
			},
		},
		{
			name: "frame shorter than its first partition",
			build: func(s *stream) [][]byte {
				a := s.frame(false, 200)
				a[2] = a[2][:len(a[2])-10]
				return slices.Concat(a, s.frame(true, 20))
			},
			want: want{frames: []int{1}, errs: map[int]error{2: ErrNotVP8}, stats: AssemblerStats{Frames: 1, BadFrames: 1}},
		},
		{
			name: "truncated descriptor mid-frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				seq := binary.BigEndian.Uint16(a[1][2:])
				bad := rawRTP(s.t, seq, false, []byte{0x80}, nil) // X=1, no X octet
				return slices.Concat([][]byte{a[0], bad, a[2]}, s.frame(false, 200))
			},
			want: want{
				frames: []int{1},
				errs:   map[int]error{1: ErrBadDescriptor},
				stats:  AssemblerStats{Frames: 1, Dropped: 1, Skipped: 1, BadPackets: 1},
			},
		},
		{
			name: "truncated PictureID",
			build: func(s *stream) [][]byte {
				return slices.Concat([][]byte{rawRTP(s.t, 1, true, []byte{0x90, 0x80, 0x80}, nil)}, s.frame(true, 100))
			},
			want: want{frames: []int{0}, errs: map[int]error{0: ErrBadDescriptor}, stats: AssemblerStats{Frames: 1, BadPackets: 1}},
		},
		{
			name: "empty payload",
			build: func(s *stream) [][]byte {
				return slices.Concat([][]byte{rawRTP(s.t, 1, true, nil, nil)}, s.frame(true, 100))
			},
			want: want{frames: []int{0}, errs: map[int]error{0: ErrBadDescriptor}, stats: AssemblerStats{Frames: 1, BadPackets: 1}},
		},
		{
			name: "noise between packets of a frame",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 200)
				return slices.Concat(
					[][]byte{a[0], MarshalPLI(1, 7), a[1], {0x40, 0, 0, 0}, a[2], {0x80}},
					s.frame(false, 100))
			},
			want: want{
				frames: []int{0, 1},
				errs:   map[int]error{1: ErrRTCPPacket, 3: ErrBadPacket, 5: ErrBadPacket},
				stats:  AssemblerStats{Frames: 2, BadPackets: 3},
			},
		},
		{
			name: "truncated header extension",
			build: func(s *stream) [][]byte {
				a := s.frame(true, 100)
				return slices.Concat([][]byte{a[0][:20]}, a[1:], s.frame(false, 100))
			},
			want: want{frames: []int{1}, errs: map[int]error{0: ErrBadPacket}, stats: AssemblerStats{Frames: 1, BadPackets: 1, Skipped: 1}},
		},
		{
			name: "short abs-capture-time",
			build: func(s *stream) [][]byte {
				desc := []byte{0x10}
				bad := rawRTP(s.t, 1, true, append(desc, vp8Frame(false, 0, 0, 10, 0)...), []byte{1, 2, 3, 4})
				return slices.Concat([][]byte{bad}, s.frame(true, 100))
			},
			want: want{frames: []int{0}, errs: map[int]error{0: ErrBadPacket}, stats: AssemblerStats{Frames: 1, BadPackets: 1}},
		},
		{
			name: "oversized packet",
			build: func(s *stream) [][]byte {
				return slices.Concat([][]byte{make([]byte, MaxPacketSize+1)}, s.frame(true, 100))
			},
			want: want{frames: []int{0}, errs: map[int]error{0: ErrBadPacket}, stats: AssemblerStats{Frames: 1, BadPackets: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStream(t)
			pkts := tc.build(s)
			a := NewAssembler(tc.maxSize)
			var got []int
			for i, b := range pkts {
				f, err := a.Push(b)
				if want := tc.want.errs[i]; want != nil {
					if !errors.Is(err, want) {
						t.Errorf("packet %d: err = %v, want %v", i, err, want)
					}
				} else if err != nil {
					t.Errorf("packet %d: unexpected error %v", i, err)
				}
				if f == nil {
					continue
				}
				idx := slices.IndexFunc(s.frames, func(d []byte) bool { return bytes.Equal(d, f.Data) })
				got = append(got, idx)
			}
			if !slices.Equal(got, tc.want.frames) {
				t.Errorf("frames %v, want %v", got, tc.want.frames)
			}
			if st := a.Stats(); st != tc.want.stats {
				t.Errorf("stats %+v, want %+v", st, tc.want.stats)
			}
		})
	}
}

func TestAssemblerCaptureTime(t *testing.T) {
	at := func(tm time.Time) []byte {
		b, err := rtp.NewAbsCaptureTimeExtension(tm).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withOffset, err := rtp.NewAbsCaptureTimeExtensionWithCaptureClockOffset(testEpoch, time.Second).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ext  []byte
		want time.Time
	}{
		{"absent", nil, time.Time{}},
		{"present", at(testEpoch), testEpoch},
		{"with clock offset", withOffset, testEpoch},
		{"NTP zero", make([]byte, 8), time.Time{}},
		{"just before 1970", []byte{0x83, 0xAA, 0x7E, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := vp8Frame(true, 176, 144, 40, 0)
			pkt := rawRTP(t, 9, true, append([]byte{0x10}, frame...), tc.ext)
			f, err := NewAssembler(0).Push(pkt)
			if err != nil || f == nil {
				t.Fatalf("Push: %v, %v", f, err)
			}
			if !f.Capture.Equal(tc.want) {
				t.Errorf("capture %v, want %v", f.Capture, tc.want)
			}
			if !f.Key || f.Width != 176 || f.Height != 144 || f.Packets != 1 || !bytes.Equal(f.Data, frame) {
				t.Errorf("frame %+v", *f)
			}
		})
	}
}

func TestAssemblerFrameOwnership(t *testing.T) {
	// Frames handed out must not share memory with later frames.
	s := newStream(t)
	a := NewAssembler(0)
	var frames []*Frame
	for range 4 {
		for _, b := range s.frame(false, 300) {
			f, err := a.Push(b)
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				frames = append(frames, f)
			}
		}
	}
	for i, f := range frames {
		if !bytes.Equal(f.Data, s.frames[i]) {
			t.Errorf("frame %d changed after later frames were assembled", i)
		}
	}
}

// A frame carries the sequence number of its first packet, so that a
// receiver can tell whether frames arrive without a gap.
func TestAssemblerFirstSeq(t *testing.T) {
	s := newStream(t)
	a := NewAssembler(0)
	next := uint16(0)
	for i := range 3 {
		pkts := s.frame(i == 0, 150) // three packets each
		first := binary.BigEndian.Uint16(pkts[0][2:])
		if i > 0 && first != next {
			t.Fatalf("frame %d starts at %d, want %d", i, first, next)
		}
		var f *Frame
		for _, p := range pkts {
			var err error
			if f, err = a.Push(p); err != nil {
				t.Fatal(err)
			}
		}
		if f == nil || f.FirstSeq != first || f.Packets != len(pkts) {
			t.Fatalf("frame %d: %+v, want FirstSeq %d and %d packets", i, f, first, len(pkts))
		}
		next = f.FirstSeq + uint16(f.Packets)
	}
}
