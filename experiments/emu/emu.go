// Package emu emulates a network path for experiments: two network
// namespaces, a sender side and a receiver side, joined through TUN devices
// by one thread of this process that moves packets both ways through a
// bottleneck with a rate (serialization), a one-way propagation delay, a
// drop-tail queue, random loss and a schedule of rate, delay and outage
// steps (the path down, losing everything, and up again), changeable while
// it runs. The kernel's netem is not needed.
//
// The queue arithmetic lives in Link, a pure function of packet arrivals and
// the time passed in. The mover (Linux only) feeds it from the TUN devices
// and writes packets out at their computed departure times, on a locked OS
// thread at real-time priority that sleeps on a timerfd with absolute
// deadlines and polls through the last tens of microseconds, because Go
// timers are too coarse for the spacing of packets at tens of megabits per
// second. Stats reports what happened per direction, including how late the
// mover itself was, and TakeIdle the spans of time in which a bottleneck had
// nothing to send. Packets are IP packets: TCP, and UDP (QUIC, WebRTC),
// cross the bottleneck alike.
//
// Start needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and the iproute2 "ip"
// command. Close, or the end of Start's context, removes the namespaces;
// CloseOnSignal does it on SIGINT or SIGTERM, and Sweep (also run by Start)
// removes those of processes that died without cleaning up.
package emu

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"replenish/rate"
)

// MTU is the largest MTU of the TUN devices, in bytes, and their MTU when
// Config.MTU is zero. The drop-tail queue always holds at least two packets
// of this size.
const MTU = 1500

// MinMTU is the smallest Config.MTU accepted: IPv4's minimum datagram.
const MinMTU = 576

// DefaultQueueTime is the drop-tail limit used when a LinkConfig gives
// neither QueueBytes nor QueueTime.
const DefaultQueueTime = 200 * time.Millisecond

// DefaultWindow is the length of the recent window in Stats when
// Config.Window is zero.
const DefaultWindow = time.Second

// Errors returned by this package.
var (
	ErrConfig      = errors.New("emu: invalid configuration")
	ErrNeedRoot    = errors.New("emu: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces")
	ErrUnsupported = errors.New("emu: path emulation needs Linux")
	ErrClosed      = errors.New("emu: path is closed")
	ErrCC          = errors.New("emu: congestion control not available")
)

// Direction names one direction of a path.
type Direction int

// The two directions of a path.
const (
	Forward Direction = iota // sender side to receiver side
	Reverse                  // receiver side to sender side
)

func (d Direction) String() string {
	switch d {
	case Forward:
		return "forward"
	case Reverse:
		return "reverse"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Side names one end of a path, that is one of its two network namespaces.
type Side int

// The two sides of a path.
const (
	Sender   Side = iota // the namespace the forward direction starts in
	Receiver             // the namespace the forward direction ends in
)

func (s Side) String() string {
	switch s {
	case Sender:
		return "sender"
	case Receiver:
		return "receiver"
	}
	return fmt.Sprintf("Side(%d)", int(s))
}

// LinkConfig describes one direction of a path. The zero value is an
// unlimited link with no delay and no loss.
type LinkConfig struct {
	// Rate is the bottleneck's serialization rate; 0 means unlimited (no
	// serialization time and no queue).
	Rate rate.Bitrate
	// Delay is the one-way propagation delay, added after serialization.
	Delay time.Duration
	// Jitter adds to each packet's delay an extra delay drawn uniformly
	// from [0, Jitter), without reordering: a packet whose draw would take
	// it past the one ahead leaves right after that one, as on a link
	// that holds packets back for its turn (a radio's). 0 means none.
	Jitter time.Duration
	// QueueBytes is the drop-tail limit in bytes, counting the bytes of the
	// packet being serialized that have not yet left. 0 means use QueueTime.
	QueueBytes int
	// QueueTime is the drop-tail limit as the bytes that Rate drains in this
	// time; it follows the rate when the rate changes. When both QueueBytes
	// and QueueTime are 0 it is DefaultQueueTime. Whichever limit applies,
	// it is never below two packets of MTU bytes.
	QueueTime time.Duration
	// Loss is the probability, 0 to 1, that an arriving packet is lost
	// before it reaches the queue (Bernoulli, independent per packet).
	Loss float64
	// Seed seeds the loss and jitter draws: the same seed and the same
	// sequence of arrivals lose the same packets and delay them alike.
	Seed int64
	// Schedule changes the rate and the delay at given times after the
	// link starts. Steps need not be sorted.
	Schedule []Step
}

// SplitRTT returns the one-way delays that make up a round-trip time of
// rtt, split evenly between the two directions (the forward one gets the
// lower half of an odd nanosecond).
func SplitRTT(rtt time.Duration) (forward, reverse time.Duration) {
	return rtt / 2, rtt - rtt/2
}

// Step is one change of a rate schedule.
type Step struct {
	At      time.Duration // time after the link starts
	Rate    rate.Bitrate  // new rate; 0 keeps the current rate, negative means unlimited
	Delay   time.Duration // new one-way delay; 0 keeps the current delay, negative means none
	Carrier Carrier       // takes the link down or brings it back up; CarrierKeep changes nothing
}

// Carrier is a step's change of whether a link passes packets at all.
// While a link is down it loses every packet: each arrival, and each
// packet that would leave it (one in the queue, or in propagation when the
// link went down, as on a cut wire). Its losses count as Lost. The rate,
// the delay and the queue limit are kept for when it comes back up.
type Carrier int

// Carrier changes of a Step.
const (
	CarrierKeep Carrier = iota // no change
	CarrierDown                // from the step on, the link loses every packet
	CarrierUp                  // from the step on, the link passes packets again
)

func (c Carrier) String() string {
	switch c {
	case CarrierKeep:
		return "keep"
	case CarrierDown:
		return "down"
	case CarrierUp:
		return "up"
	}
	return fmt.Sprintf("Carrier(%d)", int(c))
}

func (c LinkConfig) validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("%w: negative rate %d", ErrConfig, c.Rate)
	case c.Delay < 0:
		return fmt.Errorf("%w: negative delay %v", ErrConfig, c.Delay)
	case c.Jitter < 0:
		return fmt.Errorf("%w: negative jitter %v", ErrConfig, c.Jitter)
	case c.QueueBytes < 0:
		return fmt.Errorf("%w: negative queue limit %d bytes", ErrConfig, c.QueueBytes)
	case c.QueueTime < 0:
		return fmt.Errorf("%w: negative queue limit %v", ErrConfig, c.QueueTime)
	case !(c.Loss >= 0 && c.Loss <= 1):
		return fmt.Errorf("%w: loss %v is not a probability", ErrConfig, c.Loss)
	}
	for _, s := range c.Schedule {
		if s.At < 0 {
			return fmt.Errorf("%w: schedule step at negative time %v", ErrConfig, s.At)
		}
		if s.Carrier < CarrierKeep || s.Carrier > CarrierUp {
			return fmt.Errorf("%w: schedule step at %v: unknown %v", ErrConfig, s.At, s.Carrier)
		}
	}
	return nil
}

// Config describes a path.
type Config struct {
	Forward LinkConfig // sender side to receiver side
	Reverse LinkConfig // receiver side to sender side
	// CC is the TCP congestion control set in both namespaces
	// (net.ipv4.tcp_congestion_control): "cubic" when empty, or e.g. "bbr".
	// Start fails with ErrCC if the kernel does not offer it.
	CC string
	// Window is the length of the recent window reported in Stats; 0 means
	// DefaultWindow.
	Window time.Duration
	// MTU is the MTU of the TUN devices in bytes, from MinMTU to MTU; 0
	// means MTU. A smaller one gives TCP a smaller MSS, as on paths
	// through tunnels (1280 gives an MSS of 1228).
	MTU int
	// SendBuffer is the initial send buffer of TCP sockets in the sender's
	// namespace, in bytes (the default of net.ipv4.tcp_wmem, whose maximum
	// is then at least 32 MiB; autotuning may grow it), up to 1 GiB. 0
	// keeps Linux's 16 KiB.
	SendBuffer int
	// SenderNS, when set, names an existing network namespace (another
	// path's side, say) to use as this path's sender side instead of a
	// new one: the path adds its TUN device there, under a name of its
	// own, and leaves the namespace's settings (TCP buffers, congestion
	// control, SendBuffer) and the namespace itself alone; its device
	// goes away at Close. A process in that namespace then reaches both
	// paths, as a relay between two links does.
	SenderNS string
	// ReceiverNS is the same for the receiver side: paths that share it
	// bring several senders, each over a path of its own, to one
	// receiver (a viewer listening on every address there).
	ReceiverNS string
	// Logger receives setup, cleanup and error messages; nil discards them.
	Logger *slog.Logger
}

// IdleSpan is a span of wall-clock time in which a direction's bottleneck
// had nothing to send (see Path.TakeIdle).
type IdleSpan struct{ From, To time.Time }

// Stats is a snapshot of a path's counters.
type Stats struct {
	Elapsed  time.Duration // since the path started
	MoverCPU time.Duration // CPU time used so far by the thread that moves packets
	Forward  DirStats
	Reverse  DirStats
}

// DirStats holds the state and counters of one direction.
type DirStats struct {
	Rate       rate.Bitrate  // current rate; 0 means unlimited
	Delay      time.Duration // current one-way delay
	QueueLimit int           // current drop-tail limit in bytes; 0 when the rate is unlimited
	Down       bool          // the direction is down: it loses every packet (Carrier)
	Backlog    int           // bytes in the bottleneck queue now
	MaxBacklog int           // largest backlog seen, in bytes
	Errors     int64         // packets the mover failed to read or write
	Total      Counters      // since the path started, or since ResetTotals
	Window     Counters      // over the recent window (Config.Window)
}
