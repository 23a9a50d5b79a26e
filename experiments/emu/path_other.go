//go:build !linux

package emu

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"replenish/rate"
)

// Path is a running emulated path. On this platform Start always fails.
type Path struct{ done chan struct{} }

// Start returns ErrUnsupported: path emulation needs Linux.
func Start(ctx context.Context, cfg Config) (*Path, error) { return nil, ErrUnsupported }

// Sweep does nothing on this platform.
func Sweep(ctx context.Context, log *slog.Logger) ([]string, error) { return nil, nil }

// SenderNS returns "".
func (p *Path) SenderNS() string { return "" }

// ReceiverNS returns "".
func (p *Path) ReceiverNS() string { return "" }

// SenderAddr returns the zero address.
func (p *Path) SenderAddr() netip.Addr { return netip.Addr{} }

// ReceiverAddr returns the zero address.
func (p *Path) ReceiverAddr() netip.Addr { return netip.Addr{} }

// CC returns "".
func (p *Path) CC() string { return "" }

// Done returns a nil channel.
func (p *Path) Done() <-chan struct{} { return p.done }

// Do returns ErrUnsupported.
func (p *Path) Do(s Side, fn func() error) error { return ErrUnsupported }

// Set does nothing.
func (p *Path) Set(d Direction, r rate.Bitrate, delay time.Duration) {}

// Schedule does nothing.
func (p *Path) Schedule(d Direction, steps []Step) {}

// ResetTotals does nothing.
func (p *Path) ResetTotals() {}

// Stats returns zero counters.
func (p *Path) Stats() Stats { return Stats{} }

// TakeIdle returns nothing.
func (p *Path) TakeIdle(d Direction) ([]IdleSpan, int) { return nil, 0 }

// Close returns nil.
func (p *Path) Close() error { return nil }

// PrioritizeProcess returns ErrUnsupported.
func PrioritizeProcess() error { return ErrUnsupported }
