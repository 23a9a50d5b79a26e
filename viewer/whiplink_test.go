package viewer

import (
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/pion/rtp"

	"replenish/framer"
)

// What a WHIP link hands the per-connection loop: RTP back in order,
// without padding-only packets (renumbered so that they leave no gap),
// with abs-capture-time moved to the ID the assembler reads and every
// other extension gone, and RTCP as it came; a packet that never comes is
// given up after the reorder wait.
func TestWHIPLinkPackets(t *testing.T) {
	capture := time.UnixMilli(1_764_000_000_123)
	abs, err := rtp.NewAbsCaptureTimeExtension(capture).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pkt := func(seq uint16, payload []byte, marker bool) *rtp.Packet {
		p := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SSRC: 7, SequenceNumber: seq, Timestamp: 900, Marker: marker}, Payload: payload}
		p.Header.SetExtension(1, []byte{0xde, 0xad}) // say, transport-wide sequence numbers
		p.Header.SetExtension(5, abs)
		return p
	}
	vp8 := func(start bool) []byte { // a VP8 payload descriptor and a keyframe's first bytes
		if start {
			return append([]byte{0x10}, fakeVP8(true, 320, 180, 20)...)
		}
		return []byte{0x00, 1, 2, 3}
	}
	l := &whipLink{
		in: make(chan rtcIn, 16), failed: make(chan struct{}),
		ro: newReorder(16, 20*time.Millisecond), log: slog.New(slog.DiscardHandler),
	}
	now := time.Now()
	padding := pkt(101, nil, false)
	padding.Header.Padding, padding.PaddingSize = true, 200
	for _, in := range []rtcIn{
		{rtp: pkt(100, vp8(true), false), extID: 5, at: now},
		{rtp: pkt(102, vp8(false), true), extID: 5, at: now}, // before the padding: out of order
		{rtp: padding, extID: 5, at: now},
		{rtcp: framer.MarshalPLI(1, 2), at: now},
		{rtp: pkt(104, vp8(true), true), extID: 0, at: now}, // 103 never comes; no abs-capture-time negotiated
	} {
		l.in <- in
	}
	asm := framer.NewAssembler(0)
	var seqs []uint16
	var frames []*framer.Frame
	var control int
	for len(seqs) < 3 || control < 1 {
		a, err := l.next(time.Now().Add(waitLimit))
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if framer.IsRTCP(a.pkt) {
			control++
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(a.pkt); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, p.SequenceNumber)
		if ids := p.Header.GetExtensionIDs(); p.SequenceNumber < 103 && (len(ids) != 1 || ids[0] != framer.AbsCaptureTimeID) || p.SequenceNumber >= 103 && len(ids) != 0 || p.Padding {
			t.Errorf("packet %d: extensions %v, padding %v", p.SequenceNumber, ids, p.Padding)
		}
		f, err := asm.Push(a.pkt)
		if err != nil {
			t.Fatalf("assembler: %v", err)
		}
		if f != nil {
			frames = append(frames, f)
		}
	}
	if want := []uint16{100, 101, 103}; len(seqs) != 3 || seqs[0] != want[0] || seqs[1] != want[1] || seqs[2] != want[2] {
		t.Errorf("sequence numbers %v, want %v (the padding's taken out)", seqs, want)
	}
	// The second frame has no abs-capture-time: the assembler extrapolates
	// its capture time from the first's by the RTP timestamp (the same).
	if len(frames) != 2 || frames[0].Capture.Sub(capture).Abs() > time.Microsecond || !frames[1].Capture.Equal(frames[0].Capture) {
		t.Fatalf("%d frames: want two, the first with the capture time %v and the second with it extrapolated", len(frames), capture)
	}
	if late, dup, skipped := l.dropped(); late != 0 || dup != 0 || skipped != 1 {
		t.Errorf("late %d, duplicates %d, given up %d; want 0, 0, 1", late, dup, skipped)
	}
	if _, err := l.next(time.Now().Add(10 * time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("next with nothing to come: %v, want a deadline error", err)
	}
}
