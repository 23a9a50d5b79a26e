package main

import (
	"cmp"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"replenish/framer"
	"replenish/internal/certs"
	"replenish/media"
	"replenish/transport"
)

// pin is a well-formed fingerprint.
var pin = "sha256:" + strings.Repeat("ab", 32)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		mode    string // tcp.Config.String() wanted
		nagle   bool
		maxRes  media.Size
		layers  string // "" means the default, L1T3
		rtpSize int    // 0 means the default over TCP and QUIC, 65535
		wantErr string
	}{
		{name: "defaults", args: nil, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "replenish time", args: []string{"-replenish", "40ms"}, mode: "replenish=40ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "lowat", args: []string{"-mode", "lowat", "-lowat", "15000"}, mode: "lowat=15000", maxRes: media.Size{W: 1280, H: 720}},
		{name: "default with Nagle", args: []string{"-mode", "default", "-nodelay=false"}, mode: "default+nagle", nagle: true, maxRes: media.Size{W: 1280, H: 720}},
		{name: "full form", args: []string{"-mode", "replenish=5ms+nagle"}, mode: "replenish=5ms+nagle", nagle: true, maxRes: media.Size{W: 1280, H: 720}},
		{name: "max res", args: []string{"-max-res", "640x360"}, mode: "replenish=15ms", maxRes: media.Size{W: 640, H: 360}},
		{name: "no layers", args: []string{"-layers", "L1T1"}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}, layers: "L1T1"},
		{name: "three layers", args: []string{"-layers", "L1T3"}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}, layers: "L1T3"},
		{name: "unknown layers", args: []string{"-layers", "L1T2"}, wantErr: "-layers"},

		{name: "lowat without bytes", args: []string{"-mode", "lowat"}, wantErr: "-lowat BYTES"},
		{name: "lowat bytes without lowat mode", args: []string{"-lowat", "100"}, wantErr: "only to -mode lowat"},
		{name: "negative replenish", args: []string{"-replenish", "-1ms"}, wantErr: "positive duration"},
		{name: "unknown mode", args: []string{"-mode", "fast"}, wantErr: "-mode"},
		{name: "full form and flag", args: []string{"-mode", "replenish=5ms", "-replenish", "9ms"}, wantErr: "already says"},
		{name: "bad fps", args: []string{"-fps", "0"}, wantErr: "-fps"},
		{name: "bad address", args: []string{"-to", "localhost"}, wantErr: "-to"},
		{name: "bad size", args: []string{"-max-res", "big"}, wantErr: "-max-res"},
		{name: "size below the ladder", args: []string{"-max-res", "80x46"}, wantErr: "-max-res"},
		{name: "empty name", args: []string{"-name", ""}, wantErr: "-name"},
		{name: "bad bitrate", args: []string{"-bitrate", "fast"}, wantErr: "-bitrate"},
		{name: "tiny bitrate", args: []string{"-bitrate", "1kbit"}, wantErr: "-bitrate"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected"},
		{name: "datagram-sized RTP packets over TCP", args: []string{"-rtp-size", "1200"}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}, rtpSize: 1200},
		{name: "RTP packets too small", args: []string{"-rtp-size", "50"}, wantErr: "-rtp-size"},
		{name: "RTP packets too large", args: []string{"-rtp-size", "70000"}, wantErr: "-rtp-size"},
		{name: "RTP packets over WebRTC above a datagram", args: []string{"-transport", "webrtc", "-to", "http://127.0.0.1:8080/whip", "-rtp-size", "1500"}, wantErr: "-rtp-size"},
		{name: "quic pinned", args: []string{"-transport", "quic", "-pin", pin}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "quic expire", args: []string{"-transport", "quic", "-pin", pin, "-mode", "expire=100ms"}, mode: "expire=100ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "quic without pin", args: []string{"-transport", "quic"}, wantErr: "-pin sha256"},
		{name: "quic bad pin", args: []string{"-transport", "quic", "-pin", "sha256:00"}, wantErr: "-pin"},
		{name: "quic pin and ca", args: []string{"-transport", "quic", "-pin", pin, "-ca", "x.pem"}, wantErr: "not both"},
		{name: "quic lowat", args: []string{"-transport", "quic", "-pin", pin, "-mode", "lowat=1000"}, wantErr: "TCP's"},
		{name: "quic nagle", args: []string{"-transport", "quic", "-pin", pin, "-nodelay=false"}, wantErr: "TCP's"},
		{name: "tcp expire", args: []string{"-mode", "expire=1s"}, wantErr: "QUIC mode"},
		{name: "tcp pin", args: []string{"-pin", pin}, wantErr: "-transport quic"},
		{name: "unknown transport", args: []string{"-transport", "sctp"}, wantErr: "tcp, quic or webrtc"},
		{name: "webrtc", args: []string{"-transport", "webrtc", "-to", "http://127.0.0.1:8080/whip"}, mode: "default", maxRes: media.Size{W: 1280, H: 720}, rtpSize: 1200},
		{name: "webrtc host:port", args: []string{"-transport", "webrtc", "-to", "127.0.0.1:8080"}, wantErr: "WHIP URL"},
		{name: "webrtc with a mode", args: []string{"-transport", "webrtc", "-to", "http://h/whip", "-mode", "default"}, wantErr: "no -mode"},
		{name: "webrtc bad probe", args: []string{"-transport", "webrtc", "-to", "http://h/whip", "-probe", "h"}, wantErr: "-probe"},
		{name: "webrtc https pinned", args: []string{"-transport", "webrtc", "-to", "https://h:8080/whip", "-pin", pin}, mode: "default", maxRes: media.Size{W: 1280, H: 720}, rtpSize: 1200},
		{name: "webrtc pin over http", args: []string{"-transport", "webrtc", "-to", "http://h/whip", "-pin", pin}, wantErr: "https:// WHIP URL"},
		{name: "webrtc bad pin", args: []string{"-transport", "webrtc", "-to", "https://h/whip", "-pin", "sha256:00"}, wantErr: "-pin"},
		{name: "webrtc pin and ca", args: []string{"-transport", "webrtc", "-to", "https://h/whip", "-pin", pin, "-ca", "x.pem"}, wantErr: "not both"},
		{name: "tcp token", args: []string{"-token", "x"}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "tcp reno", args: []string{"-cc", "reno"}, mode: "replenish=15ms", maxRes: media.Size{W: 1280, H: 720}},
		{name: "tcp unknown congestion control", args: []string{"-cc", "nosuchcc"}, wantErr: "not available"},
		{name: "tcp empty congestion control", args: []string{"-cc", ""}, wantErr: "-cc"},
		{name: "quic congestion control", args: []string{"-transport", "quic", "-pin", pin, "-cc", "reno"}, wantErr: "-cc applies to -transport tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, io.Discard)
			cfg, maxRes := o.mode, o.maxRes
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.String() != tc.mode || cfg.Nagle != tc.nagle || maxRes != tc.maxRes {
				t.Fatalf("got %s nagle=%v max %v; want %s nagle=%v max %v", cfg, cfg.Nagle, maxRes, tc.mode, tc.nagle, tc.maxRes)
			}
			if want := cmp.Or(tc.layers, "L1T3"); o.layers.String() != want {
				t.Fatalf("layers %v, want %s", o.layers, want)
			}
			if want := cmp.Or(tc.rtpSize, framer.MaxPacketSize); o.rtpSize != want {
				t.Fatalf("RTP packets of at most %d bytes, want %d", o.rtpSize, want)
			}
		})
	}
}

// -token applies to every transport, and defaults to $REPLENISH_TOKEN.
func TestTokenFlag(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"tcp", []string{"-token", "t1"}, "", "t1"},
		{"quic", []string{"-transport", "quic", "-pin", pin, "-token", "t2"}, "", "t2"},
		{"webrtc", []string{"-transport", "webrtc", "-to", "http://h/whip", "-token", "t3"}, "", "t3"},
		{"from the environment", nil, "t4", "t4"},
		{"flag over the environment", []string{"-token", "t5"}, "t4", "t5"},
		{"none", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("REPLENISH_TOKEN", tc.env)
			o, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.token != tc.want {
				t.Errorf("token %q, want %q", o.token, tc.want)
			}
		})
	}
}

// TCP paces the socket in replenish mode at frame intervals of 50 ms
// and longer (tcp.LongFrame): 20 fps and below; QUIC paces in replenish
// mode at every frame rate.
func TestPaced(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-fps", "24"}, false},
		{[]string{"-fps", "20"}, true},
		{[]string{"-fps", "15"}, true},
		{[]string{"-fps", "15", "-mode", "default"}, false},
		{[]string{"-fps", "15", "-mode", "lowat=15000"}, false},
		{[]string{"-fps", "15", "-transport", "quic", "-pin", pin}, true},
		{[]string{"-transport", "quic", "-pin", pin}, true},
		{[]string{"-transport", "quic", "-pin", pin, "-mode", "default"}, false},
		{[]string{"-transport", "quic", "-pin", pin, "-mode", "expire=100ms"}, false},
		{[]string{"-transport", "webrtc", "-to", "http://127.0.0.1:8080/whip"}, false},
	} {
		o, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.paced(); got != tc.want {
			t.Errorf("%q: paced %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestModeConfigMatchesParseMode(t *testing.T) {
	o, err := parseFlags([]string{"-replenish", "20ms"}, io.Discard)
	cfg := o.mode
	if err != nil {
		t.Fatal(err)
	}
	want, _ := transport.ParseMode("replenish=20ms")
	if cfg != want || cfg.ReplenishTime != 20*time.Millisecond {
		t.Fatalf("got %+v, want %+v", cfg, want)
	}
}

// The WHIP client verifies the viewer's HTTPS certificate by -pin.
func TestWHIPClientPins(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	right := certs.FingerprintOf(srv.Certificate().Raw)
	for _, tc := range []struct {
		name string
		pin  certs.Fingerprint
		ok   bool
	}{
		{"right pin", right, true},
		{"wrong pin", certs.Fingerprint{1}, false},
		{"no pin: the system's authorities", certs.Fingerprint{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{transport: "webrtc", to: srv.URL + "/whip", pin: tc.pin}
			client, err := o.whipClient()
			if err != nil {
				t.Fatal(err)
			}
			if client == nil {
				client = http.DefaultClient
			}
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("GET: %v, want success %v", err, tc.ok)
			}
		})
	}
}

// -to and -probe name destinations: a port out of 1 to 65535 is a flag
// error at once, not a dial that fails and retries forever.
func TestDestinationPorts(t *testing.T) {
	const bad = "port must be a number from 1 to 65535"
	webrtc := []string{"-transport", "webrtc", "-to"}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" means accepted
	}{
		{"port too large", []string{"-to", "127.0.0.1:99999"}, bad},
		{"negative port", []string{"-to", ":-1"}, bad},
		{"port 0", []string{"-to", ":0"}, bad},
		{"port by name", []string{"-to", "127.0.0.1:http"}, bad},
		{"quic port too large", []string{"-transport", "quic", "-pin", pin, "-to", "127.0.0.1:65536"}, bad},
		{"probe port too large", []string{"-probe", "127.0.0.1:99999"}, bad},
		{"probe port 0", []string{"-probe", "127.0.0.1:0"}, bad},
		{"webrtc probe port too large", []string{"-transport", "webrtc", "-to", "http://h/whip", "-probe", "h:99999"}, bad},
		{"WHIP port too large", append(webrtc, "http://h:99999/whip"), bad},
		{"WHIP port 0", append(webrtc, "https://h:0/whip"), bad},
		{"lowest port", []string{"-to", "127.0.0.1:1"}, ""},
		{"highest port", []string{"-to", "127.0.0.1:65535"}, ""},
		{"empty host: this machine", []string{"-to", ":7000"}, ""},
		{"IPv6", []string{"-to", "[::1]:7000", "-probe", "[::1]:7001"}, ""},
		{"WHIP without a port", append(webrtc, "https://h/whip"), ""},
		{"WHIP with a port", append(webrtc, "http://127.0.0.1:8080/whip"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// A replenish time is at most a second, from -replenish or -mode.
func TestReplenishTimeBound(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" means accepted
	}{
		{[]string{"-replenish", "100h"}, "-replenish 100h0m0s: want at most 1s"},
		{[]string{"-replenish", "1001ms"}, "-replenish 1.001s: want at most 1s"},
		{[]string{"-mode", "replenish=100h"}, `-mode "replenish=100h": replenish time 100h0m0s: want at most 1s`},
		{[]string{"-mode", "replenish=2s+kernel"}, "want at most 1s"},
		{[]string{"-transport", "quic", "-pin", pin, "-mode", "replenish=100h"}, "want at most 1s"},
		{[]string{"-replenish", "1s"}, ""},
		{[]string{"-mode", "replenish=1s"}, ""},
		{[]string{"-mode", "replenish=100us"}, ""},
		{[]string{"-transport", "quic", "-pin", pin, "-mode", "expire=2s"}, ""},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: err = %v, want one saying %q", tc.args, err, tc.wantErr)
		}
	}
}

// Bad flags exit 2 with one line naming the command once.
func TestRunBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port", []string{"-to", "127.0.0.1:99999"}, `sender: -to "127.0.0.1:99999": port must be a number from 1 to 65535`},
		{"probe port", []string{"-probe", "127.0.0.1:99999"}, `sender: -probe "127.0.0.1:99999": port must be a number from 1 to 65535`},
		{"replenish", []string{"-replenish", "100h"}, "sender: -replenish 100h0m0s: want at most 1s"},
		{"mode", []string{"-mode", "replenish=100h"}, `sender: -mode "replenish=100h": replenish time 100h0m0s: want at most 1s`},
		{"control character in the name", []string{"-name", "a\x01b"},
			`sender: -name "a\x01b": control character U+0001; want 1 to 64 bytes of UTF-8 without control characters`},
		{"name too long", []string{"-name", strings.Repeat("n", 65)}, "sender: -name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			done := make(chan int, 1)
			// Should the flags pass, the sender dials a port nothing
			// listens on, not a viewer that may run on this machine.
			args := append([]string{"-to", "127.0.0.1:1", "-status=false"}, tc.args...)
			go func() { done <- run(args, &out) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return: the sender took the flags and started")
			}
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			got := out.String()
			if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, tc.want) || strings.Contains(got, "sender: sender:") {
				t.Errorf("stderr %q, want one line starting %q", got, tc.want)
			}
		})
	}
}

// Package sender's errors already begin "sender: "; the command adds its
// name only to the others.
func TestErrorLine(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"sender: stream name: framer: invalid stream name: control character U+0001", "sender: stream name: framer: invalid stream name: control character U+0001"},
		{"sender: ConnectConfig.Dial is required", "sender: ConnectConfig.Dial is required"},
		{"tcp: dialing x: refused", "sender: tcp: dialing x: refused"},
		{"senders: x", "sender: senders: x"},
	} {
		if got := errorLine(errors.New(tc.err)); got != tc.want {
			t.Errorf("errorLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
