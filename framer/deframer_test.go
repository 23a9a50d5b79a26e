package framer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// pushDeframer is what the push-style de-framers have in common.
type pushDeframer interface {
	Feed(p []byte)
	Free(n int) []byte
	Commit(n int)
	Buffered() int
	Next() ([]byte, error)
	End() error
}

var (
	_ pushDeframer = (*Deframer)(nil)
	_ pushDeframer = (*RoQDeframer)(nil)
)

// format is one stream framing, as the tests drive it.
type format struct {
	name   string
	header []byte // what the stream starts with
	frame  func(dst, pkt []byte) ([]byte, error)
	push   func() pushDeframer
	reader func(io.Reader) func() ([]byte, error)
	hdrMax int    // the longest length prefix
	zero   []byte // a zero length
}

var formats = []format{
	{
		name:   "RFC 4571",
		frame:  AppendFramed,
		push:   func() pushDeframer { return new(Deframer) },
		reader: func(r io.Reader) func() ([]byte, error) { return NewReader(r).ReadPacket },
		hdrMax: 2,
		zero:   []byte{0, 0},
	},
	{
		name:   "RoQ",
		header: []byte{0x40, 0x40}, // flow 64, in two bytes
		frame:  AppendRoQPacket,
		push:   func() pushDeframer { return new(RoQDeframer) },
		reader: func(r io.Reader) func() ([]byte, error) { return NewRoQReader(r).ReadPacket },
		hdrMax: 8,
		zero:   []byte{0},
	},
}

// event is one result of a de-framer: a packet or an error.
type event struct {
	pkt []byte
	err error
}

func (e event) String() string {
	if e.err != nil {
		return "error " + e.err.Error()
	}
	return fmt.Sprintf("%d bytes %x", len(e.pkt), e.pkt[:min(len(e.pkt), 4)])
}

func sameEvents(got, want []event) error {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Errorf("%d events, want %d: missing %v", len(got), len(want), want[i])
		case i >= len(want):
			return fmt.Errorf("%d events, want %d: extra %v", len(got), len(want), got[i])
		case (got[i].err == nil) != (want[i].err == nil) || !bytes.Equal(got[i].pkt, want[i].pkt) ||
			want[i].err != nil && !errors.Is(got[i].err, want[i].err):
			return fmt.Errorf("event %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// pattern returns n bytes that depend on seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// buildStream frames packets of the given sizes. It returns the stream,
// the packets as events, and the offsets at which the stream may end
// cleanly.
func buildStream(t testing.TB, f format, sizes ...int) (stream []byte, want []event, clean []int) {
	stream = slices.Clone(f.header)
	clean = []int{len(stream)}
	for i, n := range sizes {
		p := pattern(n, byte(i))
		var err error
		if stream, err = f.frame(stream, p); err != nil {
			t.Fatal(err)
		}
		want = append(want, event{pkt: p})
		clean = append(clean, len(stream))
	}
	return stream, want, clean
}

// drain takes packets from d until it has no more or fails for good, and
// checks that it then holds no more than one partial packet, and that
// every event consumed a byte of the fed ones.
func drain(t testing.TB, f format, d pushDeframer, ev []event, fed int) ([]event, bool) {
	for {
		if len(ev) > fed {
			t.Fatalf("%d events from %d bytes", len(ev), fed)
		}
		pkt, err := d.Next()
		switch {
		case err != nil:
			ev = append(ev, event{err: err})
			if !errors.Is(err, ErrEmptyPacket) {
				return ev, false
			}
			continue
		case pkt == nil:
			if b := d.Buffered(); b > f.hdrMax+MaxPacketSize-1 {
				t.Fatalf("%d bytes buffered and no packet", b)
			}
			return ev, true
		}
		ev = append(ev, event{pkt: slices.Clone(pkt)})
	}
}

// feedPieces hands stream to a new de-framer in pieces of the sizes given
// (cycled; one piece if none), through Feed or through Free and Commit, and
// returns what came out and what End said.
func feedPieces(t testing.TB, f format, stream []byte, sizes []int, useFree bool) ([]event, error) {
	d := f.push()
	var ev []event
	for i, off := 0, 0; off < len(stream); i++ {
		n := len(stream) - off
		if len(sizes) > 0 {
			n = min(n, sizes[i%len(sizes)])
		}
		if useFree {
			d.Commit(copy(d.Free(n), stream[off:off+n]))
		} else {
			d.Feed(stream[off : off+n])
		}
		off += n
		var ok bool
		if ev, ok = drain(t, f, d, ev, off); !ok {
			break
		}
	}
	return ev, d.End()
}

// readAll reads stream with f's blocking reader over r and returns the
// packets and the error that ended them.
func readAll(f format, r io.Reader) ([]event, error) {
	read := f.reader(r)
	var ev []event
	for {
		pkt, err := read()
		switch {
		case errors.Is(err, ErrEmptyPacket):
			ev = append(ev, event{err: err})
		case err != nil:
			return ev, err
		default:
			ev = append(ev, event{pkt: slices.Clone(pkt)})
		}
	}
}

// offsets returns the offsets of stream to cut at: all of them for a
// stream under 4096 bytes; for a longer one, which would take seconds,
// those from 3 before a packet boundary to 9 after it (through the longest
// length prefix) and every 509th.
func offsets(streamLen int, clean []int) []int {
	var out []int
	for k := 0; k <= streamLen; k++ {
		near := k%509 == 0 || streamLen < 4096
		for _, c := range clean {
			near = near || k >= c-3 && k <= c+9
		}
		if near {
			out = append(out, k)
		}
	}
	return out
}

var roundTripSizes = []struct {
	name  string
	sizes []int
}{
	{"one byte", []int{1}},
	{"63 and 64 bytes", []int{63, 64}},
	{"16383 and 16384 bytes", []int{16383, 16384}},
	{"MaxPacketSize", []int{MaxPacketSize}},
	{"mixed", []int{1, 1200, 2, 63, 64, 300, 127, 128}},
	{"no packets", nil},
}

func TestDeframersRoundTrip(t *testing.T) {
	for _, f := range formats {
		for _, tc := range roundTripSizes {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				stream, want, _ := buildStream(t, f, tc.sizes...)
				for _, mode := range []struct {
					name    string
					sizes   []int
					useFree bool
				}{
					{"whole", nil, false},
					{"one byte at a time", []int{1}, false},
					{"Free and Commit 1000 bytes", []int{1000}, true},
					{"uneven pieces", []int{3, 1, 700, 2, 16 << 10}, false},
				} {
					got, end := feedPieces(t, f, stream, mode.sizes, mode.useFree)
					if err := sameEvents(got, want); err != nil || end != nil {
						t.Errorf("%s: %v; End: %v", mode.name, err, end)
					}
				}
				got, err := readAll(f, bytes.NewReader(stream))
				if err := sameEvents(got, want); err != nil {
					t.Errorf("reader: %v", err)
				}
				if err != io.EOF {
					t.Errorf("reader ended with %v, want io.EOF", err)
				}
			})
		}
	}
}

func TestDeframersSplitEverywhere(t *testing.T) {
	for _, f := range formats {
		for _, tc := range roundTripSizes {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				stream, want, clean := buildStream(t, f, tc.sizes...)
				for _, k := range offsets(len(stream), clean) {
					sizes := []int{k, len(stream)}
					if k == 0 {
						sizes = nil
					}
					for _, useFree := range []bool{false, true} {
						got, end := feedPieces(t, f, stream, sizes, useFree)
						if err := sameEvents(got, want); err != nil || end != nil {
							t.Fatalf("split at %d (Free %v): %v; End: %v", k, useFree, err, end)
						}
					}
				}
			})
		}
	}
}

func TestDeframersTruncatedEverywhere(t *testing.T) {
	for _, f := range formats {
		for _, tc := range roundTripSizes {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				stream, want, clean := buildStream(t, f, tc.sizes...)
				for _, k := range offsets(len(stream), clean) {
					whole := 0 // packets that end by k
					for _, c := range clean[1:] {
						if c <= k {
							whole++
						}
					}
					cleanEnd := slices.Contains(clean, k)
					got, end := feedPieces(t, f, stream[:k], nil, false)
					if err := sameEvents(got, want[:whole]); err != nil {
						t.Fatalf("cut at %d: %v", k, err)
					}
					if cleanEnd != (end == nil) || end != nil && !errors.Is(end, io.ErrUnexpectedEOF) {
						t.Fatalf("cut at %d: End = %v", k, end)
					}
					got, rerr := readAll(f, bytes.NewReader(stream[:k]))
					if err := sameEvents(got, want[:whole]); err != nil {
						t.Fatalf("reader cut at %d: %v", k, err)
					}
					if cleanEnd != (rerr == io.EOF) || !cleanEnd && !errors.Is(rerr, io.ErrUnexpectedEOF) {
						t.Fatalf("reader cut at %d: error %v", k, rerr)
					}
				}
			})
		}
	}
}

func TestDeframersEmptyPacket(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			// A zero length between two packets: the error, then the stream goes on.
			stream, _, _ := buildStream(t, f, 5)
			stream = append(stream, f.zero...)
			stream, _ = f.frame(stream, pattern(7, 1))
			want := []event{{pkt: pattern(5, 0)}, {err: ErrEmptyPacket}, {pkt: pattern(7, 1)}}
			got, end := feedPieces(t, f, stream, []int{1}, false)
			if err := sameEvents(got, want); err != nil || end != nil {
				t.Errorf("push: %v; End: %v", err, end)
			}
			got, rerr := readAll(f, bytes.NewReader(stream))
			if err := sameEvents(got, want); err != nil || rerr != io.EOF {
				t.Errorf("reader: %v; ended with %v", err, rerr)
			}
		})
	}
}

func TestDeframerReset(t *testing.T) {
	var d Deframer
	d.Feed([]byte{0, 9, 1, 2})
	d.Reset()
	d.Feed([]byte{0, 1, 0xAB})
	if pkt, err := d.Next(); err != nil || !bytes.Equal(pkt, []byte{0xAB}) || d.End() != nil {
		t.Fatalf("after Reset: %x, %v; End %v", pkt, err, d.End())
	}
}

func TestDeframerCommitBeyondFree(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Commit past Free did not panic")
		}
	}()
	var d Deframer
	d.Free(10)
	d.Commit(cap(d.in.b) + 1)
}

// TestDeframerSteadyState checks that a Deframer fed and drained in turn
// allocates nothing once its buffer has grown, and keeps its buffer near
// one read plus one packet.
func TestDeframerSteadyState(t *testing.T) {
	stream, _, _ := buildStream(t, formats[0], 1200, 300, 1200, 5000, 1200)
	var d Deframer
	const piece = 1000
	off := 0
	step := func() {
		for range 10 {
			n := min(piece, len(stream)-off)
			d.Commit(copy(d.Free(n), stream[off:off+n]))
			off = (off + n) % len(stream)
			for {
				pkt, err := d.Next()
				if err != nil {
					t.Fatal(err)
				}
				if pkt == nil {
					break
				}
			}
		}
	}
	step()
	if a := testing.AllocsPerRun(100, step); a != 0 {
		t.Errorf("%v allocations per 10 reads", a)
	}
	if c := cap(d.in.b); c > 2*(5002+piece) {
		t.Errorf("buffer capacity %d for packets of up to 5000 bytes read %d at a time", c, piece)
	}
}

// flakyReader returns errTransient once, after its first n bytes.
type flakyReader struct {
	r      io.Reader
	n      int
	failed bool
}

var errTransient = errors.New("transient")

func (f *flakyReader) Read(p []byte) (int, error) {
	if !f.failed && f.n == 0 {
		f.failed = true
		return 0, errTransient
	}
	if !f.failed {
		p = p[:min(len(p), f.n)]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// TestReaderReads checks the blocking readers over readers that deliver
// the stream in odd ways.
func TestReaderReads(t *testing.T) {
	for _, f := range formats {
		stream, want, _ := buildStream(t, f, 1, 1200, 64, 3000)
		for _, tc := range []struct {
			name string
			r    func() io.Reader
		}{
			{"one byte per read", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) }},
			{"EOF with the last bytes", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) }},
			{"half a read per read", func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) }},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				got, err := readAll(f, tc.r())
				if e := sameEvents(got, want); e != nil || err != io.EOF {
					t.Fatalf("%v; ended with %v", e, err)
				}
			})
		}
		t.Run(f.name+"/transient error mid-packet", func(t *testing.T) {
			read := f.reader(&flakyReader{r: bytes.NewReader(stream), n: len(f.header) + 1 + 2 + 600})
			var got []event
			failures := 0
			for {
				pkt, err := read()
				if errors.Is(err, errTransient) {
					if failures++; failures > 1 {
						t.Fatal("the transient error came back")
					}
					continue
				}
				if err != nil {
					if err != io.EOF || failures != 1 {
						t.Fatalf("ended with %v after %d transient errors", err, failures)
					}
					break
				}
				got = append(got, event{pkt: slices.Clone(pkt)})
			}
			if err := sameEvents(got, want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// emptyReader returns nothing, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	for _, f := range formats {
		if _, err := f.reader(emptyReader{})(); err != io.ErrNoProgress {
			t.Errorf("%s: err = %v, want io.ErrNoProgress", f.name, err)
		}
	}
}
