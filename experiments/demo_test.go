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
	_, path, modes, err := parseDemoFlags([]string{"--rate", "1mbit", "--rtt", "50ms"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if path.Rate != rate.Mbps || path.RTT != 50*time.Millisecond || scenario.Modes(modes).String() != "replenish=15ms,default" {
		t.Errorf("path %+v, modes %q", path, modes)
	}
	for _, args := range [][]string{{"--http", "0.0.0.0:8080"}, {"--rate", "x"}, {"--modes", ""}, {"stray"}} {
		if _, _, _, err := parseDemoFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseDemoFlags(%q) succeeded", args)
		}
	}
	if got := demo.StreamName(mustMode("replenish=15ms")); got != "with SBM: replenish=15ms" {
		t.Errorf("stream name %q", got)
	}
}
