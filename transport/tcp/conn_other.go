//go:build !linux

package tcp

import (
	"context"

	"replenish/rate"
	"replenish/transport"
)

// setup returns ErrUnsupported: socket management needs Linux.
func (c *Conn) setup() error { return ErrUnsupported }

// Wait returns ErrUnsupported; a Conn cannot be created on this platform.
func (c *Conn) Wait(ctx context.Context) (transport.Invitation, error) {
	return transport.Invitation{}, ErrUnsupported
}

// drainLocked does nothing: there is no error queue to read.
func (c *Conn) drainLocked(fd int) {}

// drainInLocked does nothing: a Conn cannot be created on this platform.
func (c *Conn) drainInLocked(fd int) {}

// write writes b as it is.
func (c *Conn) write(b []byte) (int, error) { return c.tc.Write(b) }

// CapPacing does nothing: a Conn cannot be created on this platform.
func (c *Conn) CapPacing(r rate.Bitrate) error { return nil }

// CheckCongestion returns ErrUnsupported: socket management needs Linux.
func CheckCongestion(name string) error { return ErrUnsupported }
