// Package report turns a results directory written by the experiments runner
// into the published comparison: summary.json, one Markdown table per
// scenario (summary.md), SVG plots and a self-contained index.html.
//
// A results directory holds one subdirectory per run:
//
//	OUT/runs/<run-id>/run.json       one Run, the runner's summary of the run
//	OUT/runs/<run-id>/records.jsonl  per-write, per-frame and sample records
//
// Run and Percentiles are the schema of run.json; the runner writes them and
// this package reads them back.
package report

import (
	"encoding/json"
	"math"
)

// Percentiles holds the 50th, 95th and 99th percentiles of a quantity. A NaN
// field means the percentile is unknown; it is written to JSON as null, and
// null or absent fields read back as NaN.
type Percentiles struct {
	P50, P95, P99 float64
}

// NoPercentiles returns Percentiles with every field unknown (NaN).
func NoPercentiles() Percentiles {
	nan := math.NaN()
	return Percentiles{P50: nan, P95: nan, P99: nan}
}

// Known reports whether any of the percentiles is a finite number.
func (p Percentiles) Known() bool {
	return finite(p.P50) || finite(p.P95) || finite(p.P99)
}

type percentilesJSON struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// MarshalJSON writes p as {"p50":..,"p95":..,"p99":..} with null for every
// value that is not a finite number.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(percentilesJSON{finitePtr(p.P50), finitePtr(p.P95), finitePtr(p.P99)})
}

// UnmarshalJSON reads the form MarshalJSON writes. Null or absent values, and
// a null object, read as NaN.
func (p *Percentiles) UnmarshalJSON(b []byte) error {
	var v percentilesJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Percentiles{P50: orNaN(v.P50), P95: orNaN(v.P95), P99: orNaN(v.P99)}
	return nil
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
	// "replenish=DURATION", each optionally followed by "+nagle", then
	// "+nosubmss".
	Mode      string `json:"mode"`
	Transport string `json:"transport"` // "tcp"
	Workload  string `json:"workload"`  // "bulk=65536", "video"
	CC        string `json:"cc"`        // congestion control, e.g. "cubic"

	RateBps   int64   `json:"rate_bps"`   // nominal bottleneck rate, bits per second
	RTTMs     float64 `json:"rtt_ms"`     // emulated round-trip time
	QueueMs   float64 `json:"queue_ms"`   // bottleneck queue limit
	Loss      float64 `json:"loss"`       // random loss probability, 0..1
	DurationS float64 `json:"duration_s"` // measured window, after warm-up
	WarmupS   float64 `json:"warmup_s"`   // warm-up before the measured window

	SourceDelayMs       Percentiles            `json:"source_delay_ms"`
	G2GMs               *Percentiles           `json:"g2g_ms,omitempty"`                 // video with a browser
	CaptureToReceivedMs *Percentiles           `json:"capture_to_received_ms,omitempty"` // video
	PartsMs             map[string]Percentiles `json:"parts_ms,omitempty"`               // video: wait, encode, source_delay, network

	GoodputBps  float64  `json:"goodput_bps"`
	Utilization float64  `json:"utilization"`           // goodput / rate
	FPS         *float64 `json:"fps,omitempty"`         // video
	Width       int      `json:"width,omitempty"`       // video: most common resolution
	Height      int      `json:"height,omitempty"`      // video: most common resolution
	BitrateBps  float64  `json:"bitrate_bps,omitempty"` // video: media bitrate delivered

	BottleneckQueueMs Percentiles `json:"bottleneck_queue_ms"`
	EmulatorDrops     int64       `json:"emulator_drops"` // in the window
	Retransmits       int64       `json:"retransmits"`    // TCP's, in the window
	Writes            int         `json:"writes,omitempty"`
	Frames            int         `json:"frames,omitempty"`

	Notes []string `json:"notes,omitempty"` // e.g. "goodput still converging"
}

// runAlias has Run's fields without its methods.
type runAlias Run

// MarshalJSON writes r with every non-finite number replaced as described on
// Run.
func (r Run) MarshalJSON() ([]byte, error) {
	a := runAlias(r)
	for _, f := range []*float64{&a.RTTMs, &a.QueueMs, &a.Loss, &a.DurationS, &a.WarmupS, &a.BitrateBps} {
		if !finite(*f) {
			*f = 0
		}
	}
	if a.FPS != nil && !finite(*a.FPS) {
		a.FPS = nil
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
	*r = Run(a)
	return nil
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
