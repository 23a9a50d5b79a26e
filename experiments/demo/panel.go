package demo

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// The demo's additions to the viewer's page: the path panel, served under
// panelPrefix and added to the page by addPanel. The viewer's own page
// knows nothing of them.
//
//go:embed pathctl.js pathctl.css
var panelFiles embed.FS

// panelPrefix is where the demo serves its additions to the page.
const panelPrefix = "/demo/"

// panelTags are added to the viewer's index.html: the style sheet before
// </head>, the script before </body>. They are relative, as the page's
// own references are.
var panelTags = []struct{ before, tag string }{
	{"</head>", `<link rel="stylesheet" href="demo/pathctl.css">` + "\n"},
	{"</body>", `<script src="demo/pathctl.js"></script>` + "\n"},
}

// maxPage caps the page the demo reads to add its panel.
const maxPage = 1 << 20

// withPanel sets page, the proxy to the viewer, to add the path panel to
// the viewer's index.html; the page is asked for uncompressed.
func withPanel(page *httputil.ReverseProxy) {
	rewrite := page.Rewrite
	page.Rewrite = func(r *httputil.ProxyRequest) {
		rewrite(r)
		if isIndex(r.In.URL.Path) {
			r.Out.Header.Del("Accept-Encoding")
		}
	}
	page.ModifyResponse = addPanel
}

func isIndex(path string) bool { return path == "/" || path == "/index.html" }

// addPanel adds panelTags to a successful HTML answer for the page.
func addPanel(resp *http.Response) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !isIndex(resp.Request.URL.Path) || resp.StatusCode != http.StatusOK || mt != "text/html" || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if len(body) > maxPage {
		return fmt.Errorf("demo: the viewer's page is larger than %d bytes", maxPage)
	}
	for _, t := range panelTags {
		if i := bytes.LastIndex(body, []byte(t.before)); i >= 0 {
			body = append(body[:i:i], append([]byte(t.tag), body[i:]...)...)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// panelHandler serves the panel's files under panelPrefix.
func panelHandler() http.Handler {
	return http.StripPrefix(panelPrefix, http.FileServerFS(panelFiles))
}
