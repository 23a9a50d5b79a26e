// Package demo is the live demo of source buffer management for an
// audience: a viewer and one sender per stream, each a transport (TCP,
// QUIC or WebRTC) and a mode (by default two over TCP, one with SBM and
// one without), each sender on an emulated path of its own, all of the
// same shape and all ending at the viewer (so that each stream shows what
// its method does alone), or all on one path whose bottleneck they share
// (Config.Shared: an unmanaged sender's queue then hurts its neighbours);
// the viewer's page served on a loopback port of this host with a path
// panel the demo adds to it, and the paths' rate and RTT changeable while
// the streams play, from the page or from typed commands. Processes that die are restarted; the viewer
// keeps its certificate across restarts, so that QUIC senders, which pin
// it, reconnect.
package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/experiments/workload"
	"replenish/rate"
	"replenish/transport"
)

// DefaultStreams are the demo's senders unless told otherwise: one with
// SBM (the default replenish time), one without, both over TCP.
var DefaultStreams = []scenario.Stream{
	{Transport: scenario.TCP, Mode: transport.DefaultMode},
	{Transport: scenario.TCP, Mode: transport.Mode{Policy: transport.Default}},
}

// Limits of what the demo's controls accept.
const (
	minRate = 10 * rate.Kbps
	maxRate = 10 * rate.Gbps
	maxRTT  = 10 * time.Second
)

// statusEvery is how often the demo prints the streams' figures.
const statusEvery = 10 * time.Second

// Config is what a demo shows.
type Config struct {
	Path    scenario.Path     // the path at the start
	Streams []scenario.Stream // one sender each
	// Shared puts every sender on one path, through one bottleneck;
	// otherwise each sender has a path of its own, of the same shape.
	Shared   bool
	MaxRes   string // the senders' largest resolution
	Programs workload.Programs
	Page     net.Listener // where the page is served, on loopback
	Dir      string       // for the processes' logs, the viewer's certificate and fingerprint
	Stdin    io.Reader    // typed commands
	Stdout   io.Writer    // the URL, the status and the answers to commands
	Log      *slog.Logger
}

// path is what the demo's controls need of an emulated path.
type path interface {
	Set(d emu.Direction, r rate.Bitrate, delay time.Duration)
	Stats() emu.Stats
}

var _ path = (*emu.Path)(nil)

// demo is a running demo's shared state.
type demo struct {
	p      []path // the senders' paths: one, or one per sender
	shared bool
	start  scenario.Path
	log    *slog.Logger
	stats  *http.Client // into the receiver's namespace
	token  string       // the viewer's
	// fingerprint is the file the viewer writes its certificate's
	// fingerprint to, which its HTTPS clients and its QUIC and WebRTC
	// senders pin.
	fingerprint string

	mu  sync.Mutex // guards cur
	cur scenario.Path
}

// set changes the path's rate and RTT (zero keeps each), or resets them to
// the starting values first, and returns the new values.
func (d *demo) set(r rate.Bitrate, rtt time.Duration, reset bool) scenario.Path {
	d.mu.Lock()
	defer d.mu.Unlock()
	if reset {
		d.cur = d.start
	}
	if r > 0 {
		d.cur.Rate = r
	}
	if rtt > 0 {
		d.cur.RTT = rtt
	}
	fwd, rev := emu.SplitRTT(d.cur.RTT)
	for _, p := range d.p {
		p.Set(emu.Forward, d.cur.Rate, fwd)
		p.Set(emu.Reverse, 0, rev)
	}
	d.log.Info("path changed", "rate", d.cur.Rate, "rtt", d.cur.RTT)
	return d.cur
}

func (d *demo) get() scenario.Path {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// Run runs the demo until ctx is done or "quit" is typed. It needs root
// (the emulated path) and cmd/sender and cmd/viewer.
func Run(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	paths, err := startPaths(ctx, cfg)
	for _, p := range paths {
		defer p.Close()
	}
	if err != nil {
		return err
	}
	p := paths[0] // the viewer's: its receiver namespace is every path's
	token, err := workload.NewToken()
	if err != nil {
		return err
	}
	d := &demo{start: cfg.Path, cur: cfg.Path, shared: cfg.Shared, log: cfg.Log, token: token, fingerprint: filepath.Join(cfg.Dir, "viewer.fingerprint")}
	for _, p := range paths {
		d.p = append(d.p, p)
	}
	d.stats = workload.StatsClient(p, token, d.fingerprint)
	defer d.stats.CloseIdleConnections()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := d.startProcesses(ctx, &wg, paths, cfg); err != nil {
		return err
	}
	srv := &http.Server{Handler: d.handler(workload.PageProxy(p, token, d.fingerprint)), ReadHeaderTimeout: 10 * time.Second}
	wg.Go(func() { srv.Serve(cfg.Page) })
	defer srv.Close()

	fmt.Fprintf(cfg.Stdout, "\n  replenish demo: open http://%s/ in a browser\n", cfg.Page.Addr())
	fmt.Fprintf(cfg.Stdout, "  path %s, RTT %v, queue %d bytes, %s: %s\n", cfg.Path.Rate, cfg.Path.RTT,
		scenario.QueueBytes(cfg.Path.Rate, cfg.Path.Queue), d.layout(), scenario.Streams(cfg.Streams))
	fmt.Fprintln(cfg.Stdout, "  type: rate 500kbit | rtt 200ms | reset | status | quit   (Ctrl-C stops)")
	fmt.Fprintln(cfg.Stdout)
	return d.loop(ctx, anyDone(ctx, paths), cfg.Stdin, cfg.Stdout)
}

// startPaths starts the senders' paths: one, or one per stream, the others
// ending in the first's receiver namespace. It returns those it started,
// for the caller to close, with the error that stopped it.
func startPaths(ctx context.Context, cfg Config) ([]*emu.Path, error) {
	n := len(cfg.Streams)
	if cfg.Shared {
		n = 1
	}
	ecfg := cfg.Path.EmuConfig()
	ecfg.Logger = cfg.Log
	var paths []*emu.Path
	for range n {
		p, err := emu.Start(ctx, ecfg)
		if err != nil {
			return paths, err
		}
		paths = append(paths, p)
		ecfg.ReceiverNS = paths[0].ReceiverNS()
	}
	return paths, nil
}

// anyDone returns a channel closed when any of paths goes away; its
// goroutines end with ctx.
func anyDone(ctx context.Context, paths []*emu.Path) <-chan struct{} {
	done := make(chan struct{})
	var once sync.Once
	for _, p := range paths {
		go func() {
			select {
			case <-p.Done():
				once.Do(func() { close(done) })
			case <-ctx.Done():
			}
		}()
	}
	return done
}

// layout says how the senders share the path, as the demo prints it.
func (d *demo) layout() string {
	if d.shared || len(d.p) == 1 {
		return "one bottleneck shared by every sender"
	}
	return "each sender on a path of its own, of this shape"
}

// startProcesses starts the viewer, waits until it answers, and starts the
// senders, each kept running by a goroutine of wg until ctx is done.
func (d *demo) startProcesses(ctx context.Context, wg *sync.WaitGroup, paths []*emu.Path, cfg Config) error {
	certFile, keyFile, err := workload.WriteCertificate(cfg.Dir)
	if err != nil {
		return err
	}
	p := paths[0]
	vw := workload.Viewer{Program: cfg.Programs.Viewer, Token: d.token, Fingerprint: d.fingerprint,
		CertFile: certFile, KeyFile: keyFile}
	if len(paths) > 1 {
		vw.Listen = workload.AllAddresses // each path's far end
	}
	viewerUp := make(chan struct{})
	wg.Go(func() {
		supervise(ctx, d.log, "viewer", func() (*proc.Proc, error) {
			return workload.StartViewer(ctx, p, d.stats, vw, filepath.Join(cfg.Dir, "viewer.log"))
		}, viewerUp)
	})
	select {
	case <-viewerUp:
	case <-ctx.Done():
		return ctx.Err()
	}
	bitrate := scenario.Run{Path: cfg.Path}.VideoBitrate()
	for i, st := range cfg.Streams {
		s := workload.Sender{Program: cfg.Programs.Sender, Transport: st.Transport, Name: StreamName(st), Mode: st.Mode,
			Bitrate: bitrate, MaxRes: cfg.MaxRes, Token: d.token}
		logName := fmt.Sprintf("sender-%d", i+1)
		sp := paths[min(i, len(paths)-1)]
		wg.Go(func() {
			supervise(ctx, d.log, "sender "+s.Name, func() (*proc.Proc, error) {
				if s.Transport == scenario.QUIC || s.Transport == scenario.WebRTC {
					// The pin comes from the file the viewer wrote, and
					// from nothing else.
					pin, err := workload.ReadFingerprint(vw.Fingerprint)
					if err != nil {
						return nil, fmt.Errorf("the viewer's fingerprint: %w", err)
					}
					s.Pin = pin
				}
				return workload.StartSender(sp, logName, s, filepath.Join(cfg.Dir, logName+".log"))
			}, nil)
		})
	}
	return nil
}

// loop prints the status every statusEvery and runs typed commands until
// ctx is done, the path goes away (gone closes) or "quit" is typed.
func (d *demo) loop(ctx context.Context, gone <-chan struct{}, stdin io.Reader, stdout io.Writer) error {
	lines := make(chan string)
	go readLines(stdin, lines) // ends with standard input, or with the program
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return errors.New("the emulated path went away")
		case <-tick.C:
			d.printStatus(ctx, stdout)
		case line, ok := <-lines:
			if !ok {
				lines = nil // standard input closed: keep running until a signal
				continue
			}
			if quit := d.command(ctx, line, stdout); quit {
				return nil
			}
		}
	}
}

// StreamName is a sender's stream name: its transport (unless TCP) and
// mode, with what they mean: "with SBM: replenish=15ms", "without SBM:
// quic default", "WebRTC: gcc".
func StreamName(st scenario.Stream) string {
	name := workload.StreamName(st.Transport, st.ModeName())
	switch {
	case st.Transport == scenario.WebRTC:
		return "WebRTC: " + st.ModeName()
	case st.Mode.Policy == transport.Replenish:
		return "with SBM: " + name
	case st.Mode.Policy == transport.Default:
		return "without SBM: " + name
	}
	return name
}

// readLines sends the lines of r to out and closes it at the end of r.
func readLines(r io.Reader, out chan<- string) {
	defer close(out)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// supervise keeps a process running until ctx is done: it starts it,
// restarts it after a pause when it exits, and stops it at the end. ready,
// if not nil, is closed after the first successful start.
func supervise(ctx context.Context, log *slog.Logger, name string, start func() (*proc.Proc, error), ready chan struct{}) {
	backoff := time.Second
	for ctx.Err() == nil {
		pr, err := start()
		if err == nil {
			if ready != nil {
				close(ready)
				ready = nil
			}
			select {
			case <-ctx.Done():
				pr.Stop(workload.StopGrace)
				return
			case <-pr.Done():
				err = pr.Err()
			}
		}
		log.Warn("restarting", "process", name, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// command runs one typed command and reports whether it was quit.
func (d *demo) command(ctx context.Context, line string, out io.Writer) (quit bool) {
	f := strings.Fields(line)
	if len(f) == 0 {
		d.printStatus(ctx, out)
		return false
	}
	switch {
	case f[0] == "quit" || f[0] == "exit":
		return true
	case f[0] == "reset":
		d.set(0, 0, true)
		d.printPath(out)
	case f[0] == "status":
		d.printStatus(ctx, out)
	case f[0] == "rate" && len(f) == 2:
		r, err := rate.Parse(f[1])
		if err == nil && (r < minRate || r > maxRate) {
			err = fmt.Errorf("out of range (%v to %v)", minRate, maxRate)
		}
		if err != nil {
			fmt.Fprintf(out, "rate %s: %v\n", f[1], err)
			return false
		}
		d.set(r, 0, false)
		d.printPath(out)
	case f[0] == "rtt" && len(f) == 2:
		rtt, err := time.ParseDuration(f[1])
		if err != nil || rtt <= 0 || rtt > maxRTT {
			fmt.Fprintf(out, "rtt %s: want a duration above 0 and at most %v\n", f[1], maxRTT)
			return false
		}
		d.set(0, rtt, false)
		d.printPath(out)
	default:
		fmt.Fprintln(out, "commands: rate 500kbit | rtt 200ms | reset | status | quit")
	}
	return false
}

func (d *demo) printPath(out io.Writer) {
	c := d.get()
	fmt.Fprintf(out, "path: %s, RTT %v\n", c.Rate, c.RTT)
}

// printStatus prints the path and one line per stream from the viewer.
func (d *demo) printStatus(ctx context.Context, out io.Writer) {
	st, err := workload.FetchStats(ctx, d.stats)
	var b strings.Builder
	c := d.get()
	fmt.Fprintf(&b, "path %s, RTT %v", c.Rate, c.RTT)
	for i, p := range d.p {
		if s := p.Stats().Forward; s.Window.Packets > 0 {
			if len(d.p) > 1 {
				fmt.Fprintf(&b, ", sender %d's queue p50 %s", i+1, summary.FormatMs(s.Window.Queue.P50))
			} else {
				fmt.Fprintf(&b, ", queue p50 %s", summary.FormatMs(s.Window.Queue.P50))
			}
		}
	}
	b.WriteByte('\n')
	if err != nil {
		fmt.Fprintf(&b, "  viewer: %v\n", err)
	}
	for _, s := range st.Streams {
		fmt.Fprintf(&b, "  %-28s capture to received p50 %8s  source delay p50 %8s  %4.0f fps  %s  %dx%d\n",
			s.Name, summary.FormatMs(s.CaptureToReceived.P50), summary.FormatMs(s.Parts.SourceDelay.P50),
			float64(s.FPS), summary.FormatBps(float64(s.Bitrate)), s.Width, s.Height)
	}
	fmt.Fprint(out, b.String())
}
