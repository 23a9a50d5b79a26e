package framer

// IsRTCP reports whether pkt, read from a connection that carries both RTP
// and RTCP, is RTCP. Following RFC 5761 section 4, it looks only at the
// second octet: RTCP packet types 192 to 223 occupy the range that RTP
// payload types 64 to 95 would, with the marker bit masked off. A packet
// shorter than two bytes is not RTCP.
func IsRTCP(pkt []byte) bool {
	if len(pkt) < 2 {
		return false
	}
	pt := pkt[1] & 0x7F
	return pt >= 64 && pt <= 95
}
