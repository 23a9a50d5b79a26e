package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"replenish/internal/certs"
	"replenish/viewer"
)

func TestFlags(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"help", []string{"-h"}, 0, []string{"-listen host:port", "127.0.0.1:7000", "-http host:port", "127.0.0.1:8080", "-token secret", "UDP",
			"QUIC", "-tls-cert file", "-tls-key file", "-fingerprint-file file", "sha256:", "-https", "HTTPS", "-page-mode", "replenish=15ms", "-page-delay duration", "50ms"}},
		{"page delay zero", []string{"-page-delay", "0s"}, 2, []string{"-page-delay 0s", "positive"}},
		{"page delay negative", []string{"-page-delay", "-5ms"}, 2, []string{"-page-delay -5ms"}},
		{"page mode not TCP's", []string{"-page-mode", "expire=100ms"}, 2, []string{"-page-mode expire=100ms"}},
		{"page mode unknown", []string{"-page-mode", "fast"}, 2, []string{"-page-mode"}},
		{"certificate without key", []string{"-tls-cert", "c.pem"}, 2, []string{"-tls-cert and -tls-key go together"}},
		{"key without certificate", []string{"-tls-key", "k.pem"}, 2, []string{"-tls-cert and -tls-key go together"}},
		{"unreadable certificate", []string{"-tls-cert", "/nonexistent/c.pem", "-tls-key", "/nonexistent/k.pem", "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0"}, 1,
			[]string{"-tls-cert /nonexistent/c.pem", "no such file"}},
		{"listen without port", []string{"-listen", "127.0.0.1"}, 2, []string{"-listen", "want host:port"}},
		{"http port not a number", []string{"-http", "127.0.0.1:web"}, 2, []string{"-http", "port must be a number"}},
		{"port out of range", []string{"-listen", "127.0.0.1:70000"}, 2, []string{"-listen"}},
		{"unknown flag", []string{"-colour"}, 2, []string{"flag provided but not defined"}},
		{"extra argument", []string{"now"}, 2, []string{"unexpected arguments"}},
		{"exposed without token", []string{"-http", "0.0.0.0:0"}, 2, []string{"-http 0.0.0.0:0", "needs -token"}},
		{"media exposed without token", []string{"-listen", "0.0.0.0:0"}, 2, []string{"-listen 0.0.0.0:0", "needs -token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(context.Background(), tc.args, &out)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tc.code, out.String())
			}
			for _, s := range tc.contains {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// A bad value that the viewer checks, and a failure to listen, are told in
// one line that names the viewer once: no usage page, no "viewer: viewer:".
func TestErrorLines(t *testing.T) {
	t.Setenv(tokenEnv, "")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the line's start
	}{
		{"page mode unknown", []string{"-page-mode", "foo"}, 2, "viewer: -page-mode foo: "},
		{"page mode not TCP's", []string{"-page-mode", "expire=100ms"}, 2, "viewer: -page-mode expire=100ms: "},
		{"media port in use", []string{"-listen", busy.Addr().String(), "-http", "127.0.0.1:0"}, 1, "viewer: media listener: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(context.Background(), tc.args, &out)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Fatalf("exit code %d, output:\n%s\nwant %d and one line starting %q", code, out.String(), tc.code, tc.want)
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-token", "t0ken"}, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := lines.Text()
		if strings.Contains(line, "open the page") {
			if !strings.Contains(line, "http://127.0.0.1:") || !strings.Contains(line, "?token=YOUR_TOKEN") || strings.Contains(line, "t0ken") {
				t.Errorf("page URL line %q", line)
			}
			cancel()
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// TestSignal runs the command in a child process and stops it with
// SIGTERM and SIGINT.
func TestSignal(t *testing.T) {
	if os.Getenv("VIEWER_TEST_MAIN") == "1" {
		os.Args = append([]string{"viewer"}, strings.Fields(os.Getenv("VIEWER_TEST_ARGS"))...)
		main()
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignal$")
			cmd.Env = append(os.Environ(), "VIEWER_TEST_MAIN=1", "VIEWER_TEST_ARGS=-listen 127.0.0.1:0 -http 127.0.0.1:0")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				log.WriteString(lines.Text() + "\n")
				if strings.Contains(lines.Text(), "open the page") {
					cmd.Process.Signal(sig)
				}
			}
			errc := make(chan error, 1)
			go func() { errc <- cmd.Wait() }()
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("viewer exited with %v; log:\n%s", err, log.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("viewer did not stop; log:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "stopped") {
				t.Errorf("no clean stop in the log:\n%s", log.String())
			}
		})
	}
}

// runUntil runs the viewer with args until a log line contains want, then
// calls at with the log so far and stops it; it returns the whole log.
func runUntil(t *testing.T, args []string, want string, at func(log string)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, pw)
		pw.Close()
	}()
	// The log is read on while at runs, so that the viewer never blocks
	// writing it.
	var mu sync.Mutex
	var log strings.Builder
	seen, read := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(read)
		lines := bufio.NewScanner(pr)
		for lines.Scan() {
			mu.Lock()
			log.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), want) {
				select {
				case seen <- log.String():
				default:
				}
			}
			mu.Unlock()
		}
	}()
	select {
	case l := <-seen:
		at(l)
	case <-read:
	}
	cancel()
	code := <-done
	<-read
	mu.Lock()
	defer mu.Unlock()
	if code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, log.String())
	}
	return log.String()
}

// The fingerprint the viewer logs is the one it writes to
// -fingerprint-file, once it listens; the file goes at exit.
func TestFingerprintFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "viewer.fp")
	var inFile string
	log := runUntil(t, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-fingerprint-file", path}, "open the page", func(string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("no fingerprint file once listening: %v", err)
		}
		inFile = string(b)
	})
	fp, err := certs.ParseFingerprint(inFile)
	if err != nil || !strings.HasSuffix(inFile, "\n") || strings.Count(inFile, "\n") != 1 {
		t.Fatalf("fingerprint file %q: %v", inFile, err)
	}
	if !strings.Contains(log, `msg="tls fingerprint" fingerprint=`+fp.String()) {
		t.Errorf("the log does not give the file's fingerprint %v as one line:\n%s", fp, log)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fingerprint file left after exit: %v", err)
	}
}

// With -tls-cert and -tls-key the viewer presents that certificate.
func TestCertificateFiles(t *testing.T) {
	cert, fp, err := certs.SelfSigned([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600)
	log := runUntil(t, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile}, "open the page", func(string) {})
	if !strings.Contains(log, "fingerprint="+fp.String()) {
		t.Errorf("the log does not give the certificate's fingerprint %v:\n%s", fp, log)
	}
}

// With -https the page is served over HTTPS with the certificate whose
// fingerprint the viewer logs, and the URL it logs says https.
func TestHTTPS(t *testing.T) {
	runUntil(t, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-https"}, "open the page", func(log string) {
		m := regexp.MustCompile(`msg="open the page" url=(https://127\.0\.0\.1:\d+/) certificate=(sha256:[0-9a-f]{64})`).FindStringSubmatch(log)
		if m == nil {
			t.Errorf("no https URL and certificate fingerprint in the log:\n%s", log)
			return
		}
		fp, err := certs.ParseFingerprint(m[2])
		if err != nil {
			t.Fatal(err)
		}
		conf, err := certs.ClientTLS(fp, nil, "", "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: conf}, Timeout: 15 * time.Second}
		resp, err := client.Get(m[1])
		if err != nil {
			t.Errorf("GET %s with the logged fingerprint pinned: %v", m[1], err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", m[1], resp.Status)
		}
	})
}

// Lost frames, undecodable ones and frames the native player displayed
// reach the records file.
func TestRecordLines(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_000_001)
	for _, tc := range []struct {
		name string
		rec  viewer.Record
		want string
	}{
		{"lost", viewer.Record{Kind: viewer.RecordLost, Stream: 2, Name: "s", Received: at, Lost: 1, LostReason: viewer.LostReset},
			`{"kind":"lost","stream":2,"frame":0,"name":"s","received_us":1700000000000001,"lost_frames":1,"reason":"reset"}`},
		{"undecodable", viewer.Record{Kind: viewer.RecordReceived, Stream: 2, Frame: 9, Name: "s", Received: at, Bytes: 10, Undecodable: true},
			`{"kind":"received","stream":2,"frame":9,"name":"s","received_us":1700000000000001,"bytes":10,"undecodable":true}`},
		{"layered", viewer.Record{Kind: viewer.RecordDisplayed, Stream: 2, Frame: 7, Client: 1, Displayed: at, G2G: -1, Misread: true,
			Decode: -1, Draw: -1, Layered: true, TID: 2},
			`{"kind":"displayed","stream":2,"frame":7,"client":1,"displayed_us":1700000000000001,"misread":true,"tid":2}`},
		{"native", viewer.Record{Kind: viewer.RecordDisplayed, Stream: 2, Client: 1, Native: true, Displayed: at, Capture: at.Add(-20 * time.Millisecond),
			G2G: 20 * time.Millisecond, Decode: -1, Draw: -1},
			`{"kind":"displayed","stream":2,"frame":0,"capture_us":1699999999980001,"client":1,"native":true,"displayed_us":1700000000000001,"g2g_ms":20}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(recordLine(tc.rec))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}
