package framer

import (
	"fmt"
	"io"
)

// RoQ (RTP over QUIC, draft-ietf-avtcore-rtp-over-quic) carries RTP and
// RTCP packets in QUIC streams and DATAGRAMs. Every unidirectional stream
// and every datagram starts with a flow identifier, a QUIC variable-length
// integer that names the RTP session the rest belongs to. A stream then
// carries any number of packets, each preceded by its length as a
// variable-length integer; a datagram carries exactly one packet, with no
// length. RTP and RTCP of one session may share a flow identifier and are
// then told apart as RFC 5761 says (IsRTCP), as over TCP.

// RoQALPN is the ALPN token the draft registers for RoQ. The draft reserves
// it for implementations of the published RFC: until then an implementation
// identifies itself with "roq-" and the number of the draft it implements
// (draft 09 is "roq-09"), so both ends must also agree on that token.
const RoQALPN = "roq"

// RoQSessionFlow is the flow identifier this project gives its one RTP
// session, in both directions and for RTP and RTCP alike (demultiplexed
// with IsRTCP): the smallest identifier, which encodes in one byte. The
// draft leaves the association to configuration or signalling.
const RoQSessionFlow uint64 = 0

// RoQErrorCode is an application error code of RoQ, for QUIC's
// CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING frames.
type RoQErrorCode uint64

// The error codes the draft defines.
const (
	RoQNoError             RoQErrorCode = 0x00 // closing without an error
	RoQGeneralError        RoQErrorCode = 0x01 // no more specific code applies
	RoQInternalError       RoQErrorCode = 0x02 // an error inside the RoQ stack
	RoQPacketError         RoQErrorCode = 0x03 // invalid payload: bad length, bad flow identifier, not RTP
	RoQStreamCreationError RoQErrorCode = 0x04 // the peer opened a stream RoQ forbids, e.g. bidirectional
	RoQFrameCancelled      RoQErrorCode = 0x05 // a media frame's stream is abandoned; newer frames follow on new streams
	RoQUnknownFlowID       RoQErrorCode = 0x06 // a flow identifier the endpoint cannot associate
	RoQExpectationUnmet    RoQErrorCode = 0x07 // the connection does not meet what signalling set up
)

var roqErrorNames = [...]string{
	"ROQ_NO_ERROR", "ROQ_GENERAL_ERROR", "ROQ_INTERNAL_ERROR", "ROQ_PACKET_ERROR",
	"ROQ_STREAM_CREATION_ERROR", "ROQ_FRAME_CANCELLED", "ROQ_UNKNOWN_FLOW_ID",
	"ROQ_EXPECTATION_UNMET",
}

// String returns the code's name in the draft, e.g. "ROQ_PACKET_ERROR".
func (c RoQErrorCode) String() string {
	if c < RoQErrorCode(len(roqErrorNames)) {
		return roqErrorNames[c]
	}
	return fmt.Sprintf("ROQ_ERROR(%#x)", uint64(c))
}

// AppendRoQStreamHeader appends what a RoQ stream starts with: the flow
// identifier. A flow larger than MaxVarint gives ErrVarintRange.
func AppendRoQStreamHeader(dst []byte, flow uint64) ([]byte, error) {
	return AppendVarint(dst, flow)
}

// AppendRoQPacket appends pkt to dst preceded by its length as a
// variable-length integer, as a RoQ stream carries it after its header. It
// returns ErrEmptyPacket, or ErrPacketTooLarge for a packet larger than
// MaxPacketSize: the largest a RoQReader accepts.
func AppendRoQPacket(dst, pkt []byte) ([]byte, error) {
	if err := checkPacket(pkt); err != nil {
		return dst, err
	}
	dst, _ = AppendVarint(dst, uint64(len(pkt))) // at most MaxPacketSize
	return append(dst, pkt...), nil
}

// AppendRoQDatagram appends a RoQ datagram to dst: the flow identifier and
// then pkt. It returns ErrVarintRange for a flow larger than MaxVarint and
// ErrEmptyPacket or ErrPacketTooLarge for a packet it cannot carry.
func AppendRoQDatagram(dst []byte, flow uint64, pkt []byte) ([]byte, error) {
	if err := checkPacket(pkt); err != nil {
		return dst, err
	}
	out, err := AppendVarint(dst, flow)
	if err != nil {
		return dst, err
	}
	return append(out, pkt...), nil
}

// ParseRoQDatagram splits a RoQ datagram into its flow identifier and its
// packet, which is a slice of b. A datagram too short for its flow
// identifier gives ErrVarintTruncated; one with nothing after it,
// ErrEmptyPacket; one with a packet over MaxPacketSize, ErrPacketTooLarge.
func ParseRoQDatagram(b []byte) (flow uint64, pkt []byte, err error) {
	flow, n, err := ParseVarint(b)
	if err != nil {
		return 0, nil, err
	}
	if err := checkPacket(b[n:]); err != nil {
		return 0, nil, err
	}
	return flow, b[n:], nil
}

// RoQDeframer splits a RoQ stream into its flow identifier and packets as
// its bytes arrive, for readers that must not block; it is used as a
// Deframer is. It rejects a length over MaxPacketSize as soon as the length
// arrives, and holds at most one partial packet (MaxPacketSize+7 bytes)
// besides the bytes of the next hand-in once Next has returned no packet.
// The zero value is ready for a new stream. A RoQDeframer is not safe for
// concurrent use.
type RoQDeframer struct {
	in      inbuf
	flow    uint64
	hasFlow bool
	err     error // a length over MaxPacketSize; the stream cannot go on
}

// Feed appends a copy of p to the bytes not yet parsed.
func (d *RoQDeframer) Feed(p []byte) { d.in.feed(p) }

// Free returns n bytes of space for a read to fill, to be followed by
// Commit with the number of bytes read. It invalidates the packets Next
// returned before.
func (d *RoQDeframer) Free(n int) []byte { return d.in.free(n) }

// Commit hands in the first n bytes of the space the last Free returned.
// It panics if n is negative or larger than that space.
func (d *RoQDeframer) Commit(n int) { d.in.commit(n) }

// Buffered returns the number of bytes handed in and not yet parsed.
func (d *RoQDeframer) Buffered() int { return len(d.in.unread()) }

// Reset discards the buffered bytes, the flow identifier and any error, as
// for a new stream.
func (d *RoQDeframer) Reset() { *d = RoQDeframer{in: d.in}; d.in.reset() }

// Flow returns the stream's flow identifier, and false if the bytes handed
// in so far do not hold all of it.
func (d *RoQDeframer) Flow() (uint64, bool) {
	if !d.hasFlow {
		v, n, err := ParseVarint(d.in.unread())
		if err != nil {
			return 0, false
		}
		d.in.consume(n)
		d.flow, d.hasFlow = v, true
	}
	return d.flow, true
}

// Next returns the next whole packet, or nil and no error when the bytes
// handed in so far hold none (the flow identifier is taken first; see
// Flow). The packet is a slice of the RoQDeframer's buffer, valid until the
// next Feed, Free or Reset. A zero length gives ErrEmptyPacket and is
// consumed, so the caller may go on; a length over MaxPacketSize gives an
// error wrapping ErrPacketTooLarge, and so does every later call.
func (d *RoQDeframer) Next() ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	if _, ok := d.Flow(); !ok {
		return nil, nil
	}
	b := d.in.unread()
	v, h, err := ParseVarint(b)
	switch {
	case err != nil:
		return nil, nil
	case v == 0:
		d.in.consume(h)
		return nil, ErrEmptyPacket
	case v > MaxPacketSize:
		d.err = fmt.Errorf("framer: RoQ packet length %d: %w", v, ErrPacketTooLarge)
		return nil, d.err
	}
	n := int(v)
	if len(b)-h < n {
		return nil, nil
	}
	d.in.consume(h + n)
	return b[h : h+n : h+n], nil
}

// End tells whether a stream that has ended did so between packets: nil if
// it did, an error wrapping io.ErrUnexpectedEOF if it ended before its flow
// identifier was whole or inside a packet, and the error Next gave if a
// length was too large. Call it once Next has returned no packet.
func (d *RoQDeframer) End() error {
	switch _, ok := d.Flow(); {
	case d.err != nil:
		return d.err
	case !ok:
		return fmt.Errorf("framer: RoQ stream ended before its flow identifier: %w", io.ErrUnexpectedEOF)
	}
	if n := d.Buffered(); n > 0 {
		return truncated(n)
	}
	return nil
}

// RoQReader reads a RoQ stream: a RoQDeframer fed by blocking reads. Like
// Reader it reads ahead, so nothing else may read from the same stream. A
// RoQReader is not safe for concurrent use.
type RoQReader struct {
	src puller
	d   RoQDeframer
}

// NewRoQReader returns a RoQReader that reads a RoQ stream from r, which
// must deliver the stream from its first byte.
func NewRoQReader(r io.Reader) *RoQReader {
	return &RoQReader{src: puller{r: r}}
}

// FlowID blocks until it has read the stream's flow identifier and returns
// it. A stream that ends first gives an error wrapping
// io.ErrUnexpectedEOF.
func (r *RoQReader) FlowID() (uint64, error) {
	for {
		if id, ok := r.d.Flow(); ok {
			return id, nil
		}
		if err := r.src.more(&r.d); err != nil {
			return 0, err
		}
	}
}

// ReadPacket blocks until it has one whole packet and returns it, reading
// the flow identifier first if FlowID has not. The returned slice is valid
// until the next call. It returns io.EOF at a clean end of stream, an error
// wrapping io.ErrUnexpectedEOF at an end inside a packet or before the
// flow identifier, ErrEmptyPacket for a zero length (the stream may be read
// on), and an error wrapping ErrPacketTooLarge for a length over
// MaxPacketSize (then on every call). Other errors of the underlying reader
// are returned as Reader returns them.
func (r *RoQReader) ReadPacket() ([]byte, error) {
	return r.src.next(&r.d)
}
