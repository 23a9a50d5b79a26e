package main

import (
	"time"

	"replenish/viewer"
)

// maxRecords caps a records file: about a day of one stream at 30 fps seen
// by one page.
const maxRecords = 6_000_000

// recordJSON is one line of a -records file. Times are microseconds since
// the Unix epoch: capture on the sender's clock, the others on the viewer's.
type recordJSON struct {
	Kind          string   `json:"kind"` // "received", "displayed" or "lost"
	Stream        uint32   `json:"stream"`
	Frame         uint32   `json:"frame"`
	Name          string   `json:"name,omitempty"`
	RTPTimestamp  uint32   `json:"rtp_ts,omitempty"`
	CaptureUs     int64    `json:"capture_us,omitempty"`
	ReceivedUs    int64    `json:"received_us,omitempty"`
	Bytes         int      `json:"bytes,omitempty"`
	Key           bool     `json:"key,omitempty"`
	Width         int      `json:"width,omitempty"`
	Height        int      `json:"height,omitempty"`
	ClockOffsetUs int64    `json:"clock_offset_us,omitempty"`
	Undecodable   bool     `json:"undecodable,omitempty"` // depends on a lost frame: not sent to pages
	LostFrames    int      `json:"lost_frames,omitempty"`
	Reason        string   `json:"reason,omitempty"` // of a loss: "reset" or "gap"
	Client        uint32   `json:"client,omitempty"`
	Native        bool     `json:"native,omitempty"` // displayed by the page's native player (WHEP); frame is then 0
	DisplayedUs   int64    `json:"displayed_us,omitempty"`
	G2GMs         *float64 `json:"g2g_ms,omitempty"`
	Misread       bool     `json:"misread,omitempty"`
	DecodeMs      *float64 `json:"decode_ms,omitempty"`
	DrawMs        *float64 `json:"draw_ms,omitempty"`
}

func recordLine(r viewer.Record) recordJSON {
	us := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMicro()
	}
	ms := func(d time.Duration) *float64 {
		if d < 0 {
			return nil
		}
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	j := recordJSON{Stream: r.Stream, Frame: r.Frame, CaptureUs: us(r.Capture)}
	switch r.Kind {
	case viewer.RecordReceived:
		j.Kind = "received"
		j.Name, j.RTPTimestamp, j.ReceivedUs = r.Name, r.RTPTimestamp, us(r.Received)
		j.Bytes, j.Key, j.Width, j.Height = r.Bytes, r.Key, r.Width, r.Height
		j.ClockOffsetUs = r.ClockOffset.Microseconds()
		j.Undecodable = r.Undecodable
	case viewer.RecordLost:
		j.Kind = "lost"
		j.Name, j.ReceivedUs = r.Name, us(r.Received)
		j.LostFrames, j.Reason = r.Lost, r.LostReason.String()
	case viewer.RecordDisplayed:
		j.Kind = "displayed"
		j.Client, j.DisplayedUs, j.Misread, j.Native = r.Client, us(r.Displayed), r.Misread, r.Native
		j.G2GMs, j.DecodeMs, j.DrawMs = ms(r.G2G), ms(r.Decode), ms(r.Draw)
	}
	return j
}
