package pathmodel

import (
	"time"

	"replenish/framer"
	"replenish/rate"
	"replenish/sender"
	rule "replenish/transport/tcp"
)

// Packet overhead the sender adds to a frame's VP8 bytes (framer): each RTP
// packet of at most framer.MaxPacketSize bytes (the sender's default over
// TCP) carries a 12-byte header (28 with the abs-capture-time extension, on
// the first packet of a keyframe and of a frame a second), a 4-byte VP8
// descriptor and 2 bytes of RFC 4571 framing. The
// sender's timing report (an RTCP APP packet with framing: 34 bytes and 32
// a frame) rides on the first write that sender.ReportPlan finds it due,
// with as many of the frames written since as the plan allows.
const (
	rtpPacket      = framer.MaxPacketSize
	rtpHeader      = 12 + 4
	rtpFraming     = 2
	reportHeader   = 34
	reportEntry    = 32
	reportEvery    = 200 * time.Millisecond
	bitrateStep    = 0.05 // the sender keeps the encoder's target within 5%
	minKeyGap      = 500 * time.Millisecond
	videoPerPkt    = rtpPacket - rtpHeader
	perPktOverhead = rtpHeader + rtpFraming
)

// writeBytes returns the bytes the sender writes for a frame of n VP8
// bytes, without the timing report and the capture time, which only
// keyframes and a frame a second carry (framer.CaptureTimeEvery): half a
// byte a frame at 30 fps.
func writeBytes(n int) int {
	pkts := 1 + (max(n-videoPerPkt, 0)+videoPerPkt-1)/videoPerPkt
	return n + pkts*perPktOverhead
}

// reportBytes returns the timing report's bytes on a write at now with the
// encoder's target at target, and counts the frame written then as one to
// report.
func (s *sim) reportBytes(now time.Duration, target rate.Bitrate) int {
	due, keep := s.unreported > 0, s.unreported
	if s.reported {
		due, keep = sender.ReportPlan(now-s.lastReport, target, s.unreported)
	}
	n := 0
	if due {
		n = reportHeader + keep*reportEntry
		s.reported, s.lastReport, s.unreported = true, now, 0
	}
	s.unreported++
	return n
}

// reportShare returns the timing report's bytes per frame at fps frames
// per second, on average.
func reportShare(fps int) int {
	return reportEntry + int(reportHeader*time.Second/reportEvery)/max(fps, 1)
}

// wireBytes returns the bytes a write of n bytes takes at the bottleneck,
// with the TCP/IP headers of the segments it fills.
func wireBytes(n int) int { return n + (n+mss-1)/mss*tcpIPHeader }

type appState int

const (
	appWaiting  appState = iota // for an invitation
	appTaking                   // invited; for a picture at the rung's rate
	appEncoding                 // until the write
)

// invitation is the transport's state when it invited a frame.
type invitation struct {
	at          time.Duration
	drain       rate.Bitrate
	appLimited  bool
	aged        bool // the estimate is held from a window older than its horizon
	bound       bool // drain is the window bound, not a measurement
	newest      rate.Bitrate
	newestAt    time.Time
	unsent      int
	rtt, minRTT time.Duration
	sent, lost  int64
}

// onTick renders picture k at the size the sender last chose.
func (s *sim) onTick(now time.Duration, k int64) {
	s.latest, s.latestRung = k, s.rung
	s.q.push(now+s.srcInterval, evTick, k+1)
	if s.cfg.KeyframeEvery > 0 && now >= s.nextKeyReq {
		s.keyReq = true
		s.nextKeyReq = now + s.cfg.KeyframeEvery
	}
	if s.state == appTaking {
		s.tryTake(now)
	}
}

func (s *sim) capture(k int64) time.Duration { return s.phase + time.Duration(k)*s.srcInterval }

// checkInvite applies the invitation rule (transport/tcp's Decide) while
// the sender waits, as the kernel re-evaluates it on every ACK and
// transmission.
func (s *sim) checkInvite(now time.Duration) {
	if s.state != appWaiting {
		return
	}
	t := s.tcp
	in := rule.RuleInput{Unsent: t.unsent(), MSS: mss, ReplenishTime: s.cfg.Replen, Lead: s.lead}
	var app bool
	in.DrainRate, in.DrainSource, app = s.est.estimate(t)
	d := rule.Decide(in)
	if !d.Invite {
		return
	}
	s.inv = invitation{
		at: now, drain: d.DrainRate, appLimited: app, bound: in.DrainSource.WindowBound(), unsent: t.unsent(),
		rtt: t.srtt, minRTT: t.minRTT, sent: t.segsOut, lost: t.retransOut,
		newest: s.est.last.Newest, newestAt: s.est.last.NewestAt, aged: s.est.last.Aged,
	}
	s.state = appTaking
	s.tryTake(now)
}

// notBefore returns the earliest capture time the frame rate the sender
// last chose lets it take.
func (s *sim) notBefore() time.Duration {
	if s.lastTaken < 0 {
		return 0
	}
	return s.capture(s.lastTaken) + s.interval - s.srcInterval/2
}

func (s *sim) tryTake(now time.Duration) {
	if s.latest <= s.lastTaken || s.capture(s.latest) < s.notBefore() {
		return
	}
	s.take(now)
}
