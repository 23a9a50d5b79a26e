package sender

import (
	"testing"

	"replenish/rate"
)

// TestPacingCap: no cap while starting (the start's estimate would bound
// the drain rate it learns from) or with nothing known; after it, 1.5
// times the larger of the capacity and the rate.
func TestPacingCap(t *testing.T) {
	for _, tc := range []struct {
		st   ControlState
		want rate.Bitrate
	}{
		{ControlState{Phase: "starting", Capacity: 2 * rate.Mbps, Rate: 2 * rate.Mbps}, 0},
		{ControlState{Phase: "cruising"}, 0},
		{ControlState{Phase: "cruising", Capacity: 2 * rate.Mbps, Rate: 1960 * rate.Kbps}, 3 * rate.Mbps},
		{ControlState{Phase: "probing", Capacity: 2 * rate.Mbps, Rate: 2400 * rate.Kbps}, 3600 * rate.Kbps},
		{ControlState{Phase: "recovering", Capacity: 1 * rate.Mbps, Rate: 900 * rate.Kbps}, 1500 * rate.Kbps},
	} {
		if got := pacingCap(tc.st); got != tc.want {
			t.Errorf("pacingCap(%+v) = %v, want %v", tc.st, got, tc.want)
		}
	}
}
