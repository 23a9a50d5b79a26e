package webrtc

import (
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"replenish/framer"
)

// moveCaptureTime moves the abs-capture-time extension of h from the
// packetizer's ID (framer.AbsCaptureTimeID) to the negotiated one, or
// removes it if none was negotiated (to = 0): an extension under an ID the
// peer did not agree to could be read as another extension. It does
// nothing to a header without the extension.
func moveCaptureTime(h *rtp.Header, to uint8) error {
	from := uint8(framer.AbsCaptureTimeID)
	if to == from {
		return nil
	}
	payload := h.GetExtension(from)
	if payload == nil {
		return nil
	}
	if err := h.DelExtension(from); err != nil {
		return err
	}
	if to == 0 {
		return nil
	}
	profile := uint16(rtp.ExtensionProfileOneByte)
	if to > 14 {
		profile = rtp.ExtensionProfileTwoByte
	}
	if !h.Extension { // else pion picks the profile from the payload's size alone
		h.Extension, h.ExtensionProfile = true, profile
	}
	return h.SetExtensionWithProfile(to, payload, profile)
}

// toWire gives the sender's RTCP packets the SSRC on the wire: SDES chunks
// and APP packets (the RPLN timing report) that name the packetizer's SSRC
// (ours) name the track's (wire) instead. Other packets are left alone.
func toWire(pkts []rtcp.Packet, ours, wire uint32) {
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.SourceDescription:
			for i := range p.Chunks {
				if p.Chunks[i].Source == ours {
					p.Chunks[i].Source = wire
				}
			}
		case *rtcp.ApplicationDefined:
			if p.SSRC == ours {
				p.SSRC = wire
			}
		}
	}
}

// keyframeRequests returns the PLI and FIR among pkts, those that name the
// SSRC on the wire rewritten to name ours, so that the sender recognises
// them (framer.WantsKeyframe). It returns nil if there are none.
func keyframeRequests(pkts []rtcp.Packet, wire, ours uint32) []rtcp.Packet {
	var out []rtcp.Packet
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.PictureLossIndication:
			q := *p
			if q.MediaSSRC == wire {
				q.MediaSSRC = ours
			}
			out = append(out, &q)
		case *rtcp.FullIntraRequest:
			q := *p
			q.FIR = append([]rtcp.FIREntry(nil), p.FIR...)
			if q.MediaSSRC == wire {
				q.MediaSSRC = ours
			}
			for i := range q.FIR {
				if q.FIR[i].SSRC == wire {
					q.FIR[i].SSRC = ours
				}
			}
			out = append(out, &q)
		}
	}
	return out
}

// ntpEpochOffset is the number of seconds from 1900 (NTP's epoch) to 1970.
const ntpEpochOffset = 2208988800

// ntp32 returns the middle 32 bits of t's NTP timestamp: seconds and
// fraction in 16.16 fixed point, as RTCP's LSR and DLSR count.
func ntp32(t time.Time) uint32 {
	secs := uint64(t.Unix() + ntpEpochOffset)
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return uint32((secs<<32 | frac) >> 16)
}

// reportRTT returns the round trip a reception report measures (RFC 3550
// section 6.4.1): the time now, less when the report's sender received our
// last sender report (lsr), less how long it held it (dlsr). ok is false
// when the report has no sender report to refer to or the result is not
// positive.
func reportRTT(now time.Time, lsr, dlsr uint32) (rtt time.Duration, ok bool) {
	if lsr == 0 {
		return 0, false
	}
	v := ntp32(now) - lsr - dlsr
	if v == 0 || v >= 1<<31 {
		return 0, false
	}
	return time.Duration(uint64(v) * uint64(time.Second) >> 16), true
}
