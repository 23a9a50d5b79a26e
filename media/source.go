package media

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrRunning is returned by Source.Run if the source is already running.
var ErrRunning = errors.New("media: source already running")

// Source defaults.
const (
	DefaultFPS = 30
	// sourcePool bounds the frames a source keeps for reuse.
	sourcePool = 3
)

// DefaultSize is the picture size a source starts at when none is given.
var DefaultSize = Size{W: 640, H: 360}

// SourceConfig configures a Source. Zero values mean the defaults.
type SourceConfig struct {
	FPS  int    // frames per second; 0 means 30
	Name string // drawn into the picture
	Size Size   // initial size; zero (or a size failing Size.Check) means 640x360
}

// SourceStats counts a source's frames.
type SourceStats struct {
	Rendered  uint64 // frames rendered and published
	Taken     uint64 // frames handed out by Take
	Discarded uint64 // frames replaced by a newer one before anyone took them
	Allocated uint64 // frame buffers allocated (the rest were reused)
}

// Source renders synthetic video on its own clock. It keeps only the newest
// rendered frame, in a one-slot mailbox: a consumer takes that frame when it
// wants one (for the sender, when its transport invites a frame), and a frame
// replaced before anyone took it is discarded and counted. Buffers are reused
// through a small bounded pool. All methods are safe for concurrent use.
type Source struct {
	interval time.Duration
	name     string
	ready    chan struct{} // capacity 1; never closed

	mu      sync.Mutex // guards following fields
	size    Size       // size of frames rendered from now on
	slot    *Frame     // newest untaken frame, or nil
	skipped int        // frames discarded since the last Take
	pool    []*Frame   // released frames of the current size, at most sourcePool
	seq     uint64     // number of the last frame rendered
	running bool
	stats   SourceStats
}

// NewSource returns a source for cfg. It starts nothing; call Run.
func NewSource(cfg SourceConfig) *Source {
	if cfg.FPS <= 0 {
		cfg.FPS = DefaultFPS
	}
	if cfg.Size.Check() != nil {
		cfg.Size = DefaultSize
	}
	return &Source{
		interval: time.Second / time.Duration(cfg.FPS),
		name:     cfg.Name,
		ready:    make(chan struct{}, 1),
		size:     cfg.Size,
	}
}

// Run renders and publishes a frame at once and then at every tick of the
// source's clock until ctx is done, and returns ctx.Err(). Each frame's
// Capture is the time its rendering started. It returns ErrRunning at once
// if another Run of the same source is active.
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrRunning
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.tick()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// tick renders one frame at the current size and publishes it.
func (s *Source) tick() {
	capture := time.Now()
	s.mu.Lock()
	f := s.getLocked()
	s.seq++
	seq := s.seq
	s.mu.Unlock()

	Render(f, capture, seq, s.name)

	s.mu.Lock()
	if s.slot != nil {
		s.stats.Discarded++
		s.skipped++
		s.putLocked(s.slot)
	}
	s.slot = f
	s.stats.Rendered++
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// getLocked returns a frame of the current size from the pool or a new one.
func (s *Source) getLocked() *Frame {
	if n := len(s.pool); n > 0 {
		f := s.pool[n-1]
		s.pool[n-1] = nil
		s.pool = s.pool[:n-1]
		return f
	}
	s.stats.Allocated++
	return &Frame{Size: s.size}
}

// putLocked returns f to the pool if it has the current size and there is
// room; otherwise f is left to the garbage collector.
func (s *Source) putLocked(f *Frame) {
	if f == nil || f.Size != s.size || len(s.pool) >= sourcePool {
		return
	}
	s.pool = append(s.pool, f)
}

// SetSize sets the size of frames rendered after it returns; a frame being
// rendered keeps its size. It returns an error wrapping ErrSize, and changes
// nothing, if sz fails Size.Check.
func (s *Source) SetSize(sz Size) error {
	if err := sz.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sz != s.size {
		s.size = sz
		clear(s.pool)
		s.pool = s.pool[:0]
	}
	return nil
}

// Size returns the size of frames rendered from now on.
func (s *Source) Size() Size {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// Ready returns a channel that receives a value when a new frame has been
// published since the last receive. It has capacity 1 and is never closed;
// a receive means Take will probably (not certainly, if another consumer was
// quicker) return a frame.
func (s *Source) Ready() <-chan struct{} { return s.ready }

// Take returns the freshest frame not yet taken, and how many frames were
// published and discarded unseen since the previous Take. It returns ok false
// if no new frame has been published since. The frame belongs to the caller
// until it passes it to Release. Take does not block.
func (s *Source) Take() (f *Frame, skipped int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, s.slot = s.slot, nil
	skipped, s.skipped = s.skipped, 0
	if f == nil {
		return nil, skipped, false
	}
	s.stats.Taken++
	return f, skipped, true
}

// Release gives a taken frame's buffers back to the source for reuse. The
// caller must not use f afterwards, and must release each taken frame at
// most once. Releasing nil does nothing; frames need not be released (the
// source then allocates new ones).
func (s *Source) Release(f *Frame) {
	if f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == s.slot {
		return
	}
	for _, p := range s.pool {
		if p == f {
			return
		}
	}
	s.putLocked(f)
}

// Stats returns the source's counters.
func (s *Source) Stats() SourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
