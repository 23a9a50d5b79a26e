package pathmodel

import (
	"math/rand/v2"
	"time"

	"replenish/media"
	"replenish/sender"
	"replenish/transport"
)

// sim is one run's state.
type sim struct {
	cfg       Config
	sched     schedule
	link      link
	q         eventQueue
	rng       *rand.Rand
	jitterRng *rand.Rand // its own stream, so that paths without jitter keep their draws
	tcp       *tcp
	cross     []*tcp     // the competing bulk flows (Path.Cross); cross[i].flow is i+1
	crossRng  *rand.Rand // their random loss and BBR phases, apart from the stream's draws
	est       drainEstimator
	enc       encoder
	ctrl      Controller

	// The source and the sender loop.
	srcInterval time.Duration
	phase       time.Duration // the first picture's capture time
	latest      int64         // the newest picture rendered; -1 before the first
	latestRung  media.Rung    // the rung it was rendered at
	rung        media.Rung    // the rung the sender last chose
	interval    time.Duration // and the time between frames it asked for
	lastTaken   int64
	lastWrite   time.Duration // when the last frame was written
	lastReport  time.Duration // when the last timing report was written
	reported    bool          // a timing report was written
	unreported  int           // frames written since
	state       appState
	inv         invitation
	keyReq      bool
	nextKeyReq  time.Duration
	lastKey     time.Duration
	hasKey      bool
	pending     pendingFrame
	prevBytes   int
	prevVideo   int
	prevEncode  time.Duration
	prevKey     bool
	leads       sender.LeadMeter // encode times, as the sender meters them
	lead        time.Duration    // and the lead it last declared

	// Frames written, and where they are in the byte stream.
	frames    []Frame
	offsets   []span
	hostHead  int                 // first frame whose last byte has not left the host
	firstHead int                 // first frame whose first byte has not left the host
	recvHead  int                 // first frame not yet received in full
	heads     transport.HeadWatch // frames' writes against their predecessors' acknowledgements, as the transports pair them

	util      meter
	crossUtil meter // the competing flows' first transmissions
	drops     int
	retrans   int
}

// span is a frame's place in the byte stream: [start, end).
type span struct{ start, end int64 }

// pendingFrame is a frame being encoded.
type pendingFrame struct {
	f     Frame
	bytes int // written bytes
}

// take encodes the newest picture: the controller sees the invitation's
// state and what the sender knows, and decides the rung and bitrate.
func (s *sim) take(now time.Duration) {
	k := s.latest
	skipped, late := 0, 0
	if s.lastTaken >= 0 {
		interval := s.interval
		skipped = sender.SkippedFrames(s.capture(k)-s.capture(s.lastTaken), interval)
		late = min(skipped, int((s.inv.at-s.lastWrite)/interval))
	}
	o := sender.Observation{
		Now: epoch.Add(now), DrainRate: s.inv.drain, WindowBound: s.inv.bound, AppLimited: s.inv.appLimited, Aged: s.inv.aged, Unsent: s.inv.unsent,
		Newest: s.inv.newest, NewestAt: s.inv.newestAt,
		Skipped: skipped, Late: late, Keyframe: s.prevKey, RTT: s.inv.rtt, MinRTT: s.inv.minRTT, Sent: s.inv.sent, Lost: s.inv.lost,
		Encoded: s.prevVideo, Written: s.prevBytes, EncodeTime: s.prevEncode,
	}
	if gap, at, ok := s.heads.Newest(); ok {
		o.HeadWait, o.HeadWaitAt = gap-s.inv.minRTT, at
		o.HeadWaitRepaired = s.heads.Repaired(s.tcp.retransOut)
	}
	if rtt, at, ok := s.heads.LatestRTT(); ok {
		o.LatestRTT, o.LatestRTTAt = rtt, at
	}
	d := s.ctrl.Update(o)
	if s.cfg.Trace != nil {
		s.cfg.Trace(o, d)
	}
	s.rung, s.interval = d.Rung, d.Interval(s.cfg.FPS)
	if cur := s.enc.target; cur <= 0 || d.Bitrate < cur.Scale(1-bitrateStep) || d.Bitrate > cur.Scale(1+bitrateStep) {
		s.enc.setBitrate(d.Bitrate)
	}
	forceKey := s.keyReq && (!s.hasKey || now-s.lastKey >= minKeyGap)
	n, key, et := s.enc.encode(s.latestRung, d.FrameInterval(s.latestRung, s.cfg.FPS), forceKey)
	if key {
		s.keyReq, s.hasKey, s.lastKey = false, true, now+et
	}
	s.lastTaken = k
	s.state = appEncoding
	s.pending = pendingFrame{
		f: Frame{
			Capture: s.capture(k), Taken: now, Write: now + et, LeftHost: -1, Received: -1,
			Key: key, Rung: s.latestRung, Target: d.Bitrate, Skipped: skipped, Video: n, Encode: et,
		},
		bytes: writeBytes(n) + s.reportBytes(now+et, d.Bitrate),
	}
	s.q.push(now+et, evWrite, 0)
}

// onWrite writes the encoded frame and waits for the next invitation.
func (s *sim) onWrite(now time.Duration) {
	p := s.pending
	p.f.Bytes = p.bytes
	p.f.Wire = wireBytes(p.bytes)
	start := s.tcp.written
	s.frames = append(s.frames, p.f)
	s.offsets = append(s.offsets, span{start, start + int64(p.bytes)})
	s.heads.Written(uint32(start+int64(p.bytes)-1), epoch.Add(now), s.tcp.retransOut)
	s.prevBytes, s.prevVideo, s.prevEncode, s.prevKey = p.bytes, p.f.Video, p.f.Encode, p.f.Key
	s.lead = s.leads.Add(p.f.Encode)
	s.state, s.lastWrite = appWaiting, now
	s.est.read(now, s.tcp) // the transport reads TCP_INFO before every write
	s.tcp.write(now, p.bytes)
	s.checkInvite(now)
}

// onLeftHost records a first transmission of stream bytes [a, b) leaving
// the host at t after waiting q in the bottleneck queue (or dropped).
func (s *sim) onLeftHost(a, b int64, t, q time.Duration, dropped bool) {
	for s.firstHead < len(s.frames) && s.offsets[s.firstHead].start < b {
		if dropped {
			q = -1
		}
		s.frames[s.firstHead].Queue = q
		s.firstHead++
	}
	for s.hostHead < len(s.frames) && s.offsets[s.hostHead].end <= b {
		s.frames[s.hostHead].LeftHost = t
		s.heads.Departed(uint32(s.offsets[s.hostHead].end-1), epoch.Add(t))
		s.hostHead++
	}
}

// onReceived records that the receiver holds every byte before off, the
// last of them since t.
func (s *sim) onReceived(off int64, t time.Duration) {
	for s.recvHead < len(s.frames) && s.offsets[s.recvHead].end <= off {
		s.frames[s.recvHead].Received = t
		s.recvHead++
	}
}

// onAcked records that the sender's una passed stream offset off at t.
func (s *sim) onAcked(off int64, t time.Duration) {
	s.heads.Acked(uint32(off-1), epoch.Add(t))
}

// meter counts bytes leaving the bottleneck in 10 ms bins.
type meter struct{ bins []int64 }

const meterBin = 10 * time.Millisecond

func (m *meter) add(t time.Duration, n int) {
	i := int(t / meterBin)
	for len(m.bins) <= i {
		m.bins = append(m.bins, 0)
	}
	m.bins[i] += int64(n)
}

// bytes returns the bytes that left in [a, b), to the bin.
func (m *meter) bytes(a, b time.Duration) int64 {
	var n int64
	for i := int(a / meterBin); i < int(b/meterBin) && i < len(m.bins); i++ {
		n += m.bins[i]
	}
	return n
}

// flowTCP returns TCP flow f: the stream's (0) or a competing one's.
func (s *sim) flowTCP(f uint8) *tcp {
	if f == 0 {
		return s.tcp
	}
	return s.cross[f-1]
}

// jitter draws a packet's extra one-way delay (see Path.Jitter).
func (s *sim) jitter() time.Duration {
	if s.cfg.Path.Jitter <= 0 {
		return 0
	}
	return time.Duration(s.jitterRng.Int64N(int64(s.cfg.Path.Jitter)))
}
