package report

import (
	"fmt"
	"strings"
)

// sweepColumns are the columns of what runs lost and of the sweep's
// fields, each shown only when a run of the table has the value: the
// tables of results written before them are unchanged.
var sweepColumns = []column{
	{"freezes", true, anyRun(func(r Run) bool { return r.Freezes != nil }), fmtFreezes},
	{"lost / undecodable", true, anyRun(func(r Run) bool { return lossShown(r) }), func(r Run) string {
		if r.FramesLost == nil || r.Undecodable == nil {
			return missing
		}
		return fmt.Sprintf("%d / %d", *r.FramesLost, *r.Undecodable)
	}},
	{"expiry waste", true, anyRun(func(r Run) bool { return r.Expiry != nil }), func(r Run) string {
		if r.Expiry == nil {
			return missing
		}
		return fmt.Sprintf("%.1f%% (%d reset, %d dropped)", 100*r.Expiry.Waste, r.Expiry.Reset, r.Expiry.Dropped)
	}},
	{"drain ratio p50 / p95", true, anyRun(func(r Run) bool { return r.DrainRatio != nil }), func(r Run) string {
		if r.DrainRatio == nil || !r.DrainRatio.Known() {
			return missing
		}
		return fmt.Sprintf("%.2f / %.2f", r.DrainRatio.P50, r.DrainRatio.P95)
	}},
	{"idle", true, anyRun(func(r Run) bool { return r.IdleFraction != nil }), func(r Run) string {
		if r.IdleFraction == nil {
			return missing
		}
		return fmt.Sprintf("%.1f%%", 100**r.IdleFraction)
	}},
	{"floor", true, anyRun(func(r Run) bool { return r.FloorMs != nil }), func(r Run) string { return fmtMs(orNaN(r.FloorMs)) }},
	{"capture to received − floor p50 / p95", true, anyRun(func(r Run) bool { return r.FloorMs != nil }), func(r Run) string {
		p50, p95 := overFloor(r)
		return fmtPair(p50, p95)
	}},
	{"recovery", true, anyRun(func(r Run) bool { return len(r.RecoveryS) > 0 }), fmtRecovery},
}

// lossShown reports whether r lost frames, or has an expiry to show.
func lossShown(r Run) bool {
	return (r.FramesLost != nil && *r.FramesLost > 0) || (r.Undecodable != nil && *r.Undecodable > 0) || r.Expiry != nil
}

// fmtFreezes formats freezes as "count / total", as in "2 / 430 ms".
func fmtFreezes(r Run) string {
	if r.Freezes == nil {
		return missing
	}
	if r.Freezes.Count == 0 {
		return "0"
	}
	return fmt.Sprintf("%d / %s", r.Freezes.Count, fmtMs(r.Freezes.TotalMs))
}

// overFloor returns capture to received p50 and p95 less floor_ms, NaN
// when either is unknown.
func overFloor(r Run) (p50, p95 float64) {
	if r.FloorMs == nil || r.CaptureToReceivedMs == nil {
		return nan(), nan()
	}
	return r.CaptureToReceivedMs.P50 - *r.FloorMs, r.CaptureToReceivedMs.P95 - *r.FloorMs
}

// fmtRecovery formats the recoveries of a run's steps in their order, "–"
// for a step it did not recover from, as in "0.80 s, –".
func fmtRecovery(r Run) string {
	if len(r.RecoveryS) == 0 {
		return missing
	}
	parts := make([]string, len(r.RecoveryS))
	for i, v := range r.RecoveryS {
		parts[i] = fmtSec(orNaN(v))
	}
	return strings.Join(parts, ", ")
}
