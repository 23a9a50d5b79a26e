package webrtc

import (
	"errors"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/rtp"

	"replenish/rate"
)

// Pacer parameters, pion's leaky-bucket pacer's (v0.1.51) where they
// have a counterpart.
const (
	// pacingFactor is how far above the estimator's target the pacer
	// sends.
	pacingFactor = 1.5
	// pacingInterval is how long the pacer sleeps when it is out of
	// budget.
	pacingInterval = 5 * time.Millisecond
	// pacingBurst bounds the budget saved while idle: a frame interval
	// and a half at 30 fps, what pion's pacer allows between frames.
	pacingBurst = 50 * time.Millisecond
	// maxPacerPackets bounds the queue; the Conn keeps media well below
	// (MaxQueue), so this only catches retransmissions piling up behind
	// a closed window.
	maxPacerPackets = 8192
)

// Errors of the pacer's Write.
var (
	errPacerClosed = errors.New("webrtc: pacer closed")
	errPacerFull   = errors.New("webrtc: pacer queue full")
)

// pacer is the GCC bandwidth estimator's pacer (gcc.SendSideBWEPacer): it
// sends what it is given in order, at pacingFactor times the estimator's
// target as pion's leaky-bucket pacer does, and holds packets while the
// feedback window is full (see window). Its goroutine starts with the
// first packet and ends in Close. It is safe for concurrent use.
type pacer struct {
	log  *slog.Logger
	win  *window
	wake chan struct{}  // capacity 1: a packet was queued
	done chan struct{}  // closed by Close
	wg   sync.WaitGroup // run

	mu      sync.Mutex // guards following fields
	rate    rate.Bitrate
	queue   []paced
	writers map[uint32]interceptor.RTPWriter
	started bool // run was started
	closed  bool
}

var _ gcc.Pacer = (*pacer)(nil)

// paced is one packet waiting in the pacer, copied.
type paced struct {
	header  rtp.Header
	payload []byte
	attrs   interceptor.Attributes
}

// newPacer returns a pacer sending at pacingFactor times target, gated
// by win.
func newPacer(target rate.Bitrate, win *window, log *slog.Logger) *pacer {
	return &pacer{
		log: log, win: win, rate: rate.Bitrate(pacingFactor * float64(target)),
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		writers: make(map[uint32]interceptor.RTPWriter),
	}
}

// AddStream registers the writer for the packets of ssrc.
func (p *pacer) AddStream(ssrc uint32, w interceptor.RTPWriter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writers[ssrc] = w
}

// SetTargetBitrate sets the estimator's target, in bits per second.
func (p *pacer) SetTargetBitrate(bps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = rate.Bitrate(pacingFactor * float64(max(bps, 0)))
}

// Write queues a copy of the packet; it does not block. It returns the
// packet's size, or errPacerClosed, or errPacerFull when maxPacerPackets
// wait.
func (p *pacer) Write(h *rtp.Header, payload []byte, a interceptor.Attributes) (int, error) {
	pkt := paced{header: h.Clone(), payload: append([]byte(nil), payload...), attrs: maps.Clone(a)}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return 0, errPacerClosed
	case len(p.queue) >= maxPacerPackets:
		p.mu.Unlock()
		p.log.Debug("pacer: queue full, packet dropped", "ssrc", h.SSRC, "seq", h.SequenceNumber)
		return 0, errPacerFull
	}
	p.queue = append(p.queue, pkt)
	if !p.started {
		p.started = true
		p.wg.Go(p.run)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return h.MarshalSize() + len(payload), nil
}

// Close stops the pacer and drops what it holds. It waits for a packet
// being written to the network.
func (p *pacer) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.queue = nil
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// run sends queued packets until Close: each when the window has room
// and the budget allows.
func (p *pacer) run() {
	var budget float64 // bits
	last := time.Now()
	for {
		pkt, ok := p.front()
		if !ok {
			select {
			case <-p.wake:
				continue
			case <-p.done:
				return
			}
		}
		if !p.win.wait(p.done) {
			return
		}
		now := time.Now()
		r := float64(p.pacingRate())
		budget = min(budget+r*now.Sub(last).Seconds(), r*pacingBurst.Seconds())
		last = now
		if budget <= 0 {
			select {
			case <-time.After(pacingInterval):
			case <-p.done:
				return
			}
			continue
		}
		p.pop()
		budget -= float64(8 * p.send(pkt))
	}
}

func (p *pacer) front() (paced, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return paced{}, false
	}
	return p.queue[0], true
}

func (p *pacer) pop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		p.queue[0] = paced{}
		p.queue = p.queue[1:]
	}
}

func (p *pacer) pacingRate() rate.Bitrate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// send writes pkt to its stream's writer and returns the bytes written.
func (p *pacer) send(pkt paced) int {
	p.mu.Lock()
	w, ok := p.writers[pkt.header.SSRC]
	p.mu.Unlock()
	if !ok {
		p.log.Debug("pacer: no stream for a packet", "ssrc", pkt.header.SSRC)
		return 0
	}
	n, err := w.Write(&pkt.header, pkt.payload, pkt.attrs)
	if err != nil {
		p.log.Debug("pacer: writing a packet", "err", err)
	}
	return n
}
