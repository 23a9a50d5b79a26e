package tcp

import (
	"math"
	"strconv"
	"time"

	"replenish/rate"
)

// RuleInput holds what the invitation rule reads at each decision: the
// socket's state from TCP_INFO and the connection's settings.
type RuleInput struct {
	Unsent         int           // bytes written but not yet sent (tcpi_notsent_bytes)
	MSS            int           // sender MSS in bytes (tcpi_snd_mss)
	Cwnd           int           // congestion window in segments (tcpi_snd_cwnd)
	SndWnd         int           // peer's receive window in bytes (tcpi_snd_wnd); negative if unknown
	SRTT           time.Duration // smoothed RTT (tcpi_rtt); 0 if unknown
	DeliveryRate   rate.Bitrate  // latest delivery-rate sample (tcpi_delivery_rate); 0 before the first
	Nagle          bool          // Nagle's algorithm is on (TCP_NODELAY off)
	NoSubMSSClause bool          // diagnostic: ignore the sub-MSS clause even with Nagle on
	ReplenishTime  time.Duration // the configured replenish time
}

// DrainSource says where a Decision's drain rate came from.
type DrainSource int

const (
	// DrainUnknown means neither a rate sample nor cwnd and SRTT were known.
	DrainUnknown DrainSource = iota
	// DrainDelivery means the kernel's delivery-rate sample.
	DrainDelivery
	// DrainWindow means min(cwnd*MSS, peer window)/SRTT, used before the
	// first rate sample.
	DrainWindow
)

// String returns "unknown", "delivery" or "window".
func (s DrainSource) String() string {
	switch s {
	case DrainUnknown:
		return "unknown"
	case DrainDelivery:
		return "delivery"
	case DrainWindow:
		return "window"
	}
	return "DrainSource(" + strconv.Itoa(int(s)) + ")"
}

// Reason says why the rule did or did not invite.
type Reason int

const (
	// ReasonEmpty: nothing is unsent; always invited.
	ReasonEmpty Reason = iota
	// ReasonNoEstimate: no drain rate is known yet; invited rather than
	// stalled.
	ReasonNoEstimate
	// ReasonBelowThreshold: the unsent backlog drains within the replenish
	// time.
	ReasonBelowThreshold
	// ReasonSubMSS: Nagle is on and less than one MSS is unsent; more data
	// is what would release it.
	ReasonSubMSS
	// ReasonAboveThreshold: not invited; the backlog would take longer than
	// the replenish time to drain.
	ReasonAboveThreshold
)

// String returns a short lower-case name for r.
func (r Reason) String() string {
	switch r {
	case ReasonEmpty:
		return "empty"
	case ReasonNoEstimate:
		return "no-estimate"
	case ReasonBelowThreshold:
		return "below-threshold"
	case ReasonSubMSS:
		return "sub-mss"
	case ReasonAboveThreshold:
		return "above-threshold"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// MaxLimit is the largest unsent limit the rule reports: the largest value
// whose TCP_NOTSENT_LOWAT equivalent (2*limit+1) fits the kernel's 32 bits.
const MaxLimit = math.MaxUint32 / 2

// NoLowat is the TCP_NOTSENT_LOWAT value meaning "no limit" (UINT32_MAX).
const NoLowat = math.MaxUint32

// Decision is the outcome of the invitation rule.
type Decision struct {
	Invite    bool
	Reason    Reason
	DrainRate rate.Bitrate // the estimated drain rate; 0 if unknown
	Source    DrainSource
	// Threshold is DrainRate × ReplenishTime in bytes; 0 if the rate is
	// unknown.
	Threshold int
	// Limit is the largest unsent backlog the rule invites at with the same
	// estimates: half the Threshold (Linux's write-space hysteresis), raised
	// to MSS-1 by the sub-MSS clause, or MaxLimit when no rate is known.
	Limit int
}

// Decide applies the invitation rule. It is pure: the same input always
// gives the same Decision.
//
// The drain rate is the delivery-rate sample once one exists, before that
// min(cwnd*MSS, peer window)/SRTT; the threshold is drain rate × replenish
// time. The rule invites when nothing is unsent, when no drain rate is
// known (erring toward inviting rather than stalling), when the unsent
// backlog has drained to half the threshold or less, or when Nagle is on
// (and the clause is not disabled) and less than one MSS is unsent. The
// sub-MSS clause never applies with TCP_NODELAY: there it would pool writes
// behind a blocked segment instead of letting each travel as its own small
// packet.
//
// Half the threshold is Linux's convention for write readiness: poll()
// reports a socket writable when its TCP_NOTSENT_LOWAT backlog is at half
// the limit (and the send buffer when a third is free), so that an
// application woken by it has room for a real write rather than thrashing
// at the edge. The measured kernel implementation of TCP_REPLENISH_TIME
// (seeds/000) wakes the same way, so a replenish time here means what it
// would mean to a kernel that had the option: an application that writes
// when invited finds at most half a replenish time of data ahead of it.
func Decide(in RuleInput) Decision {
	var d Decision
	d.DrainRate, d.Source = drainRate(in)
	if d.Source == DrainUnknown {
		d.Limit = MaxLimit
	} else {
		d.Threshold = thresholdBytes(d.DrainRate, in.ReplenishTime)
		d.Limit = d.Threshold / 2
		if subMSSClause(in) {
			d.Limit = max(d.Limit, in.MSS-1)
		}
	}
	switch {
	case in.Unsent <= 0:
		d.Invite, d.Reason = true, ReasonEmpty
	case d.Source == DrainUnknown:
		d.Invite, d.Reason = true, ReasonNoEstimate
	case in.Unsent <= d.Threshold/2:
		d.Invite, d.Reason = true, ReasonBelowThreshold
	case subMSSClause(in) && in.Unsent < in.MSS:
		d.Invite, d.Reason = true, ReasonSubMSS
	default:
		d.Reason = ReasonAboveThreshold
	}
	return d
}

// Lowat returns the TCP_NOTSENT_LOWAT value that makes poll() report the
// socket writable exactly when Decide would invite with the same estimates.
// Linux's poll reports writable when notsent*2 < lowat
// (tcp_stream_memory_free with wake=1), so Lowat is 2*Limit+1, and NoLowat
// when no rate is known. The input's Unsent is ignored. (Poll also needs
// send-buffer space; the rule does not look at that.)
func Lowat(in RuleInput) uint32 {
	return lowatFor(Decide(in).Limit)
}

// lowatFor returns the TCP_NOTSENT_LOWAT whose poll() writability is
// notsent <= limit.
func lowatFor(limit int) uint32 {
	if limit >= MaxLimit {
		return NoLowat
	}
	return uint32(2*max(limit, 0) + 1)
}

// subMSSClause reports whether the rule's sub-MSS clause applies to in.
func subMSSClause(in RuleInput) bool {
	return in.Nagle && !in.NoSubMSSClause && in.MSS > 0
}

// drainRate estimates the rate at which the unsent backlog drains.
func drainRate(in RuleInput) (rate.Bitrate, DrainSource) {
	if in.DeliveryRate > 0 {
		return in.DeliveryRate, DrainDelivery
	}
	if in.SRTT <= 0 || in.Cwnd <= 0 || in.MSS <= 0 {
		return 0, DrainUnknown
	}
	window := float64(in.Cwnd) * float64(in.MSS)
	if in.SndWnd >= 0 {
		window = min(window, float64(in.SndWnd))
	}
	return saturatingRate(window / in.SRTT.Seconds()), DrainWindow
}

// thresholdBytes returns how many bytes r carries in d, clamped to
// [0, MaxLimit].
func thresholdBytes(r rate.Bitrate, d time.Duration) int {
	b := float64(r) / 8 * d.Seconds()
	switch {
	case b <= 0 || math.IsNaN(b):
		return 0
	case b >= MaxLimit:
		return MaxLimit
	}
	return int(b)
}

// maxBytesPerSecond caps rates read from the kernel or derived from it,
// well inside a Bitrate's range (the kernel reports "unlimited" as ~0).
const maxBytesPerSecond = 1e18

// saturatingRate converts bytes per second to a Bitrate, saturating at
// maxBytesPerSecond instead of overflowing.
func saturatingRate(bytesPerSecond float64) rate.Bitrate {
	switch {
	case bytesPerSecond <= 0 || math.IsNaN(bytesPerSecond):
		return 0
	case bytesPerSecond >= maxBytesPerSecond:
		return rate.FromBytesPerSecond(maxBytesPerSecond)
	}
	return rate.FromBytesPerSecond(bytesPerSecond)
}
