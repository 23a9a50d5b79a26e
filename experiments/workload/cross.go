package workload

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/records"
	"replenish/transport"
)

// CrossPort is the first competing flow's port on the receiver's address;
// flow i (from 0) listens on CrossPort+i.
const CrossPort = 9100

// Crossed is a run's workload with competing flows beside it on the same
// path: each a bulk-sink on the receiver's side and a bulk-send of
// scenario.DefaultBulkWrite writes without SBM (the path's congestion
// control, the sender side's send buffer) from the sender's side, started
// with the workload's own sides and stopped before them; with a positive
// duration the senders end their flows that long after they start (Spec.For).
// The competing processes count among Procs, so that one that exits early
// fails the run.
type Crossed struct {
	Runnable // the workload; Quiesce, Drained and Live are its
	n        int
	d        time.Duration
	p        *emu.Path
	dir      string
	self     string

	mu           sync.Mutex // guards sinks and sends
	sinks, sends []*proc.Proc
}

// NewCrossed returns w with n competing flows on p for d (0: until
// stopped), their files in dir, run by the program self.
func NewCrossed(w Runnable, n int, d time.Duration, p *emu.Path, dir, self string) *Crossed {
	return &Crossed{Runnable: w, n: n, d: d, p: p, dir: dir, self: self}
}

func (c *Crossed) addr(i int) string { return fmt.Sprintf("%s:%d", c.p.ReceiverAddr(), CrossPort+i) }

// StartReceiver starts the workload's receiving side, then the competing
// flows' sinks, and returns once all accept connections.
func (c *Crossed) StartReceiver(ctx context.Context) error {
	if err := c.Runnable.StartReceiver(ctx); err != nil {
		return err
	}
	for i := range c.n {
		spec := Spec{Role: BulkSink, Addr: c.addr(i), Records: filepath.Join(c.dir, records.CrossSinkFile(i))}
		pr, err := startReady(ctx, c.p.ReceiverNS(), fmt.Sprintf("cross-%d-sink", i+1), append([]string{c.self}, spec.Args()...), c.dir)
		if pr != nil {
			c.mu.Lock()
			c.sinks = append(c.sinks, pr)
			c.mu.Unlock()
		}
		if err != nil {
			return fmt.Errorf("competing flow %d: %w", i+1, err)
		}
	}
	return nil
}

// StartSender starts the workload's sending side, then the competing
// flows' senders.
func (c *Crossed) StartSender(ctx context.Context) error {
	if err := c.Runnable.StartSender(ctx); err != nil {
		return err
	}
	for i := range c.n {
		spec := Spec{Role: BulkSend, Addr: c.addr(i), Mode: transport.Mode{Policy: transport.Default},
			Size: scenario.DefaultBulkWrite, For: c.d, Records: filepath.Join(c.dir, records.CrossSendFile(i))}
		name := fmt.Sprintf("cross-%d-send", i+1)
		pr, err := proc.Start(c.p.SenderNS(), name, append([]string{c.self}, spec.Args()...), filepath.Join(c.dir, name+".log"), nil)
		if err != nil {
			return fmt.Errorf("competing flow %d: %w", i+1, err)
		}
		c.mu.Lock()
		c.sends = append(c.sends, pr)
		c.mu.Unlock()
	}
	return nil
}

// Procs returns the workload's processes and the competing flows' started
// so far.
func (c *Crossed) Procs() []*proc.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(append(c.Runnable.Procs(), c.sinks...), c.sends...)
}

// Stop ends the competing senders, then the workload, then the competing
// sinks, and returns what went wrong.
func (c *Crossed) Stop() error {
	c.mu.Lock()
	sends, sinks := c.sends, c.sinks
	c.mu.Unlock()
	var errs []error
	for _, pr := range sends {
		errs = append(errs, pr.Stop(StopGrace))
	}
	errs = append(errs, c.Runnable.Stop())
	for _, pr := range sinks {
		errs = append(errs, pr.Stop(StopGrace))
	}
	return errors.Join(errs...)
}
