package pathmodel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/sender"
	tcptransport "replenish/transport/tcp"
)

// CC names a congestion-control model.
type CC int

const (
	// Cubic is loss-based: it grows while cwnd-limited, with slow start.
	Cubic CC = iota
	// BBR paces at its bandwidth estimate times a gain cycle, cwnd about
	// twice the BDP.
	BBR
)

func (c CC) String() string {
	if c == BBR {
		return "bbr"
	}
	return "cubic"
}

// Step changes the path during a run.
type Step struct {
	At   time.Duration // since the run's start
	Rate rate.Bitrate  // the bottleneck's new rate; 0 keeps it
	RTT  time.Duration // the new base round trip; 0 keeps it
}

// Path is the bottleneck path from the sender to the receiver.
type Path struct {
	// Rate is the bottleneck's rate at the start, counting IP bytes
	// (payload plus 52 bytes of headers a segment). Required.
	Rate rate.Bitrate
	// RTT is the base round trip (propagation only), split evenly
	// between the two directions. Required.
	RTT time.Duration
	// Queue is the drop-tail limit as time at the starting rate,
	// converted once to bytes (at least two full packets); 0 means
	// 100 ms. After a rate step the limit in bytes stays.
	Queue time.Duration
	// Loss is the probability that a packet is lost at random before the
	// queue; 0 means none.
	Loss float64
	// Jitter adds to each packet's one-way delay after the bottleneck a
	// delay drawn uniformly from [0, Jitter), without reordering: a
	// packet never arrives before the one ahead of it (as on a radio
	// link that holds packets for its turn). 0 means none.
	Jitter time.Duration
	// Cross is how many competing bulk flows share the bottleneck with
	// the stream for the whole run: backlogged TCP senders of the path's
	// congestion control, as a download beside a call (at most MaxCross).
	Cross int
	// CrossUntil, if positive, is when the competing flows stop writing:
	// what they wrote before still leaves, then the stream is alone.
	CrossUntil time.Duration
	CC         CC
	// DelayedAck makes the receiver delay its ACKs as Linux does (see
	// receiver); otherwise it acknowledges every segment as it arrives.
	DelayedAck bool
	// Steps change the rate or the round trip at given times.
	Steps []Step
}

// MaxCross caps Path.Cross.
const MaxCross = 8

// Controller is the rate controller under test.
type Controller interface {
	Update(sender.Observation) sender.Decision
	Rung() media.Rung // the rung before the first update
}

// Config describes one run. Zero values mean the stated defaults.
type Config struct {
	Path     Path
	Duration time.Duration // virtual time measured; 0 means 60 s
	Warmup   time.Duration // excluded from the summary; 0 means 10 s
	Seed     uint64
	Ladder   []media.Rung  // nil means media.Ladder
	Start    rate.Bitrate  // the initial target; 0 means 500 kb/s (the sender's default)
	FPS      int           // the source's frame rate; 0 means 30
	Replen   time.Duration // the replenish time; 0 means 15 ms
	Encoder  EncoderModel
	// NoPacing leaves the stream's CUBIC unpaced at every frame rate. The
	// sender paces its socket where the source's frame interval is at
	// least transport/tcp's LongFrame (BBR paces either way).
	NoPacing bool
	// Estimator selects the drain-rate estimator's semantics.
	Estimator Estimator
	// KeyframeEvery requests a keyframe this often (a viewer's PLI); 0
	// means never (keyframes come only at the start and with a new rung).
	KeyframeEvery time.Duration
	// NewController builds the controller; nil means
	// sender.NewController.
	NewController func(ladder []media.Rung, start rate.Bitrate) Controller
	// Trace, if set, sees every observation and decision.
	Trace func(o sender.Observation, d sender.Decision)
}

// Errors returned by Run.
var ErrConfig = errors.New("pathmodel: bad configuration")

// drainTail is how long a run continues after Duration so that the last
// measured frames arrive.
const drainTail = 5 * time.Second

// epoch is the wall-clock time the controller sees at virtual time 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c Config) withDefaults() (Config, error) {
	if c.Path.Rate <= 0 || c.Path.RTT <= 0 {
		return c, fmt.Errorf("%w: path needs a rate and an RTT", ErrConfig)
	}
	for _, st := range c.Path.Steps {
		if st.At <= 0 || st.Rate < 0 || st.RTT < 0 {
			return c, fmt.Errorf("%w: step %+v", ErrConfig, st)
		}
	}
	if c.Path.Loss < 0 || c.Path.Loss >= 1 {
		return c, fmt.Errorf("%w: loss %v", ErrConfig, c.Path.Loss)
	}
	if c.Path.CrossUntil < 0 {
		return c, fmt.Errorf("%w: competing flows until %v", ErrConfig, c.Path.CrossUntil)
	}
	if c.Path.Jitter < 0 {
		return c, fmt.Errorf("%w: jitter %v", ErrConfig, c.Path.Jitter)
	}
	if c.Path.Cross < 0 || c.Path.Cross > MaxCross {
		return c, fmt.Errorf("%w: %d competing flows (at most %d)", ErrConfig, c.Path.Cross, MaxCross)
	}
	if c.Path.Queue == 0 {
		c.Path.Queue = 100 * time.Millisecond
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 10 * time.Second
	}
	if c.Warmup >= c.Duration {
		return c, fmt.Errorf("%w: warm-up %v not shorter than the run %v", ErrConfig, c.Warmup, c.Duration)
	}
	if c.Ladder == nil {
		c.Ladder = media.Ladder
	}
	if len(c.Ladder) == 0 {
		return c, fmt.Errorf("%w: empty ladder", ErrConfig)
	}
	if c.Start == 0 {
		c.Start = 500 * rate.Kbps
	}
	if c.FPS == 0 {
		c.FPS = 30
	}
	if c.Replen == 0 {
		c.Replen = 15 * time.Millisecond
	}
	if c.NewController == nil {
		c.NewController = func(l []media.Rung, s rate.Bitrate) Controller { return sender.NewController(l, s) }
	}
	c.Encoder = c.Encoder.withDefaults()
	return c, nil
}

// Run simulates one run and returns its frames and summary. It returns an
// error wrapping ErrConfig for an unusable configuration.
func Run(cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newSim(cfg)
	end := cfg.Duration + drainTail
	for {
		ev, ok := s.q.pop()
		if !ok || ev.at > end {
			break
		}
		s.dispatch(ev)
	}
	return s.result(), nil
}

func newSim(cfg Config) *sim {
	s := &sim{cfg: cfg, sched: newSchedule(cfg.Path)}
	s.rng = rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	s.jitterRng = rand.New(rand.NewPCG(cfg.Seed, 0x117e))
	limit := max(cfg.Path.Rate.Bytes(cfg.Path.Queue), 2*(mss+tcpIPHeader))
	s.link = link{sched: &s.sched, limit: limit}
	s.tcp = &tcp{s: s, delAck: cfg.Path.DelayedAck}
	s.tcp.handshake(s.sched.rttAt(0) + s.sched.rateAt(0).Duration(synBytes))
	switch cfg.Path.CC {
	case BBR:
		b := newBBR(s.rng)
		s.tcp.cc = b
	default:
		c := newCubic()
		c.paced = !cfg.NoPacing && tcptransport.LongFrames(cfg.FPS) // as cmd/sender
		s.tcp.cc = c
		s.tcp.slowStart = c.slowStart
	}
	s.crossRng = rand.New(rand.NewPCG(cfg.Seed, 0xc055))
	for i := range cfg.Path.Cross {
		c := &tcp{s: s, flow: uint8(i + 1), delAck: cfg.Path.DelayedAck}
		c.handshake(s.sched.rttAt(0) + s.sched.rateAt(0).Duration(synBytes))
		if cfg.Path.CC == BBR {
			c.cc = newBBR(s.crossRng)
		} else {
			cu := newCubic()
			c.cc, c.slowStart = cu, cu.slowStart
		}
		s.cross = append(s.cross, c)
	}
	s.est = newDrainEstimator(cfg.Estimator)
	s.enc = encoder{m: cfg.Encoder, rng: rand.New(rand.NewPCG(cfg.Seed, 0xe2c)), srcFPS: cfg.FPS}
	s.ctrl = cfg.NewController(cfg.Ladder, cfg.Start)
	s.rung = s.ctrl.Rung()
	s.interval = s.rung.Interval(cfg.FPS)
	s.latestRung = s.rung
	s.srcInterval = time.Second / time.Duration(cfg.FPS)
	s.phase = time.Duration(s.rng.Int64N(int64(s.srcInterval)))
	s.latest = -1
	s.lastTaken = -1
	s.q.push(s.phase, evTick, 0)
	s.state = appWaiting
	s.checkInvite(0)
	for _, c := range s.cross {
		c.write(0, 1<<40)
	}
	if len(s.cross) > 0 && cfg.Path.CrossUntil > 0 {
		s.q.push(cfg.Path.CrossUntil, evCrossEnd, 0)
	}
	return s
}

func (s *sim) dispatch(ev event) {
	switch ev.kind {
	case evTick:
		s.onTick(ev.at, ev.arg)
	case evRecv:
		s.flowTCP(ev.flow).onRecv(ev.at, ev.arg)
		return // the receiver's: nothing the sender sees has changed
	case evDelAck:
		s.flowTCP(ev.flow).onDelAck(ev.at, ev.arg)
		return
	case evAck:
		s.flowTCP(ev.flow).onAck(ev.at, ev.arg)
	case evWrite:
		s.onWrite(ev.at)
	case evPace:
		s.flowTCP(ev.flow).onPace(ev.at)
	case evLoss:
		s.flowTCP(ev.flow).onLossTimer(ev.at, ev.arg)
	case evCrossEnd:
		for _, c := range s.cross {
			c.written = c.sndNxt // nothing more to send beyond what is in flight
		}
	}
	if ev.kind != evTick && ev.kind != evWrite {
		s.checkInvite(ev.at)
	}
}

// bottleneck offers a packet of n bytes of TCP flow flow leaving the host
// at t to the path. Only first transmissions count toward utilization,
// and only the stream's (flow 0) toward its counts.
func (s *sim) bottleneck(t time.Duration, n int, first bool, flow uint8) (start, depart time.Duration, dropped bool) {
	stream := flow == 0
	rng, util := s.rng, &s.util
	if !stream {
		rng, util = s.crossRng, &s.crossUtil
	}
	if s.cfg.Path.Loss > 0 && rng.Float64() < s.cfg.Path.Loss {
		dropped = true
	} else {
		start, depart, dropped = s.link.send(t, n)
	}
	switch {
	case dropped:
		if stream {
			s.drops++
		}
	case first:
		util.add(depart, n)
	case stream:
		s.retrans++
	}
	return start, depart, dropped
}
