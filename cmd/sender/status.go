package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"replenish/sender"
	"replenish/transport"
)

// statusLine prints the sender's live status: in place on a terminal, as a
// plain line every few seconds otherwise.
type statusLine struct {
	out     io.Writer
	tty     bool
	enabled bool

	mu    sync.Mutex // guards the fields below and writes to out
	conn  string
	shown bool // an unfinished in-place line is on the terminal
}

// Write lets log output share the terminal with the status line: it clears
// the line first so that log records never run into it.
func (l *statusLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.out, "\r\033[K")
		l.shown = false
	}
	return l.out.Write(p)
}

func (l *statusLine) setConn(s string) {
	l.mu.Lock()
	l.conn = s
	l.mu.Unlock()
}

func (l *statusLine) run(ctx context.Context, done <-chan struct{}, s *sender.Sender, o options, mode transport.Mode) {
	if !l.enabled {
		return
	}
	every := 500 * time.Millisecond
	if !l.tty {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-tick.C:
		}
		st := s.Status()
		line := fmt.Sprintf("%s %v %v (target %v) %.0f fps | source delay p50 %s p95 %s | drain %v | %s",
			o.name, st.Size, st.Bitrate, st.Target, st.FPS,
			ms(st.SourceDelayP50, st.SourceDelayN), ms(st.SourceDelayP95, st.SourceDelayN),
			st.DrainRate, mode.String())
		l.mu.Lock()
		if l.conn != "connected" {
			line += " | " + l.conn
		}
		if l.tty {
			fmt.Fprintf(l.out, "\r\033[K%s", line)
			l.shown = true
		} else {
			fmt.Fprintln(l.out, line)
		}
		l.mu.Unlock()
	}
}

// clear ends an in-place line so that later output starts on a new line.
func (l *statusLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.out, "\r\033[K")
		l.shown = false
	}
}

func ms(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
