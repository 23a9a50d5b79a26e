// Package rate holds Bitrate, a data rate in bits per second, with the
// conversions the sender, the transports and the experiments share.
package rate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Bitrate is a data rate in bits per second.
type Bitrate int64

// Common rates.
const (
	BitPerSecond Bitrate = 1
	Kbps                 = 1000 * BitPerSecond
	Mbps                 = 1000 * Kbps
	Gbps                 = 1000 * Mbps
)

// FromBytesPerSecond converts a rate in bytes per second to a Bitrate.
func FromBytesPerSecond(bytesPerSecond float64) Bitrate {
	return Bitrate(math.Round(bytesPerSecond * 8))
}

// BytesPerSecond returns b in bytes per second.
func (b Bitrate) BytesPerSecond() float64 { return float64(b) / 8 }

// Bytes returns how many whole bytes b carries in d.
func (b Bitrate) Bytes(d time.Duration) int {
	if b <= 0 || d <= 0 {
		return 0
	}
	return int(float64(b) / 8 * d.Seconds())
}

// Duration returns how long b takes to carry n bytes. It returns 0 for a
// non-positive rate.
func (b Bitrate) Duration(n int) time.Duration {
	if b <= 0 {
		return 0
	}
	return time.Duration(float64(n) * 8 / float64(b) * float64(time.Second))
}

// Scale returns b multiplied by f, rounded to the nearest bit per second.
func (b Bitrate) Scale(f float64) Bitrate { return Bitrate(math.Round(float64(b) * f)) }

// String formats b with an SI unit, as in "2.00 Mb/s".
func (b Bitrate) String() string {
	v := float64(b)
	switch {
	case math.Abs(v) >= float64(Gbps):
		return fmt.Sprintf("%.2f Gb/s", v/float64(Gbps))
	case math.Abs(v) >= float64(Mbps):
		return fmt.Sprintf("%.2f Mb/s", v/float64(Mbps))
	case math.Abs(v) >= float64(Kbps):
		return fmt.Sprintf("%.0f kb/s", v/float64(Kbps))
	}
	return fmt.Sprintf("%d b/s", int64(b))
}

// ErrSyntax is returned by Parse for a string that is not a rate.
var ErrSyntax = errors.New("rate: not a bitrate (want e.g. 100kbit, 2mbit, 86Mbps, 1.5M)")

// Parse reads a bitrate such as "100kbit", "2mbit", "86Mbps", "1.5M",
// "20000000" (bits per second) or "1gbit". Units are decimal and count bits;
// "kbps", "kbit", "kb/s" and "k" all mean 1000 bits per second.
func Parse(s string) (Bitrate, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrSyntax)
	}
	mult := BitPerSecond
	for _, u := range []struct {
		suffix string
		mult   Bitrate
	}{
		{"gbit", Gbps}, {"gbps", Gbps}, {"gb/s", Gbps}, {"g", Gbps},
		{"mbit", Mbps}, {"mbps", Mbps}, {"mb/s", Mbps}, {"m", Mbps},
		{"kbit", Kbps}, {"kbps", Kbps}, {"kb/s", Kbps}, {"k", Kbps},
		{"bit", BitPerSecond}, {"bps", BitPerSecond}, {"b/s", BitPerSecond},
	} {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%w: %q is not positive", ErrSyntax, s)
	}
	r := v * float64(mult)
	if r > math.MaxInt64/2 || r < 1 {
		return 0, fmt.Errorf("%w: %q is out of range", ErrSyntax, s)
	}
	return Bitrate(math.Round(r)), nil
}
