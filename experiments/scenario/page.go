package scenario

import (
	"fmt"
	"strings"
	"time"

	"replenish/experiments/emu"
	"replenish/rate"
	"replenish/transport"
)

// PageLeg is the emulated path between the viewer and its page (headless
// Chromium) in a video run, a path of its own beside the sender's: the
// page's link, as a laptop's on conference Wi-Fi, with its rate, RTT,
// queue and schedule, and the viewer's buffer policy toward the page.
type PageLeg struct {
	Rate     rate.Bitrate  // bottleneck rate, viewer to page
	RTT      time.Duration // round-trip propagation delay, split evenly
	Queue    time.Duration // drop-tail limit as time at Rate
	Schedule []Step        // rate and RTT steps after the run's start
	// Mode is the viewer's buffer policy toward the page (its
	// -page-mode): replenish or default.
	Mode transport.Mode
}

// path returns the leg as a Path, for its emulator configuration and
// schedule.
func (l PageLeg) path() Path {
	return Path{Rate: l.Rate, RTT: l.RTT, Queue: l.Queue, Schedule: l.Schedule}
}

// EmuConfig returns the emulator's configuration for the leg: its sender
// side the viewer's namespace viewerNS (emu.Config.SenderNS), the
// bottleneck toward the page, the RTT split between the two directions.
func (l PageLeg) EmuConfig(viewerNS string) emu.Config {
	c := l.path().EmuConfig()
	c.SenderNS = viewerNS
	return c
}

// EmuSchedule returns the leg's schedule as the emulator's steps of each
// direction, as Path.EmuSchedule does.
func (l PageLeg) EmuSchedule() (forward, reverse []emu.Step) {
	return l.path().EmuSchedule()
}

// OneWay returns the leg's one-way delay toward the page at the start.
func (l PageLeg) OneWay() time.Duration {
	fwd, _ := emu.SplitRTT(l.RTT)
	return fwd
}

// id returns the leg's part of a run ID: "page1mbit-40ms-replenish=15ms",
// with the queue and the number of steps where they are not the default.
func (l PageLeg) id() string {
	parts := []string{"page" + FormatRate(l.Rate), fmtDur(l.RTT)}
	if l.Queue != Defaults().PageQueue {
		parts = append(parts, "q"+fmtDur(l.Queue))
	}
	if len(l.Schedule) > 0 {
		parts = append(parts, "sched"+fmt.Sprint(len(l.Schedule)))
	}
	return strings.Join(append(parts, l.Mode.String()), "-")
}

// describe returns the leg for a scenario title, without its mode (a
// table compares the modes): "page leg 1.00 Mb/s, 40 ms RTT, 200 ms queue".
func (l PageLeg) describe() string {
	s := fmt.Sprintf("page leg %v, %s RTT, %s queue", l.Rate, fmtDurSpace(l.RTT), fmtDurSpace(l.Queue))
	if len(l.Schedule) > 0 {
		s += ", page schedule " + FormatSchedule(l.Schedule)
	}
	return s
}

// pageLeg checks the page flags and returns the leg they describe, without
// a mode, or nil without --page-rate.
func (f Flags) pageLeg(w Workload) (*PageLeg, error) {
	if f.PageRate == "" {
		if f.PageSchedule != "" {
			return nil, fmt.Errorf("%w: --page-schedule needs --page-rate", ErrSpec)
		}
		return nil, nil
	}
	r, err := rate.Parse(f.PageRate)
	if err != nil || r <= 0 {
		return nil, fmt.Errorf("%w: --page-rate %q: want a rate", ErrSpec, f.PageRate)
	}
	switch {
	case w.Kind != KindVideo:
		return nil, fmt.Errorf("%w: --page-rate applies to the video workload only", ErrSpec)
	case f.PageRTT < 0:
		return nil, fmt.Errorf("%w: --page-rtt %v is negative", ErrSpec, f.PageRTT)
	case f.PageQueue <= 0:
		return nil, fmt.Errorf("%w: --page-queue %v must be positive", ErrSpec, f.PageQueue)
	}
	for _, m := range f.PageModes {
		if m.Policy != transport.Replenish && m.Policy != transport.Default {
			return nil, fmt.Errorf("%w: --page-modes %s: the viewer's policy toward a page is replenish or default", ErrSpec, m)
		}
	}
	sched, err := ParseSchedule(f.PageSchedule)
	if err != nil {
		return nil, fmt.Errorf("--page-schedule: %w", err)
	}
	return &PageLeg{Rate: r, RTT: f.PageRTT, Queue: f.PageQueue, Schedule: sched}, nil
}

// withPageModes returns runs, each once per page mode when it has a page
// leg.
func withPageModes(runs []Run, modes []transport.Mode) []Run {
	if len(runs) == 0 || runs[0].Page == nil {
		return runs
	}
	var out []Run
	for _, r := range runs {
		for _, m := range modes {
			leg := *r.Page
			leg.Mode = m
			r.Page = &leg
			out = append(out, r)
		}
	}
	return out
}
