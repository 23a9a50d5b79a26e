package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"help", []string{"-h"}, 0, []string{"-listen host:port", "127.0.0.1:7000", "-http host:port", "127.0.0.1:8080", "-token secret", "UDP"}},
		{"listen without port", []string{"-listen", "127.0.0.1"}, 2, []string{"-listen", "want host:port"}},
		{"http port not a number", []string{"-http", "127.0.0.1:web"}, 2, []string{"-http", "port must be a number"}},
		{"port out of range", []string{"-listen", "127.0.0.1:70000"}, 2, []string{"-listen"}},
		{"unknown flag", []string{"-colour"}, 2, []string{"flag provided but not defined"}},
		{"extra argument", []string{"now"}, 2, []string{"unexpected arguments"}},
		{"exposed without token", []string{"-http", "0.0.0.0:0"}, 2, []string{"needs -token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(context.Background(), tc.args, &out)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tc.code, out.String())
			}
			for _, s := range tc.contains {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-token", "t0ken"}, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := lines.Text()
		if strings.Contains(line, "open the page") {
			if !strings.Contains(line, "http://127.0.0.1:") || !strings.Contains(line, "?token=YOUR_TOKEN") || strings.Contains(line, "t0ken") {
				t.Errorf("page URL line %q", line)
			}
			cancel()
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

// TestSignal runs the command in a child process and stops it with
// SIGTERM and SIGINT.
func TestSignal(t *testing.T) {
	if os.Getenv("VIEWER_TEST_MAIN") == "1" {
		os.Args = append([]string{"viewer"}, strings.Fields(os.Getenv("VIEWER_TEST_ARGS"))...)
		main()
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignal$")
			cmd.Env = append(os.Environ(), "VIEWER_TEST_MAIN=1", "VIEWER_TEST_ARGS=-listen 127.0.0.1:0 -http 127.0.0.1:0")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				log.WriteString(lines.Text() + "\n")
				if strings.Contains(lines.Text(), "open the page") {
					cmd.Process.Signal(sig)
				}
			}
			errc := make(chan error, 1)
			go func() { errc <- cmd.Wait() }()
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("viewer exited with %v; log:\n%s", err, log.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("viewer did not stop; log:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "stopped") {
				t.Errorf("no clean stop in the log:\n%s", log.String())
			}
		})
	}
}
