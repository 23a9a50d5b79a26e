package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"replenish/experiments/emu"
)

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

// nsTransport returns an HTTP transport that connects inside side's
// namespace of p.
func nsTransport(p *emu.Path, side emu.Side) *http.Transport {
	return &http.Transport{
		DialContext:         nsDialer(p, side),
		MaxIdleConns:        4,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// nsProxy returns a reverse proxy to the HTTP server at addr ("host:port")
// inside side's namespace of p: the viewer's page, its API and its
// WebSocket, for a browser on this host. The browser's Host header is
// passed on unchanged, so the viewer's loopback-host and same-origin checks
// see what the browser sent.
func nsProxy(p *emu.Path, side emu.Side, addr string) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: addr}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport:     nsTransport(p, side),
		FlushInterval: -1,
	}
}
