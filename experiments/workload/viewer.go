package workload

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/internal/certs"
	"replenish/rate"
	"replenish/transport"
	"replenish/viewer"
)

// statsURL is the viewer's /api/stats, as a client into the receiver's
// namespace asks for it: over HTTPS, as the viewer serves HTTP beyond
// loopback.
const statsURL = "https://" + ViewerHTTP + "/api/stats"

// tokenEnv is the environment variable cmd/viewer and cmd/sender read
// their token from.
const tokenEnv = "REPLENISH_TOKEN"

// viewerAddr returns the viewer's HTTP address as seen across p: on the
// receiver's address.
func viewerAddr(p *emu.Path) string {
	return net.JoinHostPort(p.ReceiverAddr().String(), strconv.Itoa(HTTPPort))
}

// nsDialer returns a dial function whose connections start inside side's
// namespace of p (the socket is created there, so it stays there).
func nsDialer(p *emu.Path, side emu.Side) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := p.Do(side, func() (err error) {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// nsTransport returns an HTTP transport that connects inside the
// receiver's namespace of p, to a viewer verified by the fingerprint in
// the file fingerprint (see viewerTLS).
func nsTransport(p *emu.Path, fingerprint string) *http.Transport {
	return &http.Transport{
		DialContext:         nsDialer(p, emu.Receiver),
		TLSClientConfig:     viewerTLS(fingerprint),
		MaxIdleConns:        4,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// viewerTLS returns a TLS configuration that accepts the viewer whose
// certificate has the fingerprint in the file fingerprint
// (-fingerprint-file), read at each handshake: the viewer writes it once it
// listens, and a restarted viewer may have another.
func viewerTLS(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not checked against any authority; the pin
		// replaces that check, and VerifyConnection always runs it.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			pin, err := ReadFingerprint(fingerprint)
			if err != nil {
				return fmt.Errorf("workload: the viewer's fingerprint: %w", err)
			}
			if len(cs.PeerCertificates) == 0 || certs.FingerprintOf(cs.PeerCertificates[0].Raw) != pin {
				return certs.ErrPinMismatch
			}
			return nil
		},
	}
}

// tokenTransport adds a viewer's token to every request: as the bearer
// token (which the API, WHIP and WHEP take) and as the viewer's cookie
// (which pages carry).
type tokenTransport struct {
	base  http.RoundTripper
	token string
}

// RoundTrip sends a copy of r with the token.
func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	r.AddCookie(&http.Cookie{Name: viewer.TokenCookie, Value: t.token})
	return t.base.RoundTrip(r)
}

// StatsClient returns an HTTP client that reaches the viewer in p's
// receiver namespace with its token, verifying it by the fingerprint its
// file fingerprint holds, for FetchStats and StartViewer. Close its idle
// connections when done.
func StatsClient(p *emu.Path, token, fingerprint string) *http.Client {
	return &http.Client{Transport: tokenTransport{nsTransport(p, fingerprint), token}, Timeout: 2 * time.Second}
}

// FetchStats gets the viewer's /api/stats with c (see StatsClient).
func FetchStats(ctx context.Context, c *http.Client) (viewer.Stats, error) {
	var st viewer.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statsURL, nil)
	if err != nil {
		return st, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, errors.New(resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// PageProxy returns a reverse proxy to the viewer's page, API and WebSocket
// in p's receiver namespace, for a browser on this host, adding the
// viewer's token to every request (the browser needs none: the proxy
// listens on loopback). It reaches the viewer over HTTPS, verified by the
// fingerprint in the file fingerprint, and serves the browser plain HTTP
// on loopback. The browser's Host header is passed on unchanged, so that
// the viewer's same-origin checks see what the browser sent (its Origin
// with the https scheme the viewer serves).
func PageProxy(p *emu.Path, token, fingerprint string) *httputil.ReverseProxy {
	return pageProxy(nsTransport(p, fingerprint), ViewerHTTP, token)
}

// PageLegProxy is PageProxy for a page behind a leg of its own: leg is a
// path whose sender side is the viewer's namespace (emu.Config.SenderNS),
// and the proxy's connections start on its receiver side and reach the
// viewer across it, so that the viewer's socket toward the page sends
// through the leg's bottleneck. The proxy reads as fast as the browser
// takes, as a browser's own socket would.
func PageLegProxy(leg *emu.Path, token, fingerprint string) *httputil.ReverseProxy {
	t := nsTransport(leg, fingerprint)
	t.DisableCompression = true
	return pageProxy(t, net.JoinHostPort(leg.SenderAddr().String(), strconv.Itoa(HTTPPort)), token)
}

// pageProxy returns a reverse proxy to the viewer at host through t.
func pageProxy(t *http.Transport, host, token string) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "https", Host: host}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			if r.In.Header.Get("Origin") == "http://"+r.In.Host {
				r.Out.Header.Set("Origin", "https://"+r.In.Host)
			}
		},
		Transport:     tokenTransport{t, token},
		FlushInterval: -1,
	}
}

// Viewer is what cmd/viewer is told for a run or the demo. Its page, API
// and WHIP endpoint listen on ViewerListenHTTP, beyond loopback so that a
// WebRTC sender reaches /whip across the path; so it always has a token,
// which senders prove and StatsClient and PageProxy add to their
// requests, and serves HTTPS with the certificate its fingerprint file
// names.
type Viewer struct {
	Program string // cmd/viewer
	Token   string // the page's and API's token (NewToken); required
	Records string // its records file, "" for none
	// Fingerprint is the file the viewer writes its certificate's
	// fingerprint to once it listens (-fingerprint-file), from which QUIC
	// senders take their pin; required.
	Fingerprint string
	// CertFile and KeyFile are its QUIC certificate and key (PEM; see
	// WriteCertificate); empty for a new self-signed certificate at each
	// start.
	CertFile, KeyFile string
	// PageMode is its buffer policy toward pages (-page-mode); the zero
	// Mode leaves the viewer's default.
	PageMode transport.Mode
	// Listen is where it takes media (-listen): "" for the path's receiver
	// address, AllAddresses for every address of its namespace (senders
	// over several paths that end there).
	Listen string
}

// AllAddresses is Viewer.Listen for media on every address of the
// viewer's namespace, on the workload's port.
var AllAddresses = fmt.Sprintf("0.0.0.0:%d", Port)

// args returns the viewer's command line for media on mediaAddr.
func (v Viewer) args(mediaAddr string) []string {
	argv := []string{v.Program, "-listen", mediaAddr, "-http", ViewerListenHTTP, "-fingerprint-file", v.Fingerprint}
	if v.Records != "" {
		argv = append(argv, "-records", v.Records)
	}
	if v.CertFile != "" {
		argv = append(argv, "-tls-cert", v.CertFile, "-tls-key", v.KeyFile)
	}
	if v.PageMode != (transport.Mode{}) {
		argv = append(argv, "-page-mode", v.PageMode.String())
	}
	return argv
}

// StartViewer starts cmd/viewer in p's receiver namespace as v says,
// receiving media on the workload's port, with its stderr in logPath (the
// token goes in its environment, not on its command line). It returns once
// the viewer's API answers c (see StatsClient) and its fingerprint file
// holds a fingerprint, and stops the viewer if that takes more than
// ReadyWait.
func StartViewer(ctx context.Context, p *emu.Path, c *http.Client, v Viewer, logPath string) (*proc.Proc, error) {
	if v.Token == "" || v.Fingerprint == "" {
		return nil, errors.New("workload: a viewer needs a token and a fingerprint file")
	}
	os.Remove(v.Fingerprint) // a previous viewer's
	listen := v.Listen
	if listen == "" {
		listen = receiverAddr(p)
	}
	pr, err := proc.StartEnv(p.ReceiverNS(), "viewer", v.args(listen), []string{tokenEnv + "=" + v.Token}, logPath, nil)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(ReadyWait)
	if err := pr.WaitHTTP(ctx, c, statsURL, ReadyWait); err != nil {
		pr.Stop(StopGrace)
		return nil, err
	}
	if _, err := waitFingerprint(ctx, pr, v.Fingerprint, time.Until(deadline)); err != nil {
		pr.Stop(StopGrace)
		return nil, err
	}
	return pr, nil
}

// fingerprintPoll is how often waitFingerprint looks for the file.
const fingerprintPoll = 20 * time.Millisecond

// waitFingerprint waits until the file at path holds a fingerprint, pr
// exits, timeout passes or ctx is done.
func waitFingerprint(ctx context.Context, pr *proc.Proc, path string, timeout time.Duration) (certs.Fingerprint, error) {
	deadline := time.Now().Add(timeout)
	for {
		fp, err := ReadFingerprint(path)
		if err == nil {
			return fp, nil
		}
		select {
		case <-pr.Done():
			return fp, fmt.Errorf("viewer exited before it wrote its fingerprint: %v (see its log)", pr.Err())
		case <-ctx.Done():
			return fp, ctx.Err()
		case <-time.After(fingerprintPoll):
		}
		if time.Now().After(deadline) {
			return fp, fmt.Errorf("viewer's fingerprint: %w", err)
		}
	}
}

// ReadFingerprint reads the fingerprint a viewer wrote with
// -fingerprint-file: the pin of its QUIC certificate.
func ReadFingerprint(path string) (certs.Fingerprint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return certs.Fingerprint{}, err
	}
	return certs.ParseFingerprint(string(b))
}

// WriteCertificate writes a new self-signed certificate for a viewer and
// its key into dir as viewer-cert.pem and viewer-key.pem (the key readable
// by its owner only), and returns their paths. A viewer restarted with them
// keeps its fingerprint, so that QUIC senders that pinned it reconnect.
func WriteCertificate(dir string) (certFile, keyFile string, err error) {
	cert, _, err := certs.SelfSigned(nil, viewer.SelfSignedValidity)
	if err != nil {
		return "", "", err
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", fmt.Errorf("workload: encoding the viewer's key: %w", err)
	}
	certFile, keyFile = filepath.Join(dir, "viewer-cert.pem"), filepath.Join(dir, "viewer-key.pem")
	err = errors.Join(
		os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644),
		os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	return certFile, keyFile, err
}

// NewToken returns a random token for a viewer: 32 hex digits.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Sender is what cmd/sender is told for a run or the demo.
type Sender struct {
	Program   string         // cmd/sender
	Transport string         // scenario.TCP ("" too), scenario.QUIC or scenario.WebRTC
	Name      string         // the stream's name
	Mode      transport.Mode // the send-buffer mode; none for WebRTC
	Bitrate   rate.Bitrate   // the starting target; see scenario.Run.VideoBitrate
	MaxRes    string         // the largest resolution, "" for the sender's
	FPS       int            // the source's frame rate, 0 for the sender's
	Records   string         // its records file, "" for none
	// Pin is the viewer's certificate, as its fingerprint file gives it
	// (ReadFingerprint); QUIC, and WebRTC (the WHIP endpoint is HTTPS).
	Pin certs.Fingerprint
	// Token is the viewer's token, which TCP and QUIC senders prove and a
	// WebRTC sender sends as the WHIP bearer token. It goes in the
	// sender's environment.
	Token string
}

// args returns the sender's command line for a viewer with media on
// mediaAddr and its HTTP server (WHIP) on httpAddr: TCP and QUIC to the
// media address, WebRTC to the WHIP endpoint with clock probes to the
// media address.
func (s Sender) args(mediaAddr, httpAddr string) ([]string, error) {
	argv := []string{s.Program, "-name", s.Name, "-status=false", "-bitrate", scenario.FormatRate(s.Bitrate)}
	switch s.Transport {
	case scenario.TCP, "":
		argv = append(argv, "-to", mediaAddr, "-mode", s.Mode.String())
	case scenario.QUIC:
		if s.Pin.IsZero() {
			return nil, errors.New("workload: a QUIC sender needs the viewer's fingerprint")
		}
		argv = append(argv, "-transport", "quic", "-to", mediaAddr, "-pin", s.Pin.String(), "-mode", s.Mode.String())
	case scenario.WebRTC:
		if s.Pin.IsZero() {
			return nil, errors.New("workload: a WebRTC sender needs the viewer's fingerprint (its WHIP endpoint is HTTPS)")
		}
		argv = append(argv, "-transport", "webrtc", "-to", "https://"+httpAddr+"/whip", "-pin", s.Pin.String(), "-probe", mediaAddr)
	default:
		return nil, fmt.Errorf("workload: unknown transport %q", s.Transport)
	}
	if s.MaxRes != "" {
		argv = append(argv, "-max-res", s.MaxRes)
	}
	if s.FPS > 0 {
		argv = append(argv, "-fps", strconv.Itoa(s.FPS))
	}
	if s.Records != "" {
		argv = append(argv, "-records", s.Records)
	}
	return argv, nil
}

// StartSender starts s in p's sender namespace, sending to the viewer
// StartViewer started, with the process named name and its stderr in
// logPath.
func StartSender(p *emu.Path, name string, s Sender, logPath string) (*proc.Proc, error) {
	argv, err := s.args(receiverAddr(p), viewerAddr(p))
	if err != nil {
		return nil, err
	}
	return proc.StartEnv(p.SenderNS(), name, argv, []string{tokenEnv + "=" + s.Token}, logPath, nil)
}
