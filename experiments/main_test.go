package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/scenario"
	"replenish/framer"
	"replenish/rate"
)

// TestMain runs a workload command instead of the tests when the runner
// re-executes this test binary inside a namespace, as it re-executes the
// experiments program.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestRRAnswerIsOneFrame(t *testing.T) {
	p, err := framer.NewReader(bytes.NewReader(rrAnswer)).ReadPacket()
	if err != nil || string(p) != "OK" {
		t.Fatalf("rrAnswer reads as %q, %v; want one framed OK", p, err)
	}
}

func TestRecentDelays(t *testing.T) {
	var r recentDelays
	now := time.Unix(100, 0)
	if st := r.status(now); st.P50Ms != -1 || st.Writes != 0 {
		t.Errorf("empty: %+v", st)
	}
	r.add(now.Add(-5*time.Second), 900*time.Millisecond) // too old
	r.add(now.Add(-time.Second), 10*time.Millisecond)
	r.add(now.Add(-time.Second), 30*time.Millisecond)
	r.add(now, 20*time.Millisecond)
	r.add(now, -1) // departure unknown: counted, not summarized
	if st := r.status(now); st.P50Ms != 20 || st.Writes != 5 {
		t.Errorf("status %+v, want p50 20 ms over the last 2 s and 5 writes", st)
	}
}

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	p.update("[1/2] a", "one")
	p.update("[1/2] a", "two") // within plainEvery: not printed
	p.Write([]byte("a log line\n"))
	p.finish("[1/2] a", "done")
	got := buf.String()
	want := "[1/2] a  one\na log line\n[1/2] a  done\n"
	if got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

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
			d := &demo{p: fp, start: start, cur: start, log: discardLog()}
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
	d := &demo{p: fp, start: start, cur: start, log: discardLog()}
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

func TestDemoFlags(t *testing.T) {
	_, path, modes, err := parseDemoFlags([]string{"--rate", "1mbit", "--rtt", "50ms"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if path.Rate != rate.Mbps || path.RTT != 50*time.Millisecond || joinModes(modes) != "replenish=15ms, default" {
		t.Errorf("path %+v, modes %q", path, modes)
	}
	for _, args := range [][]string{{"--http", "0.0.0.0:8080"}, {"--rate", "x"}, {"--modes", ""}, {"stray"}} {
		if _, _, _, err := parseDemoFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseDemoFlags(%q) succeeded", args)
		}
	}
	if got := demoStreamName(mustMode("replenish=15ms")); got != "with SBM: replenish=15ms" {
		t.Errorf("stream name %q", got)
	}
}
