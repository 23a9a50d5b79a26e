package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/transport"
	"replenish/transport/drain"
)

// Wait blocks until the Conn invites one more frame, ctx is done or the
// connection fails. In replenish mode it invites when the unsent backlog
// will drain within the replenish time (see decide); in the default and
// expire modes, while the backlog is under MaxQueue. The wake comes from
// quic-go's packetization (the write limiter), never from polling; a timer
// of SafetyTimeout re-evaluates as a safety net.
func (c *Conn) Wait(ctx context.Context) (transport.Invitation, error) {
	wake := transport.WakeImmediate
	timer := time.NewTimer(c.cfg.SafetyTimeout)
	defer timer.Stop()
	defer c.limit.Store(-1)
	for {
		c.deliver()
		inv, ok, err := c.evaluate(wake)
		if err != nil {
			return transport.Invitation{}, err
		}
		if ok {
			return inv, nil
		}
		select {
		case <-c.wake:
			wake = transport.WakeKernel
		case <-timer.C:
			wake = transport.WakeTimer
			timer.Reset(c.cfg.SafetyTimeout)
		case <-ctx.Done():
			return transport.Invitation{}, ctx.Err()
		}
	}
}

// evaluate takes a sample, applies the rule and, when it does not invite,
// arms the limiter's wake at the rule's limit.
func (c *Conn) evaluate(w transport.Wake) (transport.Invitation, bool, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return transport.Invitation{}, false, c.err
	}
	st := c.sampleLocked(now)
	inv := transport.Invitation{At: now, Wake: w, Threshold: -1}
	var limit int64
	e := c.est.Estimate()
	if e.Source >= drain.SourceMeasured {
		c.drained.Store(int64(e.Rate)) // unknown until a window is measured (not the window's bound)
	}
	inv.Drain = transport.DrainRecord{Input: c.drainIn, Estimate: e}
	if c.cfg.Mode.Policy == transport.Replenish {
		d := decide(e.Rate, c.cfg.Mode.ReplenishTime, c.lead)
		inv.DrainRate, inv.AppLimited, inv.Aged, inv.Lead = e.Rate, e.AppLimited, e.Aged, c.lead
		inv.RTT, inv.MinRTT = st.SmoothedRTT, st.MinRTT
		inv.Sent, inv.Lost = int64(st.PacketsSent), int64(st.PacketsLost)
		inv.Threshold = int(min(d, 1<<31-1))
		limit = d
		c.headsMu.Lock()
		if gap, at, ok := c.heads.Newest(); ok && st.MinRTT > 0 {
			inv.HeadWait, inv.HeadWaitAt = gap-st.MinRTT, at
			inv.HeadWaitRepaired = c.heads.Repaired(int64(st.PacketsLost))
		}
		c.headsMu.Unlock()
		if at := c.path.acked(); !at.IsZero() && st.LatestRTT > 0 {
			inv.LatestRTT, inv.LatestRTTAt = st.LatestRTT, at
		}
	} else {
		limit = int64(c.cfg.MaxQueue) - 1
	}
	// Arm before reading the backlog, so that a packetization after the
	// read sees the limit and wakes the waiter.
	c.limit.Store(limit)
	inv.Unsent = int(c.unsent())
	if inv.Unsent > 0 && int64(inv.Unsent) > limit {
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

// sampleLocked gives the drain estimator the connection's state. Delivered
// bytes are the bytes sent less those lost and those in flight, in QUIC
// packet bytes, which streamShare turns into the stream bytes they carried
// (retransmissions included: see streamShare);
// the bytes in flight are scaled alike. The backlog only shrinks between
// writes, and the Conn samples before every write, so a backlog above zero
// now was above zero throughout the interval since the previous sample.
// It returns the connection statistics it read.
func (c *Conn) sampleLocked(now time.Time) quic.ConnectionStats {
	st := c.qc.ConnectionStats()
	inFlight := c.path.inFlight.Load()
	delivered := c.share.update(now, c.packed.Load(), int64(st.BytesSent), int64(st.BytesLost), int64(st.BytesSent)-int64(st.BytesLost)-inFlight)
	c.drainIn = drain.Sample{
		At: now, Delivered: delivered, Acks: st.PacketsReceived, AckedAt: c.path.acked(), InFlight: int(float64(inFlight) * c.share.share()),
		Backlogged: c.unsent() > 0, Recovering: c.path.recovering.Load(),
		SRTT: st.SmoothedRTT, MinRTT: st.MinRTT, SlackTime: maxAckDelay, SlackMax: datagramSize, Cwnd: int(st.CongestionWindow), PeerWindow: -1,
	}
	c.est.Add(c.drainIn)
	return st
}

// readFeedback reads the viewer's feedback streams until the connection
// ends, passing each RTCP packet to Config.Handler.Packet. A viewer that
// sends malformed framing ends the connection.
func (c *Conn) readFeedback() {
	ctx := c.qc.Context()
	for {
		s, err := c.qc.AcceptUniStream(ctx)
		if err != nil {
			// The connection's context may not be done yet when the
			// accept returns its close error: then that error says why.
			cause := context.Cause(ctx)
			if cause == nil {
				cause = err
			}
			c.fail(fmt.Errorf("quic: connection ended: %w", cause))
			return
		}
		if err := c.readFeedbackStream(s); err != nil {
			c.fail(err)
			c.qc.CloseWithError(codeBadPackets, "bad feedback")
			return
		}
	}
}

// readFeedbackStream reads one feedback stream to its end.
func (c *Conn) readFeedbackStream(s *quic.ReceiveStream) error {
	r := framer.NewRoQReader(s)
	flow, err := r.FlowID()
	if err != nil {
		return nil // the stream ended before its header; nothing to read
	}
	if flow != FlowID {
		s.CancelRead(quic.StreamErrorCode(framer.RoQUnknownFlowID))
		return nil // another flow: not ours to read
	}
	for {
		pkt, err := r.ReadPacket()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("quic: reading the viewer's feedback: %w", err)
		}
		if c.cfg.Handler.Packet != nil {
			c.cfg.Handler.Packet(pkt)
		}
	}
}
