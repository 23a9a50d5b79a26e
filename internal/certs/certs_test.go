package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseFingerprint(t *testing.T) {
	hexs := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"lower", "sha256:" + hexs, true},
		{"upper", "sha256:" + strings.ToUpper(hexs), true},
		{"colons", "sha256:" + strings.TrimSuffix(strings.Repeat("AB:", 32), ":"), true},
		{"spaces around", "  sha256:" + hexs + "\n", true},
		{"no prefix", hexs, false},
		{"other digest", "sha1:" + hexs, false},
		{"short", "sha256:" + hexs[:62], false},
		{"long", "sha256:" + hexs + "ab", false},
		{"not hex", "sha256:" + strings.Repeat("zz", 32), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFingerprint(tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("ParseFingerprint(%q) = %v, %v", tc.in, f, err)
			}
			if err != nil && !errors.Is(err, ErrFingerprint) {
				t.Fatalf("error %v does not wrap ErrFingerprint", err)
			}
			if err == nil && f.String() != "sha256:"+hexs {
				t.Fatalf("String = %q", f.String())
			}
		})
	}
}

func FuzzParseFingerprint(f *testing.F) {
	f.Add("sha256:" + strings.Repeat("0f", 32))
	f.Add("sha256:zz")
	f.Fuzz(func(t *testing.T, s string) {
		fp, err := ParseFingerprint(s)
		if err != nil {
			return
		}
		again, err := ParseFingerprint(fp.String())
		if err != nil || again != fp {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

// handshake runs a TLS handshake between a server with cert and a client
// with cfg over loopback TCP and returns the client's error.
func handshake(t *testing.T, cert tls.Certificate, cfg *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"roq"}})
		s.SetDeadline(time.Now().Add(10 * time.Second))
		s.Handshake()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := tls.Dialer{Config: cfg}
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err == nil {
		c.Close()
	}
	return err
}

func TestPinnedClient(t *testing.T) {
	cert, fp, err := SelfSigned([]string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if fp != FingerprintOf(cert.Certificate[0]) {
		t.Fatal("SelfSigned returned a fingerprint of another certificate")
	}
	good, err := ClientTLS(fp, nil, "", "roq")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, cert, good); err != nil {
		t.Fatalf("the right pin was refused: %v", err)
	}
	wrong := fp
	wrong[0] ^= 1
	bad, _ := ClientTLS(wrong, nil, "", "roq")
	if err := handshake(t, cert, bad); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("a wrong pin gave %v, want ErrPinMismatch", err)
	}
}

func TestRootsClient(t *testing.T) {
	cert, _, err := SelfSigned([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	cfg, err := ClientTLS(Fingerprint{}, roots, "127.0.0.1", "roq")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, cert, cfg); err != nil {
		t.Fatalf("a trusted certificate was refused: %v", err)
	}
	other, _, _ := SelfSigned([]string{"127.0.0.1"}, time.Hour)
	if err := handshake(t, other, cfg); err == nil {
		t.Fatal("a certificate outside the roots was accepted")
	}
}

func TestClientNeedsVerification(t *testing.T) {
	if _, err := ClientTLS(Fingerprint{}, nil, "", "roq"); !errors.Is(err, ErrNoVerification) {
		t.Fatalf("ClientTLS without pin or roots = %v, want ErrNoVerification", err)
	}
}
