package workload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/rate"
	"replenish/transport"
	"replenish/viewer"
)

// statsURL is the viewer's /api/stats, as a client into the receiver's
// namespace asks for it.
const statsURL = "http://" + ViewerHTTP + "/api/stats"

// token is the viewer's token in this process's runs, which senders prove
// and the harness's requests carry: the viewer receives media on the
// path's address, which is not loopback, so it must have one. It is new
// in each process; the browser never needs it (PageProxy adds it).
var token = newToken()

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withToken is an HTTP transport that adds the viewer's token to every
// request.
type withToken struct{ base http.RoundTripper }

func (t withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.base.RoundTrip(r)
}

// nsDialer returns a dial function whose connections start inside side's
// namespace of p (the socket is created there, so it stays there).
func nsDialer(p *emu.Path, side emu.Side) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := p.Do(side, func() (err error) {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// nsTransport returns an HTTP transport that connects inside the
// receiver's namespace of p.
func nsTransport(p *emu.Path) *http.Transport {
	return &http.Transport{
		DialContext:         nsDialer(p, emu.Receiver),
		MaxIdleConns:        4,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// StatsClient returns an HTTP client that reaches the viewer in p's
// receiver namespace, for FetchStats and StartViewer. Close its idle
// connections when done.
func StatsClient(p *emu.Path) *http.Client {
	return &http.Client{Transport: withToken{nsTransport(p)}, Timeout: 2 * time.Second}
}

// FetchStats gets the viewer's /api/stats with c (see StatsClient).
func FetchStats(ctx context.Context, c *http.Client) (viewer.Stats, error) {
	var st viewer.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statsURL, nil)
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

// PageProxy returns a reverse proxy to the viewer's page, API and WebSocket
// in p's receiver namespace, for a browser on this host. The browser's
// Host header is passed on unchanged, so that the viewer's same-origin
// check sees what the browser sent, and the viewer's token is added to
// requests that name a loopback host (the viewer's own rule without a
// token, which keeps a page elsewhere from reaching it by rebinding its
// host name to 127.0.0.1); others get the viewer's 401.
func PageProxy(p *emu.Path) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: ViewerHTTP}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			if viewer.IsLoopback(r.In.Host) {
				r.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		Transport:     nsTransport(p),
		FlushInterval: -1,
	}
}

// StartViewer starts cmd/viewer (the program at prog) in p's receiver
// namespace, receiving media on the workload's port and serving its page
// on ViewerHTTP, writing its records to records unless that is empty and
// its stderr to logPath. It returns once the viewer's API answers c (see
// StatsClient), and stops the viewer if it does not within ReadyWait.
func StartViewer(ctx context.Context, p *emu.Path, c *http.Client, prog, records, logPath string) (*proc.Proc, error) {
	argv := []string{prog, "-listen", receiverAddr(p), "-http", ViewerHTTP, "-token", token}
	if records != "" {
		argv = append(argv, "-records", records)
	}
	pr, err := proc.Start(p.ReceiverNS(), "viewer", argv, logPath, nil)
	if err != nil {
		return nil, err
	}
	if err := pr.WaitHTTP(ctx, c, statsURL, ReadyWait); err != nil {
		pr.Stop(StopGrace)
		return nil, err
	}
	return pr, nil
}

// Sender is what cmd/sender is told for a run or the demo.
type Sender struct {
	Program string         // cmd/sender
	Name    string         // the stream's name
	Mode    transport.Mode // the send-buffer mode
	Bitrate rate.Bitrate   // the starting target; see scenario.Run.VideoBitrate
	MaxRes  string         // the largest resolution, "" for the sender's
	Records string         // its records file, "" for none
}

// StartSender starts s in p's sender namespace, sending to the viewer
// StartViewer started, with the process named name and its stderr in
// logPath.
func StartSender(p *emu.Path, name string, s Sender, logPath string) (*proc.Proc, error) {
	argv := []string{s.Program, "-to", receiverAddr(p), "-name", s.Name, "-mode", s.Mode.String(), "-status=false",
		"-bitrate", scenario.FormatRate(s.Bitrate), "-token", token}
	if s.MaxRes != "" {
		argv = append(argv, "-max-res", s.MaxRes)
	}
	if s.Records != "" {
		argv = append(argv, "-records", s.Records)
	}
	return proc.Start(p.SenderNS(), name, argv, logPath, nil)
}
