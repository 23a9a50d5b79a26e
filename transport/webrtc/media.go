package webrtc

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"replenish/framer"
	"replenish/transport"
)

// frame is one WriteFrame's packets, parsed.
type frame struct {
	control [][]rtcp.Packet
	media   []*rtp.Packet
	bytes   int // as given, RTP and RTCP
	payload int // RTP payload bytes
}

// parseFrame splits pkts into RTCP and RTP packets.
func parseFrame(pkts [][]byte) (frame, error) {
	var f frame
	for _, b := range pkts {
		f.bytes += len(b)
		if framer.IsRTCP(b) {
			ps, err := framer.ParseControl(b)
			if err != nil {
				return frame{}, fmt.Errorf("webrtc: the sender's RTCP: %w", err)
			}
			f.control = append(f.control, ps)
			continue
		}
		p := &rtp.Packet{}
		if err := p.Unmarshal(b); err != nil {
			return frame{}, fmt.Errorf("webrtc: the sender's RTP: %w", err)
		}
		f.media = append(f.media, p)
		f.payload += len(p.Payload)
	}
	if len(f.media) == 0 {
		return frame{}, ErrNoMedia
	}
	return f, nil
}

// WriteFrame writes one frame: its RTCP packets (control, first) at once
// with PeerConnection.WriteRTCP, then its RTP packets to the track, whose
// pacer queues them; it does not wait for the network. The frame's send
// record reaches Config.Handler.Sent once its last packet has left the
// pacer for the socket. It returns ErrNoMedia, ErrQueueFull, a parse
// error for packets that are neither RTP nor RTCP, or the error that ended
// the connection.
func (c *Conn) WriteFrame(id uint64, pkts [][]byte) error {
	start := time.Now()
	if err := c.failure(); err != nil {
		return err
	}
	f, err := parseFrame(pkts)
	if err != nil {
		return err
	}
	if unsent := c.deps.unsent(); unsent+int64(f.payload) > 2*int64(c.cfg.MaxQueue) {
		return fmt.Errorf("%w: %d bytes queued", ErrQueueFull, unsent)
	}
	ours := f.media[0].SSRC
	c.ours.Store(int64(ours))
	for _, p := range f.media {
		if err := moveCaptureTime(&p.Header, c.extID); err != nil {
			return fmt.Errorf("webrtc: the capture time extension: %w", err)
		}
	}
	retrans, _, _ := c.deps.counts()
	last := f.media[len(f.media)-1].SequenceNumber
	fl := c.deps.add(transport.SendRecord{ID: id, Bytes: f.bytes, WriteStart: start, Retransmits: retrans}, last, f.payload)
	err = c.write(f, ours)
	c.deps.written(fl, time.Now())
	c.mu.Lock()
	c.stats.Frames++
	c.stats.BytesWritten += uint64(f.bytes)
	c.mu.Unlock()
	return err
}

// write sends f's RTCP, with the SSRC on the wire, then hands its RTP
// packets to the track.
func (c *Conn) write(f frame, ours uint32) error {
	var ctl []rtcp.Packet
	for _, ps := range f.control {
		toWire(ps, ours, c.wire)
		ctl = append(ctl, ps...)
	}
	if len(ctl) > 0 {
		if err := c.pc.WriteRTCP(ctl); err != nil {
			return fmt.Errorf("webrtc: writing RTCP: %w", err)
		}
	}
	for _, p := range f.media {
		if err := c.track.WriteRTP(p); err != nil {
			return fmt.Errorf("webrtc: writing RTP: %w", err)
		}
	}
	return nil
}

// readRTCP reads the viewer's RTCP through pion's interceptors (which take
// the NACKs, TWCC feedback and reports they need) until the connection
// ends: it measures the round trip from reception reports and passes
// keyframe requests to Config.Handler.Packet.
func (c *Conn) readRTCP() {
	buf := make([]byte, framer.MaxPacketSize)
	for {
		n, attrs, err := c.sender.Read(buf)
		if err != nil {
			select {
			case <-c.dead:
				return
			default:
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				c.fail(fmt.Errorf("%w: reading RTCP: %w", ErrFailed, err))
				return
			}
			c.log.Debug("unreadable RTCP from the viewer", "err", err)
			continue
		}
		pkts, err := attrs.GetRTCPPackets(buf[:n])
		if err != nil {
			c.log.Debug("unreadable RTCP from the viewer", "err", err)
			continue
		}
		c.feedback(pkts, time.Now())
	}
}

// feedback takes the round trip from reception reports and the feedback
// delay from TWCC feedback (for the horizon and the window), and passes
// keyframe requests on, naming the packetizer's SSRC.
func (c *Conn) feedback(pkts []rtcp.Packet, now time.Time) {
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.ReceiverReport:
			for _, r := range p.Reports {
				if rtt, ok := reportRTT(now, r.LastSenderReport, r.Delay); ok && r.SSRC == c.wire {
					c.addRTT(rtt)
				}
			}
		case *rtcp.TransportLayerCC:
			c.hz.feedback(p.BaseSequenceNumber, p.PacketStatusCount, now)
			c.win.feedback(p.BaseSequenceNumber, p.PacketStatusCount, now)
		}
	}
	ours := uint32(c.wire)
	if v := c.ours.Load(); v >= 0 {
		ours = uint32(v)
	}
	reqs := keyframeRequests(pkts, c.wire, ours)
	if len(reqs) == 0 || c.cfg.Handler.Packet == nil {
		return
	}
	b, err := rtcp.Marshal(reqs)
	if err != nil {
		c.log.Debug("keyframe request not passed on", "err", err)
		return
	}
	c.cfg.Handler.Packet(b)
}

// addRTT smooths round-trip samples as TCP does (RFC 6298, gain 1/8).
func (c *Conn) addRTT(rtt time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rtt == 0 {
		c.rtt = rtt
	} else {
		c.rtt += (rtt - c.rtt) / 8
	}
	if c.minRTT == 0 || rtt < c.minRTT {
		c.minRTT = rtt
	}
}
