package scenario

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A matrix file describes a set of runs, one line per set of runs that
// share a path and a workload:
//
//	# The 2 Mb/s column of the published table.
//	--rate 2mbit --rtt 172ms --workload bulk --modes default,lowat=165000,lowat=15000,replenish=15ms
//	--scenario "Nagle trap" --workload bulk=4096 --modes replenish=15ms+nagle+nosubmss,replenish=15ms+nagle
//
// A line holds the run command's spec flags (--rate, --rtt, --queue, --loss,
// --schedule, --modes, --workload, --duration, --warmup, --cc, --browser,
// --max-res, --scenario); flags the line leaves out take the command line's
// values. Words are separated by blanks; double quotes group words; "#"
// starts a comment outside quotes. Each line gives one run per mode.

// maxMatrixLine caps the length of a line of a matrix file.
const maxMatrixLine = 4096

// ReadMatrix reads the runs of the matrix file at path, or of every *.txt
// file of the directory at path in name order. base supplies the values of
// flags a line leaves out.
func ReadMatrix(path string, base Flags) ([]Run, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
	}
	files := []string{path}
	if fi.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.txt")); err != nil {
			return nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: --matrix: no *.txt files in %s", ErrSpec, path)
		}
	}
	var out []Run
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
		}
		specs, err := ParseMatrix(f, base)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, specs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --matrix %s describes no runs", ErrSpec, path)
	}
	return out, nil
}

// ParseMatrix reads the lines of one matrix file.
func ParseMatrix(r io.Reader, base Flags) ([]Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxMatrixLine)
	var out []Run
	for n := 1; sc.Scan(); n++ {
		words, err := splitWords(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(words) == 0 {
			continue
		}
		f := base
		fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		if err := fs.Parse(words); err != nil {
			return nil, fmt.Errorf("line %d: %w: %v", n, ErrSpec, err)
		}
		if fs.NArg() > 0 {
			return nil, fmt.Errorf("line %d: %w: unexpected words %q", n, ErrSpec, fs.Args())
		}
		specs, err := f.Runs()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, specs...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading matrix: %v", ErrSpec, err)
	}
	return out, nil
}

// splitWords splits a line into blank-separated words. Double quotes group
// words (and are removed); "#" outside quotes ends the line.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
			inWord = true
		case quoted:
			cur.WriteRune(c)
		case c == '#':
			if inWord {
				words = append(words, cur.String())
			}
			return words, nil
		case c == ' ' || c == '\t' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%w: unterminated quote", ErrSpec)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
