package scenario

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseTransports(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "tcp", want: []string{"tcp"}},
		{in: " quic, TCP ,webrtc", want: []string{"quic", "tcp", "webrtc"}},
		{in: "tcp,,", want: []string{"tcp"}},
		{in: "tcp,tcp", wantErr: true},
		{in: "sctp", wantErr: true},
		{in: " , ", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTransports(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrSpec) {
				t.Errorf("ParseTransports(%q) = %q, %v; want an ErrSpec error", tt.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseTransports(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSupports(t *testing.T) {
	video, bulk := Workload{Kind: KindVideo}, Workload{Kind: KindBulk, Write: 512}
	tests := []struct {
		tr   string
		w    Workload
		mode string
		ok   bool
	}{
		{TCP, video, "replenish=15ms", true},
		{TCP, bulk, "lowat=15000+nagle", true},
		{TCP, video, "replenish=15ms+kernel", true},
		{TCP, video, "expire=100ms", false},
		{QUIC, video, "replenish=15ms", true},
		{QUIC, video, "default", true},
		{QUIC, video, "expire=100ms", true},
		{QUIC, video, "default+sndbuf=100000", true},
		{QUIC, video, "lowat=15000", false},
		{QUIC, video, "default+nagle", false},
		{QUIC, video, "replenish=15ms+kernel", false},
		{QUIC, bulk, "replenish=15ms", false},
		{WebRTC, video, "default", true},
		{WebRTC, bulk, "default", false},
		{"sctp", video, "default", false},
	}
	for _, tt := range tests {
		err := Supports(tt.tr, tt.w, mustMode(tt.mode))
		if (err == nil) != tt.ok {
			t.Errorf("Supports(%s, %s, %s) = %v, want ok %v", tt.tr, tt.w, tt.mode, err, tt.ok)
		}
	}
}

// runsOf parses args as a run command line and returns its runs' IDs and
// the notes of what it skipped.
func runsOf(t *testing.T, args ...string) (ids, skipped []string, err error) {
	t.Helper()
	f := Defaults()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	runs, skipped, err := f.Runs()
	for _, r := range runs {
		ids = append(ids, r.ID())
	}
	return ids, skipped, err
}

func TestTransportDimension(t *testing.T) {
	ids, skipped, err := runsOf(t, "--rate", "2mbit", "--rtt", "40ms", "--workload", "video",
		"--transport", "tcp,quic,webrtc", "--modes", "replenish=15ms,lowat=15000,expire=50ms,default")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2mbit-40ms-video-replenish=15ms", "2mbit-40ms-video-lowat=15000", "2mbit-40ms-video-default",
		"2mbit-40ms-video-quic-replenish=15ms", "2mbit-40ms-video-quic-expire=50ms", "2mbit-40ms-video-quic-default",
		"2mbit-40ms-video-webrtc-gcc",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ids\n %q\nwant\n %q", ids, want)
	}
	wantSkipped := []string{"tcp expire=50ms skipped: expire is a QUIC mode", "quic lowat=15000 skipped: lowat is TCP_NOTSENT_LOWAT, a TCP mode"}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped\n %q\nwant\n %q", skipped, wantSkipped)
	}

	// Bulk runs exist over TCP only; the others are skipped, not errors.
	ids, skipped, err = runsOf(t, "--workload", "bulk", "--transport", "quic,tcp", "--modes", "default")
	if err != nil || !reflect.DeepEqual(ids, []string{"2mbit-172ms-bulk64KiB-default"}) || len(skipped) != 1 ||
		!strings.Contains(skipped[0], "quic default skipped: quic carries the video workload only") {
		t.Errorf("bulk over quic and tcp: %q, %q, %v", ids, skipped, err)
	}
	// A line of which nothing exists is an error that says why.
	if _, _, err := runsOf(t, "--workload", "video", "--transport", "quic", "--modes", "lowat=15000"); !errors.Is(err, ErrSpec) ||
		!strings.Contains(err.Error(), "lowat is TCP_NOTSENT_LOWAT") {
		t.Errorf("nothing left: %v", err)
	}
	if _, _, err := runsOf(t, "--transport", "carrier-pigeon"); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

func TestTransportNames(t *testing.T) {
	r := Run{Workload: Workload{Kind: KindVideo}, Mode: mustMode("replenish=15ms")}
	if r.TransportName() != TCP || r.ModeName() != "replenish=15ms" {
		t.Errorf("a run without a transport (input.json before transports): %s %s", r.TransportName(), r.ModeName())
	}
	r.Transport = WebRTC
	if r.ModeName() != GCC {
		t.Errorf("webrtc mode name %q", r.ModeName())
	}
}

func TestMatrixTransportsAndLists(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.txt", "--workload video --transport tcp,quic --modes lowat=15000,replenish=15ms\n")
	b := write("b.txt", "--workload video --transport webrtc\n")
	runs, skipped, err := ReadMatrix(a+","+b, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID())
	}
	want := []string{"2mbit-172ms-video-lowat=15000", "2mbit-172ms-video-replenish=15ms", "2mbit-172ms-video-quic-replenish=15ms", "2mbit-172ms-video-webrtc-gcc"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %q, want %q", ids, want)
	}
	if len(skipped) != 1 || skipped[0] != a+": line 1: quic lowat=15000 skipped: lowat is TCP_NOTSENT_LOWAT, a TCP mode" {
		t.Errorf("skipped %q", skipped)
	}
	if _, _, err := ReadMatrix(a+","+filepath.Join(dir, "missing.txt"), Defaults()); !errors.Is(err, ErrSpec) {
		t.Errorf("a missing file in a list: %v", err)
	}
}

func TestParseStreams(t *testing.T) {
	got, err := ParseStreams("replenish=15ms, default,quic:replenish,QUIC:expire=100ms,webrtc")
	if err != nil {
		t.Fatal(err)
	}
	if s := Streams(got).String(); s != "replenish=15ms,default,quic:replenish=15ms,quic:expire=100ms,webrtc" {
		t.Errorf("streams %q", s)
	}
	if got[4].ModeName() != GCC || got[2].ModeName() != "replenish=15ms" || got[0].Transport != TCP {
		t.Errorf("streams %+v", got)
	}
	back, err := ParseStreams(Streams(got).String())
	if err != nil || !reflect.DeepEqual(back, got) {
		t.Errorf("read back as %+v, %v", back, err)
	}
	for _, bad := range []string{"", "quic:lowat=15000", "tcp:expire=1s", "webrtc:replenish", "sctp:default", "default,tcp:default", "quic:sometimes"} {
		if _, err := ParseStreams(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("ParseStreams(%q) = %v, want an ErrSpec error", bad, err)
		}
	}
}
