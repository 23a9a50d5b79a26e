// Package drain estimates the rate at which a sender's unsent backlog
// drains, from byte counters a transport reads at its decision points. It
// knows no transport: TCP feeds it TCP_INFO readings, a QUIC transport its
// connection statistics.
//
// The estimate is byte-exact. Linux's tcpi_delivery_rate counts delivered
// segments times the MSS, so that the short last segment of every frame
// inflates it (about three times at 100 kb/s and 30 frames a second), and
// it keeps the highest sample taken while the sender was
// application-limited, so that a stale value sticks while the sender has
// nothing to send, which under source buffer management is most of the
// time. The Estimator instead:
//
//   - measures windows of bytes delivered (acknowledged) over time, each
//     spanning at least one smoothed round trip and at least MinAcks
//     acknowledgements. A window runs from one acknowledgement to another
//     (Sample.AckedAt), not from one reading to the next: between
//     readings, it would hold a whole acknowledgement more or less as
//     their arrivals jitter against the readings, an error of one in
//     MinAcks that the windowed maximum below turns into a bias (at
//     100 kb/s, a frame a packet, the estimate sat 2 to 5% above the
//     path). Delivered bytes, not sent ones: a sender
//     sends faster than the path delivers in slow start, while its window
//     grows into a queue, or when the application writes faster than the
//     path, and slower when the application is short of data; only the
//     delivered count measures the path in all of these. Its weakness, a
//     stall while a hole is repaired and a jump when the repair covers
//     what had been selectively acknowledged, is kept inside windows: a
//     window neither starts nor ends while the sender is recovering,
//     unless the recovery lasts (random loss at hundreds of packets a
//     round trip): then a window of lastingRounds round trips may;
//   - classes each window as path-limited or application-limited. It is
//     path-limited when the path set the pace throughout: at every sample
//     the sender either held data it could not yet send (Backlogged), or
//     had enough in flight that the bottleneck could not have run dry
//     before the next sample (more than the window's rate times the
//     minimum round trip and the time to the next sample, and the slack,
//     the rate over Sample.SlackTime up to Sample.SlackMax: a queue that
//     the network, not the sender's socket, holds, as when a loss-based
//     congestion control fills a bottleneck buffer). Without the slack, a
//     sender of a packet a frame passed for path-limited at 60 to 65% of
//     the link: at 300 kb/s and 173 ms its bytes in flight were what it
//     wrote within the smoothed round trip, 44 ms longer than the minimum
//     (its frame's serialization at the bottleneck, and a little queue),
//     each window after a cut measured the stream's own rate, and the
//     estimate followed it from 218 to 172 kb/s over 12 s;
//   - before the first path-limited window closes, also measures shorter
//     windows (earlyAcks acknowledgements) and keeps the first that is
//     path-limited: a sender that started far above the path needs its
//     rate before a window of MinAcks can close (see earlyAcks);
//   - keeps the highest window of the last Rounds round trips (or of two
//     windows' spans, where gathering MinAcks takes longer), a round trip
//     being the smoothed RTT but at most twice the minimum: the queue a
//     sender builds after the path slowed must not stretch the memory of
//     the old rate (4 s at a 400 ms smoothed RTT after a halving to
//     1 Mb/s at 80 ms, while the controller's cuts aimed at it). The newest
//     path-limited window stays as a floor after it ages out. An
//     application-limited window measures at least the sender's own rate,
//     a lower bound of the path: it raises the estimate when it is the
//     highest and otherwise changes nothing, so that an application-limited
//     sender keeps its last measurement of the path (and the estimate says
//     it is application-limited) instead of measuring its own bitrate;
//   - bounds the result by what the transport allows now: its congestion
//     window (or the peer's receive window, if smaller) per smoothed round
//     trip, and the highest pacing rate of the last Rounds round trips (the
//     highest, so that a pacer's gain cycle does not make the estimate
//     oscillate). Before the first window this bound is the estimate.
//
// An Estimator is not safe for concurrent use; it is pure: its output
// depends only on the samples given, never on the clock.
package drain

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"replenish/rate"
)

// Defaults for the zero values of Config.
const (
	// DefaultRounds is how many round trips (smoothed, at most twice the
	// minimum) a window stays in the maximum.
	DefaultRounds = 10
	// DefaultMinAcks is the fewest acknowledgements a window spans. A
	// window's ends fall between acknowledgements, so its byte count is
	// off by up to one acknowledgement's worth at each end; with 16 the
	// error of one window stays within about 1/16.
	DefaultMinAcks = 16
)

// lastingRounds is how many smoothed round trips a recovery lasts, and a
// window spans, before the window may end within it (Estimator.lasting).
const lastingRounds = 4

// maxEntries bounds the windows and pacing readings the Estimator keeps.
// Windows in the maximum are decreasing in rate, so the bound is reached
// only by a long run of ever-lower readings; the oldest is then dropped.
const maxEntries = 64

// Config sets an Estimator's parameters. The zero value is the default.
type Config struct {
	// Rounds is how many round trips (smoothed, at most twice the
	// minimum) a window stays in the maximum. Zero means DefaultRounds.
	Rounds int
	// MinAcks is the fewest acknowledgements a window spans. Zero means
	// DefaultMinAcks.
	MinAcks int
}

// Sample is one reading of a transport's state. A transport takes one at
// every decision point: before every write and whenever it wakes to decide
// whether to invite.
type Sample struct {
	At time.Time // when the reading was taken
	// Delivered counts the bytes the peer has acknowledged since the
	// connection began, in the units of the backlog (TCP:
	// tcpi_bytes_acked, payload bytes; QUIC: the stream bytes in the
	// packets acknowledged).
	Delivered uint64
	// Acks counts the acknowledgements received since the connection
	// began (TCP: tcpi_segs_in, every segment the peer sent).
	Acks uint64
	// AckedAt is when the latest acknowledgement arrived (TCP: At less
	// tcpi_last_ack_recv; QUIC: when quic-go last saw bytes in flight
	// fall); zero if unknown. A window then runs from the acknowledgement
	// that last raised Delivered before its start to the one that last
	// raised it before its end, so that it holds whole intervals between
	// acknowledgements; without it, a window runs between readings.
	AckedAt time.Time
	// InFlight is the bytes sent and not yet acknowledged (TCP: bytes
	// sent for the first time, tcpi_bytes_sent minus tcpi_bytes_retrans,
	// less tcpi_bytes_acked); negative if unknown.
	InFlight int
	// Backlogged reports that the sender held data it could not yet send
	// throughout the interval since the previous sample, so that the
	// transport, not the application, set the pace (TCP with TCP_NODELAY:
	// bytes unsent now, since the backlog only shrinks between writes and
	// one is sampled before every write).
	Backlogged bool
	// Recovering reports that the sender is repairing a loss, so that
	// Delivered stalls until the repair and then jumps (TCP: the
	// congestion-avoidance state is disorder, recovery or loss, or
	// segments are selectively acknowledged).
	Recovering bool
	SRTT       time.Duration // smoothed round-trip time; 0 if unknown
	MinRTT     time.Duration // smallest round trip seen; 0 if unknown
	// SlackTime and SlackMax bound the bytes in flight, beyond what the
	// path holds at a rate over the minimum round trip, that are not a
	// queue: the rate over SlackTime, at most SlackMax. One is the
	// packet in service at the bottleneck, whose serialization a minimum
	// round trip taken on small packets (the handshake's) leaves out: for
	// a stream of a packet a frame, the frame, the rate over a frame
	// interval; a full packet at most. Another is a packet the peer holds
	// back for its acknowledgement delay (QUIC's max_ack_delay). Zero:
	// none.
	SlackTime  time.Duration
	SlackMax   int
	Cwnd       int          // congestion window in bytes; 0 if unknown
	PeerWindow int          // the peer's receive window in bytes; negative if unknown
	PacingRate rate.Bitrate // the pacer's rate now; 0 if none or unknown
}

// Source says where an Estimate's rate came from.
type Source int

const (
	// SourceNone means nothing is known yet: no window measured, and no
	// congestion window and round trip to bound one.
	SourceNone Source = iota
	// SourceWindow means no window has been measured yet; the rate is the
	// bound min(cwnd, peer window) per smoothed round trip (and the pacing
	// rate, if lower).
	SourceWindow
	// SourceMeasured means the highest measured window, within the bounds.
	SourceMeasured
	// SourceWindowCapped means a measured rate capped by min(cwnd, peer
	// window) per smoothed round trip.
	SourceWindowCapped
	// SourcePacingCapped means a measured rate capped by the pacing rate.
	SourcePacingCapped
	// SourceStack means the transport stack's own delivery-rate sample
	// (Linux's tcpi_delivery_rate), which a kernel-faithful transport
	// reports instead of an Estimator's.
	SourceStack
)

// String returns "none", "window", "measured", "window-capped",
// "pacing-capped" or "stack".
func (s Source) String() string {
	switch s {
	case SourceNone:
		return "none"
	case SourceWindow:
		return "window"
	case SourceMeasured:
		return "measured"
	case SourceWindowCapped:
		return "window-capped"
	case SourcePacingCapped:
		return "pacing-capped"
	case SourceStack:
		return "stack"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// WindowBound says an estimate of this source is only the window's bound,
// min(cwnd, peer window) per smoothed round trip, not a measurement of the
// path: none has been measured yet (SourceWindow), or the bound is below
// the measurement for now (SourceWindowCapped: a stall, such as BBR's
// PROBE_RTT or loss recovery, shrinks the window for a moment).
func (s Source) WindowBound() bool { return s == SourceWindow || s == SourceWindowCapped }

// MarshalText returns String's form, so that a Source is a string in JSON.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ErrSource is returned by UnmarshalText for text that names no Source.
var ErrSource = errors.New("drain: unknown source")

// UnmarshalText reads String's form back.
func (s *Source) UnmarshalText(text []byte) error {
	for v := SourceNone; v <= SourceStack; v++ {
		if v.String() == string(text) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("%w %q", ErrSource, text)
}

// Estimate is the Estimator's output.
type Estimate struct {
	// Rate is the estimated drain rate; 0 if unknown (Source is then
	// SourceNone) or if the bound is zero (a closed peer window).
	Rate rate.Bitrate
	// AppLimited reports that the rate does not come from a
	// path-limited window of the last Rounds round trips: it comes from
	// application-limited windows (a lower bound of the path), or is held
	// from an older path-limited window.
	AppLimited bool
	// Aged reports that the rate is held from a window that closed before
	// the last Rounds round trips (the newest path-limited window, or the
	// newest of any): no window since measured as much. It may be the
	// rate of a path that has since slowed, and is no lower bound of the
	// path as it is now.
	Aged   bool
	Source Source
	// Measured is the highest window in the maximum, before the bounds; 0
	// before the first window.
	Measured rate.Bitrate
	// Bound is the tighter of the bounds; 0 if neither is known.
	Bound rate.Bitrate
	// Window is the rate of the window the latest sample closed, or 0 if
	// it closed none; WindowPathLimited says whether the path set the pace
	// over it.
	Window            rate.Bitrate
	WindowPathLimited bool
	// Newest is the rate of the newest path-limited window, which closed
	// at NewestAt; zero before the first. While the maximum still holds a
	// faster path's rate (the path slowed within its memory), it is the
	// path as it is now.
	Newest   rate.Bitrate
	NewestAt time.Time
}

// Known reports whether e carries a rate (possibly zero, behind a closed
// peer window).
func (e Estimate) Known() bool { return e.Source != SourceNone }

// WindowRate returns min(cwnd, peerWindow) per srtt, with cwnd and
// peerWindow in bytes and a negative peerWindow meaning unknown. It reports
// false if cwnd or srtt is not positive.
func WindowRate(cwnd, peerWindow int, srtt time.Duration) (rate.Bitrate, bool) {
	if cwnd <= 0 || srtt <= 0 {
		return 0, false
	}
	w := float64(cwnd)
	if peerWindow >= 0 {
		w = min(w, float64(peerWindow))
	}
	return bytesPerSecond(w / srtt.Seconds()), true
}

// maxBytesPerSecond caps derived rates well inside a Bitrate's range.
const maxBytesPerSecond = 1e18

// bytesPerSecond converts to a Bitrate, saturating instead of overflowing.
func bytesPerSecond(v float64) rate.Bitrate {
	switch {
	case v <= 0 || math.IsNaN(v):
		return 0
	case v >= maxBytesPerSecond:
		return rate.FromBytesPerSecond(maxBytesPerSecond)
	}
	return rate.FromBytesPerSecond(v)
}
