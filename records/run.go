package records

import "strconv"

// RunLine is one line of a run's records.jsonl in a results directory,
// which the runner writes and the report reads: a write ("write"), a frame
// ("frame") or a periodic reading of the path ("sample"). T is in seconds
// since the run's start; rates are in bits per second, times in ms. A
// field a kind does not have is absent, as is a value that is unknown.
type RunLine struct {
	Kind  string  `json:"kind"` // KindWrite, KindFrame or KindSample
	T     float64 `json:"t"`    // write start; frame capture; sample time
	Bytes int     `json:"bytes,omitempty"`

	// frame
	Width  int  `json:"width,omitempty"`
	Height int  `json:"height,omitempty"`
	Key    bool `json:"key,omitempty"`

	// write and frame
	SourceDelayMs *float64 `json:"source_delay_ms,omitempty"`

	// frame
	CaptureToReceivedMs *float64           `json:"capture_to_received_ms,omitempty"`
	G2GMs               *float64           `json:"g2g_ms,omitempty"`
	PartsMs             map[string]float64 `json:"parts_ms,omitempty"` // wait, encode, source_delay, network

	// sample
	GoodputBps *float64 `json:"goodput_bps,omitempty"`
	BitrateBps *float64 `json:"bitrate_bps,omitempty"`
	QueueMs    *float64 `json:"queue_ms,omitempty"`  // the bottleneck's median queueing delay over the interval
	DrainBps   *float64 `json:"drain_bps,omitempty"` // also write: the invitation's estimate
	TargetBps  *float64 `json:"target_bps,omitempty"`
	RateBps    *float64 `json:"rate_bps,omitempty"` // the bottleneck's rate
	// DeliveredBps is the emulator's forward rate over the interval, IP
	// headers included.
	DeliveredBps *float64 `json:"delivered_bps,omitempty"`

	// write
	Part string `json:"part,omitempty"` // rr: "body"
}

// Names inside a results directory.
const (
	RunsDir    = "runs"          // one directory per run, named by its ID
	RunFile    = "run.json"      // in a run's directory: its summary
	RunRecords = "records.jsonl" // in a run's directory: RunLine lines
	RawDir     = "raw"           // in a run's directory: what its processes wrote
	SendFile   = "send.jsonl"    // in raw: bulk-send's or rr-client's records
	SinkFile   = "sink.jsonl"    // in raw: bulk-sink's records
	SenderFile = "sender.jsonl"  // in raw: cmd/sender's records
	ViewerFile = "viewer.jsonl"  // in raw: cmd/viewer's records
	InputFile  = "input.json"    // in raw: what else the run's summary is computed from
)

// CrossSinkFile names, in raw, the sink's records of competing flow i
// (from 0) of a run with competing traffic.
func CrossSinkFile(i int) string { return "cross-" + strconv.Itoa(i+1) + "-sink.jsonl" }

// CrossSendFile names, in raw, the sender's records of competing flow i.
func CrossSendFile(i int) string { return "cross-" + strconv.Itoa(i+1) + "-send.jsonl" }
