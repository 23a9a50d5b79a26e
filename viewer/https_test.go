package viewer

import (
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"replenish/internal/certs"
)

// httpsClient returns a client that pins the viewer's certificate and does
// not follow redirects.
func (ts *testServer) httpsClient(t *testing.T) *http.Client {
	t.Helper()
	conf, err := certs.ClientTLS(ts.Fingerprint(), nil, "", "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Transport:     &http.Transport{TLSClientConfig: conf},
		Timeout:       waitLimit,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// getWith sends GET path (over HTTPS when the viewer serves it) with the
// cookie, if not nil, and returns the response with its body read.
func (ts *testServer) getWith(t *testing.T, client *http.Client, path string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	scheme := "http"
	if ts.HTTPS() {
		scheme = "https"
	}
	req, err := http.NewRequest("GET", scheme+"://"+ts.http+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func tokenCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == TokenCookie {
			return c
		}
	}
	return nil
}

// With HTTPTLS the page and the API are served over TLS with the viewer's
// certificate; the token given in the URL comes back as a Secure cookie
// and a redirect to the URL without it; the cookie then opens the page,
// the API and the WebSocket.
func TestHTTPS(t *testing.T) {
	const token = "correct-horse"
	ts := startServer(t, func(c *Config) { c.Token = token; c.HTTPTLS = true })
	client := ts.httpsClient(t)

	resp, _ := ts.getWith(t, client, "/?token="+token+"&x=1", nil)
	cookie := tokenCookie(resp)
	switch {
	case resp.StatusCode != http.StatusSeeOther:
		t.Fatalf("page with ?token=: %s, want 303", resp.Status)
	case resp.Header.Get("Location") != "/?x=1":
		t.Errorf("redirected to %q, want /?x=1 (the URL without the token)", resp.Header.Get("Location"))
	case cookie == nil || cookie.Value != token || !cookie.Secure || !cookie.HttpOnly:
		t.Fatalf("cookie %+v, want the token, Secure and HttpOnly", cookie)
	}

	resp, body := ts.getWith(t, client, "/", cookie)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<div id="streams">`) || resp.TLS == nil {
		t.Fatalf("page over HTTPS with the cookie: %s, TLS %v", resp.Status, resp.TLS != nil)
	}
	if hsts := resp.Header.Get("Strict-Transport-Security"); hsts != "" {
		t.Errorf("HSTS %q on a loopback host", hsts)
	}
	req, _ := http.NewRequest("GET", "https://"+ts.http+"/", nil)
	req.Host = "viewer.example"
	req.AddCookie(cookie)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("page for a named host: %s, HSTS %q; want 200 with HSTS", resp.Status, resp.Header.Get("Strict-Transport-Security"))
	}
	resp, body = ts.getWith(t, client, "/api/stats", cookie)
	var st Stats
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || st.TLSFingerprint != ts.Fingerprint().String() {
		t.Fatalf("/api/stats over HTTPS: %s, %.80q", resp.Status, body)
	}
	resp, _ = ts.getWith(t, client, "/api/stats?token="+token, nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/api/stats?token=: %s, want 200 (scripts are not redirected)", resp.Status)
	}

	// Plain HTTP to the HTTPS port gets 400 and no page.
	if resp, err := http.Get("http://" + ts.http + "/?token=" + token); err != nil {
		t.Errorf("plain HTTP: %v, want a 400", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %s, want 400", resp.Status)
		}
	}

	p, _, err := dialPageTLS(t, ts, "https://"+ts.http, cookie)
	if err != nil {
		t.Fatalf("WebSocket over TLS with the cookie: %v", err)
	}
	p.hello(t)
	// The page's writer reaches the TCP socket under TLS and the caps.
	if cl := ts.Stats().Clients; len(cl) != 1 || cl[0].Mode != ts.cfg.PageMode.String() {
		t.Errorf("pages %+v, want one whose connection is managed (%v)", cl, ts.cfg.PageMode)
	}
}

// dialPageTLS opens the page's WebSocket over TLS with the Origin origin
// and the cookie.
func dialPageTLS(t *testing.T, ts *testServer, origin string, cookie *http.Cookie) (*page, *http.Response, error) {
	t.Helper()
	hdr := http.Header{"Origin": {origin}}
	if cookie != nil {
		hdr.Set("Cookie", cookie.String())
	}
	conf, err := certs.ClientTLS(ts.Fingerprint(), nil, "", "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{HandshakeTimeout: waitLimit, TLSClientConfig: conf}
	conn, resp, err := d.Dial((&url.URL{Scheme: "wss", Host: ts.http, Path: "/ws"}).String(), hdr)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { conn.Close() })
	return &page{conn: conn}, resp, nil
}

// A WebSocket's Origin must name the page's scheme as well as its host:
// an http origin is refused over HTTPS, an https one over HTTP.
func TestOriginScheme(t *testing.T) {
	tls := startServer(t, func(c *Config) { c.HTTPTLS = true })
	if _, resp, err := dialPageTLS(t, tls, "http://"+tls.http, nil); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("http origin over HTTPS: err %v, response %v; want 403", err, resp)
	}
	p, _, err := dialPageTLS(t, tls, "https://"+tls.http, nil)
	if err != nil {
		t.Fatalf("https origin over HTTPS refused: %v", err)
	}
	p.hello(t)

	plain := startServer(t, nil)
	_, resp, err := dialPage(t, plain, http.Header{"Origin": {"https://" + plain.http}}, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("https origin over HTTP: err %v, response %v; want 403", err, resp)
	}
}

// HTTPS is on with HTTPTLS, and always on an address that is not
// loopback.
func TestHTTPSChoice(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"loopback", Config{HTTP: "127.0.0.1:0"}, false},
		{"default address", Config{}, false},
		{"loopback with HTTPTLS", Config{HTTP: "127.0.0.1:0", HTTPTLS: true}, true},
		{"all interfaces", Config{HTTP: "0.0.0.0:0", Token: "t"}, true},
		{"a host name", Config{HTTP: "viewer.example:8080", Token: "t"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.HTTPS(); got != tc.want {
				t.Errorf("HTTPS() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The self-signed certificate names the HTTP host, so that a browser
// that accepts it once sees the name it asked for.
func TestCertificateNamesHTTPHost(t *testing.T) {
	s, err := New(Config{HTTP: "viewer.example:8080", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(s.cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("viewer.example"); err != nil {
		t.Errorf("certificate: %v", err)
	}
}
