package runner

import (
	"bytes"
	"testing"
)

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.update("[1/2] a", "one")
	p.update("[1/2] a", "two") // within plainEvery: not printed
	p.Write([]byte("a log line\n"))
	p.finish("[1/2] a", "done")
	got := buf.String()
	want := "[1/2] a  one\na log line\n[1/2] a  done\n"
	if got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
