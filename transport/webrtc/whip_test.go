package webrtc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWHIPErrors dials endpoints that answer badly: each Dial fails with a
// clear error, deletes a session the endpoint named, and leaves no
// goroutine behind.
func TestWHIPErrors(t *testing.T) {
	const answer = "v=0\r\n"
	tests := []struct {
		name       string
		handler    func(w http.ResponseWriter, r *http.Request)
		wantStatus int    // for a *StatusError
		wantIn     string // in the error's text
		wantDelete bool
	}{
		{"forbidden", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no publishing\x00here\nfor you", http.StatusForbidden)
		}, 403, `403 Forbidden: "no publishing here for you"`, false},
		{"server error with a long body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, strings.Repeat("x", 10000))
		}, 500, `500 Internal Server Error: "` + strings.Repeat("x", maxErrorBody) + `"`, false},
		{"200 instead of 201", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sdpType)
			w.Header().Set("Location", "/whip/s/1")
			io.WriteString(w, answer)
		}, 200, "200 OK", false},
		{"no Location", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sdpType)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, answer)
		}, 0, "without a Location header", false},
		{"wrong content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Location", "/whip/s/1")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "<html>")
		}, 0, `content type is "text/html; charset=utf-8", want application/sdp`, true},
		{"answer too large", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sdpType)
			w.Header().Set("Location", "/whip/s/1")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, strings.Repeat("a=x\r\n", MaxAnswerSize/4))
		}, 0, "larger than 65536 bytes", true},
		{"garbage answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", sdpType)
			w.Header().Set("Location", "/whip/s/1")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "not sdp")
		}, 0, "the answer", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deletes atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("POST /whip", tt.handler)
			mux.HandleFunc("DELETE /whip/s/1", func(http.ResponseWriter, *http.Request) { deletes.Add(1) })
			srv := httptest.NewServer(mux)
			defer srv.Close()
			base := runtime.NumGoroutine()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, srv.URL+"/whip", Config{HTTPClient: noKeepAlive()})
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !errors.Is(err, ErrWHIP) || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q: want ErrWHIP with %q", err, tt.wantIn)
			}
			var se *StatusError
			if got := errors.As(err, &se); got != (tt.wantStatus != 0) || (got && se.Code != tt.wantStatus) {
				t.Errorf("error %v: want a StatusError with code %d", err, tt.wantStatus)
			}
			if got := deletes.Load() == 1; got != tt.wantDelete {
				t.Errorf("%d DELETEs of the session, want it deleted: %v", deletes.Load(), tt.wantDelete)
			}
			settled(t, base)
		})
	}
}

func TestWHIPTokenIsBearer(t *testing.T) {
	e := newEndpoint(t, "right")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Dial(ctx, e.url(), Config{Token: "wrong", HTTPClient: noKeepAlive()})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v, want 401 Unauthorized", err)
	}
	c := dial(t, e, Config{Token: "right"})
	c.Close()
	posts, deletes := e.seen()
	if len(posts) != 2 || posts[0].auth != "Bearer wrong" || posts[1].auth != "Bearer right" {
		t.Errorf("POSTs %+v: want the tokens as Bearer", posts)
	}
	if len(deletes) != 1 || deletes[0].auth != "Bearer right" {
		t.Errorf("DELETEs %+v: want one with the token as Bearer", deletes)
	}
}

// TestCloseLeavesNothing publishes to an endpoint whose Location is an
// absolute URL, and closes: the session is deleted and no goroutine of
// the Conn's remains.
func TestCloseLeavesNothing(t *testing.T) {
	e := newEndpoint(t, "")
	e.absolute = true
	base := runtime.NumGoroutine()
	c := dial(t, e, Config{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, deletes := e.seen(); len(deletes) != 1 || deletes[0].path != "/whip/session/1" {
		t.Errorf("DELETEs %+v, want one of /whip/session/1", deletes)
	}
	settled(t, base)
}

func TestDialRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		url  string
		cfg  Config
	}{
		{"token with a space", "http://127.0.0.1:1/whip", Config{Token: "a b"}},
		{"token with a line break", "http://127.0.0.1:1/whip", Config{Token: "a\r\nX-Evil: 1"}},
		{"token of padding only", "http://127.0.0.1:1/whip", Config{Token: "=="}},
		{"bad stream name", "http://127.0.0.1:1/whip", Config{Name: "a\x01b"}},
		{"min above initial", "http://127.0.0.1:1/whip", Config{MinBitrate: 2e6, InitialBitrate: 1e6}},
		{"negative timeout", "http://127.0.0.1:1/whip", Config{FailTimeout: -1}},
		{"not http", "ftp://127.0.0.1/whip", Config{}},
		{"no host", "http:///whip", Config{}},
		{"not a URL", "http://[::1/whip", Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Dial(context.Background(), tt.url, tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("Dial: %v, want ErrConfig", err)
			}
		})
	}
}

func TestValidToken(t *testing.T) {
	for tok, want := range map[string]bool{
		"": true, "abc": true, "a-b.c_d~e+f/g": true, "YWJj==": true, "=": false, "a=b": false, "a b": false, "é": false,
	} {
		if got := validToken(tok); got != want {
			t.Errorf("validToken(%q) = %v, want %v", tok, got, want)
		}
	}
}

func TestEndpointURLAddsStream(t *testing.T) {
	u, err := endpointURL("http://h:1/whip?x=1&stream=old", "cam 1")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query(); got.Get(StreamParam) != "cam 1" || got.Get("x") != "1" {
		t.Errorf("URL %s: want stream=cam 1 and x=1 kept", u)
	}
	u, _ = endpointURL("http://h:1/whip", "")
	if u.RawQuery != "" {
		t.Errorf("URL %s: want no query without a name", u)
	}
}
