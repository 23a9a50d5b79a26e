package webrtc

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"replenish/framer"
)

// packetized returns one RTP packet from the packetizer, parsed.
func packetized(t *testing.T) *rtp.Packet {
	t.Helper()
	pz := framer.NewPacketizer(framer.PacketizerConfig{SSRC: 1})
	pkts, _, err := pz.Packetize([]byte{1, 2, 3}, time.Unix(1_700_000_000, 5e8))
	if err != nil {
		t.Fatal(err)
	}
	p := &rtp.Packet{}
	if err := p.Unmarshal(pkts[0]); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMoveCaptureTime(t *testing.T) {
	want := packetized(t).GetExtension(framer.AbsCaptureTimeID)
	for _, to := range []uint8{0, 1, 2, 14, 15} {
		p := packetized(t)
		if err := moveCaptureTime(&p.Header, to); err != nil {
			t.Fatalf("to %d: %v", to, err)
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("to %d: %v", to, err)
		}
		var q rtp.Packet
		if err := q.Unmarshal(b); err != nil {
			t.Fatalf("to %d: %v", to, err)
		}
		ids := q.GetExtensionIDs()
		switch {
		case to == 0 && (len(ids) != 0 || q.Extension):
			t.Errorf("to 0: extensions %v remain", ids)
		case to != 0 && (len(ids) != 1 || !bytes.Equal(q.GetExtension(to), want)):
			t.Errorf("to %d: extensions %v, want only the capture time at %d", to, ids, to)
		}
		if !bytes.Equal(q.Payload, []byte(p.Payload)) {
			t.Errorf("to %d: payload changed", to)
		}
	}
}

func TestRTCPSSRCTranslation(t *testing.T) {
	const ours, wire = 0x1111, 0x2222
	sdes, _ := framer.MarshalSDES(ours, "c", "cam", "")
	pkts, err := framer.ParseControl(sdes)
	if err != nil {
		t.Fatal(err)
	}
	app := &rtcp.ApplicationDefined{SSRC: ours, Name: framer.ReportName, Data: make([]byte, 20)}
	other := &rtcp.ApplicationDefined{SSRC: 0x3333, Name: "ELSE", Data: make([]byte, 4)}
	pkts = append(pkts, app, other)
	toWire(pkts, ours, wire)
	if name, err := framer.StreamName(pkts, wire); err != nil || name != "cam" {
		t.Errorf("stream name under the wire SSRC: %q, %v", name, err)
	}
	if app.SSRC != wire || other.SSRC != 0x3333 {
		t.Errorf("APP SSRCs %x and %x, want %x and 3333", app.SSRC, other.SSRC, wire)
	}

	in := []rtcp.Packet{
		&rtcp.ReceiverReport{SSRC: 9},
		&rtcp.PictureLossIndication{SenderSSRC: 9, MediaSSRC: wire},
		&rtcp.FullIntraRequest{SenderSSRC: 9, MediaSSRC: wire, FIR: []rtcp.FIREntry{{SSRC: wire, SequenceNumber: 4}}},
	}
	reqs := keyframeRequests(in, wire, ours)
	if len(reqs) != 2 || !framer.WantsKeyframe(reqs[:1], ours) || !framer.WantsKeyframe(reqs[1:], ours) {
		t.Errorf("requests %v: want the PLI and the FIR naming %x", reqs, ours)
	}
	if in[2].(*rtcp.FullIntraRequest).FIR[0].SSRC != wire {
		t.Error("keyframeRequests changed its input")
	}
}

func TestReportRTT(t *testing.T) {
	sent := time.Unix(1_700_000_000, 250e6)
	lsr := ntp32(sent)
	dlsr := uint32(65536 / 2) // held 500 ms
	now := sent.Add(540 * time.Millisecond)
	rtt, ok := reportRTT(now, lsr, dlsr)
	if !ok || rtt < 39*time.Millisecond || rtt > 41*time.Millisecond {
		t.Errorf("rtt %v (%v), want 40 ms", rtt, ok)
	}
	if _, ok := reportRTT(now, 0, 0); ok {
		t.Error("a report without a sender report gave a round trip")
	}
	if _, ok := reportRTT(sent, lsr, dlsr); ok {
		t.Error("a report from the future gave a round trip")
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"plain text":       "plain text",
		"a\r\n\tb\x00c":    "a b c",
		"\n lead":          "lead",
		"bad \xff utf8 é ": "bad utf8 é",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
