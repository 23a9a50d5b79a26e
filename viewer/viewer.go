// Package viewer is the receiving side of replenish. It accepts senders over
// TCP (RTP with VP8 payload and RTCP, framed as RFC 4571), answers their
// clock probes over UDP on the same address, forwards each stream's frames
// to browser pages over WebSocket, serves the page, and keeps the latency
// numbers that senders and pages report, which GET /api/stats returns.
//
// A slow page never gets stale frames queued behind fresh ones: each
// (page, stream) pair has a small bounded queue; when it overflows the
// viewer drops it, skips delta frames until the next keyframe and asks the
// sender for one (RTCP PLI on the sender's connection, rate-limited).
package viewer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"replenish/framer"
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
)

// Errors returned by New and Run.
var (
	// ErrConfig wraps every configuration error New returns.
	ErrConfig = errors.New("viewer: invalid configuration")
	// ErrTokenRequired is returned (wrapped in ErrConfig) when the HTTP
	// address is not a loopback address and no token is set.
	ErrTokenRequired = errors.New("viewer: serving HTTP on a non-loopback address needs a token")
	// ErrRunning is returned by a second call of Run.
	ErrRunning = errors.New("viewer: Run called more than once")
)

// Config configures a Server. The zero value of each field selects its
// default.
type Config struct {
	// Listen is the TCP address senders connect to; clock probes are
	// answered over UDP on the same address and port. "" means
	// 127.0.0.1:7000; a port of 0 picks a free one (see Server.Addrs).
	Listen string
	// HTTP is the address of the page, the WebSocket (/ws) and the API
	// (/api/stats, /api/time). "" means 127.0.0.1:8080.
	HTTP string
	// Token, when set, must accompany every HTTP request: as the query
	// parameter ?token= (the viewer then sets a cookie so the page's own
	// requests carry it) or as that cookie. It is required when HTTP is not
	// a loopback address. Without a token, requests must name a loopback
	// host (this blocks DNS rebinding).
	Token string
	// AllowedOrigins lists extra WebSocket origins ("scheme://host:port")
	// accepted besides the page's own host.
	AllowedOrigins []string
	// Logger receives the viewer's logs; nil discards them.
	Logger *slog.Logger

	// MaxStreams caps the streams the viewer keeps, connected or not
	// (default 16). A new sender evicts the stream that disconnected
	// longest ago; when all are connected it is refused.
	MaxStreams int
	// MaxClients caps the connected pages (default 32).
	MaxClients int
	// ClientQueue is the depth, in frames, of each (page, stream) queue
	// (default 4).
	ClientQueue int
	// MaxFrameSize caps one VP8 frame, in bytes (default 4 MiB).
	MaxFrameSize int
	// StallTimeout drops a sender that sends nothing for this long
	// (default 5 s).
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
	seq      atomic.Uint64 // orders frames across streams

	// Set before ready is closed, read-only after.
	mediaAddr, httpAddr net.Addr

	mu           sync.Mutex // guards following fields
	streams      []*stream  // in id order
	nextStreamID uint32
	clients      map[*client]struct{}
	nextClientID uint32
	closing      bool           // Run is shutting down: accept nothing new
	conns        sync.WaitGroup // sender connections and pages; Add under mu while !closing
}

// New checks cfg and returns a Server. It starts nothing; Run does. It
// returns an error wrapping ErrConfig (and ErrTokenRequired where it
// applies) for a bad configuration.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.HTTP == "" {
		cfg.HTTP = DefaultHTTP
	}
	for _, a := range []struct {
		name, addr string
	}{{"listen", cfg.Listen}, {"HTTP", cfg.HTTP}} {
		if _, port, err := net.SplitHostPort(a.addr); err != nil {
			return nil, fmt.Errorf("%w: %s address %q: %w", ErrConfig, a.name, a.addr, err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("%w: %s address %q: bad port", ErrConfig, a.name, a.addr)
		}
	}
	if cfg.Token == "" && !IsLoopback(cfg.HTTP) {
		return nil, fmt.Errorf("%w: %w (%q); set a token or use 127.0.0.1", ErrConfig, ErrTokenRequired, cfg.HTTP)
	}
	for _, d := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxStreams", &cfg.MaxStreams, DefaultMaxStreams},
		{"MaxClients", &cfg.MaxClients, DefaultMaxClients},
		{"ClientQueue", &cfg.ClientQueue, DefaultClientQueue},
		{"MaxFrameSize", &cfg.MaxFrameSize, framer.DefaultMaxFrameSize},
		{"ReportCap", &cfg.ReportCap, DefaultReportCap},
		{"JoinCap", &cfg.JoinCap, DefaultJoinCap},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("%w: %s is negative", ErrConfig, d.name)
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
		{"StallTimeout", &cfg.StallTimeout, DefaultStallTimeout},
		{"KeyframeInterval", &cfg.KeyframeInterval, DefaultKeyframeInterval},
		{"ReportWindow", &cfg.ReportWindow, DefaultReportWindow},
		{"RateWindow", &cfg.RateWindow, DefaultRateWindow},
		{"WriteTimeout", &cfg.WriteTimeout, DefaultWriteTimeout},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("%w: %s is negative", ErrConfig, d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		log:     log,
		page:    web.FS(),
		ssrc:    rand.Uint32(),
		now:     time.Now,
		ready:   make(chan struct{}),
		clients: make(map[*client]struct{}),
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

// Run listens on the configured addresses and serves senders and pages
// until ctx is done. It returns nil after a shutdown caused by ctx, once
// every connection is closed and every goroutine it started has exited. It
// returns an error if it cannot listen (then it has started nothing) or
// if a listener fails, and ErrRunning if called more than once.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	var lc net.ListenConfig
	tcpLn, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("viewer: media listener: %w", err)
	}
	udp, err := lc.ListenPacket(ctx, "udp", tcpLn.Addr().String())
	if err != nil {
		tcpLn.Close()
		return fmt.Errorf("viewer: clock probe listener: %w", err)
	}
	httpLn, err := lc.Listen(ctx, "tcp", s.cfg.HTTP)
	if err != nil {
		tcpLn.Close()
		udp.Close()
		return fmt.Errorf("viewer: HTTP listener: %w", err)
	}
	s.mediaAddr, s.httpAddr = tcpLn.Addr(), httpLn.Addr()
	close(s.ready)
	s.log.Info("listening", "media", s.mediaAddr.String(), "http", s.httpAddr.String())

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}

	var loops sync.WaitGroup
	loops.Go(func() {
		if err := s.acceptSenders(ctx, tcpLn); err != nil {
			cancel(err)
		}
	})
	loops.Go(func() { s.serveProbes(ctx, udp) })
	loops.Go(func() {
		if err := srv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cancel(fmt.Errorf("viewer: HTTP: %w", err))
		}
	})

	<-ctx.Done()
	s.mu.Lock()
	s.closing = true
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()

	tcpLn.Close()
	udp.Close()
	srv.Close() // closes the HTTP listener and connections not hijacked
	for _, c := range clients {
		c.closeWith(errShutdown)
	}
	loops.Wait()
	s.conns.Wait()

	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
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
