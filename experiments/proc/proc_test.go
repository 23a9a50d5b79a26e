package proc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// guard bounds every wait a test expects to end; reaching it means the
// event never came.
const guard = 20 * time.Second

func sh(t *testing.T, script string, onLine func(string)) *Proc {
	t.Helper()
	p, err := Start("", "sh", []string{"sh", "-c", script}, filepath.Join(t.TempDir(), "sh.log"), onLine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Millisecond) })
	return p
}

func TestReadyAndStop(t *testing.T) {
	ready := make(chan struct{})
	var once sync.Once
	var env string
	p := sh(t, `trap 'exit 0' TERM; echo "$`+ChildEnv+`"; echo ready; while :; do sleep 0.05; done`, func(l string) {
		switch l {
		case "ready":
			once.Do(func() { close(ready) })
		default:
			env = l
		}
	})
	if err := p.WaitReady(context.Background(), ready, guard); err != nil {
		t.Fatal(err)
	}
	if env != "1" {
		t.Errorf("%s = %q in the child, want 1", ChildEnv, env)
	}
	if err := p.Stop(guard); err != nil {
		t.Errorf("Stop of a process that exits on SIGTERM: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
}

func TestStopKills(t *testing.T) {
	ready := make(chan struct{})
	p := sh(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`, func(string) { close(ready) })
	if err := p.WaitReady(context.Background(), ready, guard); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(10 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("Stop of a process that ignores SIGTERM: %v", err)
	}
}

func TestExitBeforeReady(t *testing.T) {
	p := sh(t, `echo oops >&2; exit 3`, nil)
	err := p.WaitReady(context.Background(), make(chan struct{}), guard)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("WaitReady: %v", err)
	}
	if err := p.Err(); err == nil || !strings.HasPrefix(err.Error(), "sh: ") {
		t.Errorf("Err = %v, want one naming the process", err)
	}
	if got := Started(nil, p, nil); len(got) != 1 || got[0] != p {
		t.Errorf("Started = %v", got)
	}
}

func TestLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	p, err := Start("", "x", []string{"sh", "-c", "echo to-the-log >&2"}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	b, _ := os.ReadFile(log)
	if string(b) != "to-the-log\n" {
		t.Errorf("log %q", b)
	}
}

func TestWaitHTTP(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	p := sh(t, `while :; do sleep 0.05; done`, nil)
	if err := p.WaitHTTP(context.Background(), srv.Client(), srv.URL, guard); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("%d requests, want 3 (two refused)", calls)
	}
}
