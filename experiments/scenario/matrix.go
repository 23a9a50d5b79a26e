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
// --schedule, --transport, --modes, --workload, --duration, --warmup, --cc,
// --browser, --max-res, --scenario...); flags the line leaves out take the
// command line's values. Words are separated by blanks; double quotes group
// words; "#" starts a comment outside quotes. Each line gives one run per
// transport and mode, leaving out (with a note) the combinations that do
// not exist.

// maxMatrixLine caps the length of a line of a matrix file.
const maxMatrixLine = 4096

// ReadMatrix reads the runs of the matrix file at path, or of every *.txt
// file of the directory at path in name order; path may also be a
// comma-separated list of such files and directories, read in turn. base
// supplies the values of flags a line leaves out. Besides the runs it
// returns a note, naming its file and line, for every combination of
// transport and mode a line gives that does not exist.
func ReadMatrix(path string, base Flags) (runs []Run, skipped []string, err error) {
	var files []string
	for _, p := range strings.Split(path, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		f, err := matrixFiles(p)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f...)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
		}
		specs, notes, err := ParseMatrix(f, base)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		runs = append(runs, specs...)
		for _, n := range notes {
			skipped = append(skipped, name+": "+n)
		}
	}
	if len(runs) == 0 {
		return nil, skipped, fmt.Errorf("%w: --matrix %s describes no runs", ErrSpec, path)
	}
	return runs, skipped, nil
}

// matrixFiles returns path, or the *.txt files of the directory at path
// in name order.
func matrixFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("%w: --matrix: %v", ErrSpec, err)
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: --matrix: no *.txt files in %s", ErrSpec, path)
	}
	return files, nil
}

// ParseMatrix reads the lines of one matrix file, and returns its runs and
// a note ("line N: ...") for every combination of transport and mode that
// a line gives and that does not exist.
func ParseMatrix(r io.Reader, base Flags) (runs []Run, skipped []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxMatrixLine)
	for n := 1; sc.Scan(); n++ {
		words, err := splitWords(sc.Text())
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(words) == 0 {
			continue
		}
		f := base
		fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		if err := fs.Parse(words); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w: %v", n, ErrSpec, err)
		}
		if fs.NArg() > 0 {
			return nil, nil, fmt.Errorf("line %d: %w: unexpected words %q", n, ErrSpec, fs.Args())
		}
		specs, notes, err := f.Runs()
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		runs = append(runs, specs...)
		for _, note := range notes {
			skipped = append(skipped, fmt.Sprintf("line %d: %s", n, note))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: reading matrix: %v", ErrSpec, err)
	}
	return runs, skipped, nil
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
