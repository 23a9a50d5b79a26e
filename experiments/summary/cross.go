package summary

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"replenish/experiments/report"
	"replenish/records"
)

// crossFields sets r's competing flows (--cross): how many, what their
// sinks received in the window together, and a note with the shares of the
// link; if they ended before the window (--cross-for), only a note, and
// the run is judged as the video's alone. A sink without records leaves
// the goodput unknown, with a note; a sink's records that cannot be read
// fail it.
func crossFields(r *report.Run, in Input, raw string) error {
	n := in.Spec.Cross
	if n <= 0 {
		return nil
	}
	if !in.Spec.CrossInWindow() {
		r.Notes = append(r.Notes, fmt.Sprintf("the competing flows ended %v after the start, before the window (%v): the video had the path alone in it",
			in.Spec.CrossFor, in.Spec.Warmup))
		return nil
	}
	from, to := in.TL.window()
	var sum float64
	r.CrossFlows = n
	for i := range n {
		path := filepath.Join(raw, records.CrossSinkFile(i))
		if _, err := os.Stat(path); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("competing flow %d: no sink records (%v): the competition's goodput is unknown", i+1, err))
			return nil
		}
		var sink []records.Sink
		err := records.ReadFile(path, func(_ string, line []byte) error { return records.Append(&sink, line) })
		if err != nil {
			return fmt.Errorf("summary: competing flow %d's sink records: %w", i+1, err)
		}
		sum += goodputBetween(sink, from, to)
	}
	r.CrossGoodputBps = ptr(sum)
	if rate := in.meanRate(); rate > 0 && !math.IsNaN(sum) {
		flows := fmt.Sprintf("%d competing bulk flows", n)
		if n == 1 {
			flows = "a competing bulk flow"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%s received %s in the window (%.0f%% of the link), the video %s (%.0f%%)",
			flows, FormatBps(sum), 100*sum/rate, FormatBps(r.GoodputBps), 100*r.GoodputBps/rate))
	}
	return nil
}
