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
	{"outage recovery", true, anyRun(func(r Run) bool { return len(r.OutageRecoveryS) > 0 }), func(r Run) string {
		return fmtSecs(r.OutageRecoveryS)
	}},
}

// lossShown reports whether r lost frames, or has an expiry to show.
func lossShown(r Run) bool {
	return (r.FramesLost != nil && *r.FramesLost > 0) || (r.Undecodable != nil && *r.Undecodable > 0) || r.Expiry != nil
}

// fmtFreezes formats freezes as "count / total, longest", as in
// "2 / 430 ms, longest 310 ms" (without the longest in results written
// before it).
func fmtFreezes(r Run) string {
	if r.Freezes == nil {
		return missing
	}
	if r.Freezes.Count == 0 {
		return "0"
	}
	s := fmt.Sprintf("%d / %s", r.Freezes.Count, fmtMs(r.Freezes.TotalMs))
	if r.Freezes.MaxMs != nil {
		s += ", longest " + fmtMs(*r.Freezes.MaxMs)
	}
	return s
}

// overFloor returns capture to received p50 and p95 over the floor: each
// frame's over the floor when it was captured (over_floor_ms), or, in
// results written before it, capture to received less floor_ms; NaN when
// unknown.
func overFloor(r Run) (p50, p95 float64) {
	switch {
	case r.OverFloorMs != nil:
		return r.OverFloorMs.P50, r.OverFloorMs.P95
	case r.FloorMs == nil || r.CaptureToReceivedMs == nil:
		return nan(), nan()
	}
	return r.CaptureToReceivedMs.P50 - *r.FloorMs, r.CaptureToReceivedMs.P95 - *r.FloorMs
}

// fmtRecovery formats the recoveries of a run's steps in their order, "–"
// for a step it did not recover from, as in "0.80 s, –".
func fmtRecovery(r Run) string { return fmtSecs(r.RecoveryS) }

// fmtSecs formats seconds in their order, "–" for a null one, as in
// "0.80 s, –"; "–" for none.
func fmtSecs(v []*float64) string {
	if len(v) == 0 {
		return missing
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmtSec(orNaN(x))
	}
	return strings.Join(parts, ", ")
}
