package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/rate"
	"replenish/transport"
)

// Limits of what the demo's controls accept.
const (
	demoMinRate = 10 * rate.Kbps
	demoMaxRate = 10 * rate.Gbps
	demoMaxRTT  = 10 * time.Second
)

// demoStatusEvery is how often the demo prints the streams' figures.
const demoStatusEvery = 10 * time.Second

// demoOptions are the demo command's flags.
type demoOptions struct {
	Spec   scenario.Flags // the path, the modes and the senders' largest resolution
	HTTP   string
	BinDir string
}

// demoModes are the demo's senders unless told otherwise: one with SBM
// (the default replenish time), one without.
var demoModes = []transport.Mode{transport.DefaultMode, {Policy: transport.Default}}

func parseDemoFlags(args []string, out io.Writer) (demoOptions, scenario.Path, []transport.Mode, error) {
	o := demoOptions{Spec: scenario.Defaults(), HTTP: "127.0.0.1:8080"}
	o.Spec.Rate, o.Spec.RTT, o.Spec.Modes, o.Spec.MaxRes, o.Spec.Workload = "2mbit", 80*time.Millisecond, slices.Clone(demoModes), "640x360", scenario.KindVideo
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `usage: go run ./experiments demo [flags]

A live demo of source buffer management: an emulated path (two network
namespaces; needs root), a viewer on its receiving side and one sender per
mode on its sending side, by default one with SBM (replenish=15ms) and one
without (default). Open the printed URL: the page plays the streams side by
side with their latencies. Change the path while it runs from the page's
path panel or by typing here:

  rate 500kbit    set the bottleneck rate
  rtt 200ms       set the round-trip time
  reset           back to the starting rate and RTT
  status          print the path and the streams
  quit            stop (as does Ctrl-C)

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Spec.Rate, "rate", o.Spec.Rate, "bottleneck `rate` at the start")
	fs.DurationVar(&o.Spec.RTT, "rtt", o.Spec.RTT, "round-trip `time` at the start")
	fs.DurationVar(&o.Spec.Queue, "queue", o.Spec.Queue, "bottleneck queue as `time` at the starting rate (a fixed byte limit, never under 8 packets)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "loopback `host:port` for the page")
	fs.Var(&o.Spec.Modes, "modes", "comma `list` of modes, one sender each")
	fs.StringVar(&o.Spec.MaxRes, "max-res", o.Spec.MaxRes, "largest resolution `WxH` the senders may send")
	fs.StringVar(&o.Spec.CC, "cc", o.Spec.CC, "TCP congestion `control`")
	fs.StringVar(&o.Spec.Sndbuf, "sndbuf", o.Spec.Sndbuf, "initial TCP send buffer on the sender side, `bytes` (0 keeps Linux's)")
	fs.StringVar(&o.BinDir, "bindir", "", "`directory` with prebuilt sender and viewer binaries (default: go build them)")
	if err := fs.Parse(args); err != nil {
		return o, scenario.Path{}, nil, err
	}
	if fs.NArg() > 0 {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: unexpected arguments %q", scenario.ErrSpec, fs.Args())
	}
	specs, err := o.Spec.Runs()
	if err != nil {
		return o, scenario.Path{}, nil, err
	}
	host, _, err := net.SplitHostPort(o.HTTP)
	if err != nil {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: --http %q: %v", scenario.ErrSpec, o.HTTP, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return o, scenario.Path{}, nil, fmt.Errorf("%w: --http %q: the demo serves on loopback only", scenario.ErrSpec, o.HTTP)
	}
	modes := make([]transport.Mode, len(specs))
	for i, s := range specs {
		modes[i] = s.Mode
	}
	return o, specs[0].Path, modes, nil
}

// demoMain is the demo command.
func demoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, path, modes, err := parseDemoFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "demo: needs root: the emulated path creates network namespaces")
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := emu.PrioritizeProcess(); err != nil {
		log.Warn("could not raise this process's priority", "err", err)
	}
	tmp, err := os.MkdirTemp("", "replenish-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if o.BinDir == "" {
		fmt.Fprintln(stderr, "building the sender and the viewer")
	}
	bins, err := findBinaries(ctx, true, o.BinDir, tmp)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	// Listen first: a busy port should fail before any namespace exists.
	ln, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	defer ln.Close()
	if err := runDemo(ctx, o, path, modes, bins, ln, tmp, os.Stdin, stdout, log); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "demo stopped; the namespaces are removed")
	return 0
}

// demoPath is what the demo's controls need of the emulated path.
type demoPath interface {
	Set(d emu.Direction, r rate.Bitrate, delay time.Duration)
	Stats() emu.Stats
}

var _ demoPath = (*emu.Path)(nil)

// demo is a running demo's shared state.
type demo struct {
	p     demoPath
	start scenario.Path
	log   *slog.Logger
	stats *http.Client

	mu  sync.Mutex // guards cur
	cur scenario.Path
}

// set changes the path's rate and RTT (zero keeps each) and returns the new
// values.
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
	d.p.Set(emu.Forward, d.cur.Rate, d.cur.RTT/2)
	d.p.Set(emu.Reverse, 0, d.cur.RTT-d.cur.RTT/2)
	d.log.Info("path changed", "rate", d.cur.Rate, "rtt", d.cur.RTT)
	return d.cur
}

func (d *demo) get() scenario.Path {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// runDemo runs the demo until ctx is done or "quit" is typed.
func runDemo(ctx context.Context, o demoOptions, path scenario.Path, modes []transport.Mode, bins binaries, ln net.Listener, dir string,
	stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := path.EmuConfig()
	cfg.Logger = log
	p, err := emu.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if path.Sndbuf > 0 {
		if err := p.Do(emu.Sender, func() error {
			return os.WriteFile("/proc/sys/net/ipv4/tcp_wmem", []byte(path.Wmem()), 0)
		}); err != nil {
			return fmt.Errorf("setting the send buffer: %w", err)
		}
	}
	d := &demo{p: p, start: path, cur: path, log: log,
		stats: &http.Client{Transport: nsTransport(p, emu.Receiver), Timeout: 2 * time.Second}}
	defer d.stats.CloseIdleConnections()

	media := fmt.Sprintf("%s:%d", p.ReceiverAddr(), workloadPort)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	viewerUp := make(chan struct{})
	wg.Go(func() {
		supervise(ctx, log, "viewer", func() (*proc, error) {
			pr, err := startProc(p.ReceiverNS(), "viewer", []string{bins.Viewer, "-listen", media, "-http", viewerHTTP},
				filepath.Join(dir, "viewer.log"), nil)
			if err == nil {
				if err = waitHTTP(ctx, d.stats, pr, "http://"+viewerHTTP+"/api/stats", readyWait); err != nil {
					pr.stop(stopGrace)
				}
			}
			return pr, err
		}, viewerUp)
	})
	select {
	case <-viewerUp:
	case <-ctx.Done():
		return ctx.Err()
	}
	for i, m := range modes {
		name := demoStreamName(m)
		logName := fmt.Sprintf("sender-%d", i+1)
		wg.Go(func() {
			supervise(ctx, log, "sender "+name, func() (*proc, error) {
				argv := []string{bins.Sender, "-to", media, "-name", name, "-mode", m.String(), "-status=false", "-max-res", o.Spec.MaxRes,
					"-bitrate", scenario.FormatRate(scenario.Run{Path: path}.VideoBitrate())}
				return startProc(p.SenderNS(), logName, argv, filepath.Join(dir, logName+".log"), nil)
			}, nil)
		})
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/api/path", d.serveAPI)
	mux.Handle("/", nsProxy(p, emu.Receiver, viewerHTTP))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	wg.Go(func() { srv.Serve(ln) })
	defer srv.Close()

	fmt.Fprintf(stdout, "\n  replenish demo: open http://%s/ in a browser\n", ln.Addr())
	fmt.Fprintf(stdout, "  path %s, RTT %v, queue %d bytes; senders: %s\n", path.Rate, path.RTT, scenario.QueueBytes(path.Rate, path.Queue), joinModes(modes))
	fmt.Fprintln(stdout, "  type: rate 500kbit | rtt 200ms | reset | status | quit   (Ctrl-C stops)")
	fmt.Fprintln(stdout)

	lines := make(chan string)
	go readLines(stdin, lines) // ends with standard input, or with the program
	tick := time.NewTicker(demoStatusEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
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

// demoStreamName is a sender's stream name: its mode, with what it means.
func demoStreamName(mode transport.Mode) string {
	switch mode.Policy {
	case transport.Replenish:
		return "with SBM: " + mode.String()
	case transport.Default:
		return "without SBM: " + mode.String()
	}
	return mode.String()
}

func joinModes(modes []transport.Mode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = m.String()
	}
	return strings.Join(s, ", ")
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
func supervise(ctx context.Context, log *slog.Logger, name string, start func() (*proc, error), ready chan struct{}) {
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
				pr.stop(stopGrace)
				return
			case <-pr.done:
				err = pr.exitErr()
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
		if err == nil && (r < demoMinRate || r > demoMaxRate) {
			err = fmt.Errorf("out of range (%v to %v)", demoMinRate, demoMaxRate)
		}
		if err != nil {
			fmt.Fprintf(out, "rate %s: %v\n", f[1], err)
			return false
		}
		d.set(r, 0, false)
		d.printPath(out)
	case f[0] == "rtt" && len(f) == 2:
		rtt, err := time.ParseDuration(f[1])
		if err != nil || rtt <= 0 || rtt > demoMaxRTT {
			fmt.Fprintf(out, "rtt %s: want a duration above 0 and at most %v\n", f[1], demoMaxRTT)
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
	st, err := fetchStats(ctx, d.stats, "http://"+viewerHTTP+"/api/stats")
	var b strings.Builder
	c := d.get()
	fmt.Fprintf(&b, "path %s, RTT %v", c.Rate, c.RTT)
	if s := d.p.Stats().Forward; s.Window.Packets > 0 {
		fmt.Fprintf(&b, ", queue p50 %s", summary.FormatMs(float64(s.Window.Queue.P50)/float64(time.Millisecond)))
	}
	b.WriteByte('\n')
	if err != nil {
		fmt.Fprintf(&b, "  viewer: %v\n", err)
	}
	for _, s := range st.Streams {
		fmt.Fprintf(&b, "  %-28s capture to received p50 %8s  source delay p50 %8s  %4.0f fps  %s  %dx%d\n",
			s.Name, summary.FormatMs(float64(s.CaptureToReceived.P50)), summary.FormatMs(float64(s.Parts.SourceDelay.P50)),
			float64(s.FPS), summary.FormatBps(float64(s.Bitrate)), s.Width, s.Height)
	}
	fmt.Fprint(out, b.String())
}

// pathJSON is the body of GET /api/path and of a POST's answer.
type pathJSON struct {
	RateBps    int64   `json:"rate_bps"`
	RTTMs      float64 `json:"rtt_ms"`
	QueueBytes int     `json:"queue_bytes"`
	Start      struct {
		RateBps int64   `json:"rate_bps"`
		RTTMs   float64 `json:"rtt_ms"`
	} `json:"start"`
}

// pathChange is the body of POST /api/path: a new rate and RTT (0 or
// absent keeps each), or a reset to the starting values.
type pathChange struct {
	RateBps int64   `json:"rate_bps"`
	RTTMs   float64 `json:"rtt_ms"`
	Reset   bool    `json:"reset"`
}

func (d *demo) pathJSON() pathJSON {
	c := d.get()
	var j pathJSON
	j.RateBps, j.RTTMs = int64(c.Rate), float64(c.RTT)/float64(time.Millisecond)
	j.QueueBytes = scenario.QueueBytes(d.start.Rate, d.start.Queue)
	j.Start.RateBps, j.Start.RTTMs = int64(d.start.Rate), float64(d.start.RTT)/float64(time.Millisecond)
	return j
}

// serveAPI serves /api/path: GET returns the path, POST (a JSON
// pathChange, from the page's own origin) changes it. Like the viewer it
// answers only requests that name a loopback host.
func (d *demo) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !loopbackHost(r.Host) {
		http.Error(w, "demo: use a loopback address (such as 127.0.0.1) in the URL", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if err := checkChange(r); err != nil {
			http.Error(w, "demo: "+err.Error(), http.StatusForbidden)
			return
		}
		var c pathChange
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&c); err != nil {
			http.Error(w, "demo: want a JSON body {rate_bps, rtt_ms} or {reset: true}", http.StatusBadRequest)
			return
		}
		rt, rtt := rate.Bitrate(c.RateBps), time.Duration(c.RTTMs*float64(time.Millisecond))
		if (rt != 0 && (rt < demoMinRate || rt > demoMaxRate)) || rtt < 0 || rtt > demoMaxRTT || math.IsNaN(c.RTTMs) {
			http.Error(w, fmt.Sprintf("demo: rate from %v to %v, RTT up to %v", demoMinRate, demoMaxRate, demoMaxRTT), http.StatusBadRequest)
			return
		}
		d.set(rt, rtt, c.Reset)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "demo: GET or POST", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(d.pathJSON())
}

// checkChange accepts a change only as JSON (which a page elsewhere cannot
// send without the browser asking first) and, when the browser names its
// origin, only from the page's own.
func checkChange(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errors.New("changes must be application/json")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return errors.New("changes only from the demo's own page")
		}
	}
	return nil
}

// loopbackHost reports whether the Host header hostport names a loopback
// address or localhost.
func loopbackHost(hostport string) bool {
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
