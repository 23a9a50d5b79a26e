// Package jsonl writes JSON Lines record files with a cap on their length,
// for the experiments harness.
package jsonl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Writer writes one JSON value per line to a file. It is safe for concurrent
// use. Records past the cap are counted and dropped, so a file never grows
// without bound.
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
		err = fmt.Errorf("jsonl: %d records dropped at the cap of %d", w.dropped, w.max)
	}
	return err
}
