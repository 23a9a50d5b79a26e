// Command viewer receives replenish streams from senders and shows them in
// a browser: it serves a page that decodes the video, measures
// glass-to-glass latency from the pixels, and charts it per stream.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"replenish/records"
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
	listen  string
	http    string
	token   string
	verbose bool
	records string
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("viewer", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, `usage: viewer [flags]

Receives video streams from replenish senders and serves a page that shows
them side by side with their glass-to-glass latency. Senders connect over
TCP to -listen and probe the viewer's clock over UDP on the same port.

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", viewer.DefaultListen, "`host:port` where senders connect (TCP, and UDP for clock probes)")
	fs.StringVar(&o.http, "http", viewer.DefaultHTTP, "`host:port` of the page and the API; a non-loopback address needs -token")
	fs.StringVar(&o.token, "token", "", "`secret` every browser and API request must carry (open the page with ?token=secret); default $"+tokenEnv)
	fs.BoolVar(&o.verbose, "v", false, "log debug messages")
	fs.StringVar(&o.records, "records", "", "write one JSON line per frame received and per frame a page displayed to this `file` (for experiments)")
	if err := fs.Parse(args); err != nil {
		return o, err
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

	cfg := viewer.Config{Listen: o.listen, HTTP: o.http, Token: o.token, Logger: log}
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
		fmt.Fprintf(stderr, "viewer: -http %s is reachable from other machines, so it needs -token (or $%s); or use -http 127.0.0.1:PORT\n", o.http, tokenEnv)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "viewer: %v\n", err)
		return 2
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
		_, h := s.Addrs()
		log.Info("open the page", "url", pageURL(h, o.token != ""))
	case err := <-done:
		fmt.Fprintf(stderr, "viewer: %v\n", err)
		return 1
	}
	if err := <-done; err != nil {
		fmt.Fprintf(stderr, "viewer: %v\n", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// pageURL returns the URL to open for the page served at addr. An
// unspecified address is shown as this machine's host name. The token is
// not printed.
func pageURL(addr net.Addr, withToken bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	u := "http://" + net.JoinHostPort(host, port) + "/"
	if withToken {
		u += "?token=YOUR_TOKEN"
	}
	return u
}
