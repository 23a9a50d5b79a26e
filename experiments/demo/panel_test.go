package demo

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"replenish/web"
)

// TestPanel checks that the demo adds its path panel to the viewer's page,
// which knows nothing of it, and serves the panel's files.
func TestPanel(t *testing.T) {
	viewerPage := httptest.NewServer(http.FileServerFS(web.FS()))
	defer viewerPage.Close()
	target, _ := url.Parse(viewerPage.URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	d := &demo{log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(d.handler(proxy))
	defer srv.Close()

	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/")
	head, body, ok := strings.Cut(page, "</head>")
	if resp.StatusCode != 200 || !ok || !strings.Contains(head, `<link rel="stylesheet" href="demo/pathctl.css">`) ||
		!strings.Contains(body, `<script src="demo/pathctl.js"></script>`+"\n</body>") {
		t.Errorf("the page through the demo: %d\n%s", resp.StatusCode, page)
	}
	if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n != len(page) {
		t.Errorf("Content-Length %d, body %d bytes", n, len(page))
	}
	if _, app := get("/app.js"); strings.Contains(app, "pathctl") || !strings.Contains(app, "VideoDecoder") {
		t.Error("the viewer's script was changed on its way through the demo")
	}
	for path, want := range map[string]string{"/demo/pathctl.js": "api/path", "/demo/pathctl.css": ".path"} {
		if resp, b := get(path); resp.StatusCode != 200 || !strings.Contains(b, want) {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
}
