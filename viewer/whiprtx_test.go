package viewer

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
)

// A retransmission comes far behind the newest packet: at 10 Mb/s the
// answer to a NACK comes a round trip and a queue later, hundreds of
// packets on. The WHIP side's SRTP must let it through (pion's default
// replay window, 64 packets, rejects it as a replay), and the reorder
// buffer puts it in its place: every packet comes out, in order, and
// nothing is given up.
func TestWHIPLinkTakesLateRetransmission(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	api, err := newRTCAPI(true, log)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := api.NewPeerConnection(pion.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	// The wait bounds how long the packets behind the missing one are
	// held; the retransmission comes long before it on loopback.
	link := newWHIPLink(pc, "publisher", waitLimit/3, log)
	t.Cleanup(func() { link.close(nil); link.wait() })
	track := publishTo(t, pc)

	const first, lost, n = 1000, 1010, 300 // 290 packets between the loss and its retransmission
	write := func(seq uint16) {
		p := &rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: seq, Timestamp: 900 * uint32(seq)}, Payload: []byte{0x10, 1, 2, 3}}
		if err := track.WriteRTP(p); err != nil {
			t.Fatalf("writing packet %d: %v", seq, err)
		}
	}
	deadline := time.Now().Add(waitLimit)
	var got []uint16
	for len(got) == 0 { // the first packet, until the link has it: the connection may still be coming up
		write(first)
		got = readSeqs(t, link, time.Now().Add(100*time.Millisecond), deadline, got)
	}
	for seq := uint16(first + 1); seq <= first+n; seq++ {
		if seq != lost {
			write(seq)
		}
		if seq%16 == 0 {
			// Let the receiving side read: 300 packets in one burst
			// overflow a loopback UDP socket's default buffer when
			// its reader is slow to be scheduled, and a packet lost
			// there is never repaired (no NACK responder here).
			time.Sleep(time.Millisecond)
		}
	}
	write(lost) // the retransmission
	for len(got) < n+1 && time.Now().Before(deadline) {
		got = readSeqs(t, link, deadline, deadline, got)
	}
	for i, seq := range got {
		if seq != uint16(first+i) {
			t.Fatalf("packet %d came out as %d, want %d (all: %v)", i, seq, first+i, got)
		}
	}
	if len(got) != n+1 {
		t.Fatalf("%d packets came out, want %d", len(got), n+1)
	}
	if late, dup, skipped := link.dropped(); late != 0 || skipped != 0 {
		t.Errorf("late %d, duplicates %d, given up %d: want none late or given up", late, dup, skipped)
	}
}

// readSeqs reads from link until an RTP packet comes out or until wait,
// and returns seqs with its sequence number appended. It fails the test
// after deadline.
func readSeqs(t *testing.T, link *whipLink, wait, deadline time.Time, seqs []uint16) []uint16 {
	t.Helper()
	for {
		a, err := link.next(wait)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(deadline):
			return seqs
		case err != nil:
			t.Fatalf("next: %v (after %d packets)", err, len(seqs))
		case framer.IsRTCP(a.pkt):
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(a.pkt); err != nil {
			t.Fatal(err)
		}
		return append(seqs, p.SequenceNumber)
	}
}

// publishTo connects a pion publisher of one VP8 track, without
// interceptors (no NACK responder, no pacer), to the WHIP side's pc, and
// returns its track.
func publishTo(t *testing.T, pc *pion.PeerConnection) *pion.TrackLocalStaticRTP {
	t.Helper()
	pub := loopbackPeer(t, rtc.VP8)
	track, err := pion.NewTrackLocalStaticRTP(rtc.VP8.RTPCodecCapability, "video", "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.AddTransceiverFromTrack(track, pion.RTPTransceiverInit{Direction: pion.RTPTransceiverDirectionSendonly}); err != nil {
		t.Fatal(err)
	}
	offer := offerOf(t, pub)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ans, err := answer(ctx, pc, offer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: ans}); err != nil {
		t.Fatal(err)
	}
	return track
}
