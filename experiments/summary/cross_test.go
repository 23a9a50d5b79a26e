package summary

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"replenish/experiments/report"
	"replenish/records"
)

// TestCrossFields checks the competing flows' goodput over the window, the
// sum of their sinks', and the note with the shares of the link.
func TestCrossFields(t *testing.T) {
	in := videoInput() // 1 Mb/s, window 2 s to 10 s
	in.Spec.Cross = 2
	raw := t.TempDir()
	// Flow 1 receives 50 kB/s (400 kb/s) and flow 2 25 kB/s (200 kb/s),
	// every 100 ms from 0 to 12 s.
	for i, perTick := range []int64{5000, 2500} {
		var b strings.Builder
		for k := int64(0); k <= 120; k++ {
			fmt.Fprintf(&b, `{"us":%d,"total":%d}`+"\n", at(time.Duration(k)*100*time.Millisecond), k*perTick)
		}
		if err := os.WriteFile(filepath.Join(raw, records.CrossSinkFile(i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := report.Run{GoodputBps: 300e3}
	if err := crossFields(&r, in, raw); err != nil {
		t.Fatal(err)
	}
	if r.CrossFlows != 2 || r.CrossGoodputBps == nil || !near(*r.CrossGoodputBps, 600e3, 1) {
		t.Errorf("competing flows %d, goodput %v, want 2 and 600 kb/s", r.CrossFlows, r.CrossGoodputBps)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "2 competing bulk flows received 600.0 kb/s in the window (60% of the link), the video 300.0 kb/s (30%)") {
		t.Errorf("notes %q lack the shares", r.Notes)
	}

	os.Remove(filepath.Join(raw, records.CrossSinkFile(1)))
	r = report.Run{}
	if err := crossFields(&r, in, raw); err != nil || r.CrossGoodputBps != nil || !strings.Contains(strings.Join(r.Notes, "\n"), "competing flow 2: no sink records") {
		t.Errorf("a missing sink's records: error %v, goodput %v, notes %q; want none, unknown and a note", err, r.CrossGoodputBps, r.Notes)
	}
	// Flows that ended before the window (--cross-for within the
	// warm-up) leave the run the video's alone, with a note.
	in.Spec.CrossFor = in.Spec.Warmup
	if r := (report.Run{}); crossFields(&r, in, raw) != nil || r.CrossFlows != 0 || r.CrossGoodputBps != nil ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "before the window") {
		t.Errorf("competing flows that ended before the window: %+v", r)
	}
	in.Spec.CrossFor = in.Spec.Warmup + time.Second
	if r := (report.Run{}); crossFields(&r, in, raw) != nil || r.CrossFlows != 2 {
		t.Errorf("competing flows that ended in the window: %+v, want them counted", r)
	}
	in.Spec.Cross, in.Spec.CrossFor = 0, 0
	if r := (report.Run{}); crossFields(&r, in, raw) != nil || r.CrossFlows != 0 || r.CrossGoodputBps != nil {
		t.Errorf("without competing flows: %+v", r)
	}
}
