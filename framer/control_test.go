package framer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pion/rtcp"
)

func TestKeyframeRequests(t *testing.T) {
	const media = 0xAABBCCDD
	for _, tc := range []struct {
		name string
		pkt  []byte
		want bool
	}{
		{"PLI", MarshalPLI(1, media), true},
		{"PLI for another SSRC", MarshalPLI(1, media+1), false},
		{"FIR", MarshalFIR(1, media, 3), true},
		{"FIR for another SSRC", MarshalFIR(1, media+1, 3), false},
		{"PLI inside a compound packet", slices.Concat(mustSDES(t, 1, "viewer", "v"), MarshalPLI(1, media)), true},
		{"SDES only", mustSDES(t, 1, "viewer", "v"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkts, err := ParseControl(tc.pkt)
			if err != nil {
				t.Fatal(err)
			}
			if got := WantsKeyframe(pkts, media); got != tc.want {
				t.Errorf("WantsKeyframe = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMarshalPLIFIRFields(t *testing.T) {
	pkts, err := ParseControl(slices.Concat(MarshalPLI(11, 22), MarshalFIR(33, 44, 200)))
	if err != nil {
		t.Fatal(err)
	}
	pli, ok := pkts[0].(*rtcp.PictureLossIndication)
	if !ok || pli.SenderSSRC != 11 || pli.MediaSSRC != 22 {
		t.Errorf("PLI = %#v", pkts[0])
	}
	fir, ok := pkts[1].(*rtcp.FullIntraRequest)
	if !ok || fir.SenderSSRC != 33 || len(fir.FIR) != 1 || fir.FIR[0].SSRC != 44 || fir.FIR[0].SequenceNumber != 200 {
		t.Errorf("FIR = %#v", pkts[1])
	}
}

func mustSDES(t *testing.T, ssrc uint32, cname, name string) []byte {
	t.Helper()
	b, err := MarshalSDES(ssrc, cname, name, "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSDESRoundTrip(t *testing.T) {
	for _, name := range []string{"a", "camera 1", "Kamera Zürich — links", strings.Repeat("x", MaxStreamNameLen)} {
		t.Run(name, func(t *testing.T) {
			pkts, err := ParseControl(slices.Concat(mustSDES(t, 5, "sender@host", "other"), mustSDES(t, 6, "sender@host", name)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := StreamName(pkts, 6)
			if err != nil || got != name {
				t.Fatalf("StreamName = %q, %v; want %q", got, err, name)
			}
			if _, err := StreamName(pkts, 7); !errors.Is(err, ErrNoStreamName) {
				t.Errorf("unknown SSRC: err = %v", err)
			}
		})
	}
}

func TestSDESMode(t *testing.T) {
	b, err := MarshalSDES(6, "sender@host", "cam", "expire=100ms")
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := ParseControl(slices.Concat(mustSDES(t, 5, "other@host", "other"), b))
	if err != nil {
		t.Fatal(err)
	}
	if mode, err := StreamMode(pkts, 6); err != nil || mode != "expire=100ms" {
		t.Errorf("StreamMode = %q, %v; want expire=100ms", mode, err)
	}
	if name, err := StreamName(pkts, 6); err != nil || name != "cam" {
		t.Errorf("StreamName = %q, %v; want cam", name, err)
	}
	// Without a mode there is no NOTE item.
	if _, err := StreamMode(pkts, 5); !errors.Is(err, ErrNoStreamMode) {
		t.Errorf("no mode: err = %v, want ErrNoStreamMode", err)
	}
	for _, bad := range []string{"a\nb", strings.Repeat("m", MaxStreamNameLen+1), "a\xffb"} {
		if _, err := MarshalSDES(1, "c", "ok", bad); !errors.Is(err, ErrBadName) {
			t.Errorf("MarshalSDES with mode %q: err = %v, want ErrBadName", bad, err)
		}
		raw, err := rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{
			Source: 1, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESNote, Text: bad}},
		}}}.Marshal()
		if err != nil {
			continue // pion cannot marshal it
		}
		pkts, err := ParseControl(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := StreamMode(pkts, 1); !errors.Is(err, ErrBadName) {
			t.Errorf("StreamMode of %q: err = %v, want ErrBadName", bad, err)
		}
	}
}

func TestStreamNameValidation(t *testing.T) {
	for _, tc := range []struct {
		name, cname, stream string
	}{
		{"empty name", "c", ""},
		{"name too long", "c", strings.Repeat("x", MaxStreamNameLen+1)},
		{"newline", "c", "a\nb"},
		{"escape", "c", "a\x1b[31mb"},
		{"DEL", "c", "a\x7fb"},
		{"C1 control", "c", "a\u0085b"},
		{"invalid UTF-8", "c", "a\xffb"},
		{"dot", "c", "."},
		{"dot dot", "c", ".."},
		{"empty CNAME", "", "ok"},
		{"CNAME with control", "a\x00b", "ok"},
		{"CNAME too long", strings.Repeat("c", 256), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := MarshalSDES(1, tc.cname, tc.stream, ""); !errors.Is(err, ErrBadName) {
				t.Errorf("MarshalSDES: err = %v, want ErrBadName", err)
			}
			if tc.cname != "c" {
				return
			}
			// A peer that skips validation must be caught on parse.
			raw, err := rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{
				Source: 1,
				Items:  []rtcp.SourceDescriptionItem{{Type: rtcp.SDESName, Text: tc.stream}},
			}}}.Marshal()
			if err != nil {
				t.Skipf("pion cannot marshal it: %v", err)
			}
			pkts, err := ParseControl(raw)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := StreamName(pkts, 1); !errors.Is(err, ErrBadName) {
				t.Errorf("StreamName: err = %v, want ErrBadName", err)
			}
		})
	}
	for _, ok := range []string{"...", ".cam", "cam.2"} {
		if err := ValidateStreamName(ok); err != nil {
			t.Errorf("ValidateStreamName(%q) = %v, want nil", ok, err)
		}
	}
}

func TestParseControlErrors(t *testing.T) {
	pli := MarshalPLI(1, 2)
	for _, tc := range []struct {
		name string
		pkt  []byte
	}{
		{"empty", nil},
		{"one byte", []byte("0")},
		{"short header", pli[:3]},
		{"truncated", pli[:8]},
		{"length past end", append([]byte{0x81, 206, 0, 9}, pli[4:]...)},
		{"version 1", append([]byte{0x41}, pli[1:]...)},
		{"trailing garbage", append(slices.Clone(pli), 1, 2)},
		{"oversized", make([]byte, MaxPacketSize+1)},
		{"RTP packet", []byte{0x80, 0xE0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"RTP packet with RTCP-sized length", []byte{0x80, 0x60, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseControl(tc.pkt); !errors.Is(err, ErrBadRTCP) {
				t.Errorf("err = %v, want ErrBadRTCP", err)
			}
		})
	}
}

func TestBye(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	for _, tc := range []struct{ name, reason, want string }{
		{"short", "viewer: wrong token", "viewer: wrong token"},
		{"empty", "", ""},
		{"cut at a rune boundary", long, long[:254]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkts, err := ParseControl(MarshalBye(7, tc.reason))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := ByeReason(pkts)
			if !ok || got != tc.want {
				t.Errorf("reason %q (%v), want %q", got, ok, tc.want)
			}
		})
	}
	if _, ok := ByeReason([]rtcp.Packet{&rtcp.PictureLossIndication{}}); ok {
		t.Error("a PLI has a BYE reason")
	}
}
