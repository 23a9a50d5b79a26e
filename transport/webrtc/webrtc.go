// Package webrtc carries the sender's frames over WebRTC (pion), as a
// real-time application does: it publishes one VP8 video track with WHIP
// (RFC 9725), and pion's send-side congestion control sets the rate.
//
// WHIP: Dial creates the offer, waits for ICE gathering to complete (no
// trickle ICE: the offer carries every candidate, host candidates only,
// loopback included, UDP over IPv4), POSTs it to the WHIP endpoint with
// Content-Type application/sdp (and "Authorization: Bearer <token>" when a
// token is configured), and expects 201 Created with the SDP answer and a
// Location header naming the session; Close DELETEs that session. The
// stream name travels as the "stream" query parameter of the POST (and, as
// over every transport, in RTCP SDES).
//
// Congestion control: pion/interceptor's cc interceptor with the GCC
// send-side bandwidth estimator (delay and loss based, fed by transport-wide
// congestion control feedback: the TWCC header extension goes on every
// packet) and a pacer of ours that paces as pion's leaky bucket does and
// holds packets while the feedback window is full (see window); NACK
// with retransmission on the media SSRC (no RTX: the pacer forwards only
// the streams it was given); RTCP sender reports. There is no source
// buffer management here: the Conn invites every source frame at once
// and reports the estimator's target as the drain rate, marked as a
// target (transport.Invitation.Target), so that the encoder follows it,
// held below the feedback horizon: the rate at which the viewer's
// feedback still falls within the last 250 packets, all that pion's GCC
// remembers (see horizon). Only a pacer backlog beyond Config.MaxQueue
// holds invitations back, as a bound on memory.
//
// Media: the sender's packetizer makes the RTP packets; the Conn writes
// them to a pion TrackLocalStaticRTP, which sets the negotiated SSRC and
// payload type, after moving the abs-capture-time header extension to its
// negotiated ID. The sender's RTCP (SDES with the stream name, the RPLN
// timing reports) goes out with PeerConnection.WriteRTCP, its SSRC set to
// the one on the wire; keyframe requests (PLI, FIR) from the viewer come
// back to the Handler naming the sender's own SSRC.
//
// Departures: an interceptor at the network end of pion's chain, after
// the pacer, sees each packet leave for the socket; a frame's departure is
// when its last packet has been written, and its source delay therefore
// the time from WriteFrame to that moment.
package webrtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
)

// Errors returned by this package.
var (
	// ErrConfig is returned by Dial for an invalid Config or URL.
	ErrConfig = errors.New("webrtc: invalid configuration")
	// ErrWHIP is wrapped by every error of the WHIP exchange: an answer
	// that is not 201 Created (a *StatusError), lacks a Location, has
	// another content type, or is too large.
	ErrWHIP = errors.New("webrtc: WHIP exchange failed")
	// ErrNoMedia is returned by WriteFrame for a frame without RTP
	// packets.
	ErrNoMedia = errors.New("webrtc: frame without RTP packets")
	// ErrQueueFull is returned by WriteFrame when the pacer's backlog
	// would exceed twice Config.MaxQueue.
	ErrQueueFull = errors.New("webrtc: pacer queue full")
	// ErrClosed is returned by Wait and WriteFrame after Close.
	ErrClosed = errors.New("webrtc: connection closed")
	// ErrFailed is wrapped by the error of a connection that ICE or DTLS
	// gave up on, or that the viewer closed.
	ErrFailed = errors.New("webrtc: connection failed")
)

// Defaults for the zero values of Config.
const (
	DefaultInitialBitrate = 1 * rate.Mbps
	// DefaultMinBitrate and DefaultMaxBitrate bound the estimate: the
	// lowest rung of the ladder still plays at 30 kb/s, and 20 Mb/s is
	// beyond what the top rung uses.
	DefaultMinBitrate = 30 * rate.Kbps
	DefaultMaxBitrate = 20 * rate.Mbps
	// DefaultMaxQueue is the pacer backlog, in bytes of RTP payload,
	// above which the Conn stops inviting frames.
	DefaultMaxQueue      = 1 << 20
	DefaultSafetyTimeout = time.Second
	DefaultFailTimeout   = 15 * time.Second
	DefaultCloseTimeout  = 2 * time.Second
)

// StreamParam is the query parameter of the WHIP POST that carries the
// stream name.
const StreamParam = "stream"

// Config configures a Conn. The zero value is usable: no token, no stream
// name in the request, and the stated defaults.
type Config struct {
	// Token, if set, is sent as "Authorization: Bearer <token>" with the
	// WHIP POST and DELETE. It must be an RFC 6750 token (letters,
	// digits and -._~+/ then optional '=').
	Token string
	// Name is the stream name, sent as the StreamParam query parameter
	// of the POST; empty sends none. It must pass
	// framer.ValidateStreamName.
	Name string
	// InitialBitrate is where the bandwidth estimate starts (give the
	// sender's initial target); zero means 1 Mb/s. MinBitrate and
	// MaxBitrate bound the estimate; zero means 30 kb/s and 20 Mb/s.
	InitialBitrate, MinBitrate, MaxBitrate rate.Bitrate
	// MaxQueue is the pacer backlog, in bytes of RTP payload, above which
	// Wait stops inviting until it drains; zero means 1 MiB.
	MaxQueue int
	// SafetyTimeout bounds each wait for the backlog to drain before it
	// is looked at again; a safety net, not a clock. Zero means 1 s.
	SafetyTimeout time.Duration
	// FailTimeout ends the connection when the viewer has been
	// unreachable (no ICE consent) this long; zero means 15 s, and it
	// may not be below 1 s.
	FailTimeout time.Duration
	// CloseTimeout bounds the WHIP DELETE in Close; zero means 2 s.
	CloseTimeout time.Duration
	// HTTPClient makes the WHIP requests; nil means http.DefaultClient.
	// The POST is bounded by Dial's context.
	HTTPClient *http.Client
	// Handler receives send records and the viewer's keyframe requests.
	Handler transport.Handler
	// Logger receives debug messages, pion's included; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.InitialBitrate == 0 {
		c.InitialBitrate = DefaultInitialBitrate
	}
	if c.MinBitrate == 0 {
		c.MinBitrate = min(DefaultMinBitrate, c.InitialBitrate)
	}
	if c.MaxBitrate == 0 {
		c.MaxBitrate = max(DefaultMaxBitrate, c.InitialBitrate)
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.SafetyTimeout == 0 {
		c.SafetyTimeout = DefaultSafetyTimeout
	}
	if c.FailTimeout == 0 {
		c.FailTimeout = DefaultFailTimeout
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate checks a Config after withDefaults.
func (c Config) validate() error {
	switch {
	case !validToken(c.Token):
		return fmt.Errorf("%w: the token is not an RFC 6750 bearer token", ErrConfig)
	case c.MinBitrate <= 0 || c.InitialBitrate < c.MinBitrate || c.MaxBitrate < c.InitialBitrate:
		return fmt.Errorf("%w: want 0 < MinBitrate <= InitialBitrate <= MaxBitrate, have %v, %v, %v",
			ErrConfig, c.MinBitrate, c.InitialBitrate, c.MaxBitrate)
	case c.MaxBitrate > 1*rate.Gbps:
		return fmt.Errorf("%w: MaxBitrate %v above 1 Gb/s", ErrConfig, c.MaxBitrate)
	case c.MaxQueue < 0 || c.SafetyTimeout < 0 || c.CloseTimeout < 0:
		return fmt.Errorf("%w: negative MaxQueue, SafetyTimeout or CloseTimeout", ErrConfig)
	case c.FailTimeout < time.Second:
		return fmt.Errorf("%w: FailTimeout %v below 1 s (ICE checks consent every second or two)", ErrConfig, c.FailTimeout)
	}
	if c.Name != "" {
		if err := framer.ValidateStreamName(c.Name); err != nil {
			return fmt.Errorf("%w: stream name: %w", ErrConfig, err)
		}
	}
	return nil
}

// validToken reports whether s is empty or an RFC 6750 b64token.
func validToken(s string) bool {
	body := s
	for len(body) > 0 && body[len(body)-1] == '=' {
		body = body[:len(body)-1]
	}
	if s != "" && body == "" {
		return false
	}
	for _, r := range body {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '-' || r == '.' || r == '_' || r == '~' || r == '+' || r == '/':
		default:
			return false
		}
	}
	return true
}

// endpointURL parses the WHIP endpoint's URL and adds the stream name.
func endpointURL(raw, name string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: WHIP URL: %w", ErrConfig, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: WHIP URL %q: want http://HOST:PORT/PATH or https://...", ErrConfig, raw)
	}
	if name != "" {
		q := u.Query()
		q.Set(StreamParam, name)
		u.RawQuery = q.Encode()
	}
	return u, nil
}

// Dial publishes to the WHIP endpoint at whipURL and returns a Conn once
// the connection is up (ICE and DTLS done). It blocks until then, until ctx
// is done, or until the exchange fails; on failure it releases everything
// it started, the WHIP session included. Errors wrap ErrConfig, ErrWHIP
// (the endpoint's answer; a *StatusError for a status other than 201),
// ErrFailed, or pion's.
func Dial(ctx context.Context, whipURL string, cfg Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	endpoint, err := endpointURL(whipURL, cfg.Name)
	if err != nil {
		return nil, err
	}
	c := newConn(cfg)
	if err := c.newPeer(); err != nil {
		return nil, err
	}
	if err := c.connect(ctx, endpoint); err != nil {
		c.Close()
		return nil, err
	}
	c.wg.Go(c.readRTCP)
	return c, nil
}

// Dialer returns a transport.Dialer for the sender's connection loop: each
// call publishes to whipURL with cfg, its records and the viewer's
// keyframe requests going to the handler given to the call.
func Dialer(whipURL string, cfg Config) transport.Dialer {
	return func(ctx context.Context, h transport.Handler) (transport.Conn, error) {
		c := cfg
		c.Handler = h
		conn, err := Dial(ctx, whipURL, c)
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
}
