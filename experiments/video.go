package main

import (
	"context"
	"encoding/json"
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
	"replenish/experiments/scenario"
	"replenish/experiments/summary"
	"replenish/internal/headless"
	"replenish/records"
	"replenish/viewer"
)

// statsEvery is how often a video run reads the viewer's /api/stats for
// the progress display.
const statsEvery = time.Second

// videoRun is a video run: cmd/viewer in the receiver's namespace, cmd/sender
// in the sender's, and with --browser headless Chromium on this host showing
// the viewer's page through a proxy into the namespace.
type videoRun struct {
	spec scenario.Run
	p    *emu.Path
	dir  string
	bins binaries
	live *live
	log  *slog.Logger

	recv, send *proc
	client     *http.Client

	mu    sync.Mutex // guards c2r99
	c2r99 float64    // ms: the viewer's latest capture-to-received p99

	wg     sync.WaitGroup     // the stats poller and the browser
	cancel context.CancelFunc // stops them
	srv    *http.Server       // the proxy to the page, with --browser
}

func (v *videoRun) mediaAddr() string {
	return fmt.Sprintf("%s:%d", v.p.ReceiverAddr(), workloadPort)
}

func (v *videoRun) startReceiver(ctx context.Context) error {
	argv := []string{v.bins.Viewer, "-listen", v.mediaAddr(), "-http", viewerHTTP,
		"-records", filepath.Join(v.dir, records.ViewerFile)}
	var err error
	if v.recv, err = startProc(v.p.ReceiverNS(), "viewer", argv, filepath.Join(v.dir, "viewer.log"), nil); err != nil {
		return err
	}
	v.client = &http.Client{Transport: nsTransport(v.p, emu.Receiver), Timeout: 2 * time.Second}
	return waitHTTP(ctx, v.client, v.recv, "http://"+viewerHTTP+"/api/stats", readyWait)
}

// waitHTTP polls url until it answers 200, pr exits or timeout passes.
func waitHTTP(ctx context.Context, c *http.Client, pr *proc, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-pr.done:
			return fmt.Errorf("%s exited before it was ready: %v (see its log)", pr.name, pr.exitErr())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %v", pr.name, timeout, err)
		}
	}
}

func (v *videoRun) startSender(ctx context.Context) error {
	argv := []string{v.bins.Sender, "-to", v.mediaAddr(), "-name", v.spec.Mode.String(), "-mode", v.spec.Mode.String(),
		"-status=false", "-bitrate", scenario.FormatRate(v.spec.VideoBitrate()), "-records", filepath.Join(v.dir, records.SenderFile)}
	if v.spec.MaxRes != "" {
		argv = append(argv, "-max-res", v.spec.MaxRes)
	}
	var err error
	if v.send, err = startProc(v.p.SenderNS(), "sender", argv, filepath.Join(v.dir, "sender.log"), nil); err != nil {
		return err
	}
	bctx, cancel := context.WithCancel(ctx)
	v.cancel = cancel
	v.wg.Go(func() { v.pollStats(bctx) })
	if v.spec.Browser {
		if err := v.startBrowser(bctx); err != nil {
			return err
		}
	}
	return nil
}

// pollStats reads the viewer's stats every statsEvery for the progress
// display until ctx is done.
func (v *videoRun) pollStats(ctx context.Context) {
	t := time.NewTicker(statsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := fetchStats(ctx, v.client, "http://"+viewerHTTP+"/api/stats")
		if err != nil || len(st.Streams) == 0 {
			continue
		}
		s := st.Streams[len(st.Streams)-1]
		extra := fmt.Sprintf("%dx%d %.0f fps %s, capture to received p50 %s", s.Width, s.Height, float64(s.FPS),
			summary.FormatBps(float64(s.Bitrate)), summary.FormatMs(float64(s.CaptureToReceived.P50)))
		for _, c := range st.Clients {
			if c.G2G.N > 0 {
				extra += ", g2g p50 " + summary.FormatMs(float64(c.G2G.P50))
			}
		}
		v.live.set(float64(s.Parts.SourceDelay.P50), extra)
		v.mu.Lock()
		v.c2r99 = float64(s.CaptureToReceived.P99)
		v.mu.Unlock()
	}
}

// fetchStats gets the viewer's /api/stats.
func fetchStats(ctx context.Context, c *http.Client, url string) (viewer.Stats, error) {
	var st viewer.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, errors.New(resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// startBrowser serves the viewer's page on a loopback port of this host
// through a proxy into the receiver's namespace, and opens it in headless
// Chromium until ctx is done.
func (v *videoRun) startBrowser(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	v.srv = &http.Server{Handler: nsProxy(v.p, emu.Receiver, viewerHTTP), ReadHeaderTimeout: 10 * time.Second}
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
		if err := navigate(tab, url); err != nil {
			v.log.Warn("headless Chromium: opening the page", "url", url, "err", err)
			return
		}
		<-ctx.Done()
	})
	return nil
}

func (v *videoRun) procs() []*proc {
	return started(v.recv, v.send)
}

// quiesce does nothing: the sender cannot be told to stop producing frames,
// and keeps sending through the drain.
func (v *videoRun) quiesce() {}

// drained reports whether the frames captured in the window should have
// been received: once a little more than the viewer's recent
// capture-to-received p99 has passed since the window ended.
func (v *videoRun) drained(sinceEnd time.Duration) bool {
	v.mu.Lock()
	p99 := v.c2r99
	v.mu.Unlock()
	if math.IsNaN(p99) {
		return sinceEnd >= 2*time.Second
	}
	return sinceEnd >= time.Duration(1.2*p99*float64(time.Millisecond))+time.Second
}

func (v *videoRun) stop() error {
	var errs []error
	if v.send != nil {
		errs = append(errs, v.send.stop(stopGrace))
	}
	if v.cancel != nil {
		v.cancel()
	}
	if v.srv != nil {
		v.srv.Close()
	}
	v.wg.Wait()
	if v.recv != nil {
		errs = append(errs, v.recv.stop(stopGrace))
	}
	if v.client != nil {
		v.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// navigate opens url in the browser tab and waits until it has loaded.
func navigate(tab context.Context, url string) error {
	return chromedp.Do(tab, chromedp.Navigate(url))
}
