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

// Pacer parameters, pion's leaky-bucket pacer's (v0.1.51).
const (
	// pacingFactor is how far above the estimator's target the pacer
	// sends.
	pacingFactor = 1.5
	// pacingInterval is the pacer's tick.
	pacingInterval = 5 * time.Millisecond
	// maxPacerPackets bounds the queue (pion's is unbounded); the Conn
	// keeps media well below (MaxQueue), so this only catches
	// retransmissions piling up behind a full window.
	maxPacerPackets = 8192
)

// Errors of the pacer's Write.
var (
	errPacerClosed = errors.New("webrtc: pacer closed")
	errPacerFull   = errors.New("webrtc: pacer queue full")
)

// pacer is the GCC bandwidth estimator's pacer (gcc.SendSideBWEPacer):
// pion's leaky-bucket pacer, which sends what it is given in order at
// pacingFactor times the estimator's target, and besides holds packets
// while the feedback window is full (see window). Its goroutine starts
// with the first packet and ends in Close. It is safe for concurrent use.
type pacer struct {
	log  *slog.Logger
	win  *window
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
		done:    make(chan struct{}),
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

// run sends queued packets until Close, as pion's leaky-bucket pacer
// does: at each tick, while the queue holds packets and the budget (the
// time since the last tick that sent, at the pacing rate) is not spent,
// and besides while the window has room.
func (p *pacer) run() {
	tick := time.NewTicker(pacingInterval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-p.done:
			return
		case now := <-tick.C:
			budget := int(float64(now.Sub(last).Milliseconds()) * float64(p.pacingRate()) / 8000) // bytes
			for budget > 0 {
				pkt, ok := p.front()
				if !ok {
					break
				}
				if !p.win.room(now) {
					break
				}
				p.pop()
				budget -= p.send(pkt)
				last = now
			}
		}
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
