package runner

import (
	"bytes"
	"strings"
	"testing"

	"replenish/experiments/report"
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

// TestDoneLine checks that a finished run's line gives the link's use
// beside goodput's share when it is known.
func TestDoneLine(t *testing.T) {
	link := 0.8353
	r := report.Run{SourceDelayMs: report.NoPercentiles(), BottleneckQueueMs: report.NoPercentiles(), GoodputBps: 64.3e3, Utilization: 0.643}
	if got := doneLine(r); !strings.Contains(got, "goodput 64.3 kb/s (64%), ") {
		t.Errorf("without the link: %q", got)
	}
	r.LinkUtilization = &link
	if got := doneLine(r); !strings.Contains(got, "goodput 64.3 kb/s (64%; link 84%), ") {
		t.Errorf("with the link: %q", got)
	}
}
