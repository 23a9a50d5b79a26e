package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// oldResults is a results directory written by an earlier version of the
// runner and the report: a bulk run with a schedule, a request/response
// run and a video run, with their raw records.
const oldResults = "../testdata/results-v1"

// TestOldResultsDirectory checks that published results still load: the
// report rebuilt from an earlier version's results directory is the one
// that version wrote.
func TestOldResultsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(oldResults)); err != nil {
		t.Fatal(err)
	}
	runs, err := Load(dir)
	if err != nil || len(runs) != 3 {
		t.Fatalf("Load: %d runs, %v; want 3", len(runs), err)
	}
	generated := time.Date(2026, 12, 1, 2, 32, 39, 0, time.UTC)
	if err := build(dir, nil, generated); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "summary.md"} {
		want, err := os.ReadFile(filepath.Join(oldResults, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the one written with the results:\n%s", f, got)
		}
	}
}
