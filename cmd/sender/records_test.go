package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/records"
	"replenish/sender"
	"replenish/transport"
	"replenish/transport/drain"
)

func TestFrameLine(t *testing.T) {
	t0 := time.UnixMicro(1_000_000)
	f := sender.FrameRecord{ID: 7, RTPTimestamp: 90, Size: media.Size{W: 640, H: 360}, Key: true, Bytes: 1200,
		Capture: t0, EncodeStart: t0.Add(time.Millisecond), EncodeEnd: t0.Add(3 * time.Millisecond),
		WriteStart: t0.Add(4 * time.Millisecond), WriteEnd: t0.Add(5 * time.Millisecond),
		Target: rate.Mbps, DrainRate: 2 * rate.Mbps, Skipped: 1, Retransmits: 2, Lead: 6 * time.Millisecond,
		Drain:   transport.DrainRecord{Estimate: drain.Estimate{Rate: 2 * rate.Mbps, Source: drain.SourceMeasured}},
		Written: 1230, Control: sender.ControlState{Phase: "cruising", Rate: 1030 * rate.Kbps, Capacity: 1050 * rate.Kbps,
			Excess: 3 * time.Millisecond, Cut: true, Loss: 0.03, LossBase: 0.01}}
	got := frameLine(f)
	want := records.Frame{Kind: records.KindFrame, ID: 7, RTPTimestamp: 90, CaptureUs: 1_000_000, EncodeStartUs: 1_001_000,
		EncodeEndUs: 1_003_000, WriteStartUs: 1_004_000, WriteEndUs: 1_005_000, LeftHostUs: 0, Bytes: 1200, Width: 640, Height: 360,
		Key: true, TargetBps: 1e6, DrainBps: 2e6, Skipped: 1, Retransmits: 2, LeadUs: 6000, Written: 1230}
	wantControl := records.Control{Phase: "cruising", RateBps: 1_030_000, CapacityBps: 1_050_000, ExcessUs: 3000, Cut: true, Loss: 0.03, LossBase: 0.01}
	if got.Control == nil || *got.Control != wantControl {
		t.Errorf("control %+v, want %+v", got.Control, wantControl)
	}
	got.Control = nil
	if f.Control = (sender.ControlState{}); frameLine(f).Control != nil {
		t.Errorf("control %+v for a controller that has not acted, want none", frameLine(f).Control)
	}
	if got.Drain == nil || got.Drain.RateBps != 2e6 || got.Drain.Source != "measured" {
		t.Errorf("drain %+v, want the invitation's estimate", got.Drain)
	}
	got.Drain = nil
	if got != want {
		t.Fatalf("frameLine =\n%+v\nwant\n%+v", got, want)
	}
}

// expiringConn is a connection that counts expired frames.
type expiringConn struct{ transport.Conn }

func (expiringConn) Expired() (dropped, reset, bytesReset uint64) { return 3, 2, 9000 }

// TestConnLineExpiry checks that a connection line carries the expire
// mode's counters of the connection the dialer opened.
func TestConnLineExpiry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sender.jsonl")
	r, err := openRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	r.conn("tcp", transport.Counters{Frames: 1}) // before any dial: no expiry
	dial := r.dialer(func(context.Context, transport.Handler) (transport.Conn, error) { return expiringConn{}, nil })
	if _, err := dial(context.Background(), transport.Handler{}); err != nil {
		t.Fatal(err)
	}
	r.conn("quic", transport.Counters{Frames: 5})
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	var conns []records.Conn
	err = records.ReadFile(path, func(kind string, line []byte) error { return records.Append(&conns, line) })
	if err != nil || len(conns) != 2 {
		t.Fatalf("%d conn lines, %v", len(conns), err)
	}
	if c := conns[0]; c.ExpiredDropped != 0 || c.BytesReset != 0 {
		t.Errorf("first line %+v: no connection dialed, no expiry", c)
	}
	if c := conns[1]; c.Transport != "quic" || c.Frames != 5 || c.ExpiredDropped != 3 || c.ExpiredReset != 2 || c.BytesReset != 9000 {
		t.Errorf("second line %+v, want the connection's expiry counters", c)
	}
}
