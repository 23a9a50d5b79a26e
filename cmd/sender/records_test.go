package main

import (
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/records"
	"replenish/sender"
)

func TestFrameLine(t *testing.T) {
	t0 := time.UnixMicro(1_000_000)
	f := sender.FrameRecord{ID: 7, RTPTimestamp: 90, Size: media.Size{W: 640, H: 360}, Key: true, Bytes: 1200,
		Capture: t0, EncodeStart: t0.Add(time.Millisecond), EncodeEnd: t0.Add(3 * time.Millisecond),
		WriteStart: t0.Add(4 * time.Millisecond), WriteEnd: t0.Add(5 * time.Millisecond),
		Target: rate.Mbps, DrainRate: 2 * rate.Mbps, Skipped: 1, Retransmits: 2}
	got := frameLine(f)
	want := records.Frame{Kind: records.KindFrame, ID: 7, RTPTimestamp: 90, CaptureUs: 1_000_000, EncodeStartUs: 1_001_000,
		EncodeEndUs: 1_003_000, WriteStartUs: 1_004_000, WriteEndUs: 1_005_000, LeftHostUs: 0, Bytes: 1200, Width: 640, Height: 360,
		Key: true, TargetBps: 1e6, DrainBps: 2e6, Skipped: 1, Retransmits: 2}
	if got != want {
		t.Fatalf("frameLine =\n%+v\nwant\n%+v", got, want)
	}
}
