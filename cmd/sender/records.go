package main

import (
	"time"

	"replenish/internal/jsonl"

	"replenish/sender"
	"replenish/transport"
)

// maxRecords caps a records file: about a day of frames at 30 fps.
const maxRecords = 3_000_000

// records writes one JSON line per frame sent (and one per connection) for
// the experiments harness. Times are microseconds since the Unix epoch.
type records struct{ w *jsonl.Writer }

func openRecords(path string) (*records, error) {
	w, err := jsonl.Create(path, maxRecords)
	if err != nil {
		return nil, err
	}
	return &records{w}, nil
}

type frameLine struct {
	Kind          string `json:"kind"`
	ID            uint64 `json:"id"`
	RTPTimestamp  uint32 `json:"rtp_ts"`
	CaptureUs     int64  `json:"capture_us"`
	EncodeStartUs int64  `json:"encode_start_us"`
	EncodeEndUs   int64  `json:"encode_end_us"`
	WriteStartUs  int64  `json:"write_start_us"`
	WriteEndUs    int64  `json:"write_end_us"`
	LeftHostUs    int64  `json:"left_host_us,omitempty"`
	Bytes         int    `json:"bytes"`
	Width         int    `json:"width"`
	Height        int    `json:"height"`
	Key           bool   `json:"key,omitempty"`
	TargetBps     int64  `json:"target_bps"`
	DrainBps      int64  `json:"drain_bps"`
	AppLimited    bool   `json:"app_limited,omitempty"`
	Skipped       int    `json:"skipped,omitempty"`
	Retransmits   int    `json:"retransmits"` // the connection's, before the write
}

type connLine struct {
	Kind           string `json:"kind"`
	EndUs          int64  `json:"end_us"`
	Retransmits    int    `json:"retransmits"`
	BytesRetrans   uint64 `json:"bytes_retrans"`
	BytesWritten   uint64 `json:"bytes_written"`
	Frames         uint64 `json:"frames"`
	InvitedKernel  uint64 `json:"invited_kernel"`
	InvitedTimer   uint64 `json:"invited_timer"`
	InvitedAtOnce  uint64 `json:"invited_immediate"`
	RecordsNoStamp uint64 `json:"records_unstamped"`
}

func us(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func (r *records) frame(f sender.FrameRecord) {
	r.write(frameLine{
		Kind: "frame", ID: f.ID, RTPTimestamp: f.RTPTimestamp,
		CaptureUs: us(f.Capture), EncodeStartUs: us(f.EncodeStart), EncodeEndUs: us(f.EncodeEnd),
		WriteStartUs: us(f.WriteStart), WriteEndUs: us(f.WriteEnd), LeftHostUs: us(f.LeftHost),
		Bytes: f.Bytes, Width: f.Size.W, Height: f.Size.H, Key: f.Key,
		TargetBps: int64(f.Target), DrainBps: int64(f.DrainRate), AppLimited: f.AppLimited, Skipped: f.Skipped,
		Retransmits: f.Retransmits,
	})
}

func (r *records) conn(st transport.Counters) {
	r.write(connLine{
		Kind: "conn", EndUs: time.Now().UnixMicro(),
		Retransmits: st.Retransmits, BytesRetrans: st.BytesRetrans, BytesWritten: st.BytesWritten, Frames: st.Frames,
		InvitedKernel: st.InvitedKernel, InvitedTimer: st.InvitedTimer, InvitedAtOnce: st.InvitedImmediate,
		RecordsNoStamp: st.RecordsUnstamped,
	})
}

func (r *records) write(v any) { r.w.Write(v) }

// close flushes and closes the file.
func (r *records) close() error { return r.w.Close() }
