package main

import (
	"time"

	"replenish/records"
	"replenish/viewer"
)

// maxRecords caps a records file: about a day of one stream at 30 fps seen
// by one page.
const maxRecords = 6_000_000

// recordLine returns the records line of one of the viewer's per-frame
// records.
func recordLine(r viewer.Record) records.ViewerFrame {
	ms := func(d time.Duration) *float64 {
		if d < 0 {
			return nil
		}
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	us := records.Micros
	j := records.ViewerFrame{Stream: r.Stream, Frame: r.Frame, CaptureUs: us(r.Capture)}
	if r.Layered {
		tid := r.TID
		j.TID = &tid
	}
	switch r.Kind {
	case viewer.RecordReceived:
		j.Kind = records.KindReceived
		j.Name, j.RTPTimestamp, j.ReceivedUs = r.Name, r.RTPTimestamp, us(r.Received)
		j.Bytes, j.Key, j.Width, j.Height = r.Bytes, r.Key, r.Width, r.Height
		j.ClockOffsetUs = r.ClockOffset.Microseconds()
		j.Undecodable = r.Undecodable
	case viewer.RecordLost:
		j.Kind = records.KindLost
		j.Name, j.ReceivedUs = r.Name, us(r.Received)
		j.LostFrames, j.Reason = r.Lost, r.LostReason.String()
	case viewer.RecordDisplayed:
		j.Kind = records.KindDisplayed
		j.Client, j.DisplayedUs, j.Misread, j.Native = r.Client, us(r.Displayed), r.Misread, r.Native
		j.G2GMs, j.DecodeMs, j.DrawMs = ms(r.G2G), ms(r.Decode), ms(r.Draw)
	}
	return j
}
