package emu

import (
	"os"
	"testing"
)

// TestMain prioritizes the test process, as a command hosting a path would:
// the tests generate and measure traffic in this process, and should
// measure the emulator rather than the load of a shared machine. Without
// the privilege it runs the tests anyway.
func TestMain(m *testing.M) {
	PrioritizeProcess()
	os.Exit(m.Run())
}
