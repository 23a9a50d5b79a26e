package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"replenish/framer"
	"replenish/internal/certs"
	"replenish/media"
	"replenish/rate"
	"replenish/transport"
	"replenish/transport/tcp"
)

// options are the sender's command line, parsed and checked.
type options struct {
	to        string
	name      string
	transport string // "tcp", "quic" or "webrtc"
	token     string // proved to the viewer (TCP, QUIC); WebRTC: the WHIP bearer token
	probe     string // where clock probes go; empty: none
	mode      transport.Mode
	pin       certs.Fingerprint // QUIC, and WHIP over HTTPS: the viewer's certificate
	ca        string            // the same: a file of authorities instead of a pin
	fps       int
	maxRes    media.Size
	verbose   bool
	status    bool
	records   string
	start     rate.Bitrate
	layers    media.Scalability
	rtpSize   int    // largest RTP packet, bytes
	cc        string // TCP's congestion control; empty: the system's
}

// rawFlags are the flags as typed, before checking.
type rawFlags struct {
	mode, bitrate, maxRes, pin, probe string
	layers                            string
	replenish                         time.Duration
	lowat                             int
	nodelay                           bool
	set                               map[string]bool // flags given on the command line
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	var r rawFlags
	fs := flag.NewFlagSet("sender", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: sender [flags]\n\nSends a synthetic VP8 stream to a viewer, one frame per invitation.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.to, "to", "127.0.0.1:7000", "viewer `address` to send to: host:port (TCP, or UDP for QUIC; port 1 to 65535), or the WHIP URL for WebRTC (http://127.0.0.1:8080/whip; https:// for a viewer off loopback)")
	fs.StringVar(&o.name, "name", "replenish", "stream `name` shown by the viewer (at most 64 bytes)")
	fs.StringVar(&o.transport, "transport", "tcp", "`transport`: tcp, quic (RTP over QUIC; needs -pin or -ca) or webrtc (WHIP, pion's congestion control, for comparison)")
	fs.StringVar(&o.token, "token", os.Getenv("REPLENISH_TOKEN"), "the viewer's `token`: over TCP and QUIC proved at each connection (it never crosses the network), over WebRTC sent as the WHIP bearer token (default $REPLENISH_TOKEN)")
	fs.StringVar(&r.probe, "probe", "", "clock probes to this UDP `host:port` (default: -to for tcp and quic; none for webrtc unless given: the viewer's -listen address)")
	fs.StringVar(&r.mode, "mode", "replenish", "send buffer policy: replenish, lowat (TCP) or default, expire=DURATION (QUIC), or a full form such as replenish=15ms (at most 1s), lowat=15000, default+nagle")
	fs.DurationVar(&r.replenish, "replenish", transport.DefaultReplenishTime, "replenish time for -mode replenish: invite a frame when the unsent backlog drains within this `duration` (at most 1s)")
	fs.IntVar(&r.lowat, "lowat", 0, "TCP_NOTSENT_LOWAT in `bytes` for -mode lowat")
	fs.BoolVar(&r.nodelay, "nodelay", true, "set TCP_NODELAY (false turns Nagle's algorithm back on)")
	fs.StringVar(&o.cc, "cc", "", "TCP's congestion control, e.g. cubic or bbr (default the system's, net.ipv4.tcp_congestion_control; see README, \"TCP congestion control\")")
	fs.StringVar(&r.pin, "pin", "", "QUIC, and WebRTC to an https:// WHIP URL: the viewer's certificate `fingerprint`, sha256:<64 hex digits>, as the viewer logs it")
	fs.StringVar(&o.ca, "ca", "", "QUIC, and WebRTC to an https:// WHIP URL: verify the viewer against the certificate authorities in this PEM `file` instead of a pin (WebRTC without either: the system's)")
	fs.StringVar(&r.bitrate, "bitrate", "1mbit", "initial target `bitrate` (e.g. 500kbit, 2mbit); in modes that give the sender no view of the path, the target stays there")
	fs.IntVar(&o.fps, "fps", 30, "source frame rate in frames per second (1-120)")
	fs.StringVar(&r.maxRes, "max-res", "1280x720", "largest resolution to send, `WxH`, one of the ladder's sizes: "+ladderSizes())
	fs.StringVar(&r.layers, "layers", "L1T3", "temporal `layers`: L1T3 (three, so that a relay can drop the upper ones for a slow page) or L1T1 (none)")
	fs.IntVar(&o.rtpSize, "rtp-size", 0, "largest RTP packet in `bytes`, header included (default the transport's largest: 65535 over TCP and QUIC streams, 1200 over WebRTC, each packet a UDP datagram)")
	fs.BoolVar(&o.verbose, "v", false, "log debug messages")
	fs.BoolVar(&o.status, "status", true, "print a live status line")
	fs.StringVar(&o.records, "records", "", "write one JSON line per frame sent to this `file` (for experiments)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	r.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { r.set[f.Name] = true })
	if err := o.check(r); err != nil {
		return o, err
	}
	return o, nil
}

// minRTPSize is the smallest -rtp-size: room for the header with its
// extension, the VP8 descriptor and some payload.
const minRTPSize = 100

// maxRTPSize is the largest -rtp-size over the chosen transport.
func (o *options) maxRTPSize() int {
	if o.transport == "webrtc" {
		return framer.DefaultRTPPacketSize
	}
	return framer.MaxPacketSize
}

// check validates the flags and fills the parsed fields of o.
func (o *options) check(r rawFlags) error {
	var err error
	if err := o.checkAddress(r); err != nil {
		return err
	}
	if o.fps < 1 || o.fps > 120 {
		return fmt.Errorf("-fps %d: want 1 to 120", o.fps)
	}
	if !r.set["rtp-size"] {
		o.rtpSize = o.maxRTPSize()
	}
	if maxSize := o.maxRTPSize(); o.rtpSize < minRTPSize || o.rtpSize > maxSize {
		return fmt.Errorf("-rtp-size %d: want %d to %d bytes over %s", o.rtpSize, minRTPSize, maxSize, o.transport)
	}
	if err := framer.ValidateStreamName(o.name); err != nil {
		why := strings.TrimPrefix(err.Error(), framer.ErrBadName.Error()+": ")
		return fmt.Errorf("-name %q: %s; want 1 to %d bytes of UTF-8 without control characters", o.name, why, framer.MaxStreamNameLen)
	}
	if o.start, err = rate.Parse(r.bitrate); err != nil || o.start < 10*rate.Kbps || o.start > 100*rate.Mbps {
		return fmt.Errorf("-bitrate %q: want a rate from 10kbit to 100mbit", r.bitrate)
	}
	o.maxRes, err = media.ParseSize(r.maxRes)
	if err == nil && !onLadder(o.maxRes) {
		err = errors.New("not a rung of the ladder")
	}
	if err != nil {
		return fmt.Errorf("-max-res %q: %v (ladder: %s)", r.maxRes, err, ladderSizes())
	}
	if o.layers, err = media.ParseScalability(r.layers); err != nil {
		return fmt.Errorf("-layers %q: want L1T3 or L1T1", r.layers)
	}
	if o.mode, err = parseMode(r); err != nil {
		return err
	}
	return o.checkTransport(r)
}

// checkAddress checks -to and -probe for the transport: each names a
// destination, so its port must be 1 to 65535 (0 is only for listening).
// An empty host, as in :7000, is left to the dialer, which takes it for
// this machine.
func (o *options) checkAddress(r rawFlags) error {
	if o.transport == "webrtc" {
		u, err := url.Parse(o.to)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-to %q: -transport webrtc wants the WHIP URL, e.g. http://127.0.0.1:8080/whip", o.to)
		}
		// No port is the scheme's (80 or 443).
		if u.Port() != "" && !validPort(u.Port()) {
			return fmt.Errorf("-to %q: port must be a number from 1 to 65535", o.to)
		}
	} else if err := checkHostPort("to", o.to); err != nil {
		return err
	}
	o.probe = r.probe
	if o.probe == "" && o.transport != "webrtc" {
		o.probe = o.to
	}
	if o.probe != "" {
		return checkHostPort("probe", o.probe)
	}
	return nil
}

// checkHostPort checks the host:port of a destination flag.
func checkHostPort(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-%s %q: want host:port: %v", flag, addr, err)
	}
	if !validPort(port) {
		return fmt.Errorf("-%s %q: port must be a number from 1 to 65535", flag, addr)
	}
	return nil
}

// validPort says whether port is a destination's port number, 1 to 65535.
func validPort(port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n > 0
}

// maxReplenishTime is the longest replenish time. The replenish time is
// the notice the transport gives before its unsent backlog runs out, so
// the sender keeps about that much data of its own queued: past 1 s that
// is more than a frame interval at the slowest -fps (1) and more than the
// TCP transport's 1 s safety timer, the seconds of buffering source
// buffer management exists to remove.
const maxReplenishTime = time.Second

// parseMode reads -mode with its helpers -replenish, -lowat and -nodelay.
func parseMode(r rawFlags) (transport.Mode, error) {
	mode := r.mode
	switch {
	case strings.ContainsAny(mode, "=+"):
		// A full form; the separate flags must not contradict it.
		if r.set["replenish"] || r.set["lowat"] {
			return transport.Mode{}, fmt.Errorf("-mode %q already says its parameter; drop -replenish/-lowat", mode)
		}
	case mode == "replenish":
		if r.replenish <= 0 {
			return transport.Mode{}, fmt.Errorf("-replenish %v: want a positive duration", r.replenish)
		}
		mode = fmt.Sprintf("replenish=%v", r.replenish)
	case mode == "lowat":
		if r.lowat <= 0 {
			return transport.Mode{}, errors.New("-mode lowat needs -lowat BYTES > 0")
		}
		mode = fmt.Sprintf("lowat=%d", r.lowat)
	}
	m, err := transport.ParseMode(mode)
	if err != nil {
		return transport.Mode{}, fmt.Errorf("-mode %q: %v", r.mode, err)
	}
	if r.set["lowat"] && m.Policy != transport.Lowat {
		return transport.Mode{}, errors.New("-lowat applies only to -mode lowat")
	}
	if r.set["replenish"] && m.Policy != transport.Replenish {
		return transport.Mode{}, errors.New("-replenish applies only to -mode replenish")
	}
	if m.Policy == transport.Replenish && m.ReplenishTime > maxReplenishTime {
		if r.set["replenish"] {
			return transport.Mode{}, fmt.Errorf("-replenish %v: want at most %v", r.replenish, maxReplenishTime)
		}
		return transport.Mode{}, fmt.Errorf("-mode %q: replenish time %v: want at most %v", r.mode, m.ReplenishTime, maxReplenishTime)
	}
	if r.set["nodelay"] {
		m.Nagle = !r.nodelay
	}
	return m, nil
}

// checkTransport checks that the mode suits the transport and that QUIC
// has a way to verify the viewer.
func (o *options) checkTransport(r rawFlags) error {
	if r.set["cc"] && o.transport != "tcp" {
		return fmt.Errorf("-cc applies to -transport tcp (%s brings its own congestion control)", o.transport)
	}
	switch o.transport {
	case "webrtc":
		if r.set["mode"] || r.set["replenish"] || r.set["lowat"] || r.set["nodelay"] {
			return errors.New("-transport webrtc takes no -mode, -replenish, -lowat or -nodelay: pion's congestion control sets the rate")
		}
		if (r.pin != "" || o.ca != "") && !strings.HasPrefix(o.to, "https://") {
			return errors.New("-pin and -ca verify the viewer's HTTPS certificate: give an https:// WHIP URL (the media's DTLS fingerprints come in the SDP)")
		}
		o.mode = transport.Mode{Policy: transport.Default}
		return o.parsePin(r, false)
	case "tcp":
		if o.mode.Policy == transport.Expire {
			return fmt.Errorf("-mode %v: expire is a QUIC mode (-transport quic)", o.mode)
		}
		if r.pin != "" || o.ca != "" {
			return errors.New("-pin and -ca apply to -transport quic")
		}
		if r.set["cc"] {
			if err := tcp.CheckCongestion(o.cc); err != nil {
				return fmt.Errorf("-cc %q: %v", o.cc, err)
			}
		}
		return nil
	case "quic":
	default:
		return fmt.Errorf("-transport %q: want tcp, quic or webrtc", o.transport)
	}
	switch {
	case o.mode.Policy == transport.Lowat || o.mode.Nagle || o.mode.NoSubMSS:
		return fmt.Errorf("-mode %v: lowat and Nagle are TCP's (QUIC takes replenish, default or expire)", o.mode)
	}
	return o.parsePin(r, true)
}

// parsePin checks -pin and -ca, one or neither (unless required), and
// parses -pin.
func (o *options) parsePin(r rawFlags, required bool) error {
	switch {
	case r.pin != "" && o.ca != "":
		return errors.New("give -pin or -ca, not both")
	case r.pin == "" && o.ca == "" && required:
		return errors.New("-transport quic needs the viewer's certificate: -pin sha256:... (the viewer logs its fingerprint at start) or -ca FILE")
	case r.pin != "":
		var err error
		if o.pin, err = certs.ParseFingerprint(r.pin); err != nil {
			return fmt.Errorf("-pin: %v", err)
		}
	}
	return nil
}

// modeText is the mode as the viewer shows it beside the stream.
func (o options) modeText() string {
	if o.transport == "webrtc" {
		return "gcc" // pion's send-side bandwidth estimation sets the rate
	}
	return o.mode.String()
}

// roots reads the -ca file; nil when there is none.
func (o options) roots() (*x509.CertPool, error) {
	if o.ca == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(o.ca)
	if err != nil {
		return nil, fmt.Errorf("-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate in it", o.ca)
	}
	return pool, nil
}
