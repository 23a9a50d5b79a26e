package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriterCaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		w.Write(map[string]int{"i": i})
	}
	err = w.Close()
	if err == nil || !strings.Contains(err.Error(), "3 records dropped") {
		t.Fatalf("Close = %v, want 3 dropped", err)
	}
	b, _ := os.ReadFile(path)
	if got := string(b); got != "{\"i\":0}\n{\"i\":1}\n" {
		t.Fatalf("file %q", got)
	}
}

func TestWriterKeepsError(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "r.jsonl"), 10)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(func() {}) // not JSON
	w.Write(1)
	if err := w.Close(); err == nil {
		t.Fatal("Close = nil after an unmarshalable record")
	}
}
