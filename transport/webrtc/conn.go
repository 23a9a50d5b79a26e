package webrtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor/pkg/cc"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
)

// Conn is a WHIP session: one PeerConnection that sends one VP8 track to a
// viewer at the rate pion's congestion control sets.
//
// Wait, WriteFrame and Poll belong to one goroutine, on which send records
// are delivered (Config.Handler.Sent); the viewer's keyframe requests are
// delivered on a goroutine of the Conn's own (Config.Handler.Packet).
// Counters and Close are safe from any goroutine.
type Conn struct {
	cfg  Config
	log  *slog.Logger
	deps *tracker
	hz   *horizon // limits the rate to what GCC's feedback history covers
	win  *window  // holds packets at the pacer while GCC's history would not cover them

	// Set while dialing, read-only afterwards.
	pc      *pion.PeerConnection
	track   *pion.TrackLocalStaticRTP
	sender  *pion.RTPSender
	bwe     cc.BandwidthEstimator
	pacer   *pacer   // the estimator's
	session *url.URL // the WHIP session, nil until the endpoint answered
	wire    uint32   // the media SSRC on the wire
	extID   uint8    // negotiated abs-capture-time ID; 0: not negotiated

	ours      atomic.Int64  // the packetizer's SSRC; -1 until the first frame
	wake      chan struct{} // capacity 1: a frame left, or the connection failed
	connected chan struct{} // closed when the connection first comes up
	upOnce    sync.Once
	dead      chan struct{} // closed by fail, once
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the RTCP reader

	mu     sync.Mutex // guards the fields below
	err    error      // why the connection stopped; nil while it works
	stats  transport.Counters
	rtt    time.Duration // smoothed, from reception reports; 0 until one
	minRTT time.Duration
}

var _ transport.Conn = (*Conn)(nil)

// newConn returns a Conn for cfg with nothing started.
func newConn(cfg Config) *Conn {
	c := &Conn{
		cfg:       cfg,
		log:       cfg.Logger,
		wake:      make(chan struct{}, 1),
		connected: make(chan struct{}),
		dead:      make(chan struct{}),
	}
	c.deps = newTracker(maxInFlight, c.signal)
	c.hz = &horizon{}
	c.win = newWindow(windowPackets, windowTimeout)
	c.ours.Store(-1)
	return c
}

// connect runs the WHIP exchange and waits for ICE and DTLS.
func (c *Conn) connect(ctx context.Context, endpoint *url.URL) error {
	offer, err := c.pc.CreateOffer(nil)
	if err != nil {
		return fmt.Errorf("webrtc: creating the offer: %w", err)
	}
	gathered := pion.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(offer); err != nil {
		return fmt.Errorf("webrtc: setting the offer: %w", err)
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fmt.Errorf("webrtc: gathering ICE candidates: %w", ctx.Err())
	}
	answer, session, err := postOffer(ctx, c.cfg.HTTPClient, endpoint, c.cfg.Token, c.pc.LocalDescription().SDP)
	c.session = session // to DELETE, even if the answer is unusable
	if err != nil {
		return err
	}
	err = c.pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: answer})
	if err != nil {
		return fmt.Errorf("%w: the answer: %w", ErrWHIP, err)
	}
	if err := c.bind(); err != nil {
		return err
	}
	select {
	case <-c.connected:
		return nil
	case <-c.dead:
		return c.failure()
	case <-ctx.Done():
		return fmt.Errorf("webrtc: connecting: %w", ctx.Err())
	}
}

// bind reads what the answer settled: the SSRC on the wire and the
// abs-capture-time extension's ID.
func (c *Conn) bind() error {
	params := c.sender.GetParameters()
	if len(params.Encodings) == 0 || len(params.Codecs) == 0 {
		return fmt.Errorf("%w: the answer accepts no VP8 video", ErrWHIP)
	}
	c.wire = uint32(params.Encodings[0].SSRC)
	for _, e := range params.HeaderExtensions {
		if e.URI == framer.AbsCaptureTimeURI && e.ID > 0 && e.ID < 256 {
			c.extID = uint8(e.ID)
		}
	}
	if c.extID == 0 {
		c.log.Warn("the viewer did not accept abs-capture-time: frames go without their capture time")
	}
	c.deps.setSSRC(c.wire)
	return nil
}

// stateChanged follows the PeerConnection's state: up once connected,
// failed for good when ICE or DTLS gives up or the viewer closes.
func (c *Conn) stateChanged(s pion.PeerConnectionState) {
	c.log.Debug("peer connection", "state", s.String())
	switch s {
	case pion.PeerConnectionStateConnected:
		c.upOnce.Do(func() { close(c.connected) })
	case pion.PeerConnectionStateFailed, pion.PeerConnectionStateClosed:
		c.fail(fmt.Errorf("%w: %s", ErrFailed, s))
	}
}

// fail records why the connection stopped working, once, and wakes
// everyone waiting.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = err
	}
	c.mu.Unlock()
	if first {
		close(c.dead)
	}
	c.signal()
}

func (c *Conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Wait returns an invitation at once while the connection works: every
// source frame is encoded, at the bandwidth estimator's target (the
// invitation's DrainRate, with Target set), held below the feedback
// horizon (see horizon) where that is lower. Only a pacer backlog above
// Config.MaxQueue holds it back until the backlog drains (a departure wakes
// it; SafetyTimeout re-checks as a safety net). It returns ctx's error or
// the one that ended the connection.
func (c *Conn) Wait(ctx context.Context) (transport.Invitation, error) {
	wake := transport.WakeImmediate
	var timer *time.Timer
	for {
		c.deliver()
		inv, ok, err := c.evaluate(wake)
		if err != nil || ok {
			if timer != nil {
				timer.Stop()
			}
			return inv, err
		}
		if timer == nil {
			timer = time.NewTimer(c.cfg.SafetyTimeout)
		} else {
			timer.Reset(c.cfg.SafetyTimeout)
		}
		select {
		case <-c.wake:
			wake = transport.WakeKernel
		case <-timer.C:
			wake = transport.WakeTimer
		case <-ctx.Done():
			timer.Stop()
			return transport.Invitation{}, ctx.Err()
		}
	}
}

// evaluate invites unless the connection failed or the pacer's backlog is
// above MaxQueue.
func (c *Conn) evaluate(w transport.Wake) (transport.Invitation, bool, error) {
	now := time.Now()
	unsent := c.deps.unsent()
	target := rate.Bitrate(c.bwe.GetTargetBitrate())
	if limit := c.hz.limit(); limit > 0 && limit < target {
		target = limit
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return transport.Invitation{}, false, c.err
	}
	inv := transport.Invitation{
		At: now, DrainRate: target, Target: true, Unsent: int(unsent), Threshold: c.cfg.MaxQueue,
		RTT: c.rtt, MinRTT: c.minRTT, Wake: w,
	}
	if unsent > int64(c.cfg.MaxQueue) {
		return inv, false, nil
	}
	switch w {
	case transport.WakeImmediate:
		c.stats.InvitedImmediate++
	case transport.WakeKernel:
		c.stats.InvitedKernel++
	case transport.WakeTimer:
		c.stats.InvitedTimer++
	}
	return inv, true, nil
}

// SetLead accepts the sender's production time and ignores it: WebRTC
// invites every source frame, whatever it takes to encode. A negative lead
// is an error wrapping ErrConfig.
func (c *Conn) SetLead(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative lead %v", ErrConfig, d)
	}
	return nil
}

// Poll delivers the send records that completed since the last call and
// returns the error that ended the connection, if it has ended.
func (c *Conn) Poll() error {
	c.deliver()
	return c.failure()
}

func (c *Conn) deliver() {
	recs := c.deps.take()
	if c.cfg.Handler.Sent != nil {
		for _, r := range recs {
			c.cfg.Handler.Sent(r)
		}
	}
}

// Counters returns the Conn's totals. Retransmits counts packets sent
// again on the viewer's NACK; Frames and BytesWritten count what WriteFrame
// took (RTP and RTCP, as the sender made them).
func (c *Conn) Counters() transport.Counters {
	retrans, retransBytes, unstamped := c.deps.counts()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.stats
	n.Retransmits, n.BytesRetrans, n.RecordsUnstamped = retrans, retransBytes, unstamped
	return n
}

// Close ends the WHIP session: it closes the PeerConnection, waits for the
// Conn's goroutine, and DELETEs the session (bounded by CloseTimeout).
// Wait and WriteFrame then return ErrClosed. It returns the first error of
// those steps; later calls return the same.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.fail(ErrClosed)
		var errs []error
		if c.pc != nil {
			errs = append(errs, c.pc.Close())
		}
		c.wg.Wait()
		if c.session != nil {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CloseTimeout)
			errs = append(errs, deleteSession(ctx, c.cfg.HTTPClient, c.session, c.cfg.Token))
			cancel()
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
