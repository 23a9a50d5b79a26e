package main

import (
	"io"
	"testing"
	"time"

	"replenish/experiments/scenario"
	"replenish/transport"
)

func TestRunFlagsQuick(t *testing.T) {
	o, err := parseRunFlags([]string{"--quick", "--warmup", "1s", "--duration", "60s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	specs, _, err := o.runs()
	if err != nil {
		t.Fatal(err)
	}
	if s := specs[0]; s.Warmup != time.Second || s.Duration != scenario.QuickDuration {
		t.Errorf("--quick: warm-up %v, duration %v; want 1s (already shorter) and %v", s.Warmup, s.Duration, scenario.QuickDuration)
	}
	for _, args := range [][]string{{"--parallel", "0"}, {"extra"}} {
		if _, err := parseRunFlags(args, io.Discard); err == nil {
			t.Errorf("parseRunFlags(%q) succeeded", args)
		}
	}
}

// mustMode parses a mode the test knows to be valid.
func mustMode(s string) transport.Mode {
	m, err := transport.ParseMode(s)
	if err != nil {
		panic(err)
	}
	return m
}
