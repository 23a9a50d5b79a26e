package quic

import (
	"math"
	"time"
)

// shareTime is the time constant over which the stream's share of the bytes
// sent is averaged.
const shareTime = time.Second

// streamShare turns the bytes quic-go reports delivered, whole packets with
// their QUIC headers, AEAD tags and ACK-only packets, into the stream bytes
// they carried, so that the drain rate is in the units of the backlog it
// drains and of the rate the sender writes. At 100 kb/s a frame is one
// packet and the headers are 5 to 8% of it: counted in, the drain rate
// overstates what the stream can send by more than the controller's margin
// below its capacity estimate (cruiseGain), and it would cruise with a
// queue building.
//
// The share is the stream bytes packetized over the bytes sent less those
// declared lost, both counted from quic-go's own figures, averaged over
// shareTime; it follows a change of rate (and so of packet size) within a
// second. Delivered bytes lag sent ones by a round trip, which the average
// spans on the paths it matters for. Lost packets leave the denominator
// because their stream bytes are packetized again without counting as
// packetized anew: over all bytes sent, the share fell by the
// retransmissions' part while quic-go repaired a loss, and the drain rate
// with it, though the path carried as much. A start at 1 Mb/s on a
// 100 kb/s path overflows the bottleneck's buffer, and the repair took
// seconds; the drain rate read 24 to 55 kb/s, and the controller cut to
// it, twice.
type streamShare struct {
	at              time.Time // the last update; zero before the first
	packed, sent    int64     // the counters at the last update
	delivered       int64     // packet bytes delivered at the last update
	sumPacked       float64   // decayed sums of their increments
	sumSent         float64
	streamDelivered float64 // stream bytes delivered since the first update
}

// update takes quic-go's counters at now: packed, the stream bytes
// packetized; sent and lost, the packet bytes sent and declared lost;
// delivered, the packet bytes acknowledged. It returns the stream bytes delivered since the first
// update, which never decreases. The first update sets the baselines (the
// handshake carries no stream bytes) and returns 0.
func (sh *streamShare) update(now time.Time, packed, sent, lost, delivered int64) uint64 {
	sent -= lost
	if sh.at.IsZero() {
		sh.at, sh.packed, sh.sent, sh.delivered = now, packed, sent, delivered
		return 0
	}
	decay := math.Exp(-max(now.Sub(sh.at), 0).Seconds() / shareTime.Seconds())
	sh.sumPacked = sh.sumPacked*decay + float64(max(packed-sh.packed, 0))
	sh.sumSent = sh.sumSent*decay + float64(max(sent-sh.sent, 0))
	sh.streamDelivered += float64(max(delivered-sh.delivered, 0)) * sh.share()
	sh.at, sh.packed, sh.sent = now, packed, sent
	sh.delivered = max(sh.delivered, delivered)
	return uint64(sh.streamDelivered)
}

// share returns the stream's share of the bytes sent, averaged; 1 before
// anything was sent.
func (sh *streamShare) share() float64 {
	if sh.sumSent <= 0 {
		return 1
	}
	return min(sh.sumPacked/sh.sumSent, 1)
}
