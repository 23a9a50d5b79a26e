package runner

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// plainEvery is how often a progress line is printed when the output is not
// a terminal.
const plainEvery = 5 * time.Second

// Progress shows the runs in progress: on a terminal one line, rewritten in
// place (the runs side by side when several run at once); otherwise a plain
// line per run every plainEvery. Log output written through it clears the
// line first. It is safe for concurrent use.
type Progress struct {
	out io.Writer
	tty bool

	mu    sync.Mutex // guards the fields below and writes to out
	lines map[string]string
	order []string
	last  map[string]time.Time // when each label was last printed, not on a terminal
	shown bool                 // an unfinished line is on the terminal
	width int                  // terminal columns; 0 when unknown
}

// NewProgress returns a Progress that writes to out.
func NewProgress(out io.Writer) *Progress {
	p := &Progress{out: out, lines: map[string]string{}, last: map[string]time.Time{}}
	if f, ok := out.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
			p.tty, p.width = true, int(ws.Col)
		}
	}
	return p
}

// update sets the live line of the run label.
func (p *Progress) update(label, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.lines[label]; !ok {
		p.order = append(p.order, label)
	}
	p.lines[label] = line
	if !p.tty {
		if now := time.Now(); now.Sub(p.last[label]) >= plainEvery {
			p.last[label] = now
			fmt.Fprintf(p.out, "%s  %s\n", label, line)
		}
		return
	}
	p.redrawLocked()
}

// finish removes the run label's live line and prints its final line.
func (p *Progress) finish(label, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lines, label)
	delete(p.last, label)
	p.order = slices.DeleteFunc(p.order, func(s string) bool { return s == label })
	p.clearLocked()
	fmt.Fprintf(p.out, "%s  %s\n", label, line)
	p.redrawLocked()
}

// Write prints b (log output) above the live line.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	n, err := p.out.Write(b)
	p.redrawLocked()
	return n, err
}

func (p *Progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}

func (p *Progress) redrawLocked() {
	if !p.tty || len(p.order) == 0 {
		return
	}
	parts := make([]string, 0, len(p.order))
	for _, l := range p.order {
		parts = append(parts, l+"  "+p.lines[l])
	}
	line := strings.Join(parts, " | ")
	if p.width > 1 && len(line) >= p.width {
		line = line[:p.width-1]
	}
	fmt.Fprint(p.out, "\r\033[K"+line)
	p.shown = true
}
