package main

import (
	"testing"
	"time"

	"replenish/records"
	"replenish/viewer"
)

func TestRecordLine(t *testing.T) {
	t0 := time.UnixMicro(1_000_000)
	rcv := recordLine(viewer.Record{Kind: viewer.RecordReceived, Stream: 1, Frame: 2, Name: "s", RTPTimestamp: 90,
		Capture: t0, Received: t0.Add(50 * time.Millisecond), Bytes: 900, Width: 320, Height: 180, ClockOffset: -time.Millisecond})
	if rcv.Kind != records.KindReceived || rcv.CaptureUs != 1_000_000 || rcv.ReceivedUs != 1_050_000 || rcv.Bytes != 900 ||
		rcv.Width != 320 || rcv.ClockOffsetUs != -1000 || rcv.G2GMs != nil {
		t.Errorf("received: %+v", rcv)
	}
	shown := recordLine(viewer.Record{Kind: viewer.RecordDisplayed, Stream: 1, Frame: 2, Client: 3, Capture: t0,
		Displayed: t0.Add(80 * time.Millisecond), G2G: 80 * time.Millisecond, Decode: -1, Draw: 2 * time.Millisecond})
	if shown.Kind != records.KindDisplayed || shown.Client != 3 || shown.DisplayedUs != 1_080_000 || shown.G2GMs == nil ||
		*shown.G2GMs != 80 || shown.DecodeMs != nil || shown.DrawMs == nil || *shown.DrawMs != 2 {
		t.Errorf("displayed: %+v", shown)
	}
	misread := recordLine(viewer.Record{Kind: viewer.RecordDisplayed, G2G: -1, Misread: true})
	if !misread.Misread || misread.G2GMs != nil {
		t.Errorf("misread: %+v", misread)
	}
}
