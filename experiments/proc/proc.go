// Package proc runs the experiments' programs as processes inside an
// emulated path's network namespaces ("ip netns exec", which executes the
// program in place, so that signals reach it directly). A process is killed
// if this program dies, its stderr goes to a log file and each line of its
// stdout to a callback; Stop asks it to end and kills it after a grace
// period.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// ChildEnv is set in the environment of every process started, so that a
// test binary standing in for the experiments program runs the command it
// is given instead of its tests.
const ChildEnv = "REPLENISH_EXPERIMENTS_CHILD"

// Proc is a process started by Start. Its methods are safe for concurrent
// use.
type Proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is read
	err  error         // how it exited; valid once done is closed
}

// Start runs argv inside the network namespace ns (in this process's own
// when ns is empty) with ChildEnv set, its stderr appended to logPath and
// each line of its stdout passed to onLine (which may be nil) from a
// goroutine of its own. name names it in errors. The process is killed if
// this one dies.
func Start(ns, name string, argv []string, logPath string, onLine func(string)) (*Proc, error) {
	return StartEnv(ns, name, argv, nil, logPath, onLine)
}

// StartEnv is Start with env ("KEY=value") added to the environment the
// child inherits, overriding inherited values of the same keys: for what
// should not appear on a command line, such as a token.
func StartEnv(ns, name string, argv, env []string, logPath string, onLine func(string)) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), ChildEnv+"=1"), env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startFromSpawner(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// The parent-death signal belongs to the thread that forked the child, not
// to the process: it fires when that thread exits. Go discards threads, for
// instance the locked ones emu.Path.Do runs namespace code on, so children
// are forked from one thread kept for the life of the program, by a
// goroutine that never unlocks it.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startFromSpawner starts cmd from the spawner's thread.
func startFromSpawner(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the program
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, done}
	return <-done
}

// Name returns the process's name.
func (p *Proc) Name() string { return p.name }

// Done returns a channel closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Err describes how the process exited, prefixed with its name: nil for a
// clean exit. It is valid once Done is closed.
func (p *Proc) Err() error {
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", p.name, p.err)
}

// Stop asks the process to end (SIGTERM), kills it after grace, and waits
// for it. It returns how the process exited: nil for a clean exit after
// the request.
func (p *Proc) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.Err()
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v and was killed", p.name, grace)
	}
	return p.Err()
}

// WaitReady waits until ready is closed (by the process's onLine, say),
// the process exits, timeout passes or ctx is done.
func (p *Proc) WaitReady(ctx context.Context, ready <-chan struct{}, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready: %v (see its log)", p.name, p.Err())
	case <-t.C:
		return fmt.Errorf("%s not ready after %v", p.name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// httpPoll is how often WaitHTTP asks.
const httpPoll = 100 * time.Millisecond

// WaitHTTP asks url with c every httpPoll until it answers 200, the
// process exits, timeout passes or ctx is done.
func (p *Proc) WaitHTTP(ctx context.Context, c *http.Client, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v (see its log)", p.name, p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(httpPoll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %v", p.name, timeout, err)
		}
	}
}

// Started returns the processes of ps that were started (not nil).
func Started(ps ...*Proc) []*Proc {
	var out []*Proc
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
