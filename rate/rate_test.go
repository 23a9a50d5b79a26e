package rate

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Bitrate
	}{
		{"100kbit", 100 * Kbps},
		{"2mbit", 2 * Mbps},
		{"86Mbps", 86 * Mbps},
		{"1.5M", 1500 * Kbps},
		{"20000000", 20 * Mbps},
		{"1gbit", Gbps},
		{" 64 kb/s ", 64 * Kbps},
		{"512bit", 512},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "fast", "-2mbit", "0", "NaN", "2 mbit mbit", "1e400"} {
		if _, err := Parse(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error = %v, want ErrSyntax", bad, err)
		}
	}
}

func TestConversions(t *testing.T) {
	b := 2 * Mbps
	if got := b.Bytes(time.Second); got != 250000 {
		t.Errorf("Bytes(1s) = %d, want 250000", got)
	}
	if got := b.Duration(250000); got != time.Second {
		t.Errorf("Duration(250000) = %v, want 1s", got)
	}
	if got := FromBytesPerSecond(250000); got != b {
		t.Errorf("FromBytesPerSecond = %v, want %v", got, b)
	}
	if got := Bitrate(0).Duration(100); got != 0 {
		t.Errorf("zero rate Duration = %v, want 0", got)
	}
	if got, want := (1500 * Kbps).String(), "1.50 Mb/s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
