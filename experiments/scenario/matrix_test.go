package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// TestScenarioFiles checks that every scenario file parses, that each
// file's run IDs are unique, and that the published set (table.txt,
// nagle.txt, video.txt) covers what it claims.
func TestScenarioFiles(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*.txt")
	if err != nil || len(files) < 5 {
		t.Fatalf("scenario files %q, %v", files, err)
	}
	for _, f := range files {
		specs, skipped, err := ReadMatrix(f, Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if len(skipped) > 0 {
			t.Errorf("%s asks for runs that do not exist: %q", f, skipped)
		}
		for i, id := range UniqueIDs(specs) {
			if strings.HasSuffix(id, "-2") {
				t.Errorf("%s: run %d repeats the ID %s", f, i, id)
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
	set, _, err := ReadMatrix("../scenarios/table.txt,../scenarios/nagle.txt,../scenarios/video.txt", Defaults())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range UniqueIDs(set) {
		seen[id] = true
	}
	for _, id := range []string{
		"86mbit-172ms-bulk64KiB-replenish=15ms", "86mbit-172ms-bulk64KiB-default",
		"2mbit-172ms-bulk64KiB-replenish=15ms", "2mbit-172ms-bulk64KiB-lowat=15000",
		"100kbit-172ms-bulk512B-replenish=15ms", "100kbit-172ms-bulk512B-lowat=187", "100kbit-172ms-bulk512B-replenish=15ms+nagle+nosubmss",
		"2mbit-172ms-video-replenish=15ms", "2mbit-172ms-video-default",
		"2mbit-172ms-bulk4KiB-replenish=15ms+nagle+nosubmss", "2mbit-172ms-bulk4KiB-replenish=15ms+nagle",
		"2mbit-40ms-rr-default+nagle", "2mbit-40ms-rr-default",
		"100kbit-172ms-video-quic-replenish=15ms", "100kbit-172ms-video-quic-default",
		"2mbit-172ms-video-quic-replenish=15ms", "2mbit-172ms-video-quic-default", "2mbit-172ms-video-quic-expire=100ms",
		"86mbit-172ms-video-quic-replenish=15ms", "86mbit-172ms-video-quic-default",
	} {
		if !seen[id] {
			t.Errorf("the scenario set lacks %s", id)
		}
	}
}

// TestSweepAndTransportsFiles checks that sweep.txt, transports.txt,
// faults.txt, jitter.txt, cross.txt and lowrate.txt hold the runs their
// headers
// describe, and that the time each header states covers their runs.
func TestSweepAndTransportsFiles(t *testing.T) {
	for _, tc := range []struct {
		file  string
		runs  int
		check func(t *testing.T, specs []Run)
	}{
		{"sweep.txt", 80, checkSweep},
		{"transports.txt", 96, checkTransports},
		{"faults.txt", 10, checkFaults},
		{"jitter.txt", 20, checkJitter},
		{"cross.txt", 20, checkCross},
		{"lowrate.txt", 14, checkLowRate},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("..", "scenarios", tc.file)
			specs, _, err := ReadMatrix(path, Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != tc.runs {
				t.Errorf("%d runs, want %d", len(specs), tc.runs)
			}
			tc.check(t, specs)
			checkEstimate(t, path, specs)
		})
	}
}

// checkSweep checks the sweep's grid: every rate, RTT and congestion
// control with both modes, and its steps.
func checkSweep(t *testing.T, specs []Run) {
	grid := map[string]bool{}
	steps := map[string]int{}
	for _, s := range specs {
		if s.TransportName() != TCP || s.Workload.Kind != KindVideo {
			t.Errorf("%s: the sweep is video over TCP", s.ID())
		}
		if len(s.Path.Schedule) > 0 {
			steps[FormatSchedule(s.Path.Schedule)]++
			continue
		}
		grid[FormatRate(s.Path.Rate)+"-"+fmtDur(s.Path.RTT)+"-"+s.Path.CC+"-"+s.Mode.String()] = true
	}
	for _, r := range []string{"100kbit", "500kbit", "2mbit", "10mbit", "20mbit"} {
		for _, rtt := range []string{"20ms", "80ms", "172ms"} {
			for _, cc := range []string{"cubic", "bbr"} {
				for _, m := range []string{"replenish=15ms", "default"} {
					if k := r + "-" + rtt + "-" + cc + "-" + m; !grid[k] {
						t.Errorf("the sweep lacks %s", k)
					}
				}
			}
		}
	}
	for _, sched := range []string{"20s=1mbit", "20s=5mbit", "20s=2mbit", "20s=10mbit", "20s=/172ms"} {
		if steps[sched] != 4 {
			t.Errorf("%d runs with the step %s, want 4 (two congestion controls, two modes)", steps[sched], sched)
		}
	}
}

// checkTransports checks that every path of transports.txt has TCP with
// and without SBM, QUIC with SBM and WebRTC.
func checkTransports(t *testing.T, specs []Run) {
	byPath := map[string][]string{}
	for _, s := range specs {
		byPath[s.Title()] = append(byPath[s.Title()], s.TransportName()+" "+s.ModeName())
	}
	if len(byPath) != 24 {
		t.Errorf("%d paths, want 24 (18 with loss, 6 with a halving)", len(byPath))
	}
	for path, runs := range byPath {
		slices.Sort(runs)
		if want := []string{"quic replenish=15ms", "tcp default", "tcp replenish=15ms", "webrtc gcc"}; !slices.Equal(runs, want) {
			t.Errorf("%s: %q, want %q", path, runs, want)
		}
	}
}

// checkFaults checks faults.txt: TCP and QUIC with SBM at 2 Mb/s and
// 80 ms, through a 1 s outage, a 3 s one, a 10 s one (longer than the
// viewer's wait before it drops a silent sender) and with 5% loss; and at
// 100 kb/s through a 1 s outage.
func checkFaults(t *testing.T, specs []Run) {
	got := map[string]bool{}
	for _, s := range specs {
		low := s.Path.Rate == 100*rate.Kbps
		if s.Workload.Kind != KindVideo || s.Path.Rate != 2*rate.Mbps && !low || s.Path.RTT != 80*time.Millisecond || s.ModeName() != "replenish=15ms" {
			t.Errorf("%s: want video at 2 Mb/s or 100 kb/s and 80 ms with replenish=15ms", s.ID())
		}
		switch o := s.Path.Outages(); {
		case len(o) == 1 && o[0].Up-o[0].Down == time.Second && s.Path.Loss == 0 && low:
			got[s.TransportName()+" short outage, 100 kb/s"] = true
		case low:
			t.Errorf("%s: want a 1 s outage at 100 kb/s", s.ID())
		case len(o) == 1 && o[0].Up-o[0].Down == time.Second && s.Path.Loss == 0:
			got[s.TransportName()+" short outage"] = true
		case len(o) == 1 && o[0].Up-o[0].Down == 3*time.Second && s.Path.Loss == 0:
			got[s.TransportName()+" outage"] = true
		case len(o) == 1 && o[0].Up-o[0].Down == 10*time.Second && s.Path.Loss == 0:
			got[s.TransportName()+" long outage"] = true
		case len(o) == 0 && s.Path.Loss == 0.05:
			got[s.TransportName()+" loss"] = true
		default:
			t.Errorf("%s: want a 1 s, 3 s or 10 s outage, or 5%% loss", s.ID())
		}
	}
	for _, k := range []string{"tcp outage", "quic outage", "tcp long outage", "quic long outage", "tcp short outage", "quic short outage",
		"tcp short outage, 100 kb/s", "quic short outage, 100 kb/s", "tcp loss", "quic loss"} {
		if !got[k] {
			t.Errorf("faults.txt lacks %s", k)
		}
	}
}

// checkJitter checks jitter.txt: every path with jitter has TCP and QUIC,
// each with and without SBM, and the same path without jitter beside it.
func checkJitter(t *testing.T, specs []Run) {
	got := map[string]bool{}
	for _, s := range specs {
		if s.Workload.Kind != KindVideo || s.Path.CC != "cubic" {
			t.Errorf("%s: want video with CUBIC", s.ID())
		}
		got[FormatRate(s.Path.Rate)+"-"+fmtDur(s.Path.RTT)+"-"+fmtDur(s.Path.Jitter)+"-"+s.TransportName()+"-"+s.ModeName()] = true
	}
	for _, p := range []string{"2mbit-20ms-10ms", "2mbit-80ms-20ms", "10mbit-20ms-10ms", "10mbit-80ms-20ms"} {
		for _, k := range []string{"tcp-replenish=15ms", "tcp-default", "quic-replenish=15ms", "quic-default"} {
			if !got[p+"-"+k] {
				t.Errorf("jitter.txt lacks %s-%s", p, k)
			}
		}
		rate, rtt, _ := strings.Cut(p, "-")
		rtt, _, _ = strings.Cut(rtt, "-")
		if !got[rate+"-"+rtt+"-0ms-tcp-replenish=15ms"] {
			t.Errorf("jitter.txt lacks %s-%s without jitter", rate, rtt)
		}
	}
}

// checkCross checks cross.txt: on every path one competing flow, and TCP
// with and without SBM, QUIC with SBM and WebRTC; at 2 Mb/s and 40 ms the
// same again with a download that ends before the window.
func checkCross(t *testing.T, specs []Run) {
	got := map[string]bool{}
	for _, s := range specs {
		if s.Workload.Kind != KindVideo || s.Cross != 1 {
			t.Errorf("%s: want video with one competing flow", s.ID())
		}
		p := FormatRate(s.Path.Rate) + "-" + fmtDur(s.Path.RTT) + "-" + s.Path.CC
		if s.CrossFor > 0 {
			if s.CrossInWindow() {
				t.Errorf("%s: the download should end before the window", s.ID())
			}
			p += "-ends"
		}
		got[p+"-"+s.TransportName()+"-"+s.ModeName()] = true
	}
	for _, p := range []string{"2mbit-40ms-cubic", "10mbit-40ms-cubic", "2mbit-172ms-cubic", "2mbit-40ms-bbr", "2mbit-40ms-cubic-ends"} {
		for _, k := range []string{"tcp-replenish=15ms", "tcp-default", "quic-replenish=15ms", "webrtc-gcc"} {
			if !got[p+"-"+k] {
				t.Errorf("cross.txt lacks %s-%s", p, k)
			}
		}
	}
}

// checkLowRate checks lowrate.txt: every path slower than the lowest rung
// at its own frame rate, TCP and QUIC with SBM and TCP without on every
// CUBIC path, and BBR with SBM at 30 kb/s.
func checkLowRate(t *testing.T, specs []Run) {
	got := map[string]bool{}
	for _, s := range specs {
		if s.Workload.Kind != KindVideo || s.Path.Rate >= 58*rate.Kbps {
			t.Errorf("%s: want video below 58 kb/s", s.ID())
		}
		got[FormatRate(s.Path.Rate)+"-"+fmtDur(s.Path.RTT)+"-"+s.Path.CC+"-"+s.TransportName()+"-"+s.ModeName()] = true
	}
	for _, p := range []string{"30kbit-20ms", "30kbit-172ms", "40kbit-20ms", "40kbit-172ms"} {
		for _, k := range []string{"cubic-tcp-replenish=15ms", "cubic-quic-replenish=15ms", "cubic-tcp-default"} {
			if !got[p+"-"+k] {
				t.Errorf("lowrate.txt lacks %s-%s", p, k)
			}
		}
	}
	for _, p := range []string{"30kbit-20ms", "30kbit-172ms"} {
		if !got[p+"-bbr-tcp-replenish=15ms"] {
			t.Errorf("lowrate.txt lacks %s-bbr-tcp-replenish=15ms", p)
		}
	}
}

// checkEstimate checks that the minutes a file's header states ("about N
// minutes") are at least its runs' warm-ups and windows with 5 s of
// set-up and drain each, and at most half as much again.
func checkEstimate(t *testing.T, path string, specs []Run) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stated int
	for _, line := range strings.Split(string(data), "\n") {
		if _, rest, ok := strings.Cut(line, "about "); ok && strings.HasPrefix(line, "# Time:") {
			fmt.Sscanf(rest, "%d minutes", &stated)
		}
	}
	var least time.Duration
	for _, s := range specs {
		least += s.Total() + 5*time.Second
	}
	if got := time.Duration(stated) * time.Minute; got < least || got > least*3/2 {
		t.Errorf("the header says about %d minutes; the runs take at least %v", stated, least.Round(time.Minute))
	}
}
