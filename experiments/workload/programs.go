package workload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Programs are the programs the workloads run.
type Programs struct {
	Self   string // the experiments program, for the bulk and rr workloads
	Sender string // cmd/sender, for video
	Viewer string // cmd/viewer, for video
}

// FindPrograms returns this program's path and, if video is true, the
// sender's and the viewer's: from binDir when it is not empty, otherwise
// built with "go build" into tmp (which needs the module's source).
func FindPrograms(ctx context.Context, video bool, binDir, tmp string) (Programs, error) {
	self, err := os.Executable()
	if err != nil {
		return Programs{}, fmt.Errorf("workload: finding this program: %w", err)
	}
	b := Programs{Self: self}
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
			return b, fmt.Errorf("workload: building the sender and the viewer (run from inside the module, or give --bindir): %v\n%s", err, out)
		}
	}
	b.Sender, b.Viewer = filepath.Join(dir, "sender"), filepath.Join(dir, "viewer")
	for _, f := range []string{b.Sender, b.Viewer} {
		if _, err := os.Stat(f); err != nil {
			return b, fmt.Errorf("workload: %w", err)
		}
	}
	return b, nil
}
