package main

import (
	"context"
	"sync/atomic"
	"time"

	"replenish/records"
	"replenish/sender"
	"replenish/transport"
	"replenish/transport/quic"
)

// maxRecords caps a records file: about a day of frames at 30 fps.
const maxRecords = 3_000_000

// recordsFile writes one JSON line per frame sent (records.Frame) and one
// per connection (records.Conn) for the experiments harness.
type recordsFile struct {
	w    *records.Writer
	last atomic.Pointer[connBox] // the latest connection dialed (dialer)
}

// connBox holds a connection for an atomic.Pointer.
type connBox struct{ c transport.Conn }

// expiring is what a QUIC connection counts of its expire mode
// (transport/quic's Conn.Expired).
type expiring interface {
	Expired() (dropped, reset, bytesReset uint64)
}

var _ expiring = (*quic.Conn)(nil)

func openRecords(path string) (*recordsFile, error) {
	w, err := records.Create(path, maxRecords)
	if err != nil {
		return nil, err
	}
	return &recordsFile{w: w}, nil
}

// dialer returns d, remembering each connection it opens, so that the
// connection's line can carry what only its transport counts.
func (r *recordsFile) dialer(d transport.Dialer) transport.Dialer {
	return func(ctx context.Context, h transport.Handler) (transport.Conn, error) {
		c, err := d(ctx, h)
		if err == nil {
			r.last.Store(&connBox{c})
		}
		return c, err
	}
}

// frameLine returns the records line of a frame sent.
func frameLine(f sender.FrameRecord) records.Frame {
	us := records.Micros
	return records.Frame{
		Kind: records.KindFrame, ID: f.ID, RTPTimestamp: f.RTPTimestamp,
		CaptureUs: us(f.Capture), EncodeStartUs: us(f.EncodeStart), EncodeEndUs: us(f.EncodeEnd),
		WriteStartUs: us(f.WriteStart), WriteEndUs: us(f.WriteEnd), LeftHostUs: us(f.LeftHost),
		Bytes: f.Bytes, Written: f.Written, Width: f.Size.W, Height: f.Size.H, Key: f.Key,
		TargetBps: int64(f.Target), DrainBps: int64(f.DrainRate), AppLimited: f.AppLimited, Skipped: f.Skipped,
		Retransmits: f.Retransmits, LeadUs: f.Lead.Microseconds(), Drain: records.DrainOf(f.Drain),
		Control: controlOf(f.Control),
	}
}

// controlOf returns the records form of c, or nil when the controller has
// not acted.
func controlOf(c sender.ControlState) *records.Control {
	if c == (sender.ControlState{}) {
		return nil
	}
	r := &records.Control{
		Phase: c.Phase, RateBps: int64(c.Rate), CapacityBps: int64(c.Capacity),
		ExcessUs: c.Excess.Microseconds(), ShiftUs: c.Shift.Microseconds(), RTTUs: c.RTT.Microseconds(), Cut: c.Cut,
		Loss: c.Loss, LossBase: c.LossBase, Overflow: c.Overflow,
	}
	if c.WaitKnown {
		w := c.Wait.Microseconds()
		r.WaitUs = &w
	}
	return r
}

func (r *recordsFile) frame(f sender.FrameRecord) { r.w.Write(frameLine(f)) }

// conn writes the line of a connection over the named transport that ended
// now, with the expire mode's counters when the connection (the latest
// the dialer opened) keeps them.
func (r *recordsFile) conn(transportName string, c transport.Counters) {
	line := records.ConnOf(time.Now(), transportName, c)
	if b := r.last.Load(); b != nil {
		if e, ok := b.c.(expiring); ok {
			line.ExpiredDropped, line.ExpiredReset, line.BytesReset = e.Expired()
		}
	}
	r.w.Write(line)
}

// close flushes and closes the file.
func (r *recordsFile) close() error { return r.w.Close() }
