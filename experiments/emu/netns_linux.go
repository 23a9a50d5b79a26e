package emu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/run/netns"

// nsPrefix starts the name of every namespace this package creates. Names
// are nsPrefix, the owner's pid, a random suffix and the side:
// "rpl-4242-a1b2c3-s" and "rpl-4242-a1b2c3-r".
const nsPrefix = "rpl-"

var nsName = regexp.MustCompile(`^rpl-([0-9]+)-[0-9a-f]{6}-[sr]$`)

// newStem returns a fresh name stem for this process: prefix, pid and a
// random suffix, and the random bytes used for it.
func newStem() (string, [3]byte, error) {
	var r [3]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", r, fmt.Errorf("emu: random name: %w", err)
	}
	return fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), hex.EncodeToString(r[:])), r, nil
}

// checkCaps returns ErrNeedRoot unless the calling thread has CAP_NET_ADMIN
// and CAP_SYS_ADMIN in its effective set.
func checkCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: capget: %v", ErrNeedRoot, err)
	}
	need := uint32(1)<<unix.CAP_NET_ADMIN | uint32(1)<<unix.CAP_SYS_ADMIN
	if data[0].Effective&need != need {
		return ErrNeedRoot
	}
	return nil
}

// ipCmd runs the iproute2 ip command with args and stdin, and returns an
// error carrying its output if it fails.
func ipCmd(ctx context.Context, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, "ip", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("emu: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// inNetns runs fn on a locked OS thread that has joined the network
// namespace nsfd. The thread is discarded afterwards rather than returned
// to the Go scheduler.
func inNetns(nsfd int, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// No UnlockOSThread: the thread ends with this goroutine, so it
		// never runs other goroutines inside the namespace.
		runtime.LockOSThread()
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("emu: setns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// sysctlPath returns the /proc/sys file of a sysctl key such as
// "net.ipv4.tcp_wmem". The network sysctls seen there are those of the
// calling thread's network namespace.
func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// writeSysctl sets a sysctl in the calling thread's network namespace and
// reads it back.
func writeSysctl(key, value string) error {
	p := sysctlPath(key)
	if err := os.WriteFile(p, []byte(value+"\n"), 0); err != nil {
		return fmt.Errorf("emu: sysctl %s=%s: %w", key, value, err)
	}
	got, err := readSysctl(key)
	if err != nil {
		return err
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(value), " ") {
		return fmt.Errorf("emu: sysctl %s: set %q, reads back %q", key, value, got)
	}
	return nil
}

// readSysctl reads a sysctl in the calling thread's network namespace.
func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", fmt.Errorf("emu: sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// openTUN creates the TUN device name (IFF_TUN, IFF_NO_PI) in the calling
// thread's network namespace and returns its non-blocking file descriptor.
// The device lives as long as the descriptor stays open.
func openTUN(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("emu: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("emu: tun %s: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("emu: TUNSETIFF %s: %w", name, err)
	}
	return fd, nil
}

// Sweep removes the network namespaces left behind by paths whose owning
// process no longer exists (a crash, or SIGKILL). Start calls it; a CLI
// may call it on its own. It returns the names it removed.
func Sweep(ctx context.Context, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("emu: sweep: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		m := nsName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pidAlive(pid) {
			continue
		}
		if err := ipCmd(ctx, "", "netns", "del", e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("emu: removed stale namespace", "name", e.Name(), "pid", pid)
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// pidAlive reports whether a process with this pid exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// allowCC makes sure the congestion control cc may be set as the default of
// a namespace other than the initial one: Linux refuses that (EPERM) for an
// algorithm missing from net.ipv4.tcp_allowed_congestion_control, a global
// setting that by default lists only reno and the host's default. allowCC
// appends cc to that list when it is missing, which is the one change this
// package makes outside its own namespaces, and reports whether it did.
func allowCC(cc string) (bool, error) {
	const key = "net.ipv4.tcp_allowed_congestion_control"
	allowed, err := readSysctl(key)
	if err != nil {
		return false, err
	}
	if slices.Contains(strings.Fields(allowed), cc) {
		return false, nil
	}
	if err := writeSysctl(key, strings.TrimSpace(allowed+" "+cc)); err != nil {
		avail, _ := readSysctl("net.ipv4.tcp_available_congestion_control")
		return false, fmt.Errorf("%w: %q (available: %s): %v", ErrCC, cc, avail, err)
	}
	return true, nil
}
