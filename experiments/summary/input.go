package summary

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/report"
	"replenish/experiments/scenario"
	"replenish/metrics"
	"replenish/records"
)

// inputVersion is the version of records.InputFile this program writes. Version 2
// has the emulator's percentiles in ms (metrics.Percentiles); files without
// a version have them as durations in ns.
const inputVersion = 2

// savedInput is the content of records.InputFile.
type savedInput struct {
	Version int
	ID      string
	Spec    scenario.Run
	T0Us    int64 // µs since the epoch
	Final   emu.Stats
	Samples []Sample
	// Idle is in.Idle with its spans in µs since T0; absent in files
	// written before it was gathered.
	Idle *IdleLog `json:",omitempty"`
	// PageFinal is in.PageFinal; absent without a page leg.
	PageFinal *emu.Stats `json:",omitempty"`
}

// SaveInput writes in to dir/input.json (records.InputFile), so that the
// run can be summarized again from its raw directory dir.
func SaveInput(dir string, in Input) error {
	t0 := in.TL.T0.UnixMicro()
	var idle *IdleLog
	if in.Idle.Known {
		idle = &IdleLog{Known: true, Lost: in.Idle.Lost, Spans: make([][2]int64, len(in.Idle.Spans))}
		for i, s := range in.Idle.Spans {
			idle.Spans[i] = [2]int64{s[0] - t0, s[1] - t0}
		}
	}
	data, err := json.Marshal(savedInput{Version: inputVersion, ID: in.ID, Spec: in.Spec, T0Us: t0, Final: in.Final, Samples: in.Samples, Idle: idle,
		PageFinal: in.PageFinal})
	if err != nil {
		return fmt.Errorf("summary: encoding %s: %w", records.InputFile, err)
	}
	return os.WriteFile(filepath.Join(dir, records.InputFile), data, 0o644)
}

// LoadInput reads dir/input.json as SaveInput wrote it, or as earlier
// versions did.
func LoadInput(dir string) (Input, error) {
	data, err := os.ReadFile(filepath.Join(dir, records.InputFile))
	if err != nil {
		return Input{}, err
	}
	var s savedInput
	if err := json.Unmarshal(data, &s); err != nil {
		return Input{}, fmt.Errorf("summary: %s: %w", records.InputFile, err)
	}
	if s.Version < 2 {
		var old legacyInput
		if err := json.Unmarshal(data, &old); err != nil {
			return Input{}, fmt.Errorf("summary: %s: %w", records.InputFile, err)
		}
		old.convert(&s.Final)
	}
	t0 := time.UnixMicro(s.T0Us)
	in := Input{Spec: s.Spec, ID: s.ID, TL: Timeline{T0: t0, Warmup: s.Spec.Warmup, Duration: s.Spec.Duration},
		Final: s.Final, Samples: s.Samples, PageFinal: s.PageFinal}
	if s.Idle != nil {
		in.Idle = *s.Idle
		for i, sp := range in.Idle.Spans {
			in.Idle.Spans[i] = [2]int64{sp[0] + s.T0Us, sp[1] + s.T0Us}
		}
	}
	return in, nil
}

// legacyInput is what changed in records.InputFile at version 2: the emulator's
// percentiles were durations in ns.
type legacyInput struct {
	Final struct{ Forward, Reverse legacyDir }
}

type (
	legacyDir         struct{ Total, Window legacyCounters }
	legacyCounters    struct{ Queue, Late legacyPercentiles }
	legacyPercentiles struct{ P50, P95, P99, Max time.Duration }
)

// convert sets the percentiles of st from those of l.
func (l legacyInput) convert(st *emu.Stats) {
	for _, d := range []struct {
		old legacyDir
		new *emu.DirStats
	}{{l.Final.Forward, &st.Forward}, {l.Final.Reverse, &st.Reverse}} {
		for _, c := range []struct {
			old legacyCounters
			new *emu.Counters
		}{{d.old.Total, &d.new.Total}, {d.old.Window, &d.new.Window}} {
			c.new.Queue, c.new.Late = c.old.Queue.ms(c.new.Packets), c.old.Late.ms(c.new.Packets)
		}
	}
}

// ms returns p in ms, over n values.
func (p legacyPercentiles) ms(n int64) metrics.Percentiles {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return metrics.Percentiles{N: int(n), P50: ms(p.P50), P95: ms(p.P95), P99: ms(p.P99), Max: ms(p.Max), Figures: metrics.All}
}

// Resummarize computes a run's summary and records again from its raw
// directory: its input.json and its processes' records.
func Resummarize(raw string) (report.Run, []records.RunLine, error) {
	in, err := LoadInput(raw)
	if err != nil {
		return report.Run{}, nil, err
	}
	return Summarize(in, raw)
}
