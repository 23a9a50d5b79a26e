package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// proc is a process started inside a network namespace.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is read
	err  error         // how it exited; valid once done is closed
}

// startProc runs argv inside the network namespace ns ("ip netns exec",
// which executes argv in place, so that signals reach it directly), with
// childEnv set, its stderr appended to logPath and each line of its stdout
// passed to onLine (which may be nil) from a goroutine of its own. The
// process is killed if this one dies.
func startProc(ns, name string, argv []string, logPath string, onLine func(string)) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startFromSpawner(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
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

// stop asks the process to end (SIGTERM), kills it after grace, and waits
// for it. It returns how the process exited: nil for a clean exit after
// the request.
func (p *proc) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
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
	return p.exitErr()
}

// exitErr describes how the process exited; valid once done is closed.
func (p *proc) exitErr() error {
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", p.name, p.err)
}

// waitReady waits until the process prints readyLine (ready is closed by
// its onLine), exits, or timeout passes.
func (p *proc) waitReady(ctx context.Context, ready <-chan struct{}, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready: %v (see its log)", p.name, p.exitErr())
	case <-t.C:
		return fmt.Errorf("%s not ready after %v", p.name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// binaries are the programs a run executes.
type binaries struct {
	Self   string // this program, for the bulk and rr workloads
	Sender string // cmd/sender, for video
	Viewer string // cmd/viewer, for video
}

// findBinaries returns this program's path and, if video is true, the
// sender and viewer: from binDir when given, otherwise built with "go
// build" into tmp.
func findBinaries(ctx context.Context, video bool, binDir, tmp string) (binaries, error) {
	self, err := os.Executable()
	if err != nil {
		return binaries{}, fmt.Errorf("experiments: finding this program: %w", err)
	}
	b := binaries{Self: self}
	if !video {
		return b, nil
	}
	dir := binDir
	if dir == "" {
		dir = tmp
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.CommandContext(ctx, goCmd, "build", "-o", dir+string(filepath.Separator), "replenish/cmd/sender", "replenish/cmd/viewer")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("experiments: building the sender and the viewer (run from inside the module, or give --bindir): %v\n%s", err, out)
		}
	}
	b.Sender, b.Viewer = filepath.Join(dir, "sender"), filepath.Join(dir, "viewer")
	for _, f := range []string{b.Sender, b.Viewer} {
		if _, err := os.Stat(f); err != nil {
			return b, fmt.Errorf("experiments: %w", err)
		}
	}
	return b, nil
}

// errChildExited is wrapped when a workload process ends before the run.
var errChildExited = errors.New("experiments: a workload process exited early")
