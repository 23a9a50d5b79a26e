package headless

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestStartLeavesNoTemp starts and stops the browser with TMPDIR pointing at
// an empty directory, and checks that the directory is empty again: Chromium
// keeps its singleton socket under TMPDIR and a killed browser leaves it.
func TestStartLeavesNoTemp(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := Path(); err != nil {
		t.Skip(err)
	}
	profile := t.TempDir()
	// Not t.TempDir: under a path as long as its, Chromium's socket
	// would not fit (see maxSocketPath).
	tmp, err := os.MkdirTemp("", "headless")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	ctx, stop, err := Start(context.Background(), profile)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx, chromedp.Navigate("about:blank"))
	stop()
	if err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in TMPDIR after stop: %s", e.Name())
	}
}
