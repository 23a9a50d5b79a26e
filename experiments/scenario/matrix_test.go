package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"replenish/rate"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{name: "blank", in: "  \t ", want: nil},
		{name: "comment", in: "# a comment", want: nil},
		{name: "words", in: "--rate 2mbit\t--rtt  40ms", want: []string{"--rate", "2mbit", "--rtt", "40ms"}},
		{name: "quotes", in: `--scenario "Nagle trap: 4 KiB" --rate 2mbit`, want: []string{"--scenario", "Nagle trap: 4 KiB", "--rate", "2mbit"}},
		{name: "hash inside quotes", in: `--scenario "#1"`, want: []string{"--scenario", "#1"}},
		{name: "trailing comment", in: "--rate 2mbit # fast", want: []string{"--rate", "2mbit"}},
		{name: "comment right after a word", in: "--rate 2mbit#fast", want: []string{"--rate", "2mbit"}},
		{name: "empty quotes", in: `--scenario ""`, want: []string{"--scenario", ""}},
		{name: "crlf", in: "--rate 2mbit\r", want: []string{"--rate", "2mbit"}},
		{name: "unterminated", in: `--scenario "open`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitWords(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("splitWords(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("splitWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseMatrix(t *testing.T) {
	base := Defaults()
	base.Duration = 7 * time.Second // as from the command line
	tests := []struct {
		name    string
		text    string
		check   func(t *testing.T, specs []Run)
		wantErr string
	}{
		{name: "lines and defaults", text: `
# comment
--rate 100kbit --workload bulk=512 --modes default,replenish=15ms

--rate 86mbit --duration 40s --modes lowat=165000 --scenario "fast path"
`, check: func(t *testing.T, specs []Run) {
			if len(specs) != 3 {
				t.Fatalf("%d specs, want 3", len(specs))
			}
			if s := specs[0]; s.Path.Rate != 100*rate.Kbps || s.Workload.Write != 512 || s.Mode.String() != "default" || s.Duration != 7*time.Second {
				t.Errorf("first %+v", s)
			}
			if s := specs[1]; s.Mode.String() != "replenish=15ms" || s.Path.RTT != Defaults().RTT {
				t.Errorf("second %+v", s)
			}
			if s := specs[2]; s.Path.Rate != 86*rate.Mbps || s.Duration != 40*time.Second || s.Scenario != "fast path" || s.Workload.Write != 65536 {
				t.Errorf("third %+v: a line's flags must not leak into the next", s)
			}
		}},
		{name: "unknown flag", text: "--rate 2mbit\n--colour blue\n", wantErr: "line 2"},
		{name: "stray word", text: "--rate 2mbit extra\n", wantErr: "line 1"},
		{name: "bad value", text: "\n\n--modes nonsense\n", wantErr: "line 3"},
		{name: "command flag not allowed", text: "--out /tmp/x\n", wantErr: "line 1"},
		{name: "unterminated quote", text: `--scenario "x`, wantErr: "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, _, err := ParseMatrix(strings.NewReader(tt.text), base)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an ErrSpec error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, specs)
		})
	}
}

func TestReadMatrixDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.txt", "--modes lowat=15000\n")
	write("a.txt", "--modes default\n")
	write("notes.md", "--modes nonsense\n") // not a matrix file
	specs, _, err := ReadMatrix(dir, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, s := range specs {
		modes = append(modes, s.Mode.String())
	}
	if want := []string{"default", "lowat=15000"}; !reflect.DeepEqual(modes, want) {
		t.Errorf("modes %q, want %q (files in name order, *.txt only)", modes, want)
	}
	if _, _, err := ReadMatrix(filepath.Join(dir, "missing.txt"), Defaults()); !errors.Is(err, ErrSpec) {
		t.Errorf("missing file: %v", err)
	}
	empty := t.TempDir()
	if _, _, err := ReadMatrix(empty, Defaults()); !errors.Is(err, ErrSpec) {
		t.Errorf("empty directory: %v", err)
	}
	write("c.txt", "# nothing\n")
	if _, _, err := ReadMatrix(filepath.Join(dir, "c.txt"), Defaults()); !errors.Is(err, ErrSpec) {
		t.Errorf("file without runs: %v", err)
	}
}

// TestScenarioFiles checks that the published scenario set parses and
// covers what it claims.
func TestScenarioFiles(t *testing.T) {
	specs, _, err := ReadMatrix("../scenarios", Defaults())
	if err != nil {
		t.Fatal(err)
	}
	ids := UniqueIDs(specs)
	seen := map[string]bool{}
	for i, id := range ids {
		if strings.HasSuffix(id, "-2") {
			t.Errorf("run %d repeats the ID %s", i, id)
		}
		seen[id] = true
	}
	for _, id := range []string{
		"86mbit-172ms-bulk64KiB-replenish=15ms", "86mbit-172ms-bulk64KiB-default",
		"2mbit-172ms-bulk64KiB-replenish=15ms", "2mbit-172ms-bulk64KiB-lowat=15000",
		"100kbit-172ms-bulk512B-replenish=15ms", "100kbit-172ms-bulk512B-lowat=187", "100kbit-172ms-bulk512B-replenish=15ms+nagle+nosubmss",
		"2mbit-172ms-video-replenish=15ms", "2mbit-172ms-video-default",
		"2mbit-172ms-bulk4KiB-replenish=15ms+nagle+nosubmss", "2mbit-172ms-bulk4KiB-replenish=15ms+nagle",
		"2mbit-40ms-rr-default+nagle", "2mbit-40ms-rr-default",
	} {
		if !seen[id] {
			t.Errorf("the scenario set lacks %s", id)
		}
	}
	for _, s := range specs {
		if s.Duration < 30*time.Second || s.Duration > 45*time.Second {
			t.Errorf("%s measures %v, want the seed's 35-45 s (or at least 30 s)", s.ID(), s.Duration)
		}
		if s.Path.Queue != 200*time.Millisecond {
			t.Errorf("%s has a %v queue, want 200 ms", s.ID(), s.Path.Queue)
		}
	}
}
