package viewer

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestPageServed(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct {
		path, contains, contentType string
	}{
		{"/", `<div id="streams">`, "text/html"},
		{"/", "app.js", "text/html"},
		{"/app.js", "VideoDecoder", "text/javascript"},
		{"/stamp.js", "crc16", "text/javascript"},
		{"/style.css", ".panel", "text/css"},
	} {
		t.Run(tc.path+" "+tc.contains, func(t *testing.T) {
			resp, err := http.Get(ts.url(tc.path))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.contains) {
				t.Fatalf("status %d, body without %q", resp.StatusCode, tc.contains)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("content type %q, want %s", ct, tc.contentType)
			}
			if resp.Header.Get("Content-Security-Policy") == "" {
				t.Error("no Content-Security-Policy")
			}
		})
	}
}

func TestToken(t *testing.T) {
	const token = "correct-horse"
	ts := startServer(t, func(c *Config) { c.Token = token })
	get := func(path string, cookie *http.Cookie, bearer string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.url(path), nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/", "/app.js", "/api/stats", "/api/time", "/ws"} {
		for _, tc := range []struct {
			name   string
			query  string
			cookie *http.Cookie
			bearer string
			want   int
		}{
			{"none", "", nil, "", http.StatusUnauthorized},
			{"wrong query", "?token=wrong", nil, "", http.StatusUnauthorized},
			{"prefix", "?token=correct", nil, "", http.StatusUnauthorized},
			{"wrong cookie", "", &http.Cookie{Name: TokenCookie, Value: "nope"}, "", http.StatusUnauthorized},
			{"wrong bearer", "", &http.Cookie{Name: TokenCookie, Value: token}, "nope", http.StatusUnauthorized},
			{"query", "?token=" + token, nil, "", http.StatusOK},
			{"cookie", "", &http.Cookie{Name: TokenCookie, Value: token}, "", http.StatusOK},
			{"bearer", "", nil, token, http.StatusOK},
		} {
			t.Run(path+" "+tc.name, func(t *testing.T) {
				want := tc.want
				switch {
				case path == "/ws" && want == http.StatusOK:
					want = http.StatusBadRequest // authorized, but not a WebSocket handshake
				case isPage(path) && tc.name == "query":
					want = http.StatusSeeOther // to the same page without the token
				}
				resp := get(path+tc.query, tc.cookie, tc.bearer)
				if resp.StatusCode != want {
					t.Fatalf("status %d, want %d", resp.StatusCode, want)
				}
				if tc.name == "query" {
					var set *http.Cookie
					for _, c := range resp.Cookies() {
						if c.Name == TokenCookie {
							set = c
						}
					}
					if set == nil || set.Value != token || !set.HttpOnly || set.SameSite != http.SameSiteStrictMode || set.Secure {
						t.Fatalf("cookie %+v, want an HttpOnly SameSite=Strict token cookie, not Secure over HTTP", set)
					}
					if loc := resp.Header.Get("Location"); want == http.StatusSeeOther && loc != path {
						t.Fatalf("redirected to %q, want %q", loc, path)
					}
				}
			})
		}
	}

	t.Run("WebSocket with token", func(t *testing.T) {
		hdr := http.Header{"Cookie": {TokenCookie + "=" + token}}
		p, _, err := dialPage(t, ts, hdr, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.hello(t)
	})
	t.Run("WebSocket without token", func(t *testing.T) {
		_, resp, err := dialPage(t, ts, nil, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("err %v, response %v; want 401", err, resp)
		}
	})
}

// The redirect that drops ?token= goes to the page's cleaned path on this
// server, whatever the path requested: never "//host", which a browser
// takes for another server.
func TestTokenRedirectStaysOnServer(t *testing.T) {
	const token = "correct-horse"
	ts := startServer(t, func(c *Config) { c.Token = token })
	for _, tc := range []struct{ path, want string }{
		{"//evil.example/", "/evil.example/"},
		{"///evil.example", "/evil.example"},
		{"/%2F%2Fevil.example/", "/evil.example/"},
		{"/a/../..//evil.example/x", "/evil.example/x"},
		{"/\\evil.example/", "/%5Cevil.example/"}, // a browser takes a backslash for a slash
		{"/", "/"},
		{"/app.js", "/app.js"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req, err := http.NewRequest("GET", ts.url(tc.path)+"?token="+token, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != tc.want {
				t.Fatalf("%s to %q, want 303 to %q", resp.Status, loc, tc.want)
			}
		})
	}
}

func TestHostCheckWithoutToken(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct {
		host string
		want int
	}{
		{"", http.StatusOK}, // the dialled 127.0.0.1:port
		{"localhost:8080", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
		{"evil.example", http.StatusForbidden},
		{"evil.example:8080", http.StatusForbidden},
		{"192.0.2.7:8080", http.StatusForbidden},
	} {
		t.Run(tc.host, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.url("/api/stats"), nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestOriginCheck(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AllowedOrigins = []string{"http://dashboard.example:9000"} })
	for _, tc := range []struct {
		name   string
		origin string
		ok     bool
	}{
		{"no origin (not a browser)", "", true},
		{"same host", "http://" + ts.http, true},
		{"allowed extra origin", "http://dashboard.example:9000", true},
		{"other site", "http://evil.example", false},
		{"same host other port", "http://127.0.0.1:1", false},
		{"garbage", "::::", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			p, resp, err := dialPage(t, ts, hdr, nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				p.hello(t)
				return
			}
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("err %v, response %v; want 403", err, resp)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:8080", true}, {"127.9.9.9:1", true}, {"[::1]:8080", true}, {"::1", true}, {"[::1]", true},
		{"localhost", true}, {"LocalHost:8080", true},
		{"0.0.0.0:8080", false}, {"10.0.0.1", false}, {"evil.example:8080", false}, {"localhost.evil.example", false}, {"", false}, {":8080", false},
	} {
		if got := IsLoopback(tc.in); got != tc.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
