package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"replenish/records"
	"replenish/transport/drain"
)

// traceHeader names the columns of a controller trace, the format of
// sender/testdata's recorded runs.
const traceHeader = "# at_us,drain_bps,window_bound,srtt_us,min_rtt_us,encoded,key,encode_us,capture_us,app_limited,written"

// traceMain writes a video run's frame records as a controller trace: per
// frame, the transport's state at its invitation and its encoding, times
// in µs since the first frame's capture. sender's replay tests feed such a
// trace through the rate controller.
func traceMain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./experiments trace RUN\n\nWrites the frame records of RUN (a run's directory, runs/<id>, or its raw sender.jsonl)\nas a controller trace in the format of sender/testdata/*.csv.")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, records.RawDir, records.SenderFile)
	}
	var frames []records.Frame
	err := records.ReadFile(path, func(kind string, line []byte) error {
		if kind != records.KindFrame {
			return nil
		}
		return records.Append(&frames, line)
	})
	if err == nil && len(frames) == 0 {
		err = fmt.Errorf("no frame records in %s", path)
	}
	if err == nil {
		err = writeTrace(stdout, frames)
	}
	if err != nil {
		fmt.Fprintf(stderr, "trace: %v\n", err)
		return 1
	}
	return 0
}

// writeTrace writes frames as a controller trace. A frame without a drain
// record (a sender too old to write one) has no transport state to replay
// and is an error.
func writeTrace(w io.Writer, frames []records.Frame) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, traceHeader)
	t0 := frames[0].CaptureUs
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for _, f := range frames {
		d := f.Drain
		if d == nil {
			return fmt.Errorf("frame %d has no drain record", f.ID)
		}
		var src drain.Source
		if err := src.UnmarshalText([]byte(d.Source)); err != nil {
			return fmt.Errorf("frame %d: %w", f.ID, err)
		}
		at := d.AtUs
		if at == 0 {
			at = f.EncodeStartUs
		}
		fmt.Fprintf(bw, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", at-t0, f.DrainBps, b(src.WindowBound()), d.SRTTUs, d.MinRTTUs,
			f.Bytes, b(f.Key), f.EncodeEndUs-f.EncodeStartUs, f.CaptureUs-t0, b(f.AppLimited), f.Written)
	}
	return bw.Flush()
}
