package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer writes one JSON value per line to a file. It is safe for
// concurrent use. Records past the cap are counted and dropped, so that a
// file never grows without bound.
type Writer struct {
	mu      sync.Mutex // guards following fields
	f       *os.File
	w       *bufio.Writer
	n, max  int
	dropped int
	err     error // first write error; later writes are skipped
}

// Create creates (or truncates) the file at path for at most max records.
func Create(path string, max int) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, w: bufio.NewWriterSize(f, 64<<10), max: max}, nil
}

// Write appends v as one line. Errors are kept for Close.
func (w *Writer) Write(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if w.n >= w.max {
		w.dropped++
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = w.w.Write(b)
	}
	if err != nil {
		w.err = err
		return
	}
	w.n++
}

// Close flushes and closes the file. It returns the first error, or an
// error saying how many records the cap dropped.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if ferr := w.w.Flush(); err == nil {
		err = ferr
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && w.dropped > 0 {
		err = fmt.Errorf("records: %d records dropped at the cap of %d", w.dropped, w.max)
	}
	return err
}

// MaxLine caps the length of a line a Scanner reads, newline included.
const MaxLine = 64 << 10

// Scanner reads a JSON Lines stream line by line, skipping blank lines, in
// the manner of bufio.Scanner. It does not parse the lines: ReadFile and
// the report do, each with its own tolerance. A line longer than MaxLine is
// returned as too long, without its bytes.
type Scanner struct {
	br   *bufio.Reader
	line []byte
	no   int  // physical line number of line
	long bool // line was too long
	cut  bool // line ended the input without a newline
	eof  bool
	err  error
}

// NewScanner returns a Scanner reading r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{br: bufio.NewReaderSize(r, MaxLine)}
}

// Scan advances to the next line that is not blank and reports whether
// there is one; it returns false at the end of the input or on a read
// error (see Err).
func (s *Scanner) Scan() bool {
	for !s.eof && s.err == nil {
		line, err := s.br.ReadSlice('\n')
		s.long = errors.Is(err, bufio.ErrBufferFull)
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of a long line
			_, err = s.br.ReadSlice('\n')
		}
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			s.err = fmt.Errorf("records: reading: %w", err)
			return false
		}
		if len(line) == 0 && !s.long {
			continue
		}
		s.no++
		s.cut = s.eof
		if s.long {
			s.line = nil
			return true
		}
		if s.line = bytes.TrimSpace(line); len(s.line) > 0 {
			return true
		}
	}
	return false
}

// Bytes returns the current line without its surrounding white space, or
// nil when it was too long. It is valid until the next Scan.
func (s *Scanner) Bytes() []byte { return s.line }

// Line returns the current line's number, counting from 1 (blank lines
// included).
func (s *Scanner) Line() int { return s.no }

// TooLong reports whether the current line was longer than MaxLine.
func (s *Scanner) TooLong() bool { return s.long }

// Cut reports whether the current line ended the input without a newline,
// as the last line of a process killed while writing does.
func (s *Scanner) Cut() bool { return s.cut }

// Err returns the read error that ended the scan, if any.
func (s *Scanner) Err() error { return s.err }

// ErrLine is wrapped by ReadFile's errors about a line.
var ErrLine = errors.New("records: bad line")

// ReadFile calls fn with each line of the JSON Lines file at path and the
// line's "kind" ("" when absent), in order. A missing file reads as empty.
// A line that is not a JSON object, or too long, ends the reading with an
// error wrapping ErrLine, except a last line cut short (a process killed
// while writing), which is skipped. An error from fn ends the reading
// too, with the line's number.
func ReadFile(path string, fn func(kind string, line []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return Read(f, fn)
}

// Read is ReadFile on a stream.
func Read(r io.Reader, fn func(kind string, line []byte) error) error {
	s := NewScanner(r)
	for s.Scan() {
		var k struct {
			Kind string `json:"kind"`
		}
		if s.TooLong() {
			return fmt.Errorf("%w: line %d is longer than %d bytes", ErrLine, s.Line(), MaxLine)
		}
		if err := json.Unmarshal(s.Bytes(), &k); err != nil {
			if s.Cut() {
				return nil
			}
			return fmt.Errorf("%w: line %d: %v", ErrLine, s.Line(), err)
		}
		if err := fn(k.Kind, s.Bytes()); err != nil {
			return fmt.Errorf("line %d: %w", s.Line(), err)
		}
	}
	return s.Err()
}

// Append decodes line, one record, as a T and appends it to dst: what a
// ReadFile callback does with the kinds it keeps.
func Append[T any](dst *[]T, line []byte) error {
	var v T
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	*dst = append(*dst, v)
	return nil
}
