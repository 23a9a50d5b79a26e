package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", nil, 2, "usage: go run ./experiments COMMAND"},
		{"help", []string{"-h"}, 0, "commands:"},
		{"unknown", []string{"fly"}, 2, `unknown command "fly"`},
		{"run help", []string{"run", "-h"}, 0, "-modes list"},
		{"report without a directory", []string{"report"}, 2, "need --out DIR"},
		{"resummarize without a directory", []string{"resummarize"}, 2, "need --out DIR"},
		{"hidden workload", []string{"bulk-sink", "-listen", "127.0.0.1:0"}, 2, "bulk-sink: need -listen and -records"},
		{"run with a bad mode", []string{"run", "--modes", "sometimes"}, 2, `run: invalid value "sometimes" for flag -modes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := dispatch(context.Background(), tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("code %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}
