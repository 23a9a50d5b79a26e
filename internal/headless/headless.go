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
func Start(parent context.Context, userDataDir string) (ctx context.Context, cancel context.CancelFunc, err error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
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
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	// Start the browser now so that a failure surfaces here.
	if err := chromedp.Do(tab); err != nil {
		cancelTab()
		cancelAlloc()
		return nil, nil, fmt.Errorf("headless: starting %s: %w", path, err)
	}
	return tab, func() { cancelTab(); cancelAlloc() }, nil
}
