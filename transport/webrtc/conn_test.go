package webrtc

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
)

const testSSRC = 0x5eed1234

// sentFrame is what the test wrote for one frame.
type sentFrame struct {
	capture time.Time
	pkts    [][]byte
}

// writeFrames writes n frames through c as the sender does: an invitation,
// then control packets (SDES on the first, an RPLN report on every one)
// and the frame's RTP packets.
func writeFrames(t *testing.T, c *Conn, pz *framer.Packetizer, n int) []sentFrame {
	t.Helper()
	var out []sentFrame
	base := time.Now()
	for i := range n {
		inv, err := c.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !inv.Target || inv.DrainRate <= 0 || inv.Wake != transport.WakeImmediate {
			t.Fatalf("invitation %+v: want an immediate one with a target rate", inv)
		}
		capture := base.Add(time.Duration(i) * 33 * time.Millisecond)
		media, ts, err := pz.Packetize(testFrame(i, 3000), capture)
		if err != nil {
			t.Fatal(err)
		}
		var ctl [][]byte
		if i == 0 {
			sdes, err := framer.MarshalSDES(testSSRC, "test-cname", "cam-1", "")
			if err != nil {
				t.Fatal(err)
			}
			ctl = append(ctl, sdes)
		}
		sr := framer.SenderReport{Frames: []framer.FrameTiming{{RTPTimestamp: ts, Capture: capture, Bytes: 3000}}}
		rep, err := sr.Marshal(testSSRC)
		if err != nil {
			t.Fatal(err)
		}
		ctl = append(ctl, rep)
		if err := c.WriteFrame(uint64(i), append(ctl, media...)); err != nil {
			t.Fatal(err)
		}
		out = append(out, sentFrame{capture: capture, pkts: media})
	}
	return out
}

func TestWHIPRoundTrip(t *testing.T) {
	e := newEndpoint(t, "s3cr3t.token")
	var rec recorder
	c := dial(t, e, Config{Token: "s3cr3t.token", Name: "cam-1", InitialBitrate: 2 * rate.Mbps, Handler: rec.handler()})

	posts, _ := e.seen()
	if len(posts) != 1 {
		t.Fatalf("%d POSTs, want 1", len(posts))
	}
	p := posts[0]
	if p.auth != "Bearer s3cr3t.token" || p.contentType != "application/sdp" || p.stream != "cam-1" || !contains(p.offer, "a=sendonly") {
		t.Errorf("POST: Authorization %q, Content-Type %q, stream %q; offer:\n%s", p.auth, p.contentType, p.stream, p.offer)
	}
	inv, err := c.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DrainRate != 2*rate.Mbps {
		t.Errorf("first invitation's drain rate %v, want the initial 2 Mb/s", inv.DrainRate)
	}

	pz := framer.NewPacketizer(framer.PacketizerConfig{SSRC: testSSRC})
	frames := writeFrames(t, c, pz, 5)
	checkMedia(t, e.receiver(t), frames)
	checkControl(t, e.receiver(t))
	checkKeyframeRequest(t, e.receiver(t), &rec)

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, deletes := e.seen()
	if len(deletes) != 1 || deletes[0].path != "/whip/session/1" || deletes[0].auth != "Bearer s3cr3t.token" {
		t.Errorf("DELETEs %+v, want one of /whip/session/1 with the token", deletes)
	}
	if _, err := c.Wait(context.Background()); err != ErrClosed {
		t.Errorf("Wait after Close: %v, want ErrClosed", err)
	}
}

// checkMedia waits for every packet of frames at the receiver and checks
// its payload and, on the packets the packetizer gave a capture time, that
// capture time, read from abs-capture-time at the negotiated ID.
func checkMedia(t *testing.T, r *receiver, frames []sentFrame) {
	t.Helper()
	want := map[uint16][]byte{}
	capture := map[uint16]time.Time{}
	for _, f := range frames {
		for _, b := range f.pkts {
			var p rtp.Packet
			if err := p.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			want[p.SequenceNumber] = p.Payload
			if p.GetExtension(framer.AbsCaptureTimeID) != nil {
				capture[p.SequenceNumber] = f.capture
			}
		}
	}
	// The first frame carries its capture time; later ones only where the
	// receiver could not extrapolate it (framer.CaptureTimeEvery).
	if len(capture) == 0 || len(capture) > len(frames) {
		t.Fatalf("%d packets with a capture time for %d frames, want the first frame's and at most one a frame", len(capture), len(frames))
	}
	var got []*rtp.Packet
	eventually(t, "every packet at the receiver", func() bool {
		_, _, got, _ = r.snapshot()
		return len(got) >= len(want)
	})
	track, extID, _, _ := r.snapshot()
	if extID == 0 || extID == framer.AbsCaptureTimeID {
		// The sender offers it second, after the transport-wide sequence
		// number, so that this test sees the extension moved.
		t.Fatalf("abs-capture-time negotiated with ID %d; want one other than the packetizer's %d", extID, framer.AbsCaptureTimeID)
	}
	for _, p := range got {
		if p.SSRC != uint32(track.SSRC()) || p.PayloadType != framer.DefaultPayloadType {
			t.Errorf("packet %d: SSRC %08x PT %d, want the track's %08x and %d", p.SequenceNumber, p.SSRC, p.PayloadType, track.SSRC(), framer.DefaultPayloadType)
		}
		if !bytes.Equal(p.Payload, want[p.SequenceNumber]) {
			t.Errorf("packet %d: payload differs from what was written", p.SequenceNumber)
		}
		at, first := capture[p.SequenceNumber]
		if !first {
			if p.GetExtension(uint8(extID)) != nil {
				t.Errorf("packet %d: abs-capture-time on a packet sent without it", p.SequenceNumber)
			}
			continue
		}
		var ext rtp.AbsCaptureTimeExtension
		if err := ext.Unmarshal(p.GetExtension(uint8(extID))); err != nil {
			t.Errorf("packet %d: abs-capture-time at ID %d: %v", p.SequenceNumber, extID, err)
			continue
		}
		if d := ext.CaptureTime().Sub(at); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("packet %d: capture time off by %v", p.SequenceNumber, d)
		}
	}
}

// checkControl checks that the sender's SDES and RPLN report reached the
// receiver under the track's SSRC.
func checkControl(t *testing.T, r *receiver) {
	t.Helper()
	track, _, _, _ := r.snapshot()
	ssrc := uint32(track.SSRC())
	var name string
	app := false
	eventually(t, "the stream name and a timing report", func() bool {
		_, _, _, ctl := r.snapshot()
		name, _ = framer.StreamName(ctl, ssrc)
		for _, p := range ctl {
			if a, ok := p.(*rtcp.ApplicationDefined); ok && a.Name == framer.ReportName && a.SSRC == ssrc {
				app = true
			}
		}
		return name != "" && app
	})
	if name != "cam-1" {
		t.Errorf("stream name %q, want cam-1", name)
	}
}

// checkKeyframeRequest sends a PLI from the receiver and expects it at the
// Handler, naming the packetizer's SSRC.
func checkKeyframeRequest(t *testing.T, r *receiver, rec *recorder) {
	t.Helper()
	track, _, _, _ := r.snapshot()
	pli := &rtcp.PictureLossIndication{SenderSSRC: 1, MediaSSRC: uint32(track.SSRC())}
	if err := r.pc.WriteRTCP([]rtcp.Packet{pli}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the PLI at the handler", func() bool {
		_, pkts := rec.snapshot()
		for _, b := range pkts {
			ps, err := framer.ParseControl(b)
			if err != nil {
				t.Fatalf("the handler got bad RTCP: %v", err)
			}
			if framer.WantsKeyframe(ps, testSSRC) {
				return true
			}
		}
		return false
	})
}

func TestSendRecordsCarryDepartures(t *testing.T) {
	e := newEndpoint(t, "")
	var rec recorder
	c := dial(t, e, Config{Handler: rec.handler()})
	pz := framer.NewPacketizer(framer.PacketizerConfig{SSRC: testSSRC})
	const n = 10
	writeFrames(t, c, pz, n)
	var recs []transport.SendRecord
	eventually(t, "a send record for every frame", func() bool {
		if err := c.Poll(); err != nil {
			t.Fatal(err)
		}
		recs, _ = rec.snapshot()
		return len(recs) == n
	})
	for i, r := range recs {
		if r.ID != uint64(i) {
			t.Errorf("record %d has ID %d", i, r.ID)
		}
		if r.LeftHost.IsZero() || r.WriteEnd.Before(r.WriteStart) || r.SourceDelay() < 0 {
			t.Errorf("record %d: start %v end %v left %v: want a departure after the write started", i, r.WriteStart, r.WriteEnd, r.LeftHost)
		}
		if r.Bytes <= 3000 {
			t.Errorf("record %d: %d bytes, want the frame's packets with headers", i, r.Bytes)
		}
	}
	cn := c.Counters()
	if cn.Frames != n || cn.InvitedImmediate != n || cn.RecordsUnstamped != 0 || cn.BytesWritten == 0 {
		t.Errorf("counters %+v", cn)
	}
	if u := c.deps.unsent(); u != 0 {
		t.Errorf("%d bytes still unsent after every frame left", u)
	}
	c.pacer.mu.Lock()
	paced := c.pacer.started
	c.pacer.mu.Unlock()
	c.win.mu.Lock()
	seen := c.win.started
	c.win.mu.Unlock()
	if !paced || !seen {
		t.Errorf("packets through our pacer %v, departures seen by the window %v: want both", paced, seen)
	}
}

func TestNACKRetransmissionIsCounted(t *testing.T) {
	e := newEndpoint(t, "")
	c := dial(t, e, Config{})
	pz := framer.NewPacketizer(framer.PacketizerConfig{SSRC: testSSRC})
	frames := writeFrames(t, c, pz, 2)
	r := e.receiver(t)
	eventually(t, "the frames at the receiver", func() bool {
		_, _, got, _ := r.snapshot()
		return len(got) >= len(frames[0].pkts)+len(frames[1].pkts)
	})
	var first rtp.Packet
	if err := first.Unmarshal(frames[0].pkts[0]); err != nil {
		t.Fatal(err)
	}
	track, _, _, _ := r.snapshot()
	nack := &rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: uint32(track.SSRC()),
		Nacks: []rtcp.NackPair{{PacketID: first.SequenceNumber}}}
	if err := r.pc.WriteRTCP([]rtcp.Packet{nack}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a counted retransmission", func() bool { return c.Counters().Retransmits == 1 })
	if cn := c.Counters(); cn.BytesRetrans <= uint64(len(first.Payload)) {
		t.Errorf("%d bytes retransmitted, want the packet with its header", cn.BytesRetrans)
	}
	eventually(t, "the retransmission at the receiver", func() bool {
		_, _, got, _ := r.snapshot()
		n := 0
		for _, p := range got {
			if p.SequenceNumber == first.SequenceNumber {
				n++
			}
		}
		return n == 2
	})
}

// TestDepartureIsAfterThePacer writes a frame far larger than the pacer
// sends per tick at 100 kb/s: its departure, stamped as its last packet
// leaves the pacer, comes tens of milliseconds after the write, and the
// invitation right after the write sees the pacer's backlog.
func TestDepartureIsAfterThePacer(t *testing.T) {
	e := newEndpoint(t, "")
	var rec recorder
	c := dial(t, e, Config{InitialBitrate: 100 * rate.Kbps, Handler: rec.handler()})
	pz := framer.NewPacketizer(framer.PacketizerConfig{SSRC: testSSRC})
	// A small frame first, so that the pacer's budget, which grows while
	// it is idle, starts from its departure.
	writeFrames(t, c, pz, 1)
	eventually(t, "the first frame's departure", func() bool {
		c.Poll()
		recs, _ := rec.snapshot()
		return len(recs) == 1
	})
	media, _, err := pz.Packetize(testFrame(1, 36000), time.Now()) // 31 packets
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFrame(1, media); err != nil {
		t.Fatal(err)
	}
	inv, err := c.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.Unsent < 10000 {
		t.Errorf("unsent %d bytes right after the write, want most of the frame", inv.Unsent)
	}
	var recs []transport.SendRecord
	eventually(t, "the large frame's departure", func() bool {
		c.Poll()
		recs, _ = rec.snapshot()
		return len(recs) == 2
	})
	// The pacer sends at most one packet per 5 ms tick once its budget is
	// spent: 31 packets take well over 50 ms.
	if d := recs[1].SourceDelay(); d < 50*time.Millisecond {
		t.Errorf("source delay %v, want the pacer's 50 ms or more", d)
	}
}
