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
//   - measures windows that each span at least one smoothed round trip and
//     at least MinAcks acknowledgements (so that the rounding to whole
//     acknowledgements at either end stays small), as bytes over time;
//   - takes, in each window, the smaller of two byte counts: bytes delivered
//     (acknowledged) and bytes sent for the first time. Each is exact, and
//     each errs high at other moments: new data goes out up to twice as fast
//     as the path delivers it in slow start and while a window grows into a
//     queue, and acknowledgements stall during loss recovery and then jump
//     by everything the selective acknowledgements had covered. The smaller
//     of the two is the path's rate in both cases;
//   - keeps the highest window of the last Rounds round trips. A window in
//     which the sender stayed backlogged measures the path; one in which it
//     did not measures at least its own sending, a lower bound of the path,
//     and may only raise the estimate. When every window has aged out, the
//     newest is held (and the estimate says it is application-limited);
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
	"math"
	"strconv"
	"time"

	"replenish/rate"
)

// Defaults for the zero values of Config.
const (
	// DefaultRounds is how many smoothed round trips a window stays in the
	// maximum.
	DefaultRounds = 10
	// DefaultMinAcks is the fewest acknowledgements a window spans. A
	// window's ends fall between acknowledgements, so its byte count is
	// off by up to one acknowledgement's worth at each end; with 16 the
	// error of one window stays within about 1/16.
	DefaultMinAcks = 16
)

// maxEntries bounds the windows and pacing readings the Estimator keeps.
// Windows in the maximum are decreasing in rate, so the bound is reached
// only by a long run of ever-lower readings; the oldest is then dropped.
const maxEntries = 64

// Config sets an Estimator's parameters. The zero value is the default.
type Config struct {
	// Rounds is how many smoothed round trips a window stays in the
	// maximum. Zero means DefaultRounds.
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
	// connection began (TCP: tcpi_bytes_acked).
	Delivered uint64
	// Sent counts the bytes sent for the first time since the connection
	// began, retransmissions excluded (TCP: tcpi_bytes_sent minus
	// tcpi_bytes_retrans).
	Sent uint64
	// Acks counts the acknowledgements received since the connection
	// began (TCP: tcpi_segs_in, every segment the peer sent).
	Acks uint64
	// Backlogged reports that the sender held data it could not yet send
	// throughout the interval since the previous sample, so that the
	// transport, not the application, set the pace (TCP with TCP_NODELAY:
	// bytes unsent now, since the backlog only shrinks between writes and
	// one is sampled before every write).
	Backlogged bool
	SRTT       time.Duration // smoothed round-trip time; 0 if unknown
	Cwnd       int           // congestion window in bytes; 0 if unknown
	PeerWindow int           // the peer's receive window in bytes; negative if unknown
	PacingRate rate.Bitrate  // the pacer's rate now; 0 if none or unknown
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

// MarshalText returns String's form, so that a Source is a string in JSON.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Estimate is the Estimator's output.
type Estimate struct {
	// Rate is the estimated drain rate; 0 if unknown (Source is then
	// SourceNone) or if the bound is zero (a closed peer window).
	Rate rate.Bitrate
	// AppLimited reports that the rate does not come from a window of the
	// last Rounds round trips in which the sender stayed backlogged: it
	// comes from windows in which the sender did not (a lower bound of the
	// path), or is held from an older window.
	AppLimited bool
	Source     Source
	// Measured is the highest window in the maximum, before the bounds; 0
	// before the first window.
	Measured rate.Bitrate
	// Bound is the tighter of the bounds; 0 if neither is known.
	Bound rate.Bitrate
	// Window is the rate of the window the latest sample closed, or 0 if
	// it closed none; WindowBacklogged says whether the sender stayed
	// backlogged over it.
	Window           rate.Bitrate
	WindowBacklogged bool
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
