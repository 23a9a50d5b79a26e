// Package report turns a results directory written by the experiments runner
// into the published comparison: summary.json, one Markdown table per
// scenario (summary.md: a path, its runs side by side by transport and
// mode), SVG plots (per table and across runs) and a self-contained
// index.html.
//
// A results directory holds one subdirectory per run:
//
//	OUT/runs/<run-id>/run.json       one Run, the runner's summary of the run
//	OUT/runs/<run-id>/records.jsonl  per-write, per-frame and sample records
//
// Run is the schema of run.json; the runner writes it and this package
// reads it back. Its distributions are metrics.Percentiles carrying
// Figures.
package report

import (
	"encoding/json"
	"math"

	"replenish/metrics"
)

// Figures are the figures run.json gives of a distribution: p50, p95 and
// p99, each null when unknown.
const Figures = metrics.P50 | metrics.P95 | metrics.P99

// NoPercentiles returns a distribution of run.json with every figure
// unknown (NaN).
func NoPercentiles() metrics.Percentiles { return metrics.Unknown(Figures) }

// Summarize returns the distribution of values as run.json gives it (see
// Figures), all unknown for no values. It sorts values in place.
func Summarize(values []float64) metrics.Percentiles {
	return metrics.Summarize(values).Only(Figures)
}

// Run is one run's summary as the runner writes it to runs/<id>/run.json.
// Fields marked video are set for video workloads only.
//
// When read from JSON, absent or null percentiles, goodput and utilization
// are NaN (unknown) rather than zero. When written, NaN and infinite values
// never reach the JSON: unknown percentiles, goodput and utilization are
// written as null, other non-finite numbers as zero (or omitted where the
// field is optional).
type Run struct {
	// ID is unique and safe as a file name, as in
	// "2mbit-172ms-bulk-replenish=15ms".
	ID string `json:"id"`
	// Scenario groups the runs compared in one table and plot, as in
	// "bulk 64 KiB, 2 Mb/s, 172 ms RTT, 200 ms queue".
	Scenario string `json:"scenario"`
	// Mode is the send-buffer policy: "default", "lowat=BYTES",
	// "replenish=DURATION", "expire=DURATION" (QUIC), each optionally
	// followed by "+nagle", then "+nosubmss"; "gcc" for WebRTC.
	Mode      string `json:"mode"`
	Transport string `json:"transport"` // "tcp", "quic" or "webrtc"
	Workload  string `json:"workload"`  // "bulk=65536", "video"
	CC        string `json:"cc"`        // congestion control, e.g. "cubic"

	RateBps int64   `json:"rate_bps"` // nominal bottleneck rate, bits per second
	RTTMs   float64 `json:"rtt_ms"`   // emulated round-trip time
	QueueMs float64 `json:"queue_ms"` // bottleneck queue limit
	Loss    float64 `json:"loss"`     // random loss probability, 0..1
	// JitterMs is the forward path's delay variation (each packet's
	// one-way delay gains up to this much); absent without.
	JitterMs  float64 `json:"jitter_ms,omitempty"`
	DurationS float64 `json:"duration_s"` // measured window, after warm-up
	WarmupS   float64 `json:"warmup_s"`   // warm-up before the measured window
	// Schedule is the path's rate and RTT steps after the start, as
	// --schedule gives them ("20s=1mbit,30s=/80ms"); absent without.
	Schedule string `json:"schedule,omitempty"`

	SourceDelayMs       metrics.Percentiles            `json:"source_delay_ms"`
	G2GMs               *metrics.Percentiles           `json:"g2g_ms,omitempty"`                 // video with a browser
	CaptureToReceivedMs *metrics.Percentiles           `json:"capture_to_received_ms,omitempty"` // video
	PartsMs             map[string]metrics.Percentiles `json:"parts_ms,omitempty"`               // video: wait, encode, source_delay, network

	GoodputBps  float64 `json:"goodput_bps"`
	Utilization float64 `json:"utilization"` // goodput / rate
	// LinkUtilization is the bottleneck's use by the run: the IP bytes
	// it delivered toward the receiver in the window over the window's
	// mean rate. Its gap to Utilization is what the packets carried
	// besides the payload (headers, framing, the sender's timing
	// reports). Absent when unknown, as in results written before it.
	LinkUtilization *float64 `json:"link_utilization,omitempty"`
	FPS             *float64 `json:"fps,omitempty"`         // video
	Width           int      `json:"width,omitempty"`       // video: most common resolution
	Height          int      `json:"height,omitempty"`      // video: most common resolution
	BitrateBps      float64  `json:"bitrate_bps,omitempty"` // video: media bitrate delivered

	BottleneckQueueMs metrics.Percentiles `json:"bottleneck_queue_ms"`
	EmulatorDrops     int64               `json:"emulator_drops"` // in the window
	Retransmits       int64               `json:"retransmits"`    // TCP's, in the window
	Writes            int                 `json:"writes,omitempty"`
	Frames            int                 `json:"frames,omitempty"`

	// CrossFlows is how many competing bulk flows shared the path with the
	// video (--cross), and CrossGoodputBps what their sinks received in
	// the window, together; both absent without.
	CrossFlows      int      `json:"cross_flows,omitempty"`
	CrossGoodputBps *float64 `json:"cross_goodput_bps,omitempty"`

	// EmulatorLateMs is how long after its computed departure the
	// emulator delivered each packet of the forward path in the window
	// (p50, p99, max): its own timing error, which a busy machine raises.
	// Absent in results written before it.
	EmulatorLateMs *metrics.Percentiles `json:"emulator_late_ms,omitempty"`

	// Video, every transport (absent in results written before them).
	Freezes     *Freezes `json:"freezes,omitempty"`     // gaps over FreezeMs between frames received
	FramesLost  *int     `json:"frames_lost,omitempty"` // the viewer's "lost" frames (reset streams, gaps) in the window
	Undecodable *int     `json:"undecodable,omitempty"` // frames received in the window that depended on a lost one
	Expiry      *Expiry  `json:"expiry,omitempty"`      // QUIC's expire mode
	// DrainRatio is the drain estimate over the bottleneck rate in the
	// estimate's units (the rate times the share of the link's IP bytes
	// the sender wrote), over the frames whose estimate came from
	// path-limited windows: p50, p95, n.
	DrainRatio *metrics.Percentiles `json:"drain_ratio,omitempty"`
	// IdleFraction is the share of the window the bottleneck sat idle
	// while the sender had raw frames waiting to be invited.
	IdleFraction *float64           `json:"idle_fraction,omitempty"`
	RungFraction map[string]float64 `json:"rung_fraction,omitempty"` // share of the window's frames at each resolution ("640x360")
	// FloorMs is the one-way delay plus the median frame's serialization
	// at the bottleneck (its packets, headers included, where the link's
	// bytes are the stream's alone) plus the median encode, on the path as
	// it is at the window's start.
	FloorMs *float64 `json:"floor_ms,omitempty"`
	// OverFloorMs is, over the frames of CaptureToReceivedMs, each
	// frame's capture to received less the floor on the path when it was
	// captured (FloorMs on a path without steps); the targets judge it.
	// Absent in results written before it.
	OverFloorMs *metrics.Percentiles `json:"over_floor_ms,omitempty"`
	// RecoveryS has, for each step of Schedule, the seconds until the run
	// recovered from it, null when it did not within the window (see
	// experiments/README.md for the criteria).
	RecoveryS []*float64 `json:"recovery_s,omitempty"`
	// RiseWindowHeld has, for each rise of the rate in Schedule, the
	// share of the frames written from the step until the run was back
	// (or the next step or the window's end) whose invitation found the
	// transport's bytes in flight within three full-size packets of its
	// congestion window: how much of the climb the window's growth, not
	// the sender, held. Null for other steps and where no frame recorded
	// its transport's window; absent when no step has a share, and in
	// results written before it.
	RiseWindowHeld []*float64 `json:"rise_window_held,omitempty"`
	// UtilizationSteady is Utilization over the window less the recovery
	// its target allows after each change of the rate (RecoveryFallMaxS
	// after a fall, RecoveryRiseMaxS after a rise), the media received in
	// what is left over the bottleneck's rate there; the targets judge it
	// in place of Utilization. Absent on paths without such a step and in
	// results written before it.
	UtilizationSteady *float64 `json:"utilization_steady,omitempty"`
	// Steps describes each step of Schedule in its order, as RecoveryS
	// judges it; absent without a schedule and in results written before
	// it.
	Steps []Step `json:"steps,omitempty"`
	// SerializationMs is the median, over the frames captured in the
	// window, of a frame's own serialization at the bottleneck: its
	// encoded bytes (without packet headers) at the bottleneck rate when
	// it was written. Absent in results written before it.
	SerializationMs *float64 `json:"serialization_ms,omitempty"`
	// Ceiling is what the window shows of the sender's own limit at the
	// top rung of its ladder (see TopRung), video; absent in results
	// written before it.
	Ceiling *TopRung `json:"top_rung,omitempty"`
	// OutageRecoveryS has, for each outage of Schedule (AT=down to
	// AT=up), the seconds from the path's return until the viewer
	// received the first decodable frame captured after it, null when
	// none came before the next outage or the end of the run, or the
	// path came back in the warm-up.
	OutageRecoveryS []*float64 `json:"outage_recovery_s,omitempty"`

	// Page is the page's own leg (--page-rate) and what the page behind
	// it displayed in the window; absent without one.
	Page *PageLeg `json:"page,omitempty"`

	Notes []string `json:"notes,omitempty"` // e.g. "goodput still converging"
}

// PageLeg describes a video run's page leg, the emulated path between the
// viewer and its page, and what the page displayed in the measured window
// (by the time it displayed them).
type PageLeg struct {
	Mode     string  `json:"mode"`     // the viewer's policy toward the page: "replenish=15ms", "default"
	RateBps  int64   `json:"rate_bps"` // the leg's bottleneck rate at the start
	RTTMs    float64 `json:"rtt_ms"`
	QueueMs  float64 `json:"queue_ms"`
	Schedule string  `json:"schedule,omitempty"` // the leg's steps, as --page-schedule gives them
	// OneWayMs is the leg's one-way delay toward the page at the start.
	OneWayMs float64 `json:"one_way_ms"`
	// QueueDelayMs is the queueing delay at the leg's bottleneck, toward
	// the page, in the window; Drops its drop-tail refusals there.
	QueueDelayMs metrics.Percentiles `json:"queue_delay_ms"`
	Drops        int64               `json:"drops"`
	// G2GMs is glass to glass of the frames displayed in the window.
	G2GMs metrics.Percentiles `json:"g2g_ms"`
	// FPS is the frames displayed per second, and LayerFPS the same by
	// temporal layer (TID 0 to 3; keyframes and a stream without layers
	// in 0).
	FPS      float64    `json:"fps"`
	LayerFPS [4]float64 `json:"layer_fps"`
	Misreads int        `json:"misreads"` // displayed frames whose timestamp did not read
}

// Kinds of a schedule's step (Step.Change), as recovery_s judges them.
const (
	StepRateRise = "rate_rise" // the bottleneck rate rose: recovered when utilization is back
	StepRateFall = "rate_fall" // the bottleneck rate fell: recovered when capture to received is back near the floor
	StepRTT      = "rtt"       // only the round trip changed: as StepRateFall
	StepDown     = "down"      // the path went down (an outage)
	StepUp       = "up"        // the path came back
)

// Step is one step of a run's schedule: when it came and the path after
// it.
type Step struct {
	AtS     float64 `json:"at_s"`     // seconds since the run's start
	Change  string  `json:"change"`   // StepRateRise, StepRateFall, StepRTT, StepDown or StepUp
	RateBps int64   `json:"rate_bps"` // the bottleneck rate after the step
	RTTMs   float64 `json:"rtt_ms"`   // the round trip after the step
}

// TopRung is what a video run's measured window shows of the top rung of
// the sender's ladder (the largest size it may send), and of the bitrate
// at which the sender, not the path, was the limit there: the encoder
// could not produce its target, or the target sat at the rung's ceiling.
// experiments/README.md defines it.
type TopRung struct {
	Size string `json:"size"` // "1280x720"
	// Seconds counts the 1 s bins of the window spent wholly at the top
	// rung whose frames could be judged (no skipped frame, no keyframe,
	// the bin before also at the top rung).
	Seconds int `json:"seconds"`
	// OutputRatio is the 75th percentile over those bins of the
	// encoder's output over its target; null with too few bins.
	OutputRatio *float64 `json:"output_ratio_p75"`
	// SaturationBps is the median encoded bitrate of those bins when the
	// sender was the limit there, null otherwise: the encoder's
	// saturation rate at the top rung.
	SaturationBps *float64 `json:"saturation_bps"`
	// MaxBps is the rung's Max: the ladder caps the target there, so the
	// encoder sends about that at most, whatever the path; 0 in results
	// written before it.
	MaxBps int64 `json:"max_bps,omitempty"`
}

// FreezeMs is the shortest gap between two frames received that counts as
// a freeze.
const FreezeMs = 200

// Freezes counts the gaps over FreezeMs between consecutive decodable
// frames the viewer received, within the measured window, and sums their
// lengths (within the window).
type Freezes struct {
	Count   int     `json:"count"`
	TotalMs float64 `json:"total_ms"`
	// MaxMs is the longest of them (its part within the window), 0
	// without any; absent in results written before it.
	MaxMs *float64 `json:"max_ms,omitempty"`
}

// Expiry is what QUIC's expire mode did over the whole run (the
// connections' totals, warm-up included): frames dropped before any byte
// was sent, frames whose stream was reset part way, the bytes sent for
// those, and those bytes' share of all bytes written.
type Expiry struct {
	Dropped    uint64  `json:"dropped"`
	Reset      uint64  `json:"reset"`
	BytesReset uint64  `json:"bytes_reset"`
	Waste      float64 `json:"waste"`
}

// runAlias has Run's fields without its methods.
type runAlias Run

// MarshalJSON writes r with every non-finite number replaced as described on
// Run, and every distribution with Figures.
func (r Run) MarshalJSON() ([]byte, error) {
	a := runAlias(r.withFigures())
	for _, f := range []*float64{&a.RTTMs, &a.QueueMs, &a.Loss, &a.JitterMs, &a.DurationS, &a.WarmupS, &a.BitrateBps} {
		if !finite(*f) {
			*f = 0
		}
	}
	if a.FPS != nil && !finite(*a.FPS) {
		a.FPS = nil
	}
	if a.LinkUtilization != nil && !finite(*a.LinkUtilization) {
		a.LinkUtilization = nil
	}
	if a.UtilizationSteady != nil && !finite(*a.UtilizationSteady) {
		a.UtilizationSteady = nil
	}
	// The outer fields hide the embedded ones of the same JSON name.
	return json.Marshal(struct {
		*runAlias
		GoodputBps  *float64 `json:"goodput_bps"`
		Utilization *float64 `json:"utilization"`
	}{&a, finitePtr(r.GoodputBps), finitePtr(r.Utilization)})
}

// UnmarshalJSON reads r, leaving absent or null percentiles, goodput and
// utilization as NaN.
func (r *Run) UnmarshalJSON(b []byte) error {
	nan := math.NaN()
	a := runAlias{
		SourceDelayMs:     NoPercentiles(),
		BottleneckQueueMs: NoPercentiles(),
		GoodputBps:        nan,
		Utilization:       nan,
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*r = Run(a).withFigures()
	return nil
}

// withFigures returns r with every distribution carrying Figures: those
// that came with fewer, from JSON or from a summary, get the others as
// unknown; those that came with more lose them.
func (r Run) withFigures() Run {
	r.SourceDelayMs = r.SourceDelayMs.Only(Figures)
	r.BottleneckQueueMs = r.BottleneckQueueMs.Only(Figures)
	for _, p := range []**metrics.Percentiles{&r.G2GMs, &r.CaptureToReceivedMs} {
		if *p != nil {
			v := (*p).Only(Figures)
			*p = &v
		}
	}
	if r.PartsMs != nil {
		parts := make(map[string]metrics.Percentiles, len(r.PartsMs))
		for k, v := range r.PartsMs {
			parts[k] = v.Only(Figures)
		}
		r.PartsMs = parts
	}
	return r
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func finitePtr(f float64) *float64 {
	if !finite(f) {
		return nil
	}
	return &f
}

func orNaN(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

func nan() float64 { return math.NaN() }
