package framer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// framedStream returns packets as one RFC 4571 stream, the form
// FuzzAssembler reads its input in.
func framedStream(t testing.TB, pkts ...[]byte) []byte {
	var out []byte
	for _, p := range pkts {
		var err error
		if out, err = AppendFramed(out, p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// seedStream returns the packets of three frames, with temporal layers if
// layered.
func seedStream(t testing.TB, layered bool) [][]byte {
	p := NewPacketizer(PacketizerConfig{SSRC: 1, MaxPacketSize: 64})
	p.pictureID = 0x7FFE
	var pkts [][]byte
	layers := []Layer{{Present: true, TL0PicIdx: 255}, {Present: true, TID: 2, Sync: true, TL0PicIdx: 255}, {Present: true, TID: 1, TL0PicIdx: 255}}
	for i, f := range [][]byte{vp8Frame(true, 16, 16, 100, 0), vp8Frame(false, 0, 0, 10, 1), vp8Frame(false, 0, 0, 40, 2)} {
		var l Layer
		if layered {
			l = layers[i]
		}
		fp, _, err := p.PacketizeLayer(f, testEpoch.Add(time.Duration(i)*time.Millisecond), l)
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, fp...)
	}
	return pkts
}

// FuzzAssembler feeds the Assembler a sequence of packets, read from the
// input as an RFC 4571 stream, and checks that whatever comes out is a
// well-formed frame within the size limit, with a well-formed layer.
func FuzzAssembler(f *testing.F) {
	pkts := seedStream(f, false)
	layered := seedStream(f, true)
	f.Add(framedStream(f, layered...))
	f.Add(framedStream(f, layered[2:]...))
	f.Add(framedStream(f, pkts...))
	f.Add(framedStream(f, pkts[1:]...))
	f.Add(framedStream(f, slices.Concat(pkts[:2], pkts[3:])...))
	f.Add(framedStream(f, pkts[0], MarshalPLI(1, 1), pkts[1]))
	f.Add(framedStream(f, []byte{0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x90}))
	const maxFrame = 256
	f.Fuzz(func(t *testing.T, stream []byte) {
		a := NewAssembler(maxFrame)
		r := NewReader(bytes.NewReader(stream))
		frames := uint64(0)
		var got []*Frame
		var copies [][]byte
		for {
			pkt, err := r.ReadPacket()
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				continue // zero-length packet; the stream goes on
			}
			fr, err := a.Push(pkt)
			if err != nil && fr != nil {
				t.Fatalf("Push returned a frame and an error: %v", err)
			}
			if fr == nil {
				continue
			}
			frames++
			if len(fr.Data) > maxFrame || len(fr.Data) == 0 || fr.Packets < 1 {
				t.Fatalf("frame of %d bytes in %d packets", len(fr.Data), fr.Packets)
			}
			key, w, h, err := ParseVP8Header(fr.Data)
			if err != nil || key != fr.Key || w != fr.Width || h != fr.Height {
				t.Fatalf("frame header %v %dx%d (%v) disagrees with %+v", key, w, h, err, fr)
			}
			if l := fr.Layer; l.TID > maxTID || !l.Present && l != (Layer{}) {
				t.Fatalf("layer %+v", l)
			}
			got = append(got, fr)
			copies = append(copies, slices.Clone(fr.Data))
		}
		// Frames belong to the caller: later packets must not change them.
		for i, fr := range got {
			if !bytes.Equal(fr.Data, copies[i]) {
				t.Fatalf("frame %d changed after it was returned", i)
			}
		}
		st := a.Stats()
		if st.Frames != frames || st.Oversized > st.Dropped {
			t.Fatalf("stats %+v after %d frames", st, frames)
		}
	})
}

// FuzzParseControl checks that ParseControl and the helpers that read its
// result survive any input, and that a sender report found in it
// round-trips.
func FuzzParseControl(f *testing.F) {
	rep, err := sampleReport(2).Marshal(9)
	if err != nil {
		f.Fatal(err)
	}
	sdes, err := MarshalSDES(9, "c@h", "stream", "replenish=15ms")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(MarshalPLI(1, 9))
	f.Add(MarshalFIR(1, 9, 4))
	f.Add(rep)
	f.Add(sdes)
	f.Add(slices.Concat(sdes, rep, MarshalPLI(1, 9)))
	f.Fuzz(func(t *testing.T, b []byte) {
		pkts, err := ParseControl(b)
		if err != nil {
			if pkts != nil {
				t.Fatal("packets with an error")
			}
			return
		}
		WantsKeyframe(pkts, 9)
		if name, err := StreamName(pkts, 9); err == nil {
			if ValidateStreamName(name) != nil {
				t.Fatalf("StreamName returned invalid name %q", name)
			}
		}
		if mode, err := StreamMode(pkts, 9); err == nil {
			if ValidateStreamName(mode) != nil {
				t.Fatalf("StreamMode returned invalid mode %q", mode)
			}
		}
		for _, p := range pkts {
			app, ok := p.(*rtcp.ApplicationDefined)
			if !ok {
				continue
			}
			r, err := ParseSenderReport(app)
			if err != nil {
				continue
			}
			if _, err := r.Marshal(app.SSRC); err != nil {
				t.Fatalf("parsed report does not marshal: %v", err)
			}
		}
	})
}

// FuzzSDESRoundTrip checks that any name and mode MarshalSDES accepts come
// back unchanged through ParseControl, StreamName and StreamMode, and that
// it refuses exactly the texts ValidateStreamName refuses.
func FuzzSDESRoundTrip(f *testing.F) {
	f.Add("cam", "replenish=15ms")
	f.Add("cam", "")
	f.Add("Kamera Zürich", "expire=100ms")
	f.Add("a\nb", "default")
	f.Fuzz(func(t *testing.T, name, mode string) {
		b, err := MarshalSDES(9, "c@h", name, mode)
		valid := ValidateStreamName(name) == nil && (mode == "" || ValidateStreamName(mode) == nil)
		if (err == nil) != valid {
			t.Fatalf("MarshalSDES(%q, %q): err %v, but valid %v", name, mode, err, valid)
		}
		if err != nil {
			return
		}
		pkts, err := ParseControl(b)
		if err != nil {
			t.Fatalf("own SDES does not parse: %v", err)
		}
		if got, err := StreamName(pkts, 9); err != nil || got != name {
			t.Fatalf("StreamName = %q, %v; want %q", got, err, name)
		}
		got, err := StreamMode(pkts, 9)
		if mode == "" {
			if !errors.Is(err, ErrNoStreamMode) {
				t.Fatalf("no mode sent, StreamMode = %q, %v", got, err)
			}
		} else if err != nil || got != mode {
			t.Fatalf("StreamMode = %q, %v; want %q", got, err, mode)
		}
	})
}

// FuzzParseSenderReport checks that any report data that parses marshals
// back to the same bytes (the reserved field aside).
func FuzzParseSenderReport(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		b, err := sampleReport(n).Marshal(1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[12:])
	}
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		app := &rtcp.ApplicationDefined{SSRC: 77, Name: ReportName, Data: data}
		r, err := ParseSenderReport(app)
		if err != nil {
			return
		}
		b, err := r.Marshal(77)
		if err != nil {
			t.Fatalf("parsed report does not marshal: %v", err)
		}
		want := slices.Clone(data)
		want[2], want[3] = 0, 0
		if !bytes.Equal(b[12:], want) {
			t.Fatalf("round trip changed the data:\n got  % x\n want % x", b[12:], want)
		}
		var back rtcp.ApplicationDefined
		if err := back.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		r2, err := ParseSenderReport(&back)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameReport(r2, r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseTimeProbe checks that any probe that parses marshals back to the
// same bytes (the reserved field aside).
func FuzzParseTimeProbe(f *testing.F) {
	f.Add(TimeProbe{Origin: testEpoch}.Marshal())
	f.Add(TimeProbe{Origin: testEpoch}.Answer(testEpoch, testEpoch.Add(time.Millisecond), 0).Marshal())
	f.Add([]byte(TimeProbeMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseTimeProbe(b)
		if err != nil {
			return
		}
		want := slices.Clone(b)
		want[6], want[7] = 0, 0
		if got := p.Marshal(); !bytes.Equal(got, want) {
			t.Fatalf("round trip changed the probe:\n got  % x\n want % x", got, want)
		}
	})
}

// FuzzParseVP8Header checks ParseVP8Header's promises on any input.
func FuzzParseVP8Header(f *testing.F) {
	f.Add(vp8Frame(true, 640, 360, 20, 0))
	f.Add(vp8Frame(false, 0, 0, 5, 0))
	f.Add([]byte{0x9d, 0x01, 0x2a})
	f.Add(readVP8(f, "key-48x32.vp8"))
	f.Add(readVP8(f, "delta-48x32.vp8"))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, w, h, err := ParseVP8Header(b)
		if err != nil {
			if !errors.Is(err, ErrNotVP8) || key || w != 0 || h != 0 {
				t.Fatalf("error %v with key=%v %dx%d", err, key, w, h)
			}
			return
		}
		switch {
		case key && (len(b) < vp8KeyHeaderLen || w <= 0 || h <= 0 || w > 16383 || h > 16383):
			t.Fatalf("keyframe of %d bytes, %dx%d", len(b), w, h)
		case !key && (len(b) < vp8TagSize || w != 0 || h != 0):
			t.Fatalf("delta frame of %d bytes, %dx%d", len(b), w, h)
		}
	})
}

// FuzzPacketizeRoundTrip checks that any frame, at any packet size, with
// any layer and PictureID, comes out of the Assembler as it went into the
// Packetizer, layer included, or is rejected for the same reason
// ParseVP8Header rejects it.
func FuzzPacketizeRoundTrip(f *testing.F) {
	f.Add(vp8Frame(true, 32, 32, 300, 0), uint16(100), false, uint8(0), false, uint8(0), uint16(0))
	f.Add(vp8Frame(false, 0, 0, 3, 0), uint16(33), false, uint8(0), false, uint8(0), uint16(0x7FFF))
	f.Add(vp8Frame(false, 0, 0, 3, 0), uint16(35), true, uint8(2), true, uint8(255), uint16(0x7FFF))
	f.Add(vp8Frame(false, 0, 0, 90, 0), uint16(40), true, uint8(1), false, uint8(0), uint16(0x80))
	f.Add([]byte{0}, uint16(1200), true, uint8(0), false, uint8(7), uint16(1))
	f.Add(readVP8(f, "key-48x32.vp8"), uint16(300), true, uint8(0), false, uint8(128), uint16(0x7F))
	f.Fuzz(func(t *testing.T, frame []byte, size uint16, present bool, tid uint8, sync bool, tl0 uint8, picID uint16) {
		l := Layer{Present: present, TID: tid & 3, Sync: sync, TL0PicIdx: tl0}
		minSize := uint16(33)
		if !present {
			l = Layer{}
		} else {
			minSize = 35
		}
		p := NewPacketizer(PacketizerConfig{SSRC: 3, MaxPacketSize: int(size)})
		p.pictureID = picID & 0x7FFF
		pkts, ts, err := p.PacketizeLayer(frame, testEpoch, l)
		if err != nil {
			if len(frame) > 0 && (size == 0 || size >= minSize) {
				t.Fatalf("PacketizeLayer: %v", err)
			}
			return
		}
		limit := int(size)
		if limit == 0 {
			limit = DefaultRTPPacketSize
		}
		a := NewAssembler(0)
		for i, b := range pkts {
			if len(b) > limit {
				t.Fatalf("packet %d: %d bytes, limit %d", i, len(b), limit)
			}
			var q rtp.Packet
			var d codecs.VP8Packet
			if err := q.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Unmarshal(q.Payload); err != nil || d.PictureID != picID&0x7FFF {
				t.Fatalf("packet %d: PictureID %d (%v), want %d", i, d.PictureID, err, picID&0x7FFF)
			}
			fr, err := a.Push(b)
			if i < len(pkts)-1 {
				if fr != nil || err != nil {
					t.Fatalf("packet %d of %d: %v, %v", i, len(pkts), fr, err)
				}
				continue
			}
			_, _, _, wantErr := ParseVP8Header(frame)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("Push: %v; ParseVP8Header: %v", err, wantErr)
			}
			if err == nil && (fr == nil || !bytes.Equal(fr.Data, frame) || fr.Timestamp != ts || !fr.Capture.Equal(testEpoch) || fr.Layer != l) {
				t.Fatalf("frame %+v not the one sent (layer %+v)", fr, l)
			}
		}
	})
}

// pieceSizes turns fuzz bytes into the sizes of the pieces a stream
// arrives in: 1 to 256 bytes each, cycled; none means all at once.
func pieceSizes(cuts []byte) []int {
	var s []int
	for _, c := range cuts {
		s = append(s, int(c)+1)
	}
	return s
}

// cutReader delivers b in pieces of the given sizes, cycled.
type cutReader struct {
	b     []byte
	sizes []int
	i     int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	if len(c.sizes) > 0 {
		p = p[:min(len(p), c.sizes[c.i%len(c.sizes)])]
		c.i++
	}
	n := copy(p, c.b)
	c.b = c.b[n:]
	return n, nil
}

// refRFC4571 splits a whole RFC 4571 stream the plain way. clean is false
// if the stream ends inside a packet.
func refRFC4571(s []byte) (ev []event, clean bool) {
	for len(s) >= 2 {
		n := int(s[0])<<8 | int(s[1])
		switch {
		case n == 0:
			ev = append(ev, event{err: ErrEmptyPacket})
		case len(s) < 2+n:
			return ev, false
		default:
			ev = append(ev, event{pkt: s[2 : 2+n]})
		}
		s = s[2+n:]
	}
	return ev, len(s) == 0
}

// refVarint decodes a QUIC variable-length integer the plain way.
func refVarint(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	n = []int{1, 2, 4, 8}[b[0]>>6]
	if len(b) < n {
		return 0, 0, false
	}
	v = uint64(b[0] & 0x3F)
	for i := 1; i < n; i++ {
		v = v*256 + uint64(b[i])
	}
	return v, n, true
}

// refRoQ splits a whole RoQ stream the plain way. A length over
// MaxPacketSize ends it with an ErrPacketTooLarge event.
func refRoQ(s []byte) (flow uint64, hasFlow bool, ev []event, clean bool) {
	flow, n, hasFlow := refVarint(s)
	if !hasFlow {
		return 0, false, nil, false
	}
	for s = s[n:]; len(s) > 0; {
		l, n, ok := refVarint(s)
		switch {
		case !ok:
			return flow, true, ev, false
		case l == 0:
			ev = append(ev, event{err: ErrEmptyPacket})
		case l > MaxPacketSize:
			return flow, true, append(ev, event{err: ErrPacketTooLarge}), false
		case uint64(len(s)-n) < l:
			return flow, true, ev, false
		default:
			ev = append(ev, event{pkt: s[n : n+int(l)]})
		}
		s = s[n+int(l):]
	}
	return flow, true, ev, true
}

// checkReaderAgrees reads stream in pieces with f's blocking reader and
// checks that it gives want, and ends as a stream that is clean or not.
func checkReaderAgrees(t *testing.T, f format, stream []byte, sizes []int, want []event, clean bool) {
	got, err := readAll(f, &cutReader{b: stream, sizes: sizes})
	if n := len(want); n > 0 && errors.Is(want[n-1].err, ErrPacketTooLarge) {
		if !errors.Is(err, ErrPacketTooLarge) {
			t.Fatalf("reader ended with %v, want ErrPacketTooLarge", err)
		}
		want = want[:n-1]
	} else if clean != (err == io.EOF) || !clean && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reader ended with %v; clean end %v", err, clean)
	}
	if e := sameEvents(got, want); e != nil {
		t.Fatalf("reader: %v", e)
	}
}

// FuzzDeframer checks the RFC 4571 Deframer, fed in pieces, and Reader
// against a plain split of the whole stream.
func FuzzDeframer(f *testing.F) {
	s, _, _ := buildStream(f, formats[0], 1, 300, 64)
	f.Add(s, []byte{})
	f.Add(s, []byte{0, 1, 2})
	f.Add([]byte{0, 0, 0, 1, 0x80, 0}, []byte{0})
	f.Add([]byte{0xFF, 0xFF, 1, 2, 3}, []byte{200})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		want, clean := refRFC4571(stream)
		sizes := pieceSizes(cuts)
		for _, useFree := range []bool{false, true} {
			got, end := feedPieces(t, formats[0], stream, sizes, useFree)
			if err := sameEvents(got, want); err != nil {
				t.Fatalf("Free %v: %v", useFree, err)
			}
			if clean != (end == nil) || end != nil && !errors.Is(end, io.ErrUnexpectedEOF) {
				t.Fatalf("Free %v: End = %v; clean end %v", useFree, end, clean)
			}
		}
		checkReaderAgrees(t, formats[0], stream, sizes, want, clean)
	})
}

// FuzzRoQStream checks the RoQDeframer, fed in pieces, and RoQReader
// against a plain split of the whole stream.
func FuzzRoQStream(f *testing.F) {
	s, _, _ := buildStream(f, formats[1], 1, 300, 64)
	f.Add(s, []byte{})
	f.Add(s, []byte{0, 1, 2})
	f.Add([]byte{0x00, 0x00, 0x01, 0x80}, []byte{0})
	f.Add([]byte{0x40, 0x01, 0x80, 0x01, 0x00, 0x00, 0x01}, []byte{1})
	f.Add([]byte{0xC0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, []byte{})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		flow, hasFlow, want, clean := refRoQ(stream)
		sizes := pieceSizes(cuts)
		for _, useFree := range []bool{false, true} {
			got, end := feedPieces(t, formats[1], stream, sizes, useFree)
			if err := sameEvents(got, want); err != nil {
				t.Fatalf("Free %v: %v", useFree, err)
			}
			if clean != (end == nil) {
				t.Fatalf("Free %v: End = %v; clean end %v", useFree, end, clean)
			}
		}
		var d RoQDeframer
		d.Feed(stream)
		if id, ok := d.Flow(); ok != hasFlow || id != flow {
			t.Fatalf("Flow = %d, %v; want %d, %v", id, ok, flow, hasFlow)
		}
		checkReaderAgrees(t, formats[1], stream, sizes, want, clean)
	})
}

// FuzzRoQDatagram checks that what ParseRoQDatagram accepts is the flow
// identifier and the rest, and appends back to the same datagram.
func FuzzRoQDatagram(f *testing.F) {
	dg, _ := AppendRoQDatagram(nil, 64, []byte{0x80, 0x60, 0, 1})
	f.Add(dg)
	f.Add([]byte{0x00, 0x81})
	f.Add([]byte{0x80, 0, 0, 1})
	f.Add([]byte{0x25})
	f.Fuzz(func(t *testing.T, b []byte) {
		flow, pkt, err := ParseRoQDatagram(b)
		v, n, ok := refVarint(b)
		if err != nil {
			switch {
			case flow != 0 || pkt != nil:
				t.Fatalf("flow %d and %d bytes with %v", flow, len(pkt), err)
			case !ok && errors.Is(err, ErrVarintTruncated),
				ok && len(b) == n && errors.Is(err, ErrEmptyPacket),
				ok && len(b)-n > MaxPacketSize && errors.Is(err, ErrPacketTooLarge):
				return
			}
			t.Fatalf("error %v for a datagram of %d bytes", err, len(b))
		}
		if !ok || flow != v || !bytes.Equal(pkt, b[n:]) {
			t.Fatalf("flow %d and %d bytes from %x", flow, len(pkt), b)
		}
		back, err := AppendRoQDatagram(nil, flow, pkt)
		if err != nil || len(back) > len(b) || VarintLen(flow) == n && !bytes.Equal(back, b) {
			t.Fatalf("appended back to %x, %v; from %x", back, err, b)
		}
	})
}

// FuzzVarint checks ParseVarint against the plain decoding, and that
// AppendVarint round-trips every value in range and refuses the rest.
func FuzzVarint(f *testing.F) {
	f.Add([]byte{0x25}, uint64(0))
	f.Add([]byte{0x40, 0x25}, uint64(63))
	f.Add([]byte{0x9d, 0x7f, 0x3e, 0x7d}, uint64(1<<30))
	f.Add([]byte{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, uint64(MaxVarint+1))
	f.Add([]byte{0xc2, 0x19}, uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, b []byte, x uint64) {
		v, n, err := ParseVarint(b)
		rv, rn, ok := refVarint(b)
		if ok != (err == nil) || v != rv || n != rn || err != nil && !errors.Is(err, ErrVarintTruncated) {
			t.Fatalf("ParseVarint(%x) = %d, %d, %v; want %d, %d, %v", b, v, n, err, rv, rn, ok)
		}
		if ok {
			enc, err := AppendVarint(nil, v)
			if err != nil || len(enc) > n || len(enc) == n && !bytes.Equal(enc, b[:n]) {
				t.Fatalf("%x decodes to %d, which encodes to %x, %v", b[:n], v, enc, err)
			}
		}
		enc, err := AppendVarint(nil, x)
		if x > MaxVarint {
			if !errors.Is(err, ErrVarintRange) || enc != nil {
				t.Fatalf("AppendVarint(%#x) = %x, %v", x, enc, err)
			}
			return
		}
		back, m, perr := ParseVarint(enc)
		if err != nil || perr != nil || back != x || m != len(enc) || m != VarintLen(x) {
			t.Fatalf("%d encodes to %x (%v), decodes to %d in %d bytes (%v)", x, enc, err, back, m, perr)
		}
	})
}

// FuzzParseAuth checks that any challenge or answer that parses marshals
// back to the same bytes (reserved fields aside), and that no input parses
// as both.
func FuzzParseAuth(f *testing.F) {
	f.Add(MarshalAuthChallenge(1, AuthChallenge{Required: true}))
	f.Add(MarshalAuthAnswer(2, NewAuthProof("t", []byte("tcp"))))
	f.Add([]byte{0x80, 204, 0, 11, 0, 0, 0, 1, 'R', 'P', 'L', 'A'})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, cerr := ParseAuthChallenge(b)
		ssrc, p, aerr := ParseAuthAnswer(b)
		switch {
		case cerr == nil && aerr == nil:
			t.Fatal("parsed as a challenge and as an answer")
		case cerr == nil:
			want := slices.Clone(b)
			want[13] &= authFlagRequired
			want[14], want[15] = 0, 0
			if got := MarshalAuthChallenge(binary.BigEndian.Uint32(b[4:]), c); !bytes.Equal(got, want) {
				t.Fatalf("challenge round trip:\n got  % x\n want % x", got, want)
			}
		case aerr == nil:
			want := slices.Clone(b)
			want[13], want[14], want[15] = 0, 0, 0
			if got := MarshalAuthAnswer(ssrc, p); !bytes.Equal(got, want) {
				t.Fatalf("answer round trip:\n got  % x\n want % x", got, want)
			}
		}
	})
}
