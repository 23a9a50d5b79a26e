package main

import (
	"time"

	"replenish/records"
	"replenish/sender"
	"replenish/transport"
)

// maxRecords caps a records file: about a day of frames at 30 fps.
const maxRecords = 3_000_000

// recordsFile writes one JSON line per frame sent (records.Frame) and one
// per connection (records.Conn) for the experiments harness.
type recordsFile struct{ w *records.Writer }

func openRecords(path string) (*recordsFile, error) {
	w, err := records.Create(path, maxRecords)
	if err != nil {
		return nil, err
	}
	return &recordsFile{w}, nil
}

// frameLine returns the records line of a frame sent.
func frameLine(f sender.FrameRecord) records.Frame {
	us := records.Micros
	return records.Frame{
		Kind: records.KindFrame, ID: f.ID, RTPTimestamp: f.RTPTimestamp,
		CaptureUs: us(f.Capture), EncodeStartUs: us(f.EncodeStart), EncodeEndUs: us(f.EncodeEnd),
		WriteStartUs: us(f.WriteStart), WriteEndUs: us(f.WriteEnd), LeftHostUs: us(f.LeftHost),
		Bytes: f.Bytes, Width: f.Size.W, Height: f.Size.H, Key: f.Key,
		TargetBps: int64(f.Target), DrainBps: int64(f.DrainRate), AppLimited: f.AppLimited, Skipped: f.Skipped,
		Retransmits: f.Retransmits,
	}
}

func (r *recordsFile) frame(f sender.FrameRecord) { r.w.Write(frameLine(f)) }

// conn writes the line of a connection over the named transport that ended
// now.
func (r *recordsFile) conn(transportName string, c transport.Counters) {
	r.w.Write(records.ConnOf(time.Now(), transportName, c))
}

// close flushes and closes the file.
func (r *recordsFile) close() error { return r.w.Close() }
