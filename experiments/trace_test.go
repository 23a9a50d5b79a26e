package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"replenish/records"
)

func TestTrace(t *testing.T) {
	run := t.TempDir()
	raw := filepath.Join(run, records.RawDir)
	if err := os.Mkdir(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := records.Create(filepath.Join(raw, records.SenderFile), 100)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(records.Frame{Kind: records.KindFrame, ID: 0, CaptureUs: 1_000_000, EncodeStartUs: 1_001_000, EncodeEndUs: 1_003_000,
		Bytes: 1200, Key: true, DrainBps: 11_000_000, Written: 1230,
		Drain: &records.Drain{RateBps: 11_000_000, Source: "window", AtUs: 1_000_500, SRTTUs: 10_000, MinRTTUs: 10_000}})
	w.Write(records.Conn{Kind: records.KindConn})
	w.Write(records.Frame{Kind: records.KindFrame, ID: 1, CaptureUs: 1_033_000, EncodeStartUs: 1_034_000, EncodeEndUs: 1_035_500,
		Bytes: 400, DrainBps: 2_000_000, AppLimited: true, Written: 420,
		Drain: &records.Drain{RateBps: 2_000_000, Source: "measured", AtUs: 1_033_900, SRTTUs: 12_000, MinRTTUs: 10_000}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := traceMain(context.Background(), []string{run}, &out, &errs); code != 0 {
		t.Fatalf("trace: exit %d, %s", code, errs.String())
	}
	want := traceHeader + "\n" +
		"500,11000000,1,10000,10000,1200,1,2000,0,0,1230\n" +
		"33900,2000000,0,12000,10000,400,0,1500,33000,1,420\n"
	if out.String() != want {
		t.Errorf("trace:\n%s\nwant\n%s", out.String(), want)
	}

	// A frame without its transport state cannot be replayed.
	var bad bytes.Buffer
	if err := writeTrace(&bad, []records.Frame{{ID: 4}}); err == nil || !strings.Contains(err.Error(), "frame 4") {
		t.Errorf("frame without a drain record: %v, want an error naming it", err)
	}
	if code := traceMain(context.Background(), []string{filepath.Join(run, "missing")}, &out, &errs); code == 0 {
		t.Error("trace of a run without records: exit 0")
	}
}
