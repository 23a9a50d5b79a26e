package tcp

import (
	"math"
	"strconv"
	"time"

	"replenish/rate"
	"replenish/transport/drain"
)

// RuleInput holds what the invitation rule reads at each decision: the
// socket's unsent backlog and MSS from TCP_INFO, the drain-rate estimate, and
// the connection's settings.
type RuleInput struct {
	Unsent int // bytes written but not yet sent (tcpi_notsent_bytes)
	MSS    int // sender MSS in bytes (tcpi_snd_mss)
	// DrainRate is the estimated rate at which the backlog drains, from
	// DrainSource; drain.SourceNone means no rate is known.
	DrainRate      rate.Bitrate
	DrainSource    drain.Source
	Nagle          bool          // Nagle's algorithm is on (TCP_NODELAY off)
	NoSubMSSClause bool          // diagnostic: ignore the sub-MSS clause even with Nagle on
	ReplenishTime  time.Duration // the configured replenish time
	// Lead is the application's production time: how long it takes from
	// an invitation to the write (capture and encode). Zero for an
	// application that writes as soon as it is invited.
	Lead time.Duration
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
	// half the replenish time plus the lead to drain.
	ReasonAboveThreshold
	// ReasonLead: the unsent backlog is above half the threshold but
	// drains within half the replenish time plus the application's lead.
	ReasonLead
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
	case ReasonLead:
		return "lead"
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
	DrainRate rate.Bitrate // the input's drain rate; 0 if unknown
	// Threshold is DrainRate × ReplenishTime in bytes; 0 if the rate is
	// unknown.
	Threshold int
	// Limit is the largest unsent backlog the rule invites at with the same
	// estimates: half the Threshold (Linux's write-space hysteresis) plus
	// DrainRate × Lead, raised to MSS-1 by the sub-MSS clause, or MaxLimit
	// when no rate is known.
	Limit int
}

// Decide applies the invitation rule. It is pure: the same input always
// gives the same Decision.
//
// The threshold is drain rate × replenish time. The rule invites when
// nothing is unsent, when no drain rate is known (erring toward inviting
// rather than stalling), when the unsent backlog has drained to half the
// threshold plus what drains during the lead, or when Nagle is on (and the
// clause is not disabled) and less than one MSS is unsent. The sub-MSS
// clause never applies with TCP_NODELAY: there it would pool writes behind a
// blocked segment instead of letting each travel as its own small packet.
//
// Half the threshold is Linux's convention for write readiness: poll()
// reports a socket writable when its TCP_NOTSENT_LOWAT backlog is at half
// the limit (and the send buffer when a third is free), so that an
// application woken by it has room for a real write rather than thrashing
// at the edge. The measured kernel implementation of TCP_REPLENISH_TIME
// (seeds/000) wakes the same way, so a replenish time here means what it
// would mean to a kernel that had the option: an application that writes
// as soon as it is invited finds at most half a replenish time of data
// ahead of it.
//
// An application that first has to produce what it writes (capture and
// encode a frame) would find the socket emptier by its production time, or
// empty: at the default 15 ms the kernel's notice is 7.5 ms, less than a
// 1280x720 encode. The lead keeps the kernel's promise for it: the rule
// invites that much earlier, at drain rate × (replenish time / 2 + lead), so
// that its frame arrives when about half a replenish time of backlog
// remains, as an immediate writer's does. With a zero lead the rule is the
// kernel's. Inviting at the full threshold instead would give a fixed 15 ms
// of notice, too little for the largest encodes and more than a small one
// needs, whereas the lead follows the application's measured production
// time and leaves the replenish time its meaning.
func Decide(in RuleInput) Decision {
	d := Decision{DrainRate: in.DrainRate}
	known := in.DrainSource != drain.SourceNone
	if !known {
		d.DrainRate = 0
		d.Limit = MaxLimit
	} else {
		d.Threshold = thresholdBytes(in.DrainRate, in.ReplenishTime)
		d.Limit = min(d.Threshold/2+thresholdBytes(in.DrainRate, in.Lead), MaxLimit)
		if subMSSClause(in) {
			d.Limit = max(d.Limit, in.MSS-1)
		}
	}
	switch {
	case in.Unsent <= 0:
		d.Invite, d.Reason = true, ReasonEmpty
	case !known:
		d.Invite, d.Reason = true, ReasonNoEstimate
	case in.Unsent <= d.Threshold/2:
		d.Invite, d.Reason = true, ReasonBelowThreshold
	case subMSSClause(in) && in.Unsent < in.MSS:
		d.Invite, d.Reason = true, ReasonSubMSS
	case in.Unsent <= d.Limit:
		d.Invite, d.Reason = true, ReasonLead
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
