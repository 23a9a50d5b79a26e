package main

import (
	"bytes"
	"testing"
	"time"

	"replenish/experiments/demo"
	"replenish/experiments/scenario"
	"replenish/rate"
)

func TestDemoFlags(t *testing.T) {
	_, path, streams, err := parseDemoFlags([]string{"--rate", "1mbit", "--rtt", "50ms"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if path.Rate != rate.Mbps || path.RTT != 50*time.Millisecond || scenario.Streams(streams).String() != "replenish=15ms,default" {
		t.Errorf("path %+v, streams %q", path, streams)
	}
	_, _, streams, err = parseDemoFlags([]string{"--modes", "replenish=15ms,quic:replenish=15ms,quic:default,webrtc"}, &bytes.Buffer{})
	if err != nil || scenario.Streams(streams).String() != "replenish=15ms,quic:replenish=15ms,quic:default,webrtc" {
		t.Errorf("streams over every transport: %q, %v", streams, err)
	}
	for _, args := range [][]string{{"--http", "0.0.0.0:8080"}, {"--rate", "x"}, {"--modes", ""}, {"--modes", "quic:lowat=1000"}, {"stray"}} {
		if _, _, _, err := parseDemoFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseDemoFlags(%q) succeeded", args)
		}
	}
	for _, tc := range []struct {
		st   scenario.Stream
		want string
	}{
		{scenario.Stream{Transport: scenario.TCP, Mode: mustMode("replenish=15ms")}, "with SBM: replenish=15ms"},
		{scenario.Stream{Transport: scenario.QUIC, Mode: mustMode("default")}, "without SBM: quic default"},
		{scenario.Stream{Transport: scenario.QUIC, Mode: mustMode("expire=100ms")}, "quic expire=100ms"},
		{scenario.Stream{Transport: scenario.WebRTC, Mode: mustMode("default")}, "WebRTC: gcc"},
	} {
		if got := demo.StreamName(tc.st); got != tc.want {
			t.Errorf("stream name %q, want %q", got, tc.want)
		}
	}
}
