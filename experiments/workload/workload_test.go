package workload

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"replenish/experiments/scenario"
	"replenish/framer"
	"replenish/internal/certs"
	"replenish/rate"
	"replenish/transport"
	"replenish/viewer"
)

func TestRRAnswerIsOneFrame(t *testing.T) {
	p, err := framer.NewReader(bytes.NewReader(rrAnswer)).ReadPacket()
	if err != nil || string(p) != "OK" {
		t.Fatalf("rrAnswer reads as %q, %v; want one framed OK", p, err)
	}
}

func TestRecentDelays(t *testing.T) {
	var r recentDelays
	now := time.Unix(100, 0)
	if st := r.status(now); st.P50Ms != -1 || st.Writes != 0 {
		t.Errorf("empty: %+v", st)
	}
	r.add(now.Add(-5*time.Second), 900*time.Millisecond) // too old
	r.add(now.Add(-time.Second), 10*time.Millisecond)
	r.add(now.Add(-time.Second), 30*time.Millisecond)
	r.add(now, 20*time.Millisecond)
	r.add(now, -1) // departure unknown: counted, not summarized
	if st := r.status(now); st.P50Ms != 20 || st.Writes != 5 {
		t.Errorf("status %+v, want p50 20 ms over the last 2 s and 5 writes", st)
	}
}

// TestSpecArgs checks that every role's command line reads back as the
// Spec it was written from.
func TestSpecArgs(t *testing.T) {
	replenish, _ := transport.ParseMode("replenish=15ms+nagle")
	for _, s := range []Spec{
		{Role: BulkSend, Addr: "10.0.0.2:9000", Mode: replenish, Size: 512, Records: "/r/send.jsonl"},
		{Role: BulkSend, Addr: "10.0.0.2:9000", Mode: transport.Mode{Policy: transport.Default}, Size: 65536, For: 20 * time.Second, Records: "/r/send.jsonl"},
		{Role: BulkSink, Addr: "10.0.0.2:9000", Records: "/r/sink.jsonl"},
		{Role: RRClient, Addr: "10.0.0.2:9000", Mode: transport.Mode{Policy: transport.Default, Nagle: true}, Records: "/r/send.jsonl"},
		{Role: RRServer, Addr: "10.0.0.2:9000"},
	} {
		t.Run(string(s.Role), func(t *testing.T) {
			args := s.Args()
			if args[0] != string(s.Role) {
				t.Fatalf("args %q do not start with the role", args)
			}
			got, err := ParseSpec(Role(args[0]), args[1:], io.Discard)
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", args, err)
			}
			want := s
			if want.Role != BulkSend {
				got.Size = 0 // only bulk-send has one
			}
			if want.Role == BulkSink || want.Role == RRServer {
				want.Mode = got.Mode // receivers have no mode
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back as %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		role Role
		args []string
		want string
	}{
		{BulkSend, []string{"-to", "x:1", "-records", "r", "-size", "0"}, "need -to, -records, -size"},
		{BulkSend, []string{"-to", "x:1"}, "need -to, -records"},
		{BulkSend, []string{"-to", "x:1", "-records", "r", "-for", "-1s"}, "-for not negative"},
		{BulkSink, []string{"-listen", "x:1"}, "need -listen and -records"},
		{RRClient, []string{"-to", "x:1", "-mode", "sometimes", "-records", "r"}, "invalid value"},
		{RRServer, nil, "need -listen"},
		{RRServer, []string{"-listen", "x:1", "extra"}, "unexpected arguments"},
		{"bulk-receive", nil, "unknown role"},
	} {
		if _, err := ParseSpec(tc.role, tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%s, %q) = %v, want an error mentioning %q", tc.role, tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if code := Main(t.Context(), RRServer, nil, io.Discard, &out); code != 2 || !strings.Contains(out.String(), "rr-server: need -listen") {
		t.Errorf("Main with bad flags: code %d, %q", code, out.String())
	}
}

// TestSenderArgs checks each transport's command line: the media address
// for TCP and QUIC (QUIC with the pin it was given, and never without
// one), the WHIP URL and the clock probes' address for WebRTC.
func TestSenderArgs(t *testing.T) {
	pin, err := certs.ParseFingerprint("sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	base := Sender{Program: "sender", Name: "n", Mode: mustMode(t, "replenish=15ms"), Bitrate: 2 * rate.Mbps, MaxRes: "640x360", FPS: 15, Records: "r.jsonl"}
	for _, tc := range []struct {
		transport string
		pin       certs.Fingerprint
		want      string
	}{
		{"", certs.Fingerprint{}, "sender -name n -status=false -bitrate 2mbit -to 10.0.0.2:9000 -mode replenish=15ms -max-res 640x360 -fps 15 -records r.jsonl"},
		{scenario.TCP, certs.Fingerprint{}, "sender -name n -status=false -bitrate 2mbit -to 10.0.0.2:9000 -mode replenish=15ms -max-res 640x360 -fps 15 -records r.jsonl"},
		{scenario.QUIC, pin, "sender -name n -status=false -bitrate 2mbit -transport quic -to 10.0.0.2:9000 -pin " + pin.String() +
			" -mode replenish=15ms -max-res 640x360 -fps 15 -records r.jsonl"},
		{scenario.WebRTC, pin, "sender -name n -status=false -bitrate 2mbit -transport webrtc -to https://10.0.0.2:8080/whip -pin " + pin.String() +
			" -probe 10.0.0.2:9000 -max-res 640x360 -fps 15 -records r.jsonl"},
	} {
		s := base
		s.Transport, s.Pin = tc.transport, tc.pin
		argv, err := s.args("10.0.0.2:9000", "10.0.0.2:8080")
		if got := strings.Join(argv, " "); err != nil || got != tc.want {
			t.Errorf("%q: %q, %v\nwant %q", tc.transport, got, err, tc.want)
		}
	}
	s := base
	s.Transport = scenario.QUIC
	if _, err := s.args("a:1", "a:2"); err == nil {
		t.Error("a QUIC sender without a pin was started")
	}
	s.Transport = scenario.WebRTC
	if _, err := s.args("a:1", "a:2"); err == nil {
		t.Error("a WebRTC sender without a pin was started")
	}
	s.Transport = "sctp"
	if _, err := s.args("a:1", "a:2"); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

func TestViewerArgs(t *testing.T) {
	v := Viewer{Program: "viewer", Token: "s3cret-token", Fingerprint: "fp", Records: "v.jsonl", CertFile: "c.pem", KeyFile: "k.pem"}
	got := strings.Join(v.args("10.0.0.2:9000"), " ")
	if want := "viewer -listen 10.0.0.2:9000 -http 0.0.0.0:8080 -fingerprint-file fp -records v.jsonl -tls-cert c.pem -tls-key k.pem"; got != want {
		t.Errorf("viewer args %q, want %q", got, want)
	}
	if strings.Contains(got, v.Token) {
		t.Error("the token is on the command line")
	}
}

// TestTokenTransport checks that requests through the stats client and
// the page proxy carry the viewer's token both ways the viewer reads it.
func TestTokenTransport(t *testing.T) {
	var auth, cookie string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if c, err := r.Cookie(viewer.TokenCookie); err == nil {
			cookie = c.Value
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: tokenTransport{http.DefaultTransport, "s3cret"}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if auth != "Bearer s3cret" || cookie != "s3cret" {
		t.Errorf("Authorization %q, cookie %q; want the token in both", auth, cookie)
	}
}

// TestCertificateAndFingerprint checks that a written certificate loads as
// the viewer loads it, and that a fingerprint file reads back.
func TestCertificateAndFingerprint(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := WriteCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	fp := certs.FingerprintOf(cert.Certificate[0])
	path := filepath.Join(dir, "viewer.fingerprint")
	if err := os.WriteFile(path, []byte(fp.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFingerprint(path); err != nil || got != fp {
		t.Errorf("ReadFingerprint = %v, %v; want %v", got, err, fp)
	}
	os.WriteFile(path, []byte("sha256:beef\n"), 0o644)
	if _, err := ReadFingerprint(path); err == nil {
		t.Error("a malformed fingerprint was read")
	}
	if a, _ := NewToken(); len(a) != 32 {
		t.Errorf("token %q", a)
	}
}

func mustMode(t *testing.T, s string) transport.Mode {
	t.Helper()
	m, err := transport.ParseMode(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
