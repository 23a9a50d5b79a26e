package workload

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"replenish/viewer"
)

// TestPageProxyHTTPS runs the page proxy in front of a viewer serving
// HTTPS, as a run's viewer does: the proxy pins the certificate named by
// the fingerprint file, adds the token, and gives the viewer the origin it
// expects over HTTPS, so that the browser's page and WebSocket, on plain
// HTTP to the proxy, work. With another fingerprint in the file the proxy
// reaches nothing.
func TestPageProxyHTTPS(t *testing.T) {
	const token = "proxy-token"
	s, err := viewer.New(viewer.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", HTTPTLS: true, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatal(err)
	}
	_, h := s.Addrs()
	fp := filepath.Join(t.TempDir(), "viewer.fingerprint")
	if err := os.WriteFile(fp, []byte(s.Fingerprint().String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: viewerTLS(fp)}
	defer tr.CloseIdleConnections()
	proxy := httptest.NewServer(pageProxy(tr, h.String(), token))
	defer proxy.Close()

	resp, err := http.Get(proxy.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page through the proxy: %s", resp.Status)
	}
	ws := "ws" + strings.TrimPrefix(proxy.URL, "http") + "/ws"
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial(ws, http.Header{"Origin": {proxy.URL}})
	if err != nil {
		t.Fatalf("the WebSocket through the proxy: %v, %v", err, resp)
	}
	conn.Close()

	os.WriteFile(fp, []byte("sha256:"+strings.Repeat("ab", 32)+"\n"), 0o644)
	tr.CloseIdleConnections()
	resp, err = http.Get(proxy.URL + "/api/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("with another fingerprint: %s, want 502", resp.Status)
	}
}
