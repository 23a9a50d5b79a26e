package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/scenario"
	"replenish/rate"
)

// fakePath records the demo's changes.
type fakePath struct {
	rate  map[emu.Direction]rate.Bitrate
	delay map[emu.Direction]time.Duration
}

func (f *fakePath) Set(d emu.Direction, r rate.Bitrate, delay time.Duration) {
	f.rate[d], f.delay[d] = r, delay
}

func (f *fakePath) Stats() emu.Stats { return emu.Stats{} }

func TestDemoAPI(t *testing.T) {
	start := scenario.Path{Rate: 2 * rate.Mbps, RTT: 80 * time.Millisecond, Queue: 200 * time.Millisecond}
	tests := []struct {
		name        string
		method      string
		host        string
		ctype       string
		origin      string
		body        string
		wantCode    int
		wantRate    int64
		wantRTT     float64
		wantFwdRate rate.Bitrate
	}{
		{name: "get", method: "GET", host: "127.0.0.1:8080", wantCode: 200, wantRate: 2e6, wantRTT: 80},
		{name: "set rate", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", origin: "http://127.0.0.1:8080",
			body: `{"rate_bps":500000}`, wantCode: 200, wantRate: 5e5, wantRTT: 80, wantFwdRate: 500 * rate.Kbps},
		{name: "set rtt", method: "POST", host: "localhost:8080", ctype: "application/json; charset=utf-8",
			body: `{"rtt_ms":200}`, wantCode: 200, wantRate: 2e6, wantRTT: 200, wantFwdRate: 2 * rate.Mbps},
		{name: "reset", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", body: `{"reset":true}`,
			wantCode: 200, wantRate: 2e6, wantRTT: 80, wantFwdRate: 2 * rate.Mbps},
		{name: "form post refused", method: "POST", host: "127.0.0.1:8080", ctype: "application/x-www-form-urlencoded",
			body: `{"rate_bps":500000}`, wantCode: 403},
		{name: "other origin refused", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", origin: "http://evil.example",
			body: `{"rate_bps":500000}`, wantCode: 403},
		{name: "rebound host refused", method: "GET", host: "evil.example:8080", wantCode: 403},
		{name: "rate too low", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", body: `{"rate_bps":5}`, wantCode: 400},
		{name: "negative rtt", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", body: `{"rtt_ms":-1}`, wantCode: 400},
		{name: "not json", method: "POST", host: "127.0.0.1:8080", ctype: "application/json", body: `rate`, wantCode: 400},
		{name: "other method", method: "DELETE", host: "127.0.0.1:8080", wantCode: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &fakePath{rate: map[emu.Direction]rate.Bitrate{}, delay: map[emu.Direction]time.Duration{}}
			d := &demo{p: []path{fp}, start: start, cur: start, log: slog.New(slog.DiscardHandler)}
			if tt.name == "reset" {
				d.cur.Rate, d.cur.RTT = rate.Mbps, time.Second
			}
			req := httptest.NewRequest(tt.method, "http://"+tt.host+"/api/path", strings.NewReader(tt.body))
			req.Host = tt.host
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			d.serveAPI(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("code %d (%s), want %d", rec.Code, rec.Body, tt.wantCode)
			}
			if tt.wantCode != http.StatusOK {
				if len(fp.rate) != 0 {
					t.Errorf("a refused request changed the path: %v", fp.rate)
				}
				return
			}
			var j pathJSON
			if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
				t.Fatal(err)
			}
			if j.RateBps != tt.wantRate || j.RTTMs != tt.wantRTT || j.QueueBytes != 50000 || j.Start.RateBps != 2e6 {
				t.Errorf("answer %+v", j)
			}
			if tt.method == "POST" {
				if fp.rate[emu.Forward] != tt.wantFwdRate || fp.rate[emu.Reverse] != 0 {
					t.Errorf("rates set %v, want forward %v and reverse unlimited", fp.rate, tt.wantFwdRate)
				}
				if got := fp.delay[emu.Forward] + fp.delay[emu.Reverse]; got != time.Duration(tt.wantRTT*float64(time.Millisecond)) {
					t.Errorf("delays add up to %v, want %v ms", got, tt.wantRTT)
				}
			}
		})
	}
}

func TestDemoCommands(t *testing.T) {
	start := scenario.Path{Rate: 2 * rate.Mbps, RTT: 80 * time.Millisecond, Queue: 200 * time.Millisecond}
	fp := &fakePath{rate: map[emu.Direction]rate.Bitrate{}, delay: map[emu.Direction]time.Duration{}}
	d := &demo{p: []path{fp}, start: start, cur: start, log: slog.New(slog.DiscardHandler)}
	var out bytes.Buffer
	ctx := context.Background()
	tests := []struct {
		line     string
		quit     bool
		wantRate rate.Bitrate
		wantRTT  time.Duration
		wantOut  string
	}{
		{line: "rate 500kbit", wantRate: 500 * rate.Kbps, wantRTT: 80 * time.Millisecond, wantOut: "path: 500 kb/s, RTT 80ms"},
		{line: "rtt 200ms", wantRate: 500 * rate.Kbps, wantRTT: 200 * time.Millisecond, wantOut: "RTT 200ms"},
		{line: "rate 1bit", wantRate: 500 * rate.Kbps, wantRTT: 200 * time.Millisecond, wantOut: "out of range"},
		{line: "rtt soon", wantRate: 500 * rate.Kbps, wantRTT: 200 * time.Millisecond, wantOut: "want a duration"},
		{line: "reset", wantRate: 2 * rate.Mbps, wantRTT: 80 * time.Millisecond, wantOut: "path: 2.00 Mb/s, RTT 80ms"},
		{line: "bogus", wantRate: 2 * rate.Mbps, wantRTT: 80 * time.Millisecond, wantOut: "commands:"},
		{line: "quit", quit: true, wantRate: 2 * rate.Mbps, wantRTT: 80 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			out.Reset()
			if quit := d.command(ctx, tt.line, &out); quit != tt.quit {
				t.Errorf("quit = %v", quit)
			}
			if c := d.get(); c.Rate != tt.wantRate || c.RTT != tt.wantRTT {
				t.Errorf("path %v %v, want %v %v", c.Rate, c.RTT, tt.wantRate, tt.wantRTT)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output %q lacks %q", out.String(), tt.wantOut)
			}
		})
	}
}

// TestDemoPathPerSender: with a path per sender, a change reaches every
// path, and the API says the paths are not shared.
func TestDemoPathPerSender(t *testing.T) {
	start := scenario.Path{Rate: 2 * rate.Mbps, RTT: 80 * time.Millisecond, Queue: 200 * time.Millisecond}
	var fps []*fakePath
	d := &demo{start: start, cur: start, log: slog.New(slog.DiscardHandler)}
	for range 3 {
		fp := &fakePath{rate: map[emu.Direction]rate.Bitrate{}, delay: map[emu.Direction]time.Duration{}}
		fps = append(fps, fp)
		d.p = append(d.p, fp)
	}
	d.set(500*rate.Kbps, 0, false)
	for i, fp := range fps {
		if fp.rate[emu.Forward] != 500*rate.Kbps {
			t.Errorf("path %d: forward rate %v, want 500 kb/s", i, fp.rate[emu.Forward])
		}
	}
	if j := d.pathJSON(); j.Shared {
		t.Error("three paths reported as one shared bottleneck")
	}
	if d.shared = true; !d.pathJSON().Shared {
		t.Error("a shared path reported as separate ones")
	}
}
