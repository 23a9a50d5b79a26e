package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"replenish/records"
)

// Errors returned by Load and Build.
var (
	// ErrNoRuns means the results directory holds no readable run.
	ErrNoRuns = errors.New("report: no runs")
	// ErrBadRun wraps the reason one run could not be read.
	ErrBadRun = errors.New("report: bad run")
)

// Names inside a results directory.
const (
	runsDir     = records.RunsDir
	runFile     = records.RunFile
	recordsFile = records.RunRecords
)

// maxRunFile caps the size of a run.json that Load reads.
const maxRunFile = 1 << 20

// Load reads dir/runs/*/run.json and returns the runs in report order (see
// SortRuns). A run whose ID is empty takes the name of its directory.
//
// A run that cannot be read (missing or malformed run.json, duplicate ID) is
// left out, and the returned error joins one ErrBadRun for each such run;
// the runs that could be read are returned all the same. Load returns
// ErrNoRuns when the directory holds no runs at all, and the file system's
// error when dir/runs cannot be listed.
func Load(dir string) ([]Run, error) {
	loaded, err := loadRuns(dir)
	if len(loaded) == 0 {
		return nil, err
	}
	runs := make([]Run, len(loaded))
	for i, l := range loaded {
		runs[i] = l.Run
	}
	return runs, err
}

// loadedRun is a run and the name of its directory under runs/.
type loadedRun struct {
	Run
	Dir string
}

// loadRuns does Load's work, keeping each run's directory.
func loadRuns(dir string) ([]loadedRun, error) {
	entries, err := os.ReadDir(filepath.Join(dir, runsDir))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var (
		runs []loadedRun
		errs []error
		seen = map[string]string{} // run ID -> directory name
	)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := readRun(filepath.Join(dir, runsDir, e.Name(), runFile))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %v", ErrBadRun, e.Name(), err))
			continue
		}
		if r.ID == "" {
			r.ID = e.Name()
		}
		if other, dup := seen[r.ID]; dup {
			errs = append(errs, fmt.Errorf("%w: %s: id %q already used by %s", ErrBadRun, e.Name(), r.ID, other))
			continue
		}
		seen[r.ID] = e.Name()
		runs = append(runs, loadedRun{r, e.Name()})
	}
	if len(runs) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoRuns, filepath.Join(dir, runsDir))
	}
	slices.SortStableFunc(runs, func(a, b loadedRun) int { return compareRuns(a.Run, b.Run) })
	return runs, errors.Join(errs...)
}

func readRun(path string) (Run, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Run{}, err
	}
	if fi.Size() > maxRunFile {
		return Run{}, fmt.Errorf("%s: larger than %d bytes", runFile, maxRunFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return Run{}, fmt.Errorf("%s: %w", runFile, err)
	}
	return r, nil
}

// SortRuns sorts runs into report order: by scenario, then by transport
// (tcp, quic, webrtc, then any other), then by mode (default, then
// lowat=... by increasing size, then replenish=... by increasing time, then
// any other mode; a variant such as "+nagle" follows its base mode), then
// by ID.
func SortRuns(runs []Run) {
	slices.SortStableFunc(runs, compareRuns)
}

func compareRuns(a, b Run) int {
	return cmp.Or(
		strings.Compare(a.Scenario, b.Scenario),
		compareTransports(a.Transport, b.Transport),
		compareModes(a.Mode, b.Mode),
		strings.Compare(a.ID, b.ID),
	)
}

// transportOrder is the report order of the transports; "" is TCP.
var transportOrder = []string{"tcp", "quic", "webrtc"}

func transportRank(t string) int {
	if t == "" {
		t = "tcp"
	}
	if i := slices.Index(transportOrder, t); i >= 0 {
		return i
	}
	return len(transportOrder)
}

func compareTransports(a, b string) int {
	return cmp.Or(cmp.Compare(transportRank(a), transportRank(b)), strings.Compare(a, b))
}

// Mode kinds in report order.
const (
	kindDefault = iota
	kindLowat
	kindReplenish
	kindOther
)

// modeKey splits a mode such as "replenish=15ms+nagle" into its kind, its
// parameter as a number (bytes or seconds; NaN when absent or unreadable)
// and its variant suffix ("+nagle").
func modeKey(mode string) (kind int, param float64, variant string) {
	base, variant := mode, ""
	if i := strings.IndexByte(mode, '+'); i >= 0 {
		base, variant = mode[:i], mode[i:]
	}
	switch {
	case base == "default":
		return kindDefault, 0, variant
	case strings.HasPrefix(base, "lowat="):
		return kindLowat, parseBytes(strings.TrimPrefix(base, "lowat=")), variant
	case strings.HasPrefix(base, "replenish="):
		d, err := time.ParseDuration(strings.TrimPrefix(base, "replenish="))
		if err != nil {
			return kindReplenish, nan(), variant
		}
		return kindReplenish, d.Seconds(), variant
	}
	return kindOther, nan(), variant
}

// modeBase returns mode without its variant suffix.
func modeBase(mode string) string {
	base, _, _ := strings.Cut(mode, "+")
	return base
}

func compareModes(a, b string) int {
	ka, pa, va := modeKey(a)
	kb, pb, vb := modeKey(b)
	// cmp.Compare orders NaN (an unreadable parameter) first.
	return cmp.Or(cmp.Compare(ka, kb), cmp.Compare(pa, pb), strings.Compare(va, vb), strings.Compare(a, b))
}

// parseBytes reads a byte count such as "165000", "165k", "15KB" or "64KiB".
func parseBytes(s string) float64 {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return nan()
	}
	switch unit {
	case "", "b":
	case "k", "kb":
		v *= 1e3
	case "kib":
		v *= 1 << 10
	case "m", "mb":
		v *= 1e6
	case "mib":
		v *= 1 << 20
	default:
		return nan()
	}
	return v
}
