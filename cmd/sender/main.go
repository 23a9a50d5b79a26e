// Command sender renders synthetic video with its capture time in the
// pixels, encodes VP8 and sends it to a viewer over TCP, writing a frame only
// when the transport invites one (source buffer management).
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
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"replenish/media"
	"replenish/rate"
	"replenish/sender"
	"replenish/sender/tcpsend"
	"replenish/transport"
	"replenish/transport/tcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

type options struct {
	to        string
	name      string
	mode      string
	replenish time.Duration
	lowat     int
	nodelay   bool
	fps       int
	maxRes    string
	verbose   bool
	status    bool
	records   string
	bitrate   string
	start     rate.Bitrate // parsed from bitrate
}

func parseFlags(args []string, out io.Writer) (options, transport.Mode, media.Size, error) {
	var o options
	fs := flag.NewFlagSet("sender", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: sender [flags]\n\nSends a synthetic VP8 stream to a viewer, one frame per invitation.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.to, "to", "127.0.0.1:7000", "viewer `host:port` to send to")
	fs.StringVar(&o.name, "name", "replenish", "stream `name` shown by the viewer (at most 64 bytes)")
	fs.StringVar(&o.mode, "mode", "replenish", "send buffer policy: replenish, lowat or default (or a full form such as replenish=15ms, lowat=15000, default+nagle)")
	fs.DurationVar(&o.replenish, "replenish", transport.DefaultReplenishTime, "replenish time for -mode replenish: invite a frame when the unsent backlog drains within this `duration`")
	fs.IntVar(&o.lowat, "lowat", 0, "TCP_NOTSENT_LOWAT in `bytes` for -mode lowat")
	fs.BoolVar(&o.nodelay, "nodelay", true, "set TCP_NODELAY (false turns Nagle's algorithm back on)")
	fs.StringVar(&o.bitrate, "bitrate", "1mbit", "initial target `bitrate` (e.g. 500kbit, 2mbit); in default and lowat modes, which give the sender no view of the path, the target stays there")
	fs.IntVar(&o.fps, "fps", 30, "source frame rate in frames per second (1-120)")
	fs.StringVar(&o.maxRes, "max-res", "1280x720", "largest resolution to send, `WxH`, one of the ladder's sizes: "+ladderSizes())
	fs.BoolVar(&o.verbose, "v", false, "log debug messages")
	fs.BoolVar(&o.status, "status", true, "print a live status line")
	fs.StringVar(&o.records, "records", "", "write one JSON line per frame sent to this `file` (for experiments)")
	if err := fs.Parse(args); err != nil {
		return o, transport.Mode{}, media.Size{}, err
	}
	if fs.NArg() > 0 {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var err error
	if _, _, err := net.SplitHostPort(o.to); err != nil {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("-to %q: want host:port: %v", o.to, err)
	}
	if o.fps < 1 || o.fps > 120 {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("-fps %d: want 1 to 120", o.fps)
	}
	if o.name == "" || len(o.name) > 64 {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("-name %q: want 1 to 64 bytes", o.name)
	}
	if o.start, err = rate.Parse(o.bitrate); err != nil || o.start < 10*rate.Kbps || o.start > 100*rate.Mbps {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("-bitrate %q: want a rate from 10kbit to 100mbit", o.bitrate)
	}
	maxRes, err := media.ParseSize(o.maxRes)
	if err == nil && !onLadder(maxRes) {
		err = fmt.Errorf("not a rung of the ladder")
	}
	if err != nil {
		return o, transport.Mode{}, media.Size{}, fmt.Errorf("-max-res %q: %v (ladder: %s)", o.maxRes, err, ladderSizes())
	}

	m, err := modeOf(o, set)
	if err != nil {
		return o, transport.Mode{}, media.Size{}, err
	}
	return o, m, maxRes, nil
}

// modeOf returns the mode -mode names, with -replenish, -lowat and
// -nodelay applied; set holds the flags given.
func modeOf(o options, set map[string]bool) (transport.Mode, error) {
	mode := o.mode
	switch {
	case strings.ContainsAny(mode, "=+"):
		// A full form; the separate flags must not contradict it.
		if set["replenish"] || set["lowat"] {
			return transport.Mode{}, fmt.Errorf("-mode %q already says its parameter; drop -replenish/-lowat", mode)
		}
	case mode == "replenish":
		if o.replenish <= 0 {
			return transport.Mode{}, fmt.Errorf("-replenish %v: want a positive duration", o.replenish)
		}
		mode = fmt.Sprintf("replenish=%v", o.replenish)
	case mode == "lowat":
		if o.lowat <= 0 {
			return transport.Mode{}, fmt.Errorf("-mode lowat needs -lowat BYTES > 0")
		}
		mode = fmt.Sprintf("lowat=%d", o.lowat)
	}
	if set["lowat"] && !strings.HasPrefix(mode, "lowat") {
		return transport.Mode{}, fmt.Errorf("-lowat applies only to -mode lowat")
	}
	if set["replenish"] && !strings.HasPrefix(mode, "replenish") {
		return transport.Mode{}, fmt.Errorf("-replenish applies only to -mode replenish")
	}
	m, err := transport.ParseMode(mode)
	if err != nil {
		return transport.Mode{}, fmt.Errorf("-mode %q: %v", o.mode, err)
	}
	if m.Policy == transport.Expire {
		return transport.Mode{}, fmt.Errorf("-mode %q: expire is a QUIC mode", o.mode)
	}
	if set["nodelay"] {
		m.Nagle = !o.nodelay
	}
	return m, nil
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
	o, mode, maxRes, err := parseFlags(args, stderr)
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
	scfg := sender.Config{Name: o.name, MaxSize: maxRes, FPS: o.fps, Start: o.start, Logger: log}
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
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return 1
	}
	defer s.Close()

	done := make(chan struct{})
	var workers []<-chan struct{}
	workers = append(workers, goDone(func() { src.Run(ctx) }))
	workers = append(workers, goDone(func() { st.run(ctx, done, s, o, mode) }))

	log.Info("sending", "to", o.to, "name", o.name, "mode", mode.String(), "nodelay", !mode.Nagle, "fps", o.fps, "max-res", maxRes)
	err = tcpsend.Run(ctx, tcpsend.Config{
		Addr: o.to, TCP: tcp.Config{Mode: mode}, Sender: s, Logger: log,
		OnConnect: func(*tcp.Conn) { st.setConn("connected") },
		OnDisconnect: func(c *tcp.Conn, err error) {
			st.setConn(fmt.Sprintf("disconnected: %v", err))
			if rec != nil {
				rec.conn(c.Stats())
			}
		},
	})
	close(done)
	for _, w := range workers {
		<-w
	}
	st.clear()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "sender: %v\n", err)
		return 1
	}
	log.Info("stopped")
	return 0
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
