// Package viewer is the receiving side of replenish. It accepts senders
// over TCP (RTP with VP8 payload and RTCP, framed as RFC 4571) and over
// QUIC (RTP over QUIC, draft-ietf-avtcore-rtp-over-quic, with a TLS
// certificate senders verify by its fingerprint) on the same port number,
// and WebRTC publishers over WHIP (RFC 9725, POST /whip on the HTTP
// address); it answers senders' clock probes over UDP on the QUIC socket,
// forwards each stream's frames to browser pages over WebSocket and, for
// the page's native player, over WebRTC (WHEP, POST /whep/<stream name>),
// serves the page, and keeps the latency numbers that senders and pages
// report, which GET /api/stats returns.
//
// Every transport feeds one per-connection loop: packets in, keyframe
// requests out. A sender in the expire mode sends each frame on a QUIC
// stream of its own and resets the streams of frames that expire; the
// viewer counts those frames, and the delta frames that depend on them, as
// undecodable, keeps them from pages, and asks for a keyframe. A WebRTC
// stream's packets are put back in order first, waiting a bounded time
// for retransmissions (Config.ReorderWait); a packet that never comes is
// a loss like any other.
//
// A slow page never gets stale frames queued behind fresh ones: each
// page's connection takes a frame only when transport/tcp's invitation
// rule invites one (Config.PageMode), and each (page, stream) pair has a
// small queue from which the page then gets the freshest frame it can
// decode. A page that falls behind loses the upper temporal layers first;
// only when it cannot keep up with the base layer (or a base-layer frame
// went missing) is its queue dropped to the next keyframe, which the
// viewer asks the sender for (RTCP PLI on the sender's connection,
// rate-limited). Each stream keeps its latest keyframe and the frames
// since that its newest frame needs, so that a page that joins starts at
// once.
//
// With a token, senders prove it before any stream is accepted, and every
// HTTP request carries it (Config.Token). The page and the API are served
// over HTTPS with the QUIC certificate off loopback (Config.HTTPTLS).
// Connections, streams, pages and sessions are capped, in total and per
// address where a peer could open many, and every connection has
// deadlines (see the Max* and *Timeout fields of Config).
package viewer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/certs"
	"replenish/transport"
	"replenish/transport/tcp"
	"replenish/web"
)

// Defaults for the zero values of Config.
const (
	DefaultListen           = "127.0.0.1:7000"
	DefaultHTTP             = "127.0.0.1:8080"
	DefaultMaxStreams       = 16
	DefaultMaxClients       = 32
	DefaultClientQueue      = 4
	DefaultStallTimeout     = 5 * time.Second
	DefaultKeyframeInterval = 500 * time.Millisecond
	DefaultReportWindow     = 10 * time.Second
	DefaultReportCap        = 1024
	DefaultJoinCap          = 512
	DefaultRateWindow       = 2 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultMaxWHIP          = 8
	DefaultMaxWHEP          = 16
	DefaultMaxWHEPPerStream = 4
	DefaultReorderWait      = 500 * time.Millisecond
	DefaultAuthTimeout      = 5 * time.Second
	// DefaultMaxSenderConns leaves room for DefaultMaxStreams senders
	// and as many connections again that are still proving the token or
	// being refused.
	DefaultMaxSenderConns        = 64
	DefaultMaxSenderConnsPerAddr = 16
	// DefaultMaxHTTPConns leaves room for DefaultMaxClients pages, each
	// with its WebSocket and the few connections a browser opens besides.
	DefaultMaxHTTPConns = 128
	// DefaultMaxHTTPConnsPerAddr leaves room, above DefaultMaxClients
	// pages' WebSockets from one address, for the fetches the pages make
	// (api/stats, api/time, whep) and for pages beyond MaxClients: those
	// must connect to get the close that says why (1013); at the cap
	// they would get a reset instead.
	DefaultMaxHTTPConnsPerAddr = 2 * DefaultMaxClients
	DefaultHTTPReadTimeout     = 10 * time.Second
	DefaultHTTPWriteTimeout    = 30 * time.Second
	DefaultHTTPIdleTimeout     = 60 * time.Second
	DefaultKeyCacheFrames      = 128
	DefaultKeyCacheBytes       = 2 << 20
	// SelfSignedValidity is how long the certificate New makes is valid.
	SelfSignedValidity = 365 * 24 * time.Hour
)

// Errors returned by New and Run.
var (
	// ErrConfig wraps every configuration error New returns.
	ErrConfig = errors.New("viewer: invalid configuration")
	// ErrTokenRequired is returned (wrapped in ErrConfig) when the HTTP
	// or the media address is not a loopback address and no token is set.
	ErrTokenRequired = errors.New("viewer: a non-loopback address needs a token")
	// ErrRunning is returned by a second call of Run.
	ErrRunning = errors.New("viewer: Run called more than once")
)

// Config configures a Server. The zero value of each field selects its
// default.
type Config struct {
	// Listen is the address senders connect to, over TCP and over QUIC
	// (UDP, the same port number); clock probes are answered on the UDP
	// socket. "" means 127.0.0.1:7000; a port of 0 picks a free one (see
	// Server.Addrs).
	Listen string
	// Certificate is the viewer's TLS identity for QUIC and HTTPS (its
	// chain, leaf first, and key). nil means a self-signed certificate
	// New makes for the Listen and HTTP hosts, 127.0.0.1, ::1 and
	// localhost, valid for SelfSignedValidity. Senders verify it by its
	// fingerprint (Server.Fingerprint) or by a certificate authority.
	Certificate *tls.Certificate
	// HTTP is the address of the page, the WebSocket (/ws) and the API
	// (/api/stats, /api/time). "" means 127.0.0.1:8080.
	HTTP string
	// Token, when set, must accompany every HTTP request: as the query
	// parameter ?token= (the viewer then sets a cookie so the page's own
	// requests carry it), as that cookie, or as "Authorization: Bearer
	// <token>", which is the only form WHIP and WHEP requests may use.
	// Senders over TCP and QUIC must prove they know it before the viewer
	// accepts a stream from them (framer's RPLA packets: an HMAC bound
	// to the connection; the token itself never crosses the network). It
	// is required when HTTP or Listen is not a loopback address. Without
	// a token, requests must name a loopback host (this blocks DNS
	// rebinding).
	Token string
	// HTTPTLS serves the page, the API, WHIP and WHEP over HTTPS on a
	// loopback HTTP address too. On any other address they are always
	// served over HTTPS, so that a remote browser has a secure context
	// (WebCodecs needs one) and the token and video travel encrypted.
	// HTTPS uses Certificate, the identity QUIC senders pin, so the one
	// fingerprint names both (HTTP/1.1 only: the page's WebSocket needs
	// it).
	HTTPTLS bool
	// AllowedOrigins lists extra WebSocket origins ("scheme://host:port")
	// accepted besides the page's own.
	AllowedOrigins []string
	// Logger receives the viewer's logs; nil discards them.
	Logger *slog.Logger

	// HTTPReadTimeout bounds reading each HTTP request, headers and body,
	// and the TLS handshake (default 10 s); HTTPWriteTimeout writing each
	// response (default 30 s); HTTPIdleTimeout how long a connection
	// waits for its next request (default 60 s). A page's WebSocket keeps
	// its own deadlines once upgraded (WriteTimeout, and pings).
	HTTPReadTimeout, HTTPWriteTimeout, HTTPIdleTimeout time.Duration
	// MaxHTTPConns caps the HTTP connections open at once, WebSockets
	// included (default 128), and MaxHTTPConnsPerAddr those from one IP
	// address (default 64). A connection beyond either is closed as soon
	// as it is accepted.
	MaxHTTPConns, MaxHTTPConnsPerAddr int

	// MaxStreams caps the streams the viewer keeps, connected or not
	// (default 16). A new sender evicts the stream that disconnected
	// longest ago; when all are connected it is refused.
	MaxStreams int
	// MaxClients caps the connected pages (default 32). Every page
	// receives every stream, so it also caps the pages of each stream
	// (native players have their own caps, MaxWHEP and
	// MaxWHEPPerStream). A page beyond it is refused with a WebSocket
	// close (1013, try again later) whose reason the page shows.
	MaxClients int
	// ClientQueue is how many base-layer frames (every frame of a stream
	// without temporal layers) each (page, stream) queue holds before the
	// page is dropped to the next keyframe, and the depth in frames of each
	// native player's queue (default 4).
	ClientQueue int
	// PageMode is the buffer policy of each page's connection (TCP):
	// replenish (the zero value, with transport.DefaultReplenishTime)
	// sends a page a frame only when its connection invites one, the
	// freshest it can decode; default sends frames as fast as the
	// connection takes them (its send buffer absorbs seconds); lowat
	// sets a fixed TCP_NOTSENT_LOWAT.
	PageMode transport.Mode
	// PageDelayTarget bounds the queueing delay on a managed page's leg:
	// when a frame written now would wait longer than this behind the
	// connection's unsent and in-flight bytes (at its drain rate, less a
	// minimum round trip's worth), the page gets base-layer frames only,
	// so that a congestion control that fills the leg's queue cannot hold
	// frames there (default 50 ms; see gate.go). It does not apply in the
	// default PageMode.
	PageDelayTarget time.Duration
	// KeyCacheFrames and KeyCacheBytes cap what each stream keeps for
	// pages that join it: its latest keyframe and the frames since that
	// its newest frame needs (default 128 frames, 2 MiB). Past either it
	// keeps nothing until the next keyframe, and a joining page waits for
	// one.
	KeyCacheFrames, KeyCacheBytes int
	// MaxFrameSize caps one VP8 frame, in bytes (default 4 MiB).
	MaxFrameSize int
	// AuthTimeout is how long a new TCP or QUIC connection has to prove
	// the token before it is closed (default 5 s).
	AuthTimeout time.Duration
	// MaxSenderConns caps the TCP and QUIC connections from senders open
	// at once, those still proving the token included (default 64), and
	// MaxSenderConnsPerAddr those from one IP address (default 16). A
	// connection beyond either is closed at once.
	MaxSenderConns, MaxSenderConnsPerAddr int
	// StallTimeout drops a sender that sends nothing for this long
	// (default 5 s); for a WHIP publisher that includes the time ICE and
	// DTLS take to connect. A WHEP player that has not connected within
	// it is dropped too.
	StallTimeout time.Duration
	// KeyframeInterval is the least time between two keyframe requests
	// (PLI) to one stream (default 500 ms).
	KeyframeInterval time.Duration
	// ReportWindow is the span of the latency windows (default 10 s).
	ReportWindow time.Duration
	// ReportCap caps the samples in each latency window (default 1024:
	// 10 s at 100 frames per second).
	ReportCap int
	// JoinCap caps how many frames per stream wait to be joined with the
	// sender's timing reports, by RTP timestamp (default 512).
	JoinCap int
	// RateWindow is the span over which bitrate and frame rate are
	// measured (default 2 s).
	RateWindow time.Duration
	// WriteTimeout drops a page or sender that does not take a write for
	// this long (default 10 s).
	WriteTimeout time.Duration

	// MaxWHIP caps the WHIP sessions (WebRTC publishers) open or being
	// negotiated at once (default 8). Each is also a stream under
	// MaxStreams; a POST beyond either is refused with 503.
	MaxWHIP int
	// MaxWHEP caps the WHEP sessions (the page's native players) open at
	// once (default 16), and MaxWHEPPerStream those of one stream
	// (default 4); a POST beyond either is refused with 503.
	MaxWHEP, MaxWHEPPerStream int
	// ReorderWait is how long a WebRTC stream's packets wait behind a
	// missing one (for its retransmission, which the viewer's NACK asks
	// for) before the viewer goes on without it and counts its frame
	// lost (default 500 ms).
	ReorderWait time.Duration

	// OnRecord, if set, receives a Record for every frame received and
	// every frame a page reports displayed. It is called from the
	// goroutine serving that sender or page, with no lock held, and must
	// return quickly.
	OnRecord func(Record)
}

// Server is the viewer. Create it with New and start it with Run; its
// methods are safe for concurrent use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	page     fs.FS
	ssrc     uint32           // our SSRC as the sender of RTCP feedback
	now      func() time.Time // the clock; time.Now outside tests
	upgrader websocket.Upgrader
	running  atomic.Bool
	ready    chan struct{} // closed by Run once it listens
	refused  refusals      // connections refused at a cap

	senderLimits *connLimits   // TCP and QUIC connections from senders
	httpLimits   *connLimits   // HTTP connections, WebSockets included
	seq          atomic.Uint64 // orders frames across streams

	cert tls.Certificate   // the QUIC identity; read-only
	fp   certs.Fingerprint // of cert's leaf; read-only

	// Set before ready is closed, read-only after.
	mediaAddr, httpAddr net.Addr

	mu           sync.Mutex      // guards following fields
	ctx          context.Context // Run's; nil until Run listens
	streams      []*stream       // in id order
	nextStreamID uint32
	clients      map[*client]struct{}
	nextClientID uint32
	whip         map[string]*senderConn  // WHIP sessions by id
	whipCount    int                     // WHIP sessions open or being negotiated
	ended        []endedSession          // WHIP and WHEP sessions that ended on their own, oldest first
	whep         map[string]*whepSession // WHEP sessions by id
	closing      bool                    // Run is shutting down: accept nothing new
	conns        sync.WaitGroup          // sender connections, pages, WHEP sessions; Add under mu while !closing
}

// withDefaults checks c and fills in the defaults of its zero fields.
func (c *Config) withDefaults() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.HTTP == "" {
		c.HTTP = DefaultHTTP
	}
	for _, a := range []struct {
		name, addr string
	}{{"listen", c.Listen}, {"HTTP", c.HTTP}} {
		if _, port, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s address %q: %w", ErrConfig, a.name, a.addr, err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("%w: %s address %q: bad port", ErrConfig, a.name, a.addr)
		}
	}
	if err := tcp.CheckMode(c.PageMode); err != nil {
		return fmt.Errorf("%w: page mode: %w", ErrConfig, err)
	}
	if c.Token == "" {
		for _, a := range []struct{ what, addr string }{{"HTTP", c.HTTP}, {"media", c.Listen}} {
			if !IsLoopback(a.addr) {
				return fmt.Errorf("%w: %w: the %s address %q; set a token or use 127.0.0.1", ErrConfig, ErrTokenRequired, a.what, a.addr)
			}
		}
	}
	for _, d := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxStreams", &c.MaxStreams, DefaultMaxStreams},
		{"MaxClients", &c.MaxClients, DefaultMaxClients},
		{"ClientQueue", &c.ClientQueue, DefaultClientQueue},
		{"MaxFrameSize", &c.MaxFrameSize, framer.DefaultMaxFrameSize},
		{"ReportCap", &c.ReportCap, DefaultReportCap},
		{"JoinCap", &c.JoinCap, DefaultJoinCap},
		{"MaxWHIP", &c.MaxWHIP, DefaultMaxWHIP},
		{"MaxWHEP", &c.MaxWHEP, DefaultMaxWHEP},
		{"MaxWHEPPerStream", &c.MaxWHEPPerStream, DefaultMaxWHEPPerStream},
		{"MaxSenderConns", &c.MaxSenderConns, DefaultMaxSenderConns},
		{"MaxSenderConnsPerAddr", &c.MaxSenderConnsPerAddr, DefaultMaxSenderConnsPerAddr},
		{"MaxHTTPConns", &c.MaxHTTPConns, DefaultMaxHTTPConns},
		{"MaxHTTPConnsPerAddr", &c.MaxHTTPConnsPerAddr, DefaultMaxHTTPConnsPerAddr},
		{"KeyCacheFrames", &c.KeyCacheFrames, DefaultKeyCacheFrames},
		{"KeyCacheBytes", &c.KeyCacheBytes, DefaultKeyCacheBytes},
	} {
		if *d.v < 0 {
			return fmt.Errorf("%w: %s is negative", ErrConfig, d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"StallTimeout", &c.StallTimeout, DefaultStallTimeout},
		{"KeyframeInterval", &c.KeyframeInterval, DefaultKeyframeInterval},
		{"ReportWindow", &c.ReportWindow, DefaultReportWindow},
		{"RateWindow", &c.RateWindow, DefaultRateWindow},
		{"WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"ReorderWait", &c.ReorderWait, DefaultReorderWait},
		{"AuthTimeout", &c.AuthTimeout, DefaultAuthTimeout},
		{"HTTPReadTimeout", &c.HTTPReadTimeout, DefaultHTTPReadTimeout},
		{"HTTPWriteTimeout", &c.HTTPWriteTimeout, DefaultHTTPWriteTimeout},
		{"HTTPIdleTimeout", &c.HTTPIdleTimeout, DefaultHTTPIdleTimeout},
		{"PageDelayTarget", &c.PageDelayTarget, DefaultPageDelayTarget},
	} {
		if *d.v < 0 {
			return fmt.Errorf("%w: %s is negative", ErrConfig, d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	return nil
}

// New checks cfg and returns a Server. It starts nothing; Run does. It
// returns an error wrapping ErrConfig (and ErrTokenRequired where it
// applies) for a bad configuration.
func New(cfg Config) (*Server, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cert, fp, err := identity(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cert:         cert,
		fp:           fp,
		cfg:          cfg,
		log:          log,
		page:         web.FS(),
		ssrc:         rand.Uint32(),
		now:          time.Now,
		ready:        make(chan struct{}),
		clients:      make(map[*client]struct{}),
		whip:         make(map[string]*senderConn),
		whep:         make(map[string]*whepSession),
		senderLimits: newConnLimits(cfg.MaxSenderConns, cfg.MaxSenderConnsPerAddr),
		httpLimits:   newConnLimits(cfg.MaxHTTPConns, cfg.MaxHTTPConnsPerAddr),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4096,
		WriteBufferSize:  64 << 10,
		CheckOrigin:      s.checkOrigin,
	}
	return s, nil
}

// Ready returns a channel that Run closes once it listens on every
// address; Addrs is meaningful from then on. It is never closed if Run
// fails to listen.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addrs returns the addresses Run listens on: media (TCP, and UDP for clock
// probes, same port) and HTTP. Both are nil until Ready is closed.
func (s *Server) Addrs() (media, http net.Addr) {
	select {
	case <-s.ready:
		return s.mediaAddr, s.httpAddr
	default:
		return nil, nil
	}
}

// Fingerprint returns the SHA-256 fingerprint of the viewer's QUIC
// certificate, which senders pin.
func (s *Server) Fingerprint() certs.Fingerprint { return s.fp }

// identity returns the configured certificate, or a new self-signed one,
// and its leaf's fingerprint.
func identity(cfg Config) (tls.Certificate, certs.Fingerprint, error) {
	if c := cfg.Certificate; c != nil {
		if len(c.Certificate) == 0 || c.PrivateKey == nil {
			return tls.Certificate{}, certs.Fingerprint{}, fmt.Errorf("%w: Certificate without a certificate or a key", ErrConfig)
		}
		return *c, certs.FingerprintOf(c.Certificate[0]), nil
	}
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	for _, addr := range []string{cfg.Listen, cfg.HTTP} {
		if host, _, _ := net.SplitHostPort(addr); host != "" && !slices.Contains(hosts, host) {
			if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
				hosts = append(hosts, host)
			}
		}
	}
	cert, fp, err := certs.SelfSigned(hosts, SelfSignedValidity)
	if err != nil {
		return tls.Certificate{}, certs.Fingerprint{}, fmt.Errorf("viewer: %w", err)
	}
	return cert, fp, nil
}

// listeners are what Run listens on.
type listeners struct {
	tcp  net.Listener   // senders over TCP
	udp  net.PacketConn // the QUIC socket, also answering clock probes
	tr   *quic.Transport
	quic *quic.Listener // senders over QUIC
	http net.Listener
}

// listen opens every listener, or none.
func (s *Server) listen(ctx context.Context) (*listeners, error) {
	var lc net.ListenConfig
	l := &listeners{}
	var err error
	if l.tcp, l.udp, err = listenMedia(ctx, &lc, s.cfg.Listen); err != nil {
		return nil, err
	}
	l.tr = &quic.Transport{Conn: l.udp}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{s.cert}, NextProtos: []string{framer.RoQALPN}, MinVersion: tls.VersionTLS13}
	if l.quic, err = l.tr.Listen(tlsConf, quicConfig()); err != nil {
		l.close()
		return nil, fmt.Errorf("viewer: QUIC listener: %w", err)
	}
	if l.http, err = lc.Listen(ctx, "tcp", s.cfg.HTTP); err != nil {
		l.close()
		return nil, fmt.Errorf("viewer: HTTP listener: %w", err)
	}
	return l, nil
}

// mediaPortTries bounds the ports listenMedia tries when the kernel picks.
const mediaPortTries = 8

// listenMedia opens the TCP media listener on addr and the UDP socket (QUIC
// and the clock probes) on the same port. Given port 0 the kernel picks the
// TCP port, which another socket may hold on UDP (a QUIC client's, say):
// then it tries another pick, up to mediaPortTries. A port given is used
// or refused as it is.
func listenMedia(ctx context.Context, lc *net.ListenConfig, addr string) (net.Listener, net.PacketConn, error) {
	tries := 1
	if _, port, err := net.SplitHostPort(addr); err == nil && (port == "" || port == "0") {
		tries = mediaPortTries
	}
	var err error
	for range tries {
		t, terr := lc.Listen(ctx, "tcp", addr)
		if terr != nil {
			return nil, nil, fmt.Errorf("viewer: media listener: %w", terr)
		}
		u, uerr := lc.ListenPacket(ctx, "udp", t.Addr().String())
		if uerr == nil {
			return t, u, nil
		}
		t.Close()
		if err = uerr; !errors.Is(uerr, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, nil, fmt.Errorf("viewer: QUIC and clock probe socket: %w", err)
}

// close closes what l holds: the QUIC transport only once every QUIC
// connection has been closed (it would drop them without a word).
func (l *listeners) close() {
	if l.tcp != nil {
		l.tcp.Close()
	}
	if l.quic != nil {
		l.quic.Close()
	}
	if l.http != nil {
		l.http.Close()
	}
	if l.tr != nil {
		l.tr.Close()
	}
	if l.udp != nil {
		l.udp.Close()
	}
}

// Run listens on the configured addresses and serves senders and pages
// until ctx is done. It returns nil after a shutdown caused by ctx, once
// every connection is closed and every goroutine it started has exited. It
// returns an error if it cannot listen (then it has started nothing) or
// if a listener fails, and ErrRunning if called more than once.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	l, err := s.listen(ctx)
	if err != nil {
		return err
	}
	defer l.close()
	s.mediaAddr, s.httpAddr = l.tcp.Addr(), l.http.Addr()
	close(s.ready)
	s.log.Info("listening", "media", s.mediaAddr.String(), "transports", "tcp, quic (udp)", "http", s.httpAddr.String(),
		"page", s.scheme()+"://"+s.httpAddr.String()+"/", "whip", s.scheme()+"://"+s.httpAddr.String()+"/whip")
	s.log.Info("tls fingerprint", "fingerprint", s.fp.String(), "for", s.tlsUses())

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	srv, httpLn := s.httpServer(ctx, l.http)
	var loops sync.WaitGroup
	for _, loop := range []func() error{
		func() error { return s.acceptSenders(ctx, l.tcp) },
		func() error { return s.acceptQUIC(ctx, l.quic) },
		func() error { s.serveProbes(ctx, l.tr); return nil },
		func() error {
			if err := srv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("viewer: HTTP: %w", err)
			}
			return nil
		},
	} {
		loops.Go(func() {
			if err := loop(); err != nil {
				cancel(err)
			}
		})
	}
	<-ctx.Done()
	s.shutdown(l, srv)
	loops.Wait()
	s.conns.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// httpServer returns the HTTP server of the page and API and the listener
// it serves: ln with the HTTP connection caps, and TLS when the viewer
// serves HTTPS (see Config.HTTPTLS).
func (s *Server) httpServer(ctx context.Context, ln net.Listener) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HTTPReadTimeout,
		ReadTimeout:       s.cfg.HTTPReadTimeout,
		WriteTimeout:      s.cfg.HTTPWriteTimeout,
		IdleTimeout:       s.cfg.HTTPIdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	ln = &limitListener{Listener: ln, limits: s.httpLimits, refused: func(remote net.Addr, err error) {
		s.refused.log(s.log, "HTTP connection", remote.String(), err, time.Now())
	}}
	if s.HTTPS() {
		ln = tls.NewListener(ln, &tls.Config{
			Certificates: []tls.Certificate{s.cert},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"}, // the WebSocket needs HTTP/1.1's upgrade
		})
	}
	return srv, ln
}

// HTTPS reports whether the viewer serves its page and API over HTTPS:
// always on a non-loopback HTTP address, and with Config.HTTPTLS.
func (s *Server) HTTPS() bool { return s.cfg.HTTPTLS || !IsLoopback(s.cfg.HTTP) }

func (s *Server) scheme() string {
	if s.HTTPS() {
		return "https"
	}
	return "http"
}

// tlsUses says what the certificate serves, for the log.
func (s *Server) tlsUses() string {
	if s.HTTPS() {
		return "quic, https"
	}
	return "quic"
}

// shutdown stops accepting, closes the pages' connections and the HTTP
// server; sender connections close themselves on Run's context.
func (s *Server) shutdown(l *listeners, srv *http.Server) {
	s.mu.Lock()
	s.closing = true
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	l.tcp.Close()
	l.quic.Close()
	srv.Close() // closes the HTTP listener and connections not hijacked
	for _, c := range clients {
		c.closeWith(errShutdown)
	}
}

// track registers one connection's goroutine with Run; it returns false
// when Run is shutting down, and then the caller must not serve it.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns.Add(1)
	return true
}

// IsLoopback reports whether hostport, a host or a host:port as in a Host
// header or a listening address, names the loopback interface: localhost
// (in any case) or a loopback IP, bracketed or not. Without a token the
// viewer answers only requests that name such a host, so that a page
// elsewhere cannot reach it by rebinding its own host name to 127.0.0.1;
// the experiments demo applies the same rule.
func IsLoopback(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
