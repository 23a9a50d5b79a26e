// Package headless starts headless Chromium through chromedp for the
// browser tests and the loopback measurement.
package headless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Chromium's singleton socket is TMPDIR plus singletonTail, and a Unix
// socket's path holds at most maxSocketPath bytes (Linux's sun_path less
// its terminating NUL).
const (
	singletonTail = "/org.chromium.Chromium.XXXXXX/SingletonSocket"
	maxSocketPath = 107
)

// ErrNoChromium is returned by Path when no Chromium is installed.
var ErrNoChromium = errors.New("headless: Chromium not found (install the Debian package chromium)")

// Path returns the Chromium executable: /usr/bin/chromium, or chromium or
// chromium-browser on PATH.
func Path() (string, error) {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Start starts headless Chromium with a fresh profile in userDataDir and
// returns a context for one tab; cancel stops the browser. The flags are
// those a locked-down machine needs: no sandbox (root), no GPU, and no
// background networking of any kind.
//
// Chromium keeps its process-singleton socket in a directory of its own
// under TMPDIR, which it removes only when it exits cleanly; a browser
// stopped by cancel is killed, and each run left one behind. The browser
// gets a TMPDIR of its own, removed by cancel (unless the socket's path
// would be too long there: then it keeps the process's).
func Start(parent context.Context, userDataDir string) (ctx context.Context, cancel context.CancelFunc, err error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		return nil, nil, fmt.Errorf("headless: %w", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(userDataDir),
		chromedp.NoSandbox,
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1400, 1000),
	)
	if len(tmp)+len(singletonTail) <= maxSocketPath {
		opts = append(opts, chromedp.Env("TMPDIR="+tmp))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	// cancelAlloc returns once the browser's process has exited.
	stop := func() { cancelTab(); cancelAlloc(); os.RemoveAll(tmp) }
	// Start the browser now so that a failure surfaces here.
	if err := chromedp.Do(tab); err != nil {
		stop()
		return nil, nil, fmt.Errorf("headless: starting %s: %w", path, err)
	}
	return tab, stop, nil
}
