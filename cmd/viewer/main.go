// Command viewer receives replenish streams from senders (TCP, QUIC, and
// WebRTC over WHIP at /whip) and shows them in a browser: it serves a page
// that decodes the video, measures glass-to-glass latency from the pixels,
// and charts it per stream, and offers each stream to the browser's own
// WebRTC player over WHEP (/whep/<stream name>).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"replenish/internal/certs"
	"replenish/records"
	"replenish/transport"
	"replenish/transport/tcp"
	"replenish/viewer"
)

// tokenEnv names the environment variable that can carry the token, so
// that it need not appear in the process list.
const tokenEnv = "REPLENISH_TOKEN"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	listen          string
	http            string
	token           string
	verbose         bool
	records         string
	https           bool
	tlsCert, tlsKey string
	fingerprintFile string
	pageMode        transport.Mode
	pageDelay       time.Duration
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("viewer", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, `usage: viewer [flags]

Receives video streams from replenish senders and serves a page that shows
them side by side with their glass-to-glass latency. Senders connect to
-listen over TCP or over QUIC (UDP, the same port), and probe the viewer's
clock over UDP on that port. QUIC senders verify the viewer's certificate:
the viewer logs its fingerprint ("tls fingerprint", sha256:...) for them to
pin (bin/sender -transport quic -pin sha256:...).

The page and the API are served over HTTPS, with the same certificate, on
a non-loopback -http address (a remote browser decodes only in a secure
context), and on a loopback one with -https. A browser warns once about a
self-signed certificate: check its fingerprint against the log and accept
it, or give the viewer a certificate it trusts (-tls-cert, -tls-key).

WebRTC publishers (bin/sender -transport webrtc, a browser, OBS, GStreamer's
whipsink) publish with WHIP to http(s)://<-http>/whip?stream=NAME, with
"Authorization: Bearer <token>" when -token is set; VP8 only. The page's
native player, and any WHEP player, plays a stream from
http(s)://<-http>/whep/NAME (the same token rule).

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", viewer.DefaultListen, "`host:port` where senders connect (TCP, and UDP for QUIC and clock probes); a non-loopback address needs -token")
	fs.StringVar(&o.http, "http", viewer.DefaultHTTP, "`host:port` of the page and the API; a non-loopback address needs -token")
	fs.StringVar(&o.token, "token", "", "`secret` every sender must prove (bin/sender -token) and every browser and API request carry (open the page once with ?token=secret: the viewer keeps it in a cookie and drops it from the URL; scripts, WHIP and WHEP: Authorization: Bearer secret); default $"+tokenEnv)
	fs.BoolVar(&o.verbose, "v", false, "log debug messages")
	fs.StringVar(&o.records, "records", "", "write one JSON line per frame received and per frame a page displayed (\"native\": by its native player) to this `file` (for experiments)")
	fs.BoolVar(&o.https, "https", false, "serve the page and the API over HTTPS on a loopback -http address too (always so on any other)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM `file` with the certificate for QUIC and HTTPS (chain, leaf first); default a new self-signed one at each start")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM `file` with the private key of -tls-cert")
	fs.StringVar(&o.fingerprintFile, "fingerprint-file", "", "once listening, write the certificate's fingerprint (sha256:...) and a newline to this `file` (replaced atomically; removed at exit)")
	pageMode := fs.String("page-mode", transport.DefaultMode.String(), "buffer policy of each page's connection (`mode`): replenish[=DUR] (a frame only when the connection invites one, the freshest the page can decode) or default (as fast as the socket takes them)")
	fs.DurationVar(&o.pageDelay, "page-delay", viewer.DefaultPageDelayTarget, "with -page-mode replenish, the longest a page's frame may wait behind the bytes already on its connection (`duration`) before the page gets base-layer frames only")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.pageDelay <= 0 {
		return o, fmt.Errorf("-page-delay %v: want a positive duration, such as 50ms", o.pageDelay)
	}
	// Parsed here rather than by fs.TextVar, whose error prints the whole
	// usage: a bad mode gets a one-line error, as the other checks here.
	mode, err := transport.ParseMode(*pageMode)
	if err != nil {
		return o, fmt.Errorf("-page-mode %s: %v", *pageMode, err)
	}
	o.pageMode = mode
	if err := tcp.CheckMode(o.pageMode); err != nil {
		return o, fmt.Errorf("-page-mode %s: %v", o.pageMode, err)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, errors.New("-tls-cert and -tls-key go together")
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.token == "" {
		o.token = os.Getenv(tokenEnv)
	}
	for _, a := range []struct{ flag, v string }{{"listen", o.listen}, {"http", o.http}} {
		_, port, err := net.SplitHostPort(a.v)
		if err != nil {
			return o, fmt.Errorf("-%s %q: want host:port: %v", a.flag, a.v, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return o, fmt.Errorf("-%s %q: port must be a number from 0 to 65535", a.flag, a.v)
		}
	}
	return o, nil
}

// run runs the viewer until ctx is done and returns the exit code: 0 after a
// clean stop, 1 on failure, 2 for bad flags.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "viewer: %v (see viewer -h)\n", err)
		return 2
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg := viewer.Config{Listen: o.listen, HTTP: o.http, Token: o.token, HTTPTLS: o.https, Logger: log, PageMode: o.pageMode, PageDelayTarget: o.pageDelay}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "viewer: -tls-cert %s, -tls-key %s: %v\n", o.tlsCert, o.tlsKey, err)
			return 1
		}
		cfg.Certificate = &cert
	}
	if o.records != "" {
		w, err := records.Create(o.records, maxRecords)
		if err != nil {
			fmt.Fprintf(stderr, "viewer: -records: %v\n", err)
			return 1
		}
		defer func() {
			if err := w.Close(); err != nil {
				fmt.Fprintf(stderr, "viewer: -records %s: %v\n", o.records, err)
			}
		}()
		cfg.OnRecord = func(r viewer.Record) { w.Write(recordLine(r)) }
	}
	s, err := viewer.New(cfg)
	if errors.Is(err, viewer.ErrTokenRequired) {
		flag, addr := "http", o.http
		if viewer.IsLoopback(o.http) {
			flag, addr = "listen", o.listen
		}
		fmt.Fprintf(stderr, "viewer: -%s %s is reachable from other machines, so it needs -token (or $%s); or use -%s 127.0.0.1:PORT\n",
			flag, addr, tokenEnv, flag)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, err) // the viewer package's errors start with "viewer: "
		return 2
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
		if o.fingerprintFile != "" {
			if err := writeFingerprint(o.fingerprintFile, s.Fingerprint()); err != nil {
				fmt.Fprintf(stderr, "viewer: -fingerprint-file: %v\n", err)
				stop()
				<-done
				return 1
			}
			defer os.Remove(o.fingerprintFile)
		}
		logPage(log, s, o.token != "")
	case err := <-done:
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := <-done; err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// writeFingerprint writes fp and a newline to path, atomically: a reader
// sees the whole line or no file (or the previous one).
func writeFingerprint(path string, fp certs.Fingerprint) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(fp.String() + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// logPage logs the URL of the page, and over HTTPS the fingerprint of the
// certificate a browser is shown.
func logPage(log *slog.Logger, s *viewer.Server, withToken bool) {
	_, h := s.Addrs()
	if s.HTTPS() {
		log.Info("open the page", "url", pageURL(h, true, withToken), "certificate", s.Fingerprint().String())
		return
	}
	log.Info("open the page", "url", pageURL(h, false, withToken))
}

// pageURL returns the URL to open for the page served at addr, over
// HTTPS if secure. An unspecified address is shown as this machine's host
// name. The token is not printed.
func pageURL(addr net.Addr, secure, withToken bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	scheme := "http://"
	if secure {
		scheme = "https://"
	}
	u := scheme + net.JoinHostPort(host, port) + "/"
	if withToken {
		u += "?token=YOUR_TOKEN"
	}
	return u
}
