package pathmodel

import (
	"math"
	"time"
)

// CUBIC constants (Linux tcp_cubic.c).
const (
	cubicBeta    = 0.7
	cubicC       = 0.4
	hystartLow   = 16 // cwnd at which HyStart starts looking
	hystartMinN  = 8  // RTT samples per round
	hystartDelta = 4 * time.Millisecond
	hystartMaxD  = 16 * time.Millisecond
)

// cubic models Linux CUBIC with HyStart's delay detector: slow start, then
// the cubic window function around the last maximum, with the Reno-friendly
// floor. cwnd grows only while the flow is cwnd-limited. It paces only
// where the socket asks (paced; Linux paces CUBIC otherwise only under the
// fq qdisc).
type cubic struct {
	paced    bool    // the socket asked for pacing
	w        float64 // cwnd, segments
	ssthresh float64
	lastMax  float64
	k        float64 // seconds
	origin   float64
	epoch    time.Duration
	epochOK  bool
	ackCnt   float64
	tcpW     float64 // Reno-friendly estimate

	roundEnd   int64 // HyStart round: ends when una passes it
	roundMin   time.Duration
	roundN     int
	hystartOff bool
}

func newCubic() *cubic { return &cubic{w: initCwnd, ssthresh: math.Inf(1)} }

func (c *cubic) cwnd() int       { return max(int(c.w), 1) }
func (c *cubic) slowStart() bool { return c.w < c.ssthresh }

// pacingRate is Linux's tcp_update_pacing_rate for a paced socket: cwnd
// (or what is in flight, if more) per smoothed round trip, times 2 while
// cwnd is under half of ssthresh and 1.2 after (tcp_pacing_ss_ratio and
// tcp_pacing_ca_ratio).
func (c *cubic) pacingRate(t *tcp) float64 {
	if !c.paced || t.srtt == 0 {
		return 0
	}
	ratio := 1.2
	if c.w < c.ssthresh/2 {
		ratio = 2
	}
	return ratio * float64(max(c.cwnd(), t.inflight)*mss) / t.srtt.Seconds()
}

// onTxStart shifts the cubic epoch by the idle time, so that the window
// function does not jump after a pause (Linux CA_EVENT_TX_START).
func (c *cubic) onTxStart(t *tcp, now time.Duration) {
	if c.epochOK && now > t.lastSend {
		c.epoch = min(c.epoch+now-t.lastSend, now)
	}
}

func (c *cubic) onAck(t *tcp, now time.Duration, a ackInfo) {
	if t.inRecovery && !t.lossState {
		return // fast recovery holds cwnd at ssthresh
	}
	if c.slowStart() {
		c.hystart(t, a.rtt)
	}
	if !t.isCwndLimited() {
		return
	}
	if c.slowStart() {
		c.w = min(c.w+1, max(c.ssthresh, c.w))
		return
	}
	c.avoid(t, now)
}

// hystart ends slow start when the round's smallest RTT rises above
// CUBIC's own minimum (of data segments, not the handshake) by an eighth
// of it (clamped to 4..16 ms).
func (c *cubic) hystart(t *tcp, rtt time.Duration) {
	if c.hystartOff || c.w < hystartLow {
		return
	}
	if t.una >= c.roundEnd {
		c.roundEnd, c.roundMin, c.roundN = t.next, 0, 0
	}
	if c.roundN < hystartMinN {
		if c.roundMin == 0 || rtt < c.roundMin {
			c.roundMin = rtt
		}
		c.roundN++
		return
	}
	thresh := min(max(t.ackMin/8, hystartDelta), hystartMaxD)
	if c.roundMin > t.ackMin+thresh {
		c.ssthresh = c.w
		c.hystartOff = true
	}
}

// avoid is CUBIC's congestion avoidance for one ACKed segment.
func (c *cubic) avoid(t *tcp, now time.Duration) {
	if !c.epochOK {
		c.epoch, c.epochOK = now, true
		c.ackCnt, c.tcpW = 1, c.w
		if c.lastMax <= c.w {
			c.k, c.origin = 0, c.w
		} else {
			c.k = math.Cbrt((c.lastMax - c.w) / cubicC)
			c.origin = c.lastMax
		}
	}
	tt := (now - c.epoch + t.ackMin).Seconds()
	target := c.origin + cubicC*math.Pow(tt-c.k, 3)
	cnt := 100 * c.w
	if target > c.w {
		cnt = c.w / (target - c.w)
	}
	if c.lastMax == 0 && cnt > 20 {
		cnt = 20
	}
	// The Reno-friendly window grows 3(1-b)/(1+b) segments per round trip.
	c.ackCnt++
	c.tcpW += 3 * (1 - cubicBeta) / (1 + cubicBeta) / c.w
	if c.tcpW > c.w {
		cnt = min(cnt, c.w/(c.tcpW-c.w))
	}
	cnt = max(cnt, 2)
	c.w += 1 / cnt
}

// onLoss is the start of a recovery episode: multiplicative decrease with
// fast convergence (the reduction is applied at once; Linux spreads it over
// the recovery round with PRR).
func (c *cubic) onLoss(t *tcp, now time.Duration) {
	c.epochOK = false
	if c.w < c.lastMax {
		c.lastMax = c.w * (1 + cubicBeta) / 2
	} else {
		c.lastMax = c.w
	}
	c.ssthresh = max(c.w*cubicBeta, 2)
	c.w = c.ssthresh
	c.hystartOff = true
}

func (c *cubic) onRecoveryEnd(t *tcp, now time.Duration) {}

func (c *cubic) onRTO(t *tcp, now time.Duration) {
	c.ssthresh = max(c.w*cubicBeta, 2)
	c.w = 1
	c.epochOK = false
}

// onAppLimited is Linux's tcp_cwnd_application_limited: cwnd decays halfway
// toward the most the flow used, remembering the old level in ssthresh.
func (c *cubic) onAppLimited(t *tcp, now time.Duration) {
	if t.inRecovery {
		return
	}
	used := float64(max(t.cwndUsed, initCwnd))
	if used < c.w {
		c.ssthresh = max(c.ssthresh, 0.75*c.w)
		c.w = (c.w + used) / 2
	}
}
