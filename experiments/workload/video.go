package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/internal/headless"
	"replenish/records"
)

// statsEvery is how often a video run reads the viewer's /api/stats for
// the progress display.
const statsEvery = time.Second

// Video is a video run's processes: cmd/viewer in a path's receiver
// namespace, cmd/sender in its sender namespace, and with the run's
// Browser headless Chromium on this host showing the viewer's page through
// a proxy into the namespace, or, with a page leg, across that leg's own
// path from the viewer. Its methods are safe for concurrent use, but
// StartReceiver, StartSender and Stop are called in that order, once.
type Video struct {
	spec  scenario.Run
	p     *emu.Path
	page  *emu.Path // the page's leg, nil without one
	dir   string
	progs Programs
	log   *slog.Logger

	recv, send *proc.Proc   // set by the Start methods
	client     *http.Client // into the receiver's namespace
	token      string       // the viewer's

	mu     sync.Mutex // guards the fields below
	c2r99  float64    // ms: the viewer's latest capture-to-received p99
	srcP50 float64    // ms: the viewer's latest source delay p50
	extra  string     // the rest of the progress line

	wg     sync.WaitGroup     // the stats poller and the browser
	cancel context.CancelFunc // stops them
	srv    *http.Server       // the proxy to the page, with a browser
}

// NewVideo returns the processes of the video run spec on p, with their
// files in dir; page is the page's leg (spec.Page; its sender side p's
// receiver namespace), or nil. It starts nothing; log receives the
// browser's troubles.
func NewVideo(spec scenario.Run, p, page *emu.Path, dir string, progs Programs, log *slog.Logger) *Video {
	return &Video{spec: spec, p: p, page: page, dir: dir, progs: progs, log: log, c2r99: math.NaN(), srcP50: math.NaN()}
}

// fingerprintFile is where the viewer writes its fingerprint, in a run's
// raw directory.
const fingerprintFile = "viewer.fingerprint"

// StartReceiver starts the viewer and returns once its API answers and its
// fingerprint is written.
func (v *Video) StartReceiver(ctx context.Context) error {
	var err error
	if v.token, err = NewToken(); err != nil {
		return err
	}
	v.client = StatsClient(v.p, v.token, filepath.Join(v.dir, fingerprintFile))
	vw := Viewer{Program: v.progs.Viewer, Token: v.token, Records: filepath.Join(v.dir, records.ViewerFile),
		Fingerprint: filepath.Join(v.dir, fingerprintFile)}
	if v.spec.Page != nil {
		vw.PageMode = v.spec.Page.Mode
	}
	v.recv, err = StartViewer(ctx, v.p, v.client, vw, filepath.Join(v.dir, "viewer.log"))
	return err
}

// StartSender starts the sender (a QUIC or WebRTC sender pinned to the
// fingerprint the viewer wrote), the stats poller and, with a browser, the proxy and
// headless Chromium.
func (v *Video) StartSender(ctx context.Context) error {
	s := Sender{Program: v.progs.Sender, Transport: v.spec.TransportName(), Name: StreamName(v.spec.TransportName(), v.spec.ModeName()),
		Mode: v.spec.Mode, Bitrate: v.spec.VideoBitrate(), MaxRes: v.spec.MaxRes, FPS: v.spec.FPS, Records: filepath.Join(v.dir, records.SenderFile),
		Token: v.token}
	var err error
	if s.Transport == scenario.QUIC || s.Transport == scenario.WebRTC {
		if s.Pin, err = ReadFingerprint(filepath.Join(v.dir, fingerprintFile)); err != nil {
			return fmt.Errorf("the viewer's fingerprint: %w", err)
		}
	}
	if v.send, err = StartSender(v.p, "sender", s, filepath.Join(v.dir, "sender.log")); err != nil {
		return err
	}
	bctx, cancel := context.WithCancel(ctx)
	v.cancel = cancel
	v.wg.Go(func() { v.pollStats(bctx) })
	if v.spec.Browser {
		return v.startBrowser(bctx)
	}
	return nil
}

// pollStats reads the viewer's stats every statsEvery for the progress
// display until ctx is done.
func (v *Video) pollStats(ctx context.Context) {
	t := time.NewTicker(statsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := FetchStats(ctx, v.client)
		if err != nil || len(st.Streams) == 0 {
			continue
		}
		s := st.Streams[len(st.Streams)-1]
		extra := fmt.Sprintf("%dx%d %.0f fps %s, capture to received p50 %s", s.Width, s.Height, float64(s.FPS),
			summary.FormatBps(float64(s.Bitrate)), summary.FormatMs(s.CaptureToReceived.P50))
		for _, c := range st.Clients {
			if c.G2G.N > 0 {
				extra += ", g2g p50 " + summary.FormatMs(c.G2G.P50)
			}
		}
		v.mu.Lock()
		v.srcP50, v.extra, v.c2r99 = s.Parts.SourceDelay.P50, extra, s.CaptureToReceived.P99
		v.mu.Unlock()
	}
}

// startBrowser serves the viewer's page on a loopback port of this host
// through a proxy into the receiver's namespace, and opens it in headless
// Chromium until ctx is done.
func (v *Video) startBrowser(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fp := filepath.Join(v.dir, fingerprintFile)
	proxy := PageProxy(v.p, v.token, fp)
	if v.page != nil {
		proxy = PageLegProxy(v.page, v.token, fp)
	}
	v.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	v.wg.Go(func() { v.srv.Serve(ln) })
	profile, err := os.MkdirTemp("", "replenish-chromium-")
	if err != nil {
		return err
	}
	tab, stop, err := headless.Start(ctx, profile)
	if err != nil {
		os.RemoveAll(profile)
		return err
	}
	url := "http://" + ln.Addr().String() + "/"
	v.wg.Go(func() {
		defer os.RemoveAll(profile)
		defer stop()
		if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
			v.log.Warn("headless Chromium: opening the page", "url", url, "err", err)
			return
		}
		<-ctx.Done()
	})
	return nil
}

// StreamName is a sender's stream name for a transport and a mode name:
// the mode alone over TCP (as before transports), "quic replenish=15ms",
// "webrtc gcc".
func StreamName(transportName, mode string) string {
	if transportName == scenario.TCP || transportName == "" {
		return mode
	}
	return transportName + " " + mode
}

// Procs returns the processes started so far.
func (v *Video) Procs() []*proc.Proc { return proc.Started(v.recv, v.send) }

// Quiesce does nothing: the sender cannot be told to stop producing
// frames, and keeps sending through the drain.
func (v *Video) Quiesce() {}

// Drained reports whether the frames captured in the window should have
// been received: once a little more than the viewer's recent
// capture-to-received p99 has passed since the window ended.
func (v *Video) Drained(sinceEnd time.Duration) bool {
	v.mu.Lock()
	p99 := v.c2r99
	v.mu.Unlock()
	if math.IsNaN(p99) {
		return sinceEnd >= 2*time.Second
	}
	return sinceEnd >= time.Duration(1.2*p99*float64(time.Millisecond))+time.Second
}

// Live returns the viewer's latest source delay p50 in ms (NaN when
// unknown) and the rest of a progress line.
func (v *Video) Live() (p50 float64, extra string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.srcP50, v.extra
}

// Stop ends the sender, the poller and the browser, then the viewer, and
// returns how the processes exited.
func (v *Video) Stop() error {
	var errs []error
	if v.send != nil {
		errs = append(errs, v.send.Stop(StopGrace))
	}
	if v.cancel != nil {
		v.cancel()
	}
	if v.srv != nil {
		v.srv.Close()
	}
	v.wg.Wait()
	if v.recv != nil {
		errs = append(errs, v.recv.Stop(StopGrace))
	}
	if v.client != nil {
		v.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}
