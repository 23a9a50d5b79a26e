// Package certs holds the TLS identities of replenish: the viewer's
// self-signed certificate, the SHA-256 fingerprint that names it
// ("sha256:<64 hex digits>"), and the client configuration that verifies a
// viewer by that pin or by a certificate authority. Verification is never
// skipped: a client configuration without a pin or roots is an error.
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// Errors returned by this package.
var (
	// ErrFingerprint is returned by ParseFingerprint for text that is not
	// "sha256:" followed by 64 hex digits.
	ErrFingerprint = errors.New("certs: invalid fingerprint (want sha256:<64 hex digits>)")
	// ErrPinMismatch is returned by a pinned client's verification when
	// the peer's certificate has another fingerprint.
	ErrPinMismatch = errors.New("certs: the peer's certificate does not match the pinned fingerprint")
	// ErrNoVerification is returned by ClientTLS when given neither a pin
	// nor roots: it will not make a configuration that trusts anyone.
	ErrNoVerification = errors.New("certs: need a fingerprint pin or certificate authorities to verify the peer")
)

// Fingerprint is the SHA-256 digest of a certificate's DER encoding.
type Fingerprint [sha256.Size]byte

// FingerprintOf returns the fingerprint of a DER-encoded certificate.
func FingerprintOf(der []byte) Fingerprint { return sha256.Sum256(der) }

// String returns "sha256:" and the digest in lower-case hex.
func (f Fingerprint) String() string { return "sha256:" + hex.EncodeToString(f[:]) }

// IsZero reports whether f is the zero value (no fingerprint).
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

// ParseFingerprint reads "sha256:<64 hex digits>" (either case; colons
// between hex pairs, as some tools print them, are accepted). Errors wrap
// ErrFingerprint.
func ParseFingerprint(s string) (Fingerprint, error) {
	hexPart, ok := strings.CutPrefix(strings.TrimSpace(s), "sha256:")
	if !ok {
		return Fingerprint{}, fmt.Errorf("%w: %q lacks the sha256: prefix", ErrFingerprint, s)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(hexPart, ":", ""))
	if err != nil || len(b) != sha256.Size {
		return Fingerprint{}, fmt.Errorf("%w: %q", ErrFingerprint, s)
	}
	var f Fingerprint
	copy(f[:], b)
	return f, nil
}

// MarshalText returns String's form.
func (f Fingerprint) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText parses text with ParseFingerprint; with flag.TextVar a
// Fingerprint is a command-line flag.
func (f *Fingerprint) UnmarshalText(text []byte) error {
	v, err := ParseFingerprint(string(text))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// SelfSigned returns a new self-signed ECDSA P-256 certificate for the
// given host names and IP addresses, valid from an hour ago for validFor,
// and its fingerprint.
func SelfSigned(hosts []string, validFor time.Duration) (tls.Certificate, Fingerprint, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, Fingerprint{}, fmt.Errorf("certs: generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, Fingerprint{}, fmt.Errorf("certs: generating a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "replenish viewer"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	addHosts(tmpl, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, Fingerprint{}, fmt.Errorf("certs: creating a certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, FingerprintOf(der), nil
}

func addHosts(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

// ClientTLS returns a TLS 1.3 client configuration that offers alpn and
// verifies the server: by its leaf certificate's fingerprint when pin is
// set (the certificate's names and issuer then do not matter, as with a
// self-signed certificate), otherwise against roots with the usual checks
// for serverName. With neither it returns ErrNoVerification.
func ClientTLS(pin Fingerprint, roots *x509.CertPool, serverName, alpn string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{alpn},
		ServerName: serverName,
	}
	switch {
	case !pin.IsZero():
		// The chain is not checked against any authority; the pin
		// replaces that check, and VerifyConnection always runs it.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrPinMismatch
			}
			got := FingerprintOf(cs.PeerCertificates[0].Raw)
			if !bytes.Equal(got[:], pin[:]) {
				return fmt.Errorf("%w: it is %v, want %v", ErrPinMismatch, got, pin)
			}
			return nil
		}
	case roots != nil:
		cfg.RootCAs = roots
	default:
		return nil, ErrNoVerification
	}
	return cfg, nil
}
