package quic

import (
	"math"
	"testing"
	"time"
)

// shareRun is a connection that sends one packet of pkt bytes carrying
// data stream bytes every interval, each acknowledged a round trip later,
// and feeds its counters to a streamShare: got is what the share reports
// delivered, streamAcked what really was.
type shareRun struct {
	sh                  streamShare
	now                 time.Time
	packed, sent, acked int64
	streamAcked         int64
	inFlight            []sentPacket // oldest first
	interval, rtt       time.Duration
	got                 uint64
}

// sentPacket is one in flight: its stream bytes and its bytes on the wire.
type sentPacket struct{ data, size int64 }

func (r *shareRun) run(d time.Duration, pkt, data int64) {
	per := int(r.rtt / r.interval)
	for end := r.now.Add(d); r.now.Before(end); r.now = r.now.Add(r.interval) {
		r.packed += data
		r.sent += pkt
		r.inFlight = append(r.inFlight, sentPacket{data, pkt})
		if len(r.inFlight) > per {
			r.streamAcked += r.inFlight[0].data
			r.acked += r.inFlight[0].size
			r.inFlight = r.inFlight[1:]
		}
		r.got = r.sh.update(r.now, r.packed, r.sent, 0, r.acked)
	}
}

func TestStreamShare(t *testing.T) {
	r := &shareRun{now: time.Unix(0, 0), interval: 100 * time.Millisecond, rtt: 200 * time.Millisecond}
	// The handshake: 4 kB sent and delivered, no stream bytes.
	r.sent, r.acked = 4000, 4000
	if got := r.sh.update(r.now, 0, r.sent, 0, r.acked); got != 0 {
		t.Fatalf("first update = %d, want 0", got)
	}
	base := r.acked
	// 100 kb/s at 10 fps: 1250-byte packets carrying 1180 stream bytes.
	r.run(10*time.Second, 1250, 1180)
	want := float64(r.streamAcked)
	if math.Abs(float64(r.got)-want) > 0.01*want {
		t.Errorf("after 10 s: %d stream bytes delivered, want %.0f (packet bytes %d)", r.got, want, r.acked-base)
	}
	// Smaller packets: the headers' share grows; the delivered stream
	// bytes over the next second follow within 3%.
	r.run(3*time.Second, 300, 230)
	before, streamBefore := r.got, r.streamAcked
	r.run(time.Second, 300, 230)
	if got, want := float64(r.got-before), float64(r.streamAcked-streamBefore); math.Abs(got-want) > 0.03*want {
		t.Errorf("after the packet size changed: %.0f stream bytes delivered in a second, want %.0f", got, want)
	}
	// A spurious loss taken back lowers the delivered packet bytes for a
	// moment: the stream bytes delivered never go down.
	prev := r.got
	if got := r.sh.update(r.now, r.packed, r.sent, 0, r.acked-5000); got < prev {
		t.Errorf("delivered went down from %d to %d", prev, got)
	}
	if s := r.sh.share(); s <= 0.7 || s >= 0.8 {
		t.Errorf("share = %.3f, want 230/300", s)
	}
}

// TestStreamShareRetransmissions: while quic-go repairs a loss, packets
// carry stream bytes packetized before, which packed does not count again.
// Counted over the bytes sent less those lost, the share stays the stream's share of a packet, and the delivered stream
// bytes follow the packets the path delivered.
func TestStreamShareRetransmissions(t *testing.T) {
	r := &shareRun{now: time.Unix(0, 0), interval: 100 * time.Millisecond, rtt: 200 * time.Millisecond}
	r.sh.update(r.now, 0, 0, 0, 0)
	r.run(5*time.Second, 1250, 1180)
	// For a second, every interval one new packet is lost and the data of
	// an earlier lost one is sent again and delivered.
	var lost int64
	before, ackedBefore := r.got, r.acked
	for end := r.now.Add(time.Second); r.now.Before(end); r.now = r.now.Add(r.interval) {
		r.packed += 1180
		r.sent += 2 * 1250
		lost += 1250
		r.acked += 1250
		r.got = r.sh.update(r.now, r.packed, r.sent, lost, r.acked)
	}
	if s := r.sh.share(); math.Abs(s-1180.0/1250) > 0.01 {
		t.Errorf("share = %.3f after a second of retransmissions, want 1180/1250", s)
	}
	got, want := float64(r.got-before), float64(r.acked-ackedBefore)*1180/1250
	if math.Abs(got-want) > 0.03*want {
		t.Errorf("a second of retransmissions: %.0f stream bytes delivered, want %.0f", got, want)
	}
}
