package framer

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/pion/rtcp"
)

// Errors returned by the RTCP helpers.
var (
	ErrBadRTCP      = errors.New("framer: malformed RTCP packet")
	ErrBadName      = errors.New("framer: invalid stream name")
	ErrNoStreamName = errors.New("framer: no stream name for SSRC")
	ErrNoStreamMode = errors.New("framer: no stream mode for SSRC")
)

// MaxStreamNameLen is the longest stream name, in bytes.
const MaxStreamNameLen = 64

// MarshalPLI returns an RTCP Picture Loss Indication (RFC 4585 section
// 6.3.1) from senderSSRC asking the sender of mediaSSRC for a keyframe.
func MarshalPLI(senderSSRC, mediaSSRC uint32) []byte {
	b, err := rtcp.PictureLossIndication{SenderSSRC: senderSSRC, MediaSSRC: mediaSSRC}.Marshal()
	if err != nil {
		// A PLI has a fixed layout; marshalling it cannot fail.
		panic("framer: marshalling PLI: " + err.Error())
	}
	return b
}

// MarshalFIR returns an RTCP Full Intra Request (RFC 5104 section 4.3.1)
// from senderSSRC asking the sender of mediaSSRC for a keyframe. seq is the
// command sequence number: the requester increments it for each new
// request and repeats it when it retransmits one.
func MarshalFIR(senderSSRC, mediaSSRC uint32, seq uint8) []byte {
	b, err := rtcp.FullIntraRequest{
		SenderSSRC: senderSSRC,
		MediaSSRC:  mediaSSRC,
		FIR:        []rtcp.FIREntry{{SSRC: mediaSSRC, SequenceNumber: seq}},
	}.Marshal()
	if err != nil {
		// A FIR with one entry has a fixed layout; marshalling it cannot fail.
		panic("framer: marshalling FIR: " + err.Error())
	}
	return b
}

// MarshalBye returns an RTCP BYE (RFC 3550 section 6.6) from ssrc with
// reason, cut to its first 255 bytes (at a UTF-8 boundary): the viewer
// says with it why it ends a sender's connection.
func MarshalBye(ssrc uint32, reason string) []byte {
	if len(reason) > 255 {
		cut := 255
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	b, err := rtcp.Goodbye{Sources: []uint32{ssrc}, Reason: reason}.Marshal()
	if err != nil {
		// One source and at most 255 bytes of reason always marshal.
		panic("framer: marshalling BYE: " + err.Error())
	}
	return b
}

// ByeReason returns the reason of the first BYE among pkts, as returned by
// ParseControl; ok is false if there is no BYE.
func ByeReason(pkts []rtcp.Packet) (reason string, ok bool) {
	for _, p := range pkts {
		if bye, isBye := p.(*rtcp.Goodbye); isBye {
			return bye.Reason, true
		}
	}
	return "", false
}

// ParseControl parses a compound (or reduced-size) RTCP packet into its
// parts. Packet types this package does not know come back as
// *rtcp.RawPacket. A packet over 65535 bytes, one whose first packet type
// is not RTCP (see IsRTCP), or one that does not parse gives an error
// wrapping ErrBadRTCP. ParseControl does not panic on any
// input.
func ParseControl(pkt []byte) (pkts []rtcp.Packet, err error) {
	switch {
	case len(pkt) > MaxPacketSize:
		return nil, fmt.Errorf("%w: %d bytes", ErrBadRTCP, len(pkt))
	case len(pkt) > 0 && !IsRTCP(pkt):
		return nil, fmt.Errorf("%w: not an RTCP packet type", ErrBadRTCP)
	}
	// The RTCP parser comes from another module; contain any panic it might
	// have on hostile input rather than let a peer take the process down.
	defer func() {
		if r := recover(); r != nil {
			pkts, err = nil, fmt.Errorf("%w: parser panic: %v", ErrBadRTCP, r)
		}
	}()
	pkts, err = rtcp.Unmarshal(pkt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRTCP, err)
	}
	return pkts, nil
}

// WantsKeyframe reports whether pkts, as returned by ParseControl, ask the
// sender of mediaSSRC for a keyframe: a PLI for mediaSSRC, or a FIR with an
// entry for it.
func WantsKeyframe(pkts []rtcp.Packet, mediaSSRC uint32) bool {
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.PictureLossIndication:
			if p.MediaSSRC == mediaSSRC {
				return true
			}
		case *rtcp.FullIntraRequest:
			for _, e := range p.FIR {
				if e.SSRC == mediaSSRC {
					return true
				}
			}
		}
	}
	return false
}

// MarshalSDES returns an RTCP Source Description packet (RFC 3550 section
// 6.5) for ssrc carrying cname as CNAME, the stream name as NAME and, when
// mode is not empty, the sender's buffer policy as NOTE (such as
// "replenish=15ms": text for people, which the viewer shows as it is). It
// returns an error wrapping ErrBadName if the name or the mode fails
// ValidateStreamName (a CNAME may be up to 255 bytes).
func MarshalSDES(ssrc uint32, cname, name, mode string) ([]byte, error) {
	if err := validateText(cname, 255); err != nil {
		return nil, fmt.Errorf("CNAME: %w", err)
	}
	if err := ValidateStreamName(name); err != nil {
		return nil, err
	}
	items := []rtcp.SourceDescriptionItem{
		{Type: rtcp.SDESCNAME, Text: cname},
		{Type: rtcp.SDESName, Text: name},
	}
	if mode != "" {
		if err := ValidateStreamName(mode); err != nil {
			return nil, fmt.Errorf("mode: %w", err)
		}
		items = append(items, rtcp.SourceDescriptionItem{Type: rtcp.SDESNote, Text: mode})
	}
	sdes := rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: ssrc, Items: items}}}
	b, err := sdes.Marshal()
	if err != nil {
		return nil, fmt.Errorf("framer: marshalling SDES: %w", err)
	}
	return b, nil
}

// StreamName returns the NAME item for ssrc from the SDES packets among
// pkts, as returned by ParseControl. It returns ErrNoStreamName if there is
// none, and an error wrapping ErrBadName if the name is not valid.
func StreamName(pkts []rtcp.Packet, ssrc uint32) (string, error) {
	name, ok, err := sdesItem(pkts, ssrc, rtcp.SDESName)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w %08x", ErrNoStreamName, ssrc)
	}
	return name, nil
}

// StreamMode returns the sender's mode, the NOTE item for ssrc, from the
// SDES packets among pkts, as returned by ParseControl. It returns
// ErrNoStreamMode if there is none, and an error wrapping ErrBadName if
// the text fails ValidateStreamName.
func StreamMode(pkts []rtcp.Packet, ssrc uint32) (string, error) {
	mode, ok, err := sdesItem(pkts, ssrc, rtcp.SDESNote)
	if err != nil {
		return "", fmt.Errorf("mode: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("%w %08x", ErrNoStreamMode, ssrc)
	}
	return mode, nil
}

// sdesItem returns the first item of type typ for ssrc among the SDES
// packets in pkts, checked with ValidateStreamName; ok is false if there
// is none.
func sdesItem(pkts []rtcp.Packet, ssrc uint32, typ rtcp.SDESType) (text string, ok bool, err error) {
	for _, p := range pkts {
		sdes, isSDES := p.(*rtcp.SourceDescription)
		if !isSDES {
			continue
		}
		for _, c := range sdes.Chunks {
			if c.Source != ssrc {
				continue
			}
			for _, it := range c.Items {
				if it.Type != typ {
					continue
				}
				if err := ValidateStreamName(it.Text); err != nil {
					return "", false, err
				}
				return it.Text, true, nil
			}
		}
	}
	return "", false, nil
}

// ValidateStreamName checks that name can name a stream (or state its
// mode): 1 to 64 bytes of UTF-8 without control characters, and not "." or
// "..", which a URL resolves away: the viewer's page fetches whep/<name>,
// and whep/.. is the viewer's root. Its error wraps ErrBadName.
func ValidateStreamName(name string) error {
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q is a path segment that URLs resolve away", ErrBadName, name)
	}
	return validateText(name, MaxStreamNameLen)
}

func validateText(s string, maxLen int) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(s) > maxLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrBadName, len(s), maxLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: not UTF-8", ErrBadName)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: control character %U", ErrBadName, r)
		}
	}
	return nil
}
