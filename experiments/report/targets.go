package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"replenish/metrics"
)

// The sweep's targets (experiments/README.md, "The sweep"): what every
// video run of TargetMode must show, judged from its run.json alone, with
// the unmanaged sender (mode "default") on the same path for the last one.
// Absolute times here are properties of the emulated path, not of the
// machine.
const (
	// TargetMode is the mode the targets are for.
	TargetMode = "replenish=15ms"

	// Source delay p50 at most SourceDelayFactor times the median frame's
	// own serialization at the bottleneck (serialization_ms) plus
	// SourceDelaySlackMs.
	SourceDelayFactor  = 1.2
	SourceDelaySlackMs = 5.0
	// Capture to received p50 and p95 at most floor_ms plus these.
	C2RP50OverFloorMs = 25.0
	C2RP95OverFloorMs = 80.0
	// Utilization at least UtilizationMin of the link, or where the top
	// rung cannot fill it (its saturation rate, TopRung.SaturationBps, or
	// its Max below UtilizationMin of the link) of what the top rung can
	// send (see judgeReachable).
	UtilizationMin = 0.9
	// Drain ratio p50 within [DrainRatioMin, DrainRatioMax].
	DrainRatioMin = 0.9
	DrainRatioMax = 1.1
	// recovery_s at most RecoveryFallMaxS after a fall of the rate (a
	// halving: capture to received back under floor_ms + 25 ms) and
	// RecoveryRiseMaxS after a rise (a doubling: utilization back at 90%).
	RecoveryFallMaxS = 2.0
	RecoveryRiseMaxS = 5.0
	// The default run's source delay p50 at least DefaultFactor times
	// TargetMode's on the same path wherever default overfills the link:
	// its bottleneck queue p50 above its own serialization_ms (the wait
	// of the last packet of a median frame sent as one burst) plus
	// OverfillMarginMs (what the targets allow a managed sender to
	// queue), a standing queue that only a sender offering more than the
	// link carries can build; or where its frames waited in its own
	// socket (see waitedInSocket): a transport that paces at the
	// bottleneck's rate (BBR) or that random loss holds below the link
	// (see lossHeld) keeps default's excess there instead.
	DefaultFactor    = 10.0
	OverfillMarginMs = 25.0
)

// verdict is a run's result against one target.
type verdict int

const (
	notApplicable verdict = iota
	met
	missed
)

// judgement is a verdict with its table cell: the value against its
// limit and "met", "missed by X" or "n/a: why".
type judgement struct {
	verdict verdict
	cell    string
}

// na returns a judgement that the target does not apply, and why.
func na(why string) judgement { return judgement{notApplicable, "n/a: " + why} }

// judged returns the judgement of value (formatted) against limit
// (formatted with its comparison, as in "≤ 71 ms"): met when ok, else
// missed by by.
func judged(ok bool, value, limit, by string) judgement {
	if ok {
		return judgement{met, value + " (" + limit + ") met"}
	}
	return judgement{missed, value + " (" + limit + ") missed by " + by}
}

// target is one column of the Targets section.
type target struct {
	name  string // column title
	limit string // the limit, for the counts
	// judge judges a run of TargetMode; def is the default run on the
	// same path, nil if none.
	judge func(r Run, def *Run) judgement
}

// targets lists the sweep's targets in their columns' order.
var targets = []target{
	{"source delay p50", fmt.Sprintf("≤ %g × serialization + %g ms", SourceDelayFactor, SourceDelaySlackMs), judgeSourceDelay},
	{"capture to received p50", fmt.Sprintf("≤ floor + %g ms", C2RP50OverFloorMs), func(r Run, _ *Run) judgement {
		return judgeC2R(r, func(p metrics.Percentiles) float64 { return p.P50 }, C2RP50OverFloorMs, retransmitShareP50)
	}},
	{"capture to received p95", fmt.Sprintf("≤ floor + %g ms", C2RP95OverFloorMs), func(r Run, _ *Run) judgement {
		return judgeC2R(r, func(p metrics.Percentiles) float64 { return p.P95 }, C2RP95OverFloorMs, retransmitShareP95)
	}},
	{"utilization", fmt.Sprintf("≥ %.0f%% of the link, or of what the top rung can send where it cannot fill it (with random loss, of what a backlogged sender's transport carried)", 100*UtilizationMin), judgeUtilization},
	{"drain ratio p50", fmt.Sprintf("%g to %g", DrainRatioMin, DrainRatioMax), judgeDrainRatio},
	{"recovery", fmt.Sprintf("≤ %g s after a halving, ≤ %g s after a doubling", RecoveryFallMaxS, RecoveryRiseMaxS), judgeRecovery},
	{"default's source delay p50", fmt.Sprintf("≥ %g× where default overfills the link", DefaultFactor), judgeDefault},
}

// needs says which field a judgement lacks: absent in results written
// before it, and given again by resummarize where the raw records allow.
func needs(field string) judgement { return na("no " + field + " (resummarize)") }

func judgeSourceDelay(r Run, _ *Run) judgement {
	v := r.SourceDelayMs.P50
	switch {
	case r.SerializationMs == nil:
		return needs("serialization_ms")
	case !finite(v):
		return na("source delay unknown")
	}
	limit := SourceDelayFactor**r.SerializationMs + SourceDelaySlackMs
	return judged(v <= limit, fmtMs(v), "≤ "+fmtMs(limit), fmtMs(v-limit))
}

// judgeC2R judges the percentile pick of capture to received against
// the floor plus over: each frame's over the floor on the path when it
// was captured (over_floor_ms), or, in results written before it,
// capture to received against floor_ms. It is n/a where retransmissions
// hold share of the frames past it (see retransmitHeld).
func judgeC2R(r Run, pick func(metrics.Percentiles) float64, over, share float64) judgement {
	if why, ok := retransmitHeld(r, over, share); ok {
		return na(why)
	}
	if r.FloorMs == nil {
		return needs("floor_ms")
	}
	if o := r.OverFloorMs; o != nil && finite(pick(*o)) {
		v := pick(*o)
		return judged(v <= over, fmtMs(v)+" over the floor", "≤ "+fmtMs(over), fmtMiss(v-over))
	}
	if r.CaptureToReceivedMs == nil || !finite(pick(*r.CaptureToReceivedMs)) {
		return na("capture to received unknown")
	}
	v, limit := pick(*r.CaptureToReceivedMs), *r.FloorMs+over
	return judged(v <= limit, fmtMs(v), "≤ "+fmtMs(limit), fmtMiss(v-limit))
}

// A retransmission holds, in a transport that delivers in order, every
// frame sent after the lost packet until it arrives: a round trip late at
// the soonest (the losses are seen by the ACKs of later packets; a lost
// tail waits longer, for a probe), so a frame sent x after it waits a
// round trip less x beyond its floor at least. Where at least a share of
// the frames is sent within a round trip less what a percentile's target
// allows over the floor after a lost packet, that percentile is one of
// them whatever the sender does: the p95 from a twentieth of them, the
// p50 from half.
const (
	retransmitShareP95 = 0.05
	retransmitShareP50 = 0.5
)

// retransmitHeld says why the target of the percentile that allows over
// ms above the floor to all but share of the frames does not apply to r,
// if it does not: the path loses packets at random, the transport
// delivers in order (TCP, and QUIC's one media stream), and at least
// share of the time lies within the round trip less over after a lost
// packet. The packet rate is the link's use in 1500-byte packets (the
// largest, so the share is if anything too low): lost packets come at
// loss × that rate, and the share of the time within d after one is
// 1 − exp(−rate × d).
func retransmitHeld(r Run, over, share float64) (string, bool) {
	if tr := transportName(r); tr != "tcp" && tr != "quic" {
		return "", false // RTP over UDP holds no frame for another's packet
	}
	l, ok := linkUse(r)
	rtt := r.RTTMs
	for _, st := range r.Steps {
		if st.RTTMs > 0 {
			rtt = min(rtt, st.RTTMs)
		}
	}
	if !(r.Loss > 0) || !ok || rtt <= over {
		return "", false
	}
	pps := l * meanRate(r) / (8 * 1500)
	held := 1 - math.Exp(-r.Loss*pps*(rtt-over)/1000)
	if held < share {
		return "", false
	}
	return fmt.Sprintf("%s loss: %.0f%% of the time lies within %s (the round trip, %s, less the %s allowed) after a lost packet (%.0f packets a second), whose retransmission holds the frames sent then past the target", fmtLoss(r.Loss), 100*held, fmtMs(rtt-over), fmtMs(rtt), fmtMs(over), pps), true
}

// fmtMiss formats a miss in milliseconds, "< 0.01 ms" for one too small
// to show.
func fmtMiss(ms float64) string {
	if ms < 0.005 {
		return "< 0.01 ms"
	}
	return fmtMs(ms)
}

// meanRate returns the bottleneck's mean rate over the window: goodput
// over utilization, or the nominal rate when those are unknown.
func meanRate(r Run) float64 {
	if finite(r.GoodputBps) && finite(r.Utilization) && r.Utilization > 0 {
		return r.GoodputBps / r.Utilization
	}
	return float64(r.RateBps)
}

// peakRate returns the highest bottleneck rate during r's window: the
// rate at its start (the nominal rate, or the last rate step's in the
// warm-up) or a rate step's within it. An encoder that saturates below
// UtilizationMin of it cannot fill the link for that part of the window,
// which the whole window's mean rate can hide (28 Mb/s halved to 14 Mb/s
// has a mean of 21 Mb/s, which a 20 Mb/s encoder could fill).
func peakRate(r Run) float64 {
	peak := float64(r.RateBps)
	for _, st := range r.Steps {
		if st.Change != StepRateRise && st.Change != StepRateFall {
			continue
		}
		if st.AtS <= r.WarmupS {
			peak = float64(st.RateBps) // the window starts at this rate
		} else {
			peak = max(peak, float64(st.RateBps))
		}
	}
	return peak
}

// limit returns the most the sender sends at the top rung, as far as the
// window shows, what sets it (kind: the encoder's saturation rate, or the
// rung's Max where that is lower or the encoder was never the limit) and
// how; ok is false if neither is known.
func (c *TopRung) limit() (bps float64, kind, how string, ok bool) {
	if c == nil {
		return 0, "", "", false
	}
	if s := c.SaturationBps; s != nil && (c.MaxBps <= 0 || *s <= float64(c.MaxBps)) {
		return *s, "encoder-limited", fmt.Sprintf("%s saturates at %s", c.Size, fmtBps(*s)), true
	}
	if c.MaxBps > 0 {
		return float64(c.MaxBps), "ladder-limited", fmt.Sprintf("%s sends at most its Max, %s", c.Size, fmtBps(float64(c.MaxBps))), true
	}
	return 0, "", "", false
}

func judgeUtilization(r Run, def *Run) judgement {
	u := r.Utilization
	if !finite(u) {
		return na("utilization unknown")
	}
	if r.CrossFlows > 0 {
		return na(sharedWith(r))
	}
	// The link's use is shown beside utilization, never judged: its gap
	// to utilization is what the packets carry besides the payload. On a
	// path whose rate steps, the window less each step's allowed recovery
	// is judged (the recovery target judges that), the whole window shown.
	link := ""
	if s := r.UtilizationSteady; s != nil && finite(*s) {
		link = fmt.Sprintf("; without the recovery after the steps (whole window %.1f%%)", 100*u)
		u = *s
	}
	l, known := linkUse(r)
	if known {
		link += fmt.Sprintf("; link %.1f%%", 100*l)
	}
	if held, ok := lossHeld(r, def); ok && known && !ladderBelow(r, held) {
		share := l / held
		j := judged(share >= UtilizationMin, fmt.Sprintf("%.1f%% of a backlogged sender's link use", 100*share),
			fmt.Sprintf("≥ %.0f%%", 100*UtilizationMin), fmt.Sprintf("%.1f points", 100*(UtilizationMin-share)))
		j.cell += fmt.Sprintf(": at %s loss its transport carried %.1f%% of the link, this run %.1f%%; utilization %.1f%%", fmtLoss(r.Loss), 100*held, 100*l, 100*u)
		return j
	}
	if most, kind, how, ok := r.Ceiling.limit(); ok {
		if rate := meanRate(r); most < UtilizationMin*rate {
			return judgeReachable(r, most, fmt.Sprintf("%s, %s (%.0f%% of the link; utilization %.1f%%)%s", kind, how, 100*most/rate, 100*r.Utilization, link))
		}
		if peak := peakRate(r); most < UtilizationMin*peak {
			return judgeReachable(r, most, fmt.Sprintf("%s while the link ran at %s: %s (%.0f%% of it; utilization %.1f%%)%s",
				kind, fmtBps(peak), how, 100*most/peak, 100*r.Utilization, link))
		}
	}
	// One decimal, or two where one would round a miss to the limit.
	digits := 1
	if short := UtilizationMin - u; short > 0 && short < 0.0005 {
		digits = 2
	}
	pct := func(x float64) string { return fmt.Sprintf("%.*f%%", digits, 100*x) }
	j := judged(u >= UtilizationMin, pct(u), fmt.Sprintf("≥ %.0f%%", 100*UtilizationMin), fmt.Sprintf("%.*f points", digits, 100*(UtilizationMin-u)))
	if r.Ceiling == nil && j.verdict == missed {
		j.cell += " (top rung's ceiling unknown)"
	}
	j.cell += link
	return j
}

// judgeReachable judges a run whose top rung cannot fill the link (it
// sends at most most, in bits per second) against what it can: its
// utilization times the bottleneck's mean rate, over the mean of the least
// of that rate and most, on the window that utilization is judged on. The
// top rung's limit is not the path's, so a sender that a path's losses or
// its own cuts kept far below it must still show: at 23.3 Mb/s, 210 ms
// and 3% loss (BBR) a stream carried 29% of the link where default
// carried 92%, and the 20 Mb/s of 1280x720 hid it. why says what limits
// the top rung; it ends the cell.
func judgeReachable(r Run, most float64, why string) judgement {
	u, steady := r.Utilization, r.UtilizationSteady != nil && finite(*r.UtilizationSteady)
	if steady {
		u = *r.UtilizationSteady
	}
	link, can := reachable(r, most, steady)
	if !(can > 0) {
		return na(why)
	}
	share := u * link / can
	j := judged(share >= UtilizationMin, fmt.Sprintf("%.1f%% of what the top rung can send", 100*share),
		fmt.Sprintf("≥ %.0f%%", 100*UtilizationMin), fmt.Sprintf("%.1f points", 100*(UtilizationMin-share)))
	j.cell += ": " + why
	return j
}

// reachable returns the means over r's window of the bottleneck's
// nominal rate (link) and of the least of it and most (can), in bits per
// second; with steady, over the window less the recovery the targets allow
// after each rate step, as utilization_steady leaves out. Both are 0 if
// the window is unknown.
func reachable(r Run, most float64, steady bool) (link, can float64) {
	const dt = 0.01 // seconds
	n := 0
	for t := r.WarmupS; t < r.WarmupS+r.DurationS; t += dt {
		bps, skip := float64(r.RateBps), false
		for _, st := range r.Steps {
			allow := RecoveryRiseMaxS
			switch {
			case st.Change == StepRateFall:
				allow = RecoveryFallMaxS
			case st.Change != StepRateRise:
				continue
			}
			if st.AtS <= t {
				bps = float64(st.RateBps)
				skip = skip || (steady && t < st.AtS+allow)
			}
		}
		if !skip {
			link, can, n = link+bps, can+min(bps, most), n+1
		}
	}
	if n == 0 {
		return 0, 0
	}
	return link / float64(n), can / float64(n)
}

// lossHeld returns the share of the link that the default run on r's path
// used, when that is what r's transport can carry there: the path loses
// packets at random, and default, which writes at the link's rate, used
// less than UtilizationMin of the link while its frames waited in its
// socket (its source delay p50 above SourceDelayFactor times its own
// serialization plus SourceDelaySlackMs), and its top rung could send
// more than UtilizationMin's worth beyond what it carried. Its transport
// was then backlogged all along and carried what the loss left: a loss-based
// congestion control's window shrinks with every random loss (CUBIC
// carries about 1 Mb/s at 1% loss and 150 ms, whatever the link), so
// that the link's rate is out of reach for any sender over it.
func lossHeld(r Run, def *Run) (float64, bool) {
	if !(r.Loss > 0) || def == nil {
		return 0, false
	}
	held, ok := linkUse(*def)
	if !ok || !(held > 0) || held >= UtilizationMin || !waitedInSocket(*def) {
		return 0, false
	}
	if most, _, _, known := def.Ceiling.limit(); known && most <= held*meanRate(*def)/UtilizationMin {
		// Default could write little more than it carried: its own top
		// rung, not its transport, held it (26.5 Mb/s with 0.5% loss:
		// 78% of the link, 1280x720's Max and its packets).
		return 0, false
	}
	return held, true
}

// waitedInSocket reports that r's frames waited in its own socket: its
// source delay p50 above SourceDelayFactor times its serialization plus
// SourceDelaySlackMs (the bound the targets set a managed sender), or none
// of the window's frames left the host. A sender that writes every frame
// as produced builds that wait only by offering more than its transport
// carries.
func waitedInSocket(r Run) bool {
	switch {
	case noneLeft(r):
		return true
	case r.SerializationMs != nil:
		return r.SourceDelayMs.P50 > SourceDelayFactor**r.SerializationMs+SourceDelaySlackMs
	}
	return false
}

// noneLeft reports that none of r's frames of the window left the host
// before the run ended (no source delay, no frame received): all of them
// waited, behind what was written before.
func noneLeft(r Run) bool { return r.Frames == 0 && !finite(r.SourceDelayMs.P50) }

// ladderBelow reports whether the top rung sends less than UtilizationMin
// of what the loss leaves of the link (held, a share of it): the ladder,
// not the transport, is then the limit.
func ladderBelow(r Run, held float64) bool {
	most, _, _, ok := r.Ceiling.limit()
	return ok && most < UtilizationMin*held*meanRate(r)
}

// sharedWith says what a run with competing flows got of the link, and
// they: the link is shared, so neither is judged against it.
func sharedWith(r Run) string {
	s := fmt.Sprintf("shared with %d competing flows", r.CrossFlows)
	if r.CrossFlows == 1 {
		s = "shared with a competing flow"
	}
	rate := meanRate(r)
	if c := r.CrossGoodputBps; c != nil && finite(*c) && rate > 0 && finite(r.GoodputBps) {
		s += fmt.Sprintf(": the video %.0f%%, the competition %.0f%%", 100*r.GoodputBps/rate, 100**c/rate)
	}
	return s
}

func judgeDrainRatio(r Run, def *Run) judgement {
	if r.CrossFlows > 0 {
		return na(sharedWith(r))
	}
	if held, ok := lossHeld(r, def); ok {
		return na(fmt.Sprintf("%s loss, not the link, limits the transport (a backlogged sender's carried %.1f%% of the link)", fmtLoss(r.Loss), 100*held))
	}
	if r.DrainRatio == nil || !finite(r.DrainRatio.P50) {
		return na("no path-limited drain estimate")
	}
	v := r.DrainRatio.P50
	by := max(DrainRatioMin-v, v-DrainRatioMax)
	return judged(by <= 0, fmt.Sprintf("%.2f", v), fmt.Sprintf("%g to %g", DrainRatioMin, DrainRatioMax), fmt.Sprintf("%.2f", by))
}

// judgeRecovery judges each step of the run's schedule that has a target
// (a fall or a rise of the rate); the run meets the target when it meets
// it at every such step.
func judgeRecovery(r Run, def *Run) judgement {
	switch {
	case r.Schedule == "":
		return na("no step")
	case r.Steps == nil:
		return needs("steps")
	case len(r.RecoveryS) != len(r.Steps):
		return na("recovery_s unknown")
	}
	var cells, skipped []string
	v := notApplicable
	_, held := lossHeld(r, def)
	why, repaired := retransmitHeld(r, C2RP50OverFloorMs, retransmitShareP50)
	for i, st := range r.Steps {
		var j judgement
		switch {
		case held && st.Change == StepRateRise:
			// Utilization back at 90% of a link the loss keeps the
			// transport far below.
			j = judgement{notApplicable, fmt.Sprintf("rise: %s loss holds the transport below the link (see utilization)", fmtLoss(r.Loss))}
		case repaired && st.Change == StepRateFall:
			// Back under the floor plus the median's allowance: the
			// median the same retransmissions hold past it.
			j = judgement{notApplicable, "fall: " + why}
		default:
			j = judgeStep(r, i, st)
		}
		if j.verdict == notApplicable {
			skipped = append(skipped, j.cell)
			continue
		}
		cells = append(cells, j.cell)
		v = max(v, j.verdict)
	}
	if v == notApplicable {
		return na(strings.Join(skipped, "; "))
	}
	return judgement{v, strings.Join(cells, "; ")}
}

// judgeStep judges recovery_s of the i-th step st of r's schedule.
func judgeStep(r Run, i int, st Step) judgement {
	var limit float64
	switch st.Change {
	case StepRateFall:
		limit = RecoveryFallMaxS
	case StepRateRise:
		limit = RecoveryRiseMaxS
	default:
		return judgement{notApplicable, strings.ReplaceAll(st.Change, "_", " ") + " step: no target"}
	}
	if st.AtS < r.WarmupS {
		return judgement{notApplicable, "step in the warm-up"}
	}
	// After a rise the utilization is judged against the new rate, which
	// an encoder that saturates below UtilizationMin of it never reaches,
	// however fast the sender climbs (as judgeUtilization's encoder-limited
	// runs), nor a top rung whose Max is below it.
	if most, kind, how, ok := r.Ceiling.limit(); ok && st.Change == StepRateRise && most < UtilizationMin*float64(st.RateBps) {
		return judgement{notApplicable, fmt.Sprintf("%s after the rise: %s (%.0f%% of %s)", kind, how, 100*most/float64(st.RateBps), fmtBps(float64(st.RateBps)))}
	}
	lim := "≤ " + fmtSec(limit)
	if v := r.RecoveryS[i]; v != nil {
		j := judged(*v <= limit, fmtSec(*v), lim, fmtSec(*v-limit))
		if j.verdict == missed {
			j.cell += windowHeld(r, i)
		}
		return j
	}
	// Not back before the next step or the window's end.
	horizon := r.WarmupS + r.DurationS
	if i+1 < len(r.Steps) {
		horizon = min(horizon, r.Steps[i+1].AtS)
	}
	left := horizon - st.AtS
	return judgement{missed, fmt.Sprintf("not back within %s (%s) missed by over %s", fmtSec(left), lim, fmtSec(left-limit)) + windowHeld(r, i)}
}

// windowHeld says, for a missed rise, how much of the climb the
// transport's congestion window held the stream (Run.RiseWindowHeld):
// near all of it, the window's growth set the pace, not the sender.
func windowHeld(r Run, i int) string {
	if i >= len(r.RiseWindowHeld) || r.RiseWindowHeld[i] == nil {
		return ""
	}
	return fmt.Sprintf("; the transport's congestion window held the stream for %.0f%% of the climb", 100**r.RiseWindowHeld[i])
}

// judgeDefault judges the default run def on r's path against r.
func judgeDefault(r Run, def *Run) judgement {
	if def == nil {
		return na("no default run on this path")
	}
	if noneLeft(*def) {
		return judgement{met, fmt.Sprintf("none of default's frames of the window left the host before the run ended (≥ %g×) met", DefaultFactor)}
	}
	if def.SerializationMs == nil {
		return needs("serialization_ms of default")
	}
	q, over := def.BottleneckQueueMs.P50, *def.SerializationMs+OverfillMarginMs
	if !finite(q) {
		return na("default's bottleneck queue unknown")
	}
	if q <= over && !waitedInSocket(*def) {
		return na("default does not overfill (queue p50 " + fmtMs(q) + " ≤ " + fmtMs(over) + ", source delay p50 " + fmtMs(def.SourceDelayMs.P50) + ")")
	}
	d, s := def.SourceDelayMs.P50, r.SourceDelayMs.P50
	if !finite(d) || !finite(s) || s <= 0 {
		return na("source delay unknown")
	}
	x := d / s
	return judged(x >= DefaultFactor, fmtRatio(x), fmt.Sprintf("≥ %g×", DefaultFactor), fmtRatio(DefaultFactor/x))
}

// targetsTable is the Targets section: the counts per target, and one row
// per run of TargetMode.
type targetsTable struct {
	CountHeader []string
	Counts      [][]string // per target: name, limit, met, missed, n/a
	Header      []string
	Rows        [][]string // per run: its ID, then a cell per target
}

// isTargetRun reports whether r is judged against the targets: a run of
// TargetMode with the sweep's fields (floor_ms, which only video runs
// have).
func isTargetRun(r Run) bool {
	return r.Mode == TargetMode && r.FloorMs != nil
}

// targetOrder orders the rows of the Targets section: runs without steps
// first, then by rate, round trip and ID.
func targetOrder(a, b Run) int {
	stepped := func(r Run) int {
		if r.Schedule == "" {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(stepped(a), stepped(b)), cmp.Compare(a.RateBps, b.RateBps),
		cmp.Compare(a.RTTMs, b.RTTMs), strings.Compare(a.ID, b.ID))
}

// targetsOf judges runs against the targets, in targetOrder; nil when
// none of them is judged (isTargetRun).
func targetsOf(runs []Run) *targetsTable {
	t := &targetsTable{
		CountHeader: []string{"target", "limit", "met", "missed", "n/a"},
		Header:      []string{"run"},
	}
	counts := make([][3]int, len(targets))
	for _, tg := range targets {
		t.Header = append(t.Header, tg.name)
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, targetOrder)
	for _, r := range sorted {
		if !isTargetRun(r) {
			continue
		}
		var def *Run
		if i := slices.IndexFunc(runs, func(o Run) bool {
			return o.Mode == "default" && o.Scenario == r.Scenario && transportName(o) == transportName(r)
		}); i >= 0 {
			def = &runs[i]
		}
		row := []string{r.ID}
		for k, tg := range targets {
			j := tg.judge(r, def)
			counts[k][j.verdict]++
			row = append(row, j.cell)
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	for k, tg := range targets {
		c := counts[k]
		t.Counts = append(t.Counts, []string{tg.name, tg.limit, strconv.Itoa(c[met]), strconv.Itoa(c[missed]), strconv.Itoa(c[notApplicable])})
	}
	return t
}

// markdown writes the section: its heading, what it judges, the counts and
// the rows.
func (t *targetsTable) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "## Targets\n\n%s\n\n", mdEscape(targetsIntro))
	mdTable(b, t.CountHeader, t.Counts, []bool{false, false, true, true, true})
	b.WriteString("\n")
	num := make([]bool, len(t.Header))
	mdTable(b, t.Header, t.Rows, num)
}

// targetsIntro introduces the Targets section.
const targetsIntro = "Each run of " + TargetMode + " against the sweep's targets (experiments/README.md): " +
	"the value, its limit, and met, missed by how much, or n/a and why."

// mdTable writes a Markdown table; numeric columns are right-aligned.
func mdTable(b *strings.Builder, header []string, rows [][]string, numeric []bool) {
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	row(header)
	b.WriteString("|")
	for _, n := range numeric {
		if n {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		row(r)
	}
}
