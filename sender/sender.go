// Package sender is the sending half of replenish: on each invitation from
// its transport it takes the freshest raw frame from the source (no more
// often than the resolution rung's frame rate), has its rate controller
// choose a resolution and bitrate for the path, encodes, packetizes and
// writes. A raw frame that is never invited is never encoded.
package sender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"replenish/framer"
	"replenish/media"
	"replenish/metrics"
	"replenish/rate"
	"replenish/transport"
)

// Transport carries frames to a viewer. The sender drives it from one
// goroutine and does not know which transport it is.
type Transport interface {
	// Wait blocks until the transport invites one more frame.
	Wait(ctx context.Context) (transport.Invitation, error)
	// WriteFrame writes pkts (control packets, then one frame's media
	// packets) in one write. Send records for it reach the sender through
	// its Sent method, which the transport calls later.
	WriteFrame(id uint64, pkts [][]byte) error
	// SetLead declares how long the sender needs from an invitation to its
	// write (see transport.Conn).
	SetLead(d time.Duration) error
}

// Config configures a Sender. Zero values mean the stated defaults.
type Config struct {
	Source *media.Source // required; the sender sets its size
	Name   string        // stream name sent to the viewer; "" means "replenish"
	// Mode is the buffer policy as the viewer shows it beside the stream's
	// name, such as "replenish=15ms" (sent in the SDES NOTE item, 1 to 64
	// bytes of text); "" sends none.
	Mode    string
	MaxSize media.Size // largest rung used; zero means the whole ladder
	// Start is the initial target; zero means 500 kb/s. Over a transport
	// that reports no drain rate (no source buffer management), the target
	// stays there unless frames are discarded waiting for the transport.
	Start rate.Bitrate
	FPS   int    // the source's frame rate; zero means 30
	SSRC  uint32 // zero means random
	// MaxPacketSize is the largest RTP packet, header included; zero
	// means framer.DefaultRTPPacketSize, which fits a datagram. Over a
	// byte stream (TCP, a QUIC stream) it may be up to
	// framer.MaxPacketSize.
	MaxPacketSize int
	// MinKeyframeGap rate-limits requested keyframes; zero means 500 ms.
	MinKeyframeGap time.Duration
	// Scalability is the encoder's temporal layering; zero means L1T1
	// (none). With media.L1T3 every frame's layer goes in its RTP payload
	// descriptor, so that a relay can drop the upper layers.
	Scalability media.Scalability
	// OnFrame, if set, receives each frame's record once its departure is
	// known (or known to be unknown). It is called with the Sender's lock
	// held and must not call back into the Sender.
	OnFrame func(FrameRecord)
	Logger  *slog.Logger
	// NewEncoder makes the encoder, on the first frame, at that frame's
	// size and the target then; required. The sender keeps it across
	// reconnections and rung changes, and closes it in Close.
	NewEncoder NewEncoderFunc
}

// FrameRecord is what the sender knows of one frame it wrote.
type FrameRecord struct {
	ID           uint64
	RTPTimestamp uint32
	Size         media.Size
	Key          bool
	Bytes        int // encoded size (the write adds RTP and framing)
	Capture      time.Time
	EncodeStart  time.Time
	EncodeEnd    time.Time
	WriteStart   time.Time
	WriteEnd     time.Time
	LeftHost     time.Time // zero if unknown
	Written      int       // bytes written for it: its RTP packets and the control packets sent with them
	Target       rate.Bitrate
	DrainRate    rate.Bitrate
	AppLimited   bool
	Skipped      int // raw frames discarded unseen before this one
	Retransmits  int // the connection's retransmitted segments before the write
	// Drain and Lead are the invitation's: what its drain rate rests on,
	// and the production time it allowed for.
	Drain transport.DrainRecord
	Lead  time.Duration
	// Control is the rate controller's state after the update that chose
	// Target (zero in modes without a drain rate, where it does not act).
	Control ControlState
}

// Limits on what the sender keeps.
const (
	maxPending    = 512 // frames written whose send record has not arrived
	maxReport     = 64  // timings waiting to be reported to the viewer
	sdesInterval  = 5 * time.Second
	statusSpan    = 5 * time.Second
	statusSamples = 4096
)

// reportEvery is the shortest time between two timing reports. A report is
// 34 bytes and 32 more per frame: sent with every frame it would cost
// 66 bytes a frame, 8% of a 100 kb/s link at 15 fps; batched over 200 ms
// (three to six frames), about half that, and reportShare bounds the rest.
// The viewer joins timings to frames whenever they arrive.
const reportEvery = 200 * time.Millisecond

// Sender encodes and sends one stream. Its methods are safe for concurrent
// use, but Run must not be called concurrently with itself.
type Sender struct {
	cfg    Config
	log    *slog.Logger
	ssrc   uint32
	ctrl   *Controller
	pkt    *framer.Packetizer
	enc    Encoder   // owned by Run's goroutine
	prev   prevFrame // what the previous frame cost; Run's goroutine
	lead   LeadMeter // encode times; Run's goroutine
	keyReq atomic.Bool
	offset atomic.Int64 // viewer clock minus sender clock, ns; see SetClockOffset

	mu        sync.Mutex // guards the fields below
	nextID    uint64
	pending   map[uint64]frameTiming
	report    []framer.FrameTiming
	lastKey   time.Time
	lastSDES  time.Time
	lastRep   time.Time // when the last timing report was sent
	status    Status
	delays    *metrics.Window // source delay, ms
	sentBits  *metrics.Window // bits per encoded frame
	encoded   *metrics.Window // one per encoded frame
	reportLim int             // counted drops of timings that could not be reported
}

// prevFrame is what the previous frame cost, for the controller.
type prevFrame struct {
	key              bool
	encoded, written int // bytes
	encode           time.Duration
}

// size returns the total length of pkts.
func size(pkts [][]byte) int {
	n := 0
	for _, p := range pkts {
		n += len(p)
	}
	return n
}

// frameTiming is what the sender keeps of a frame until its send record
// arrives.
type frameTiming struct {
	rtpTS            uint32
	capture          time.Time
	encStart, encEnd time.Time
	bytes, written   int
	size             media.Size
	key              bool
	target, drain    rate.Bitrate
	control          ControlState
	appLimited       bool
	skipped          int
	drainRec         transport.DrainRecord
	lead             time.Duration
}

// Status is a snapshot for a status line.
type Status struct {
	Size           media.Size
	Target         rate.Bitrate // the encoder's current target
	Bitrate        rate.Bitrate // encoded output over the last second
	FPS            float64      // frames encoded per second over the last second
	DrainRate      rate.Bitrate // the transport's latest estimate
	SourceDelayP50 time.Duration
	SourceDelayP95 time.Duration
	Frames         uint64 // frames encoded
	Keyframes      uint64
	Discarded      uint64 // raw frames never encoded
	NoDeparture    uint64 // frames written whose departure time is unknown
	ClockOffset    time.Duration
	ReportsDropped int
	SourceDelayN   int
	LastInvitation transport.Invitation
}

// New returns a Sender. It starts nothing.
func New(cfg Config) (*Sender, error) {
	if cfg.Source == nil {
		return nil, errors.New("sender: no source")
	}
	if cfg.NewEncoder == nil {
		return nil, errors.New("sender: no NewEncoder")
	}
	if cfg.Name == "" {
		cfg.Name = "replenish"
	}
	if err := framer.ValidateStreamName(cfg.Name); err != nil {
		return nil, fmt.Errorf("sender: stream name: %w", err)
	}
	if cfg.Mode != "" {
		if err := framer.ValidateStreamName(cfg.Mode); err != nil {
			return nil, fmt.Errorf("sender: mode text: %w", err)
		}
	}
	if err := cfg.Scalability.Check(); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	if cfg.Start == 0 {
		cfg.Start = 500 * rate.Kbps
	}
	if cfg.FPS == 0 {
		cfg.FPS = 30
	}
	if cfg.MinKeyframeGap == 0 {
		cfg.MinKeyframeGap = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ladder := media.Ladder
	if cfg.MaxSize != (media.Size{}) {
		ladder = media.RungFor(cfg.MaxSize)
		if len(ladder) == 0 {
			return nil, fmt.Errorf("sender: no rung at or below %v", cfg.MaxSize)
		}
	}
	ssrc := cfg.SSRC
	for ssrc == 0 {
		ssrc = rand.Uint32()
	}
	s := &Sender{
		cfg:      cfg,
		log:      cfg.Logger,
		ssrc:     ssrc,
		ctrl:     NewController(ladder, cfg.Start),
		pkt:      framer.NewPacketizer(framer.PacketizerConfig{SSRC: ssrc, MaxPacketSize: cfg.MaxPacketSize}),
		pending:  make(map[uint64]frameTiming),
		delays:   metrics.NewWindow(statusSpan, statusSamples),
		sentBits: metrics.NewWindow(time.Second, 1024),
		encoded:  metrics.NewWindow(time.Second, 1024),
	}
	cfg.Source.SetSize(s.ctrl.Rung().Size)
	return s, nil
}

// SSRC returns the stream's RTP SSRC.
func (s *Sender) SSRC() uint32 { return s.ssrc }

// RequestKeyframe asks for a keyframe as soon as the rate limit allows. It
// does not block.
func (s *Sender) RequestKeyframe() { s.keyReq.Store(true) }

// SetClockOffset records the viewer's clock minus the sender's, as measured
// on a side channel; it is reported to the viewer with the frame timings.
func (s *Sender) SetClockOffset(d time.Duration) { s.offset.Store(int64(d)) }

// Close releases the encoder. Call it after Run has returned.
func (s *Sender) Close() error {
	if s.enc != nil {
		err := s.enc.Close()
		s.enc = nil
		return err
	}
	return nil
}

// Run sends the stream over t until ctx is done or t fails; it returns the
// error that stopped it. The first frame is a keyframe, so that a viewer
// can start decoding after every (re)connection.
func (s *Sender) Run(ctx context.Context, t Transport) error {
	s.keyReq.Store(true)
	s.mu.Lock()
	s.lastSDES = time.Time{}
	s.lastRep = time.Time{}
	s.lastKey = time.Time{}
	clear(s.pending)
	s.report = s.report[:0]
	s.mu.Unlock()
	first := true
	var last time.Time // capture time of the previous frame taken
	for {
		waitFrom := time.Now()
		inv, err := t.Wait(ctx)
		if err != nil {
			return err
		}
		waited := time.Since(waitFrom)
		interval := s.ctrl.Interval(s.cfg.FPS)
		var notBefore time.Time
		if !first {
			// Half a source interval early, so that the source's
			// frame due then is not missed.
			notBefore = last.Add(interval - time.Second/time.Duration(s.cfg.FPS)/2)
		}
		f, discarded, err := s.nextFrame(ctx, notBefore)
		if err != nil {
			return err
		}
		var sk skips // frames lost while disconnected are not a rate signal
		if !first {
			sk = skipsOf(f.Capture.Sub(last), waited, interval)
		}
		first, last = false, f.Capture
		if err := s.sendFrame(t, inv, f, sk, discarded); err != nil {
			return err
		}
	}
}

// SkippedFrames returns how many frames at the given interval a gap
// between two captures left out: the frames the rung's rate would have
// taken had invitations come in time.
func SkippedFrames(gap, interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	return max(0, int(math.Round(float64(gap)/float64(interval)))-1)
}

// skips are the frames a gap between two captures left out, and how many
// of them fell while the sender waited for the invitation (see
// Observation).
type skips struct{ all, late int }

// skipsOf returns the skips of a gap between captures of which the sender
// spent waited waiting for the invitation: whole intervals of the wait,
// at most the gap's skipped frames.
func skipsOf(gap, waited, interval time.Duration) skips {
	all := SkippedFrames(gap, interval)
	if interval <= 0 {
		return skips{all: all}
	}
	return skips{all: all, late: min(all, int(waited/interval))}
}

// nextFrame returns the freshest frame the source has, if it was captured
// at or after notBefore, waiting for one otherwise: the rung's frame rate
// takes frames no more often than its interval, while the source keeps
// rendering at its own clock.
// It also returns how many raw frames were discarded unseen or too early.
func (s *Sender) nextFrame(ctx context.Context, notBefore time.Time) (*media.Frame, int, error) {
	src := s.cfg.Source
	discarded := 0
	for {
		if f, n, ok := src.Take(); ok {
			discarded += n
			if !f.Capture.Before(notBefore) {
				return f, discarded, nil
			}
			src.Release(f)
			discarded++
		}
		select {
		case <-ctx.Done():
			return nil, discarded, ctx.Err()
		case <-src.Ready():
		}
	}
}

func (s *Sender) sendFrame(t Transport, inv transport.Invitation, f *media.Frame, sk skips, discarded int) error {
	now := time.Now()
	d := s.ctrl.Update(Observation{
		Now: now, DrainRate: inv.DrainRate, WindowBound: inv.Drain.Estimate.Source.WindowBound(), AppLimited: inv.AppLimited, Aged: inv.Aged, Unsent: inv.Unsent,
		Newest: inv.Drain.Estimate.Newest, NewestAt: inv.Drain.Estimate.NewestAt,
		RTT: inv.RTT, MinRTT: inv.MinRTT, Sent: inv.Sent, Lost: inv.Lost, Skipped: sk.all, Late: sk.late, Keyframe: s.prev.key,
		Encoded: s.prev.encoded, Written: s.prev.written, EncodeTime: s.prev.encode, Target: inv.Target,
		HeadWait: inv.HeadWait, HeadWaitAt: inv.HeadWaitAt, HeadWaitRepaired: inv.HeadWaitRepaired, LatestRTT: inv.LatestRTT, LatestRTTAt: inv.LatestRTTAt,
	})
	control := s.ctrl.State()
	if pc, ok := t.(pacingCapper); ok && inv.DrainRate > 0 {
		if err := pc.CapPacing(pacingCap(control)); err != nil {
			s.cfg.Source.Release(f)
			return err
		}
	}
	if d.RungChanged {
		s.cfg.Source.SetSize(d.Rung.Size) // frames rendered from now on
		s.log.Debug("rung", "size", d.Rung.Size, "target", d.Bitrate)
	}
	if err := s.ensureEncoder(f.Size, d.Bitrate); err != nil {
		s.cfg.Source.Release(f)
		return err
	}
	key := s.takeKeyframe(now)
	// One frame interval's worth of bits, whatever the gap since the last
	// frame taken (see vpx.Encoder.Encode).
	f.Interval = d.FrameInterval(media.RungOf(f.Size), s.cfg.FPS)
	ef, err := s.enc.Encode(f, key)
	capture := f.Capture
	s.cfg.Source.Release(f)
	if err != nil {
		return fmt.Errorf("sender: encode: %w", err)
	}
	mpkts, ts, err := s.pkt.PacketizeLayer(ef.Data, capture, framer.Layer(ef.Layer))
	if err != nil {
		return fmt.Errorf("sender: packetize: %w", err)
	}

	s.mu.Lock()
	id := s.nextID
	s.nextID++
	if ef.Key {
		s.lastKey = ef.End
		s.status.Keyframes++
	}
	pkts := s.controlLocked(now, inv)
	s.prev = prevFrame{key: ef.Key, encoded: len(ef.Data), written: size(pkts) + size(mpkts), encode: ef.End.Sub(ef.Start)}
	s.trackLocked(id, frameTiming{
		rtpTS: ts, capture: capture, encStart: ef.Start, encEnd: ef.End, bytes: len(ef.Data), written: s.prev.written,
		size: ef.Size, key: ef.Key, target: d.Bitrate, drain: inv.DrainRate, appLimited: inv.AppLimited, skipped: sk.all,
		drainRec: inv.Drain, lead: inv.Lead, control: control,
	})
	s.status.Frames++
	s.status.Discarded += uint64(discarded)
	s.status.Size = ef.Size
	s.status.Target = d.Bitrate
	s.status.DrainRate = inv.DrainRate
	s.status.LastInvitation = inv
	s.sentBits.Add(ef.End, float64(8*len(ef.Data)))
	s.encoded.Add(ef.End, 1)
	s.mu.Unlock()

	if err := t.SetLead(s.lead.Add(ef.End.Sub(ef.Start))); err != nil {
		return err
	}
	return t.WriteFrame(id, append(pkts, mpkts...))
}

// ensureEncoder creates the encoder on first use and applies the bitrate.
// The encoder re-initialises itself when the frame size changes.
func (s *Sender) ensureEncoder(size media.Size, b rate.Bitrate) error {
	if s.enc == nil {
		enc, err := s.cfg.NewEncoder(media.EncoderConfig{Size: size, Bitrate: b, FPS: s.cfg.FPS, Scalability: s.cfg.Scalability})
		if err != nil {
			return fmt.Errorf("sender: %w", err)
		}
		s.enc = enc
		return nil
	}
	// Small changes are not worth a rate-control reconfiguration.
	if cur := s.enc.Bitrate(); cur > 0 && b > cur.Scale(1-bitrateStep) && b < cur.Scale(1+bitrateStep) {
		return nil
	}
	return s.enc.SetBitrate(b)
}

// bitrateStep is the relative change of target below which the encoder
// keeps its bitrate.
const bitrateStep = 0.05

// takeKeyframe reports whether this frame should be a keyframe: one is
// pending and the last keyframe is at least MinKeyframeGap old. The first
// keyframe after Run starts is never delayed.
func (s *Sender) takeKeyframe(now time.Time) bool {
	if !s.keyReq.Load() {
		return false
	}
	s.mu.Lock()
	last := s.lastKey
	s.mu.Unlock()
	if !last.IsZero() && now.Sub(last) < s.cfg.MinKeyframeGap {
		return false
	}
	return s.keyReq.CompareAndSwap(true, false)
}

// controlLocked returns the RTCP packets to send ahead of the next frame: the
// stream's name now and then, and the timings of frames that have left, at
// most every reportEvery and within reportShare of the target (at once on a
// new connection).
func (s *Sender) controlLocked(now time.Time, inv transport.Invitation) [][]byte {
	var pkts [][]byte
	if s.lastSDES.IsZero() || now.Sub(s.lastSDES) >= sdesInterval {
		if p, err := framer.MarshalSDES(s.ssrc, fmt.Sprintf("replenish-%08x", s.ssrc), s.cfg.Name, s.cfg.Mode); err == nil {
			pkts = append(pkts, p)
			s.lastSDES = now
		} else {
			s.log.Warn("stream name not sent", "err", err)
		}
	}
	due, keep := len(s.report) > 0, len(s.report)
	if !s.lastRep.IsZero() {
		due, keep = ReportPlan(now.Sub(s.lastRep), s.status.Target, len(s.report))
	}
	if due {
		s.lastRep = now
		r := framer.SenderReport{
			ClockOffset: time.Duration(s.offset.Load()),
			DrainRate:   inv.DrainRate,
			Target:      s.status.Target,
			Frames:      sampleOf(s.report, keep),
		}
		if p, err := r.Marshal(s.ssrc); err == nil {
			pkts = append(pkts, p)
		} else {
			s.log.Warn("timing report not sent", "err", err)
		}
		s.report = s.report[:0]
	}
	return pkts
}

// trackLocked remembers a frame until its send record arrives, evicting the
// oldest beyond maxPending.
func (s *Sender) trackLocked(id uint64, ft frameTiming) {
	s.pending[id] = ft
	if len(s.pending) > maxPending {
		old := id - maxPending
		if ft, ok := s.pending[old]; ok {
			delete(s.pending, old)
			s.reportLocked(old, ft, transport.SendRecord{ID: old})
		}
	}
}

// Sent takes a transport's send record for a frame written by Run. Connect
// hands it to each connection's transport.Handler; it is safe to call from
// any goroutine.
func (s *Sender) Sent(rec transport.SendRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ft, ok := s.pending[rec.ID]
	if !ok {
		return
	}
	delete(s.pending, rec.ID)
	s.reportLocked(rec.ID, ft, rec)
}

func (s *Sender) reportLocked(id uint64, ft frameTiming, rec transport.SendRecord) {
	if s.cfg.OnFrame != nil {
		s.cfg.OnFrame(FrameRecord{
			ID: id, RTPTimestamp: ft.rtpTS, Size: ft.size, Key: ft.key, Bytes: ft.bytes,
			Capture: ft.capture, EncodeStart: ft.encStart, EncodeEnd: ft.encEnd,
			WriteStart: rec.WriteStart, WriteEnd: rec.WriteEnd, LeftHost: rec.LeftHost, Written: ft.written,
			Target: ft.target, DrainRate: ft.drain, AppLimited: ft.appLimited, Skipped: ft.skipped,
			Retransmits: rec.Retransmits, Drain: ft.drainRec, Lead: ft.lead, Control: ft.control,
		})
	}
	since := func(t time.Time) time.Duration {
		if t.IsZero() {
			return -1
		}
		return t.Sub(ft.capture)
	}
	timing := framer.FrameTiming{
		RTPTimestamp: ft.rtpTS,
		Capture:      ft.capture,
		EncodeStart:  since(ft.encStart),
		EncodeEnd:    since(ft.encEnd),
		WriteStart:   since(rec.WriteStart),
		LeftHost:     since(rec.LeftHost),
		Bytes:        ft.bytes,
	}
	if d := rec.SourceDelay(); d >= 0 {
		s.delays.Add(rec.LeftHost, float64(d)/float64(time.Millisecond))
	} else {
		s.status.NoDeparture++
	}
	if len(s.report) >= maxReport {
		copy(s.report, s.report[1:])
		s.report = s.report[:len(s.report)-1]
		s.reportLim++
	}
	s.report = append(s.report, timing)
}

// Status returns a snapshot of the sender's state.
func (s *Sender) Status() Status {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	bits, _ := s.sentBits.Sum(now)
	st.Bitrate = rate.Bitrate(bits)
	_, n := s.encoded.Sum(now)
	st.FPS = float64(n)
	sum := metrics.Summarize(s.delays.Values(now))
	st.SourceDelayN = sum.N
	if sum.N > 0 {
		st.SourceDelayP50 = time.Duration(sum.P50 * float64(time.Millisecond))
		st.SourceDelayP95 = time.Duration(sum.P95 * float64(time.Millisecond))
	}
	st.ClockOffset = time.Duration(s.offset.Load())
	st.ReportsDropped = s.reportLim
	return st
}
