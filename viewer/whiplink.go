package viewer

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
)

// WebRTC link limits.
const (
	// whipInQueue is how many packets the reader goroutines may have
	// handed over and the per-connection loop not yet taken; beyond it
	// they wait, and pion's own bounded buffer takes the rest.
	whipInQueue = 256
	// whipReorderSize is how many packets the reorder buffer holds: a
	// second of 8 Mb/s video in 1200-byte packets.
	whipReorderSize = 1024
	// maxRTCPRead is the largest RTCP compound packet read from a
	// publisher, in bytes.
	maxRTCPRead = 8 << 10
)

// errRTCFailed wraps the reason a WebRTC connection ended on its own.
var errRTCFailed = errors.New("viewer: WebRTC connection ended")

// whipLink is a WHIP publisher's connection: one pion PeerConnection
// receiving one VP8 track. Its reader goroutines (one for RTP, which is
// the goroutine pion starts for the track, and one for RTCP) hand
// packets to next through a bounded channel. next puts RTP packets back
// in sequence order (reorder), drops padding-only packets (bandwidth
// probes) and renumbers the rest so that they leave no gap, and keeps one
// header extension, abs-capture-time, moved to the ID the assembler reads
// (framer.AbsCaptureTimeID): the publisher's other extensions could sit
// at that ID.
type whipLink struct {
	pc         *pion.PeerConnection
	remoteAddr string
	log        *slog.Logger
	in         chan rtcIn
	failed     chan struct{} // closed by fail
	failOnce   sync.Once
	err        error // why the link stopped; written before failed is closed
	closeOnce  sync.Once
	wg         sync.WaitGroup // the reader goroutines

	mu        sync.Mutex // guards following fields
	closed    bool       // close has begun: no new readers
	haveTrack bool

	// Owned by next's goroutine.
	ro      *reorder
	padding uint16 // padding-only packets dropped so far
	timer   *time.Timer
	buf     []byte
}

// rtcIn is one packet from a reader goroutine: RTP with the negotiated
// abs-capture-time ID (0: none), or an RTCP compound packet.
type rtcIn struct {
	rtp   *rtp.Packet
	extID uint8
	rtcp  []byte
	at    time.Time
}

var _ senderLink = (*whipLink)(nil)

// newWHIPLink returns the link of pc, which must not have its remote
// description yet; it starts reading once pion reports the track.
// reorderWait is how long a missing packet is waited for.
func newWHIPLink(pc *pion.PeerConnection, remote string, reorderWait time.Duration, log *slog.Logger) *whipLink {
	l := &whipLink{
		pc: pc, remoteAddr: remote, log: log,
		in:     make(chan rtcIn, whipInQueue),
		failed: make(chan struct{}),
		ro:     newReorder(whipReorderSize, reorderWait),
	}
	pc.OnTrack(l.onTrack)
	pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		log.Debug("WHIP peer connection", "state", s.String())
		switch s {
		case pion.PeerConnectionStateFailed, pion.PeerConnectionStateClosed:
			l.fail(fmt.Errorf("%w: %s", errRTCFailed, s))
		}
	})
	return l
}

// onTrack reads the publisher's first video track until the connection
// ends; it runs on the goroutine pion starts for it.
func (l *whipLink) onTrack(track *pion.TrackRemote, recv *pion.RTPReceiver) {
	l.mu.Lock()
	if l.closed || l.haveTrack || track.Kind() != pion.RTPCodecTypeVideo {
		l.mu.Unlock()
		return
	}
	l.haveTrack = true
	l.wg.Add(2)
	l.mu.Unlock()
	var extID uint8
	for _, e := range recv.GetParameters().HeaderExtensions {
		if e.URI == framer.AbsCaptureTimeURI && e.ID > 0 && e.ID < 256 {
			extID = uint8(e.ID)
		}
	}
	l.log.Debug("WHIP track", "ssrc", uint32(track.SSRC()), "codec", track.Codec().MimeType, "abs_capture_time_id", extID)
	go func() {
		defer l.wg.Done()
		l.readRTCP(recv)
	}()
	defer l.wg.Done()
	for {
		p, _, err := track.ReadRTP()
		if err != nil {
			l.fail(fmt.Errorf("%w: reading RTP: %w", errRTCFailed, err))
			return
		}
		if !l.hand(rtcIn{rtp: p, extID: extID, at: time.Now()}) {
			return
		}
	}
}

// readRTCP reads the publisher's RTCP (through pion's interceptors) until
// the connection ends: its SDES and timing reports go to next.
func (l *whipLink) readRTCP(recv *pion.RTPReceiver) {
	buf := make([]byte, maxRTCPRead)
	for {
		n, _, err := recv.Read(buf)
		if err != nil {
			l.fail(fmt.Errorf("%w: reading RTCP: %w", errRTCFailed, err))
			return
		}
		if !l.hand(rtcIn{rtcp: append([]byte(nil), buf[:n]...), at: time.Now()}) {
			return
		}
	}
}

// hand passes in to next; it reports false once the link has failed.
func (l *whipLink) hand(in rtcIn) bool {
	select {
	case l.in <- in:
		return true
	case <-l.failed:
		return false
	}
}

func (l *whipLink) fail(err error) {
	l.failOnce.Do(func() {
		l.err = err
		close(l.failed)
	})
}

func (l *whipLink) next(deadline time.Time) (arrival, error) {
	for {
		if p, ok := l.ro.pop(time.Now()); ok {
			if pkt, ok := l.normalize(p); ok {
				return arrival{pkt: pkt}, nil
			}
			continue
		}
		wake := deadline
		if due, ok := l.ro.due(); ok && due.Before(wake) {
			wake = due
		}
		if l.timer == nil {
			l.timer = time.NewTimer(time.Until(wake))
		} else {
			l.timer.Reset(time.Until(wake))
		}
		select {
		case in := <-l.in:
			if in.rtcp != nil {
				return arrival{pkt: in.rtcp}, nil
			}
			in.rtp.Header.Extensions = keepExtension(in.rtp.Header, in.extID)
			l.ro.push(in.rtp, in.at)
		case <-l.timer.C:
			if !time.Now().Before(deadline) {
				return arrival{}, fmt.Errorf("webrtc: %w", os.ErrDeadlineExceeded)
			}
		case <-l.failed:
			return arrival{}, l.err
		}
	}
}

// keepExtension returns h's extensions reduced to the one with id (none
// for id 0), renumbered framer.AbsCaptureTimeID.
func keepExtension(h rtp.Header, id uint8) []rtp.Extension {
	var payload []byte
	if id != 0 {
		payload = h.GetExtension(id)
	}
	h.Extensions, h.Extension = nil, false
	if payload == nil || h.SetExtension(framer.AbsCaptureTimeID, payload) != nil {
		return nil
	}
	return h.Extensions
}

// normalize returns p marshalled for the per-connection loop: without
// padding, with at most the abs-capture-time extension, renumbered past
// the padding-only packets dropped before it. It reports false for a
// padding-only packet, which it drops.
func (l *whipLink) normalize(p *rtp.Packet) ([]byte, bool) {
	if len(p.Payload) == 0 {
		l.padding++
		return nil, false
	}
	h := &p.Header
	h.SequenceNumber -= l.padding
	h.Extension = len(h.Extensions) > 0
	h.ExtensionProfile = 0
	if h.Extension {
		h.ExtensionProfile = rtp.ExtensionProfileOneByte
	}
	h.Padding, h.PaddingSize, p.PaddingSize = false, 0, 0
	size := p.MarshalSize()
	if cap(l.buf) < size {
		l.buf = make([]byte, size)
	}
	n, err := p.MarshalTo(l.buf[:size])
	if err != nil {
		l.log.Debug("WHIP packet dropped", "err", err)
		return nil, false
	}
	return l.buf[:n], true
}

func (l *whipLink) writeControl(pkt []byte, _ time.Time) error {
	pkts, err := rtcp.Unmarshal(pkt)
	if err != nil {
		return err
	}
	return l.pc.WriteRTCP(pkts)
}

// close ends the connection: next returns cause (or the failure that came
// first), and the PeerConnection closes, which ends the readers. It
// blocks until pion has stopped; it must not be called from a pion
// callback.
func (l *whipLink) close(cause error) {
	l.closeOnce.Do(func() {
		if cause == nil {
			cause = errShutdown
		}
		l.fail(cause)
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.pc.GracefulClose()
	})
}

// wait waits for the reader goroutines, which end once the link is
// closed.
func (l *whipLink) wait() { l.wg.Wait() }

// dropped returns the packets the reorder buffer dropped as late or
// duplicated, and gave up waiting for. Call it from next's goroutine, or
// after the link's goroutines have ended.
func (l *whipLink) dropped() (late, duplicates, skipped uint64) {
	return l.ro.late, l.ro.duplicates, l.ro.skipped
}

func (l *whipLink) remote() string    { return l.remoteAddr }
func (l *whipLink) transport() string { return transportWebRTC }
