package viewer

import "replenish/framer"

// chain follows one connection's frames by RTP sequence number and tells
// which of them a decoder can use. A frame is lost when the transport says
// so (its QUIC stream was reset) or when sequence numbers skip (a frame
// dropped unsent, or one the assembler discarded). After a loss every
// delta frame depends, directly or not, on the lost one, so none can be
// decoded until the next keyframe. Over TCP, and over one QUIC stream,
// nothing is ever lost and the chain never breaks.
//
// It is a pure function of the events it is given and is not safe for
// concurrent use. The zero value expects a first frame.
type chain struct {
	started bool
	ssrc    uint32
	next    uint16 // sequence number the next frame should start at
	broken  bool   // a frame was lost since the last keyframe
	known   int    // losses the transport reported since the last frame
}

// verdict is what chain.frame decides for one frame.
type verdict struct {
	// lost counts the frames found missing just before this one: a gap
	// in sequence numbers counts as one frame (the numbers do not tell
	// how many frames there were), unless the transport already reported
	// the loss.
	lost int
	// undecodable says the frame depends on a frame the decoder never
	// had: it must not reach a decoder.
	undecodable bool
}

// lostFrame records a frame the transport knows did not arrive whole.
func (c *chain) lostFrame() {
	c.broken = true
	c.known++
}

// frame records a frame that arrived whole and says whether it can be
// decoded. A frame older than one already seen (late, or repeated) cannot
// be: the decoder has moved on. The first frame, or the first of a new
// SSRC, can be only if it is a keyframe.
func (c *chain) frame(f *framer.Frame) verdict {
	var v verdict
	switch {
	case !c.started || f.SSRC != c.ssrc:
		c.broken = !f.Key
	default:
		d := int16(f.FirstSeq - c.next) // serial number arithmetic (RFC 1982)
		if d < 0 {
			return verdict{undecodable: true}
		}
		if d > 0 {
			if c.known == 0 {
				v.lost = 1
			}
			c.broken = true
		}
	}
	c.started, c.ssrc, c.known = true, f.SSRC, 0
	c.next = f.FirstSeq + uint16(f.Packets)
	if f.Key {
		c.broken = false
	}
	v.undecodable = c.broken
	return v
}
