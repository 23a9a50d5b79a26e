// Package hostclock names this host's clock, so that two processes can tell
// whether they read the same CLOCK_REALTIME: on one host (network
// namespaces included) the offset between them is exactly zero, and
// measuring it over a path would only add the path's asymmetry as error.
package hostclock

import (
	"hash/fnv"
	"os"
	"strings"
	"sync"
)

// ID returns an identifier of this host's clock for the current boot: a
// hash of the kernel's boot id, never 0. It returns 0 if the boot id cannot
// be read (then no two processes are taken to share a clock).
var ID = sync.OnceValue(func() uint64 {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return 0
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
})
