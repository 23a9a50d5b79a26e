package framer

import (
	"encoding/binary"
	"fmt"
	"io"
)

// inbuf holds the bytes a stream has delivered that are not yet returned as
// packets: b[r:]. It grows only by what it is handed; free compacts it, so
// that a reader that takes every whole packet before handing in more holds
// at most one partial packet plus one read.
type inbuf struct {
	b []byte
	r int // start of the unparsed bytes
}

// free returns n bytes of space after the buffered bytes, for a read to
// fill. It invalidates slices of b that the caller holds.
func (s *inbuf) free(n int) []byte {
	if n < 0 {
		panic("framer: negative Free")
	}
	if s.r == len(s.b) {
		s.b, s.r = s.b[:0], 0
	}
	if cap(s.b)-len(s.b) < n && s.r > 0 {
		s.b = s.b[:copy(s.b, s.b[s.r:])]
		s.r = 0
	}
	if need := len(s.b) + n; cap(s.b) < need {
		nb := make([]byte, len(s.b), max(need, 2*cap(s.b)))
		copy(nb, s.b)
		s.b = nb
	}
	return s.b[len(s.b) : len(s.b)+n]
}

// commit adds n bytes, written into the space free returned, to the
// buffered bytes.
func (s *inbuf) commit(n int) {
	if n < 0 || len(s.b)+n > cap(s.b) {
		panic("framer: Commit beyond the space Free returned")
	}
	s.b = s.b[:len(s.b)+n]
}

func (s *inbuf) feed(p []byte) {
	s.commit(copy(s.free(len(p)), p))
}

func (s *inbuf) unread() []byte { return s.b[s.r:] }

func (s *inbuf) consume(n int) { s.r += n }

func (s *inbuf) reset() { s.b, s.r = s.b[:0], 0 }

// truncated is the error for a stream that ended after n bytes of a packet.
func truncated(n int) error {
	return fmt.Errorf("framer: stream ended %d bytes into a packet: %w", n, io.ErrUnexpectedEOF)
}

// Deframer splits an RFC 4571 byte stream into packets as its bytes arrive,
// for readers that must not block. Hand it bytes with Feed, or read straight
// into it with Free and Commit; then call Next until it returns no packet.
// A Deframer that is drained this way holds at most one partial packet
// (MaxPacketSize+1 bytes) besides the bytes of the next hand-in, and needs
// no allocation in steady state. The zero value is ready to use. A Deframer
// is not safe for concurrent use.
type Deframer struct {
	in inbuf
}

// Feed appends a copy of p to the bytes not yet returned as packets.
func (d *Deframer) Feed(p []byte) { d.in.feed(p) }

// Free returns n bytes of space for a read to fill, to be followed by
// Commit with the number of bytes read: this hands in bytes without the
// copy Feed makes. Free invalidates the packets Next returned before.
func (d *Deframer) Free(n int) []byte { return d.in.free(n) }

// Commit hands in the first n bytes of the space the last Free returned.
// It panics if n is negative or larger than that space.
func (d *Deframer) Commit(n int) { d.in.commit(n) }

// Buffered returns the number of bytes handed in and not yet returned as
// packets.
func (d *Deframer) Buffered() int { return len(d.in.unread()) }

// Reset discards the buffered bytes, as for a new stream.
func (d *Deframer) Reset() { d.in.reset() }

// Next returns the next whole packet, or nil and no error when the bytes
// handed in so far hold none. The packet is a slice of the Deframer's
// buffer, valid until the next Feed, Free or Reset. A zero length gives
// ErrEmptyPacket; the length is consumed, so the caller may go on calling
// Next or treat the stream as broken.
func (d *Deframer) Next() ([]byte, error) {
	b := d.in.unread()
	if len(b) < 2 {
		return nil, nil
	}
	n := int(binary.BigEndian.Uint16(b))
	if n == 0 {
		d.in.consume(2)
		return nil, ErrEmptyPacket
	}
	if len(b) < 2+n {
		return nil, nil
	}
	d.in.consume(2 + n)
	return b[2 : 2+n : 2+n], nil
}

// End tells whether a stream that has ended did so between packets: it
// returns nil if no bytes are buffered, and an error wrapping
// io.ErrUnexpectedEOF if the stream ended inside a packet. Call it once
// Next has returned no packet.
func (d *Deframer) End() error {
	if n := d.Buffered(); n > 0 {
		return truncated(n)
	}
	return nil
}

// packetStream is a push-style de-framer that a puller can drive.
type packetStream interface {
	Next() ([]byte, error)
	Free(n int) []byte
	Commit(n int)
	End() error
}

// readSize is how much one read of a blocking reader asks for.
const readSize = 16 << 10

// maxEmptyReads is how many reads in a row may return nothing and no error
// before a blocking reader gives up with io.ErrNoProgress.
const maxEmptyReads = 100

// puller feeds a packetStream from an io.Reader, for the blocking readers.
type puller struct {
	r     io.Reader
	err   error // the last read's error, returned once its bytes are parsed
	empty int   // reads in a row that returned nothing
}

// next blocks until ps has a whole packet or an error and returns it.
func (p *puller) next(ps packetStream) ([]byte, error) {
	for {
		if pkt, err := ps.Next(); pkt != nil || err != nil {
			return pkt, err
		}
		if err := p.more(ps); err != nil {
			return nil, err
		}
	}
}

// more reads once from r into ps. If the previous read failed, it returns
// that read's error instead (at the end of the stream, io.EOF or what
// ps.End says of a stream that ends here) and clears it, so that a reader
// whose error was transient, such as a deadline, can be read again.
func (p *puller) more(ps packetStream) error {
	if err := p.err; err != nil {
		p.err = nil
		if err == io.EOF {
			if end := ps.End(); end != nil {
				return end
			}
		}
		return err
	}
	n, err := p.r.Read(ps.Free(readSize))
	ps.Commit(n)
	p.err = err
	if n > 0 || err != nil {
		p.empty = 0
		return nil
	}
	if p.empty++; p.empty >= maxEmptyReads {
		p.empty = 0
		return io.ErrNoProgress
	}
	return nil
}
