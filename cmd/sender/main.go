// Command sender renders synthetic video with its capture time in the
// pixels, encodes VP8 and sends it to a viewer over TCP, QUIC or WebRTC,
// writing a frame only when the transport invites one (source buffer
// management).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"replenish/internal/certs"
	"replenish/media"
	"replenish/media/vpx"
	"replenish/sender"
	"replenish/transport"
	"replenish/transport/quic"
	"replenish/transport/tcp"
	"replenish/transport/webrtc"
)

// The sender's encoder is libvpx's.
var _ sender.Encoder = (*vpx.Encoder)(nil)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func onLadder(sz media.Size) bool {
	for _, r := range media.Ladder {
		if r.Size == sz {
			return true
		}
	}
	return false
}

func ladderSizes() string {
	var s []string
	for _, r := range media.Ladder {
		s = append(s, r.Size.String())
	}
	return strings.Join(s, ", ")
}

func run(args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return 2
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	st := &statusLine{out: stderr, tty: isTerminal(stderr), enabled: o.status}
	log := slog.New(slog.NewTextHandler(st, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var rec *recordsFile
	scfg := sender.Config{Name: o.name, Mode: o.modeText(), MaxSize: o.maxRes, FPS: o.fps, Start: o.start, Logger: log,
		Scalability: o.layers, MaxPacketSize: o.rtpSize, NewEncoder: sender.NewEncoderOf(vpx.NewEncoder)}
	if o.records != "" {
		if rec, err = openRecords(o.records); err != nil {
			fmt.Fprintf(stderr, "sender: -records: %v\n", err)
			return 1
		}
		scfg.OnFrame = rec.frame
		defer func() {
			if err := rec.close(); err != nil {
				fmt.Fprintf(stderr, "sender: -records %s: %v\n", o.records, err)
			}
		}()
	}
	src := media.NewSource(media.SourceConfig{FPS: o.fps, Name: o.name})
	scfg.Source = src
	s, err := sender.New(scfg)
	if err != nil {
		fmt.Fprintln(stderr, errorLine(err))
		return 1
	}
	defer s.Close()

	done := make(chan struct{})
	var workers []<-chan struct{}
	workers = append(workers, goDone(func() { src.Run(ctx) }))
	workers = append(workers, goDone(func() { st.run(ctx, done, s, o, o.mode) }))

	dial, err := o.dialer(log)
	if err != nil {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return 2
	}
	if rec != nil {
		dial = rec.dialer(dial)
	}
	logStart(log, o)
	err = s.Connect(ctx, sender.ConnectConfig{
		Dial: dial, ProbeAddr: o.probe, Logger: log,
		OnConnect: func() { st.setConn("connected") },
		OnDisconnect: func(c transport.Counters, err error) {
			st.setConn(fmt.Sprintf("disconnected: %v", err))
			if rec != nil {
				rec.conn(o.transport, c)
			}
		},
	})
	close(done)
	for _, w := range workers {
		<-w
	}
	st.clear()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, errorLine(err))
		return 1
	}
	log.Info("stopped")
	return 0
}

// errorLine is err as the command reports it, after the command's name;
// package sender's errors begin with that name already.
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "sender: ") {
		return msg
	}
	return "sender: " + msg
}

func goDone(f func()) <-chan struct{} {
	c := make(chan struct{})
	go func() { defer close(c); f() }()
	return c
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// whipClient returns the client of the WHIP requests: one that verifies
// the viewer's HTTPS certificate by -pin or -ca, or nil (the default
// client, the system's authorities) without either.
func (o options) whipClient() (*http.Client, error) {
	roots, err := o.roots()
	if err != nil || (roots == nil && o.pin.IsZero()) {
		return nil, err
	}
	u, err := url.Parse(o.to)
	if err != nil {
		return nil, err
	}
	conf, err := certs.ClientTLS(o.pin, roots, u.Hostname(), "http/1.1")
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf, Proxy: http.ProxyFromEnvironment}}, nil
}

// dialer returns the dial function of the chosen transport.
func (o options) dialer(log *slog.Logger) (transport.Dialer, error) {
	switch o.transport {
	case "tcp":
		return tcp.Dialer(o.to, tcp.Config{Mode: o.mode, Congestion: o.cc, Pace: o.paced(), Token: o.token, Logger: log}), nil
	case "webrtc":
		client, err := o.whipClient()
		if err != nil {
			return nil, err
		}
		return webrtc.Dialer(o.to, webrtc.Config{Token: o.token, Name: o.name, InitialBitrate: o.start, HTTPClient: client, Logger: log}), nil
	}
	roots, err := o.roots()
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(o.to)
	tlsConf, err := certs.ClientTLS(o.pin, roots, host, quic.ALPN)
	if err != nil {
		return nil, err
	}
	return quic.Dialer(o.to, quic.Config{Mode: o.mode, TLS: tlsConf, Pace: o.paced(), Token: o.token, Logger: log}), nil
}

// paced says whether connections pace what they send, in replenish mode
// only: TCP where the source's frames are long (tcp.LongFrame), QUIC at
// every frame rate (quic.Config.Pace: quic-go paces anyway, but lets ten
// packets go at once after a pause, all of a frame at a few Mb/s and
// 30 fps). The other modes are the applications replenish is compared
// with, and stay as they are.
func (o options) paced() bool {
	return o.mode.Policy == transport.Replenish && (o.transport == "quic" || o.transport == "tcp" && tcp.LongFrames(o.fps))
}

// logStart logs what the sender is about to do.
func logStart(log *slog.Logger, o options) {
	attrs := []any{"to", o.to, "transport", o.transport, "name", o.name, "mode", o.mode.String(), "fps", o.fps, "max-res", o.maxRes,
		"layers", o.layers}
	if o.transport == "tcp" {
		attrs = append(attrs, "cc", congestionName(o.cc))
	}
	if o.transport == "tcp" || o.transport == "quic" {
		attrs = append(attrs, "paced", o.paced())
	}
	log.Info("sending", attrs...)
}

// congestionName names the congestion control TCP connections will use:
// -cc's, or the system's default.
func congestionName(cc string) string {
	if cc != "" {
		return cc
	}
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return "the system's default"
	}
	return strings.TrimSpace(string(b)) + " (the system's default; -cc sets another)"
}
