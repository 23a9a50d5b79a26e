// Package records defines the record files the programs write and the
// experiments harness reads, once for both sides: each a JSON Lines file
// (one JSON object per line, most with a "kind"), written with a Writer and
// read with a Scanner or ReadFile.
//
//	cmd/sender -records         Frame lines, a Conn line per connection
//	cmd/viewer -records         ViewerFrame lines, "received" and "displayed"
//	bulk-send, rr-client        Write lines (and Request lines), a Conn line
//	bulk-sink                   Sink lines
//	a run's records.jsonl       RunLine lines: "write", "frame", "sample"
//
// Times of the programs' records are microseconds since the Unix epoch (0:
// unknown); times in records.jsonl are seconds since the run's start.
// Every field keeps its JSON name, so that files written before stay
// readable. A record that names a connection says which transport carried
// it, so that transports other than TCP can write the same files.
package records

import "time"

// Kinds of record lines.
const (
	KindFrame     = "frame"     // Frame (cmd/sender); RunLine of a video run
	KindConn      = "conn"      // Conn
	KindWrite     = "write"     // Write (bulk-send, rr-client); RunLine of a bulk or rr run
	KindRequest   = "request"   // Request (rr-client)
	KindReceived  = "received"  // ViewerFrame: the viewer has a frame's last packet
	KindDisplayed = "displayed" // ViewerFrame: a page has drawn a frame
	KindLost      = "lost"      // ViewerFrame: frames the viewer lost (a reset stream, a gap)
	KindSample    = "sample"    // RunLine: a periodic reading of the path
)

// Micros returns t in microseconds since the Unix epoch, or 0 for the zero
// time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}
