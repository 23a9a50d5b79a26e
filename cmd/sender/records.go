package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"replenish/sender"
	"replenish/transport/tcp"
)

// maxRecords caps a records file: about a day of frames at 30 fps.
const maxRecords = 3_000_000

// records writes one JSON line per frame sent (and one per connection) for
// the experiments harness. Times are microseconds since the Unix epoch.
type records struct {
	mu      sync.Mutex // guards following fields
	f       *os.File
	w       *bufio.Writer
	n       int
	dropped int
	err     error
}

func openRecords(path string) (*records, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &records{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
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
	})
}

func (r *records) conn(st tcp.Stats) {
	r.write(connLine{
		Kind: "conn", EndUs: time.Now().UnixMicro(),
		Retransmits: st.TotalRetrans, BytesRetrans: st.BytesRetrans, BytesWritten: st.BytesWritten, Frames: st.Frames,
		InvitedKernel: st.InvitedKernel, InvitedTimer: st.InvitedTimer, InvitedAtOnce: st.InvitedImmediate,
		RecordsNoStamp: st.RecordsUnstamped,
	})
}

func (r *records) write(v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if r.n >= maxRecords {
		r.dropped++
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = r.w.Write(b)
	}
	if err != nil {
		r.err = err
		return
	}
	r.n++
}

// close flushes and closes the file; it reports the first error and any
// records dropped at the cap.
func (r *records) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	if ferr := r.w.Flush(); err == nil {
		err = ferr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && r.dropped > 0 {
		err = fmt.Errorf("%d records dropped at the cap of %d", r.dropped, maxRecords)
	}
	return err
}
