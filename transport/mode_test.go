package transport

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		str  string // canonical form; "" means tc.in
	}{
		{"replenish=15ms", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond}, ""},
		{"replenish", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond}, "replenish=15ms"},
		{"replenish=2.5ms", Mode{Policy: Replenish, ReplenishTime: 2500 * time.Microsecond}, ""},
		{"replenish=1s", Mode{Policy: Replenish, ReplenishTime: time.Second}, ""},
		{"replenish=100us", Mode{Policy: Replenish, ReplenishTime: 100 * time.Microsecond}, "replenish=100µs"},
		{"replenish=15ms+nagle", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond, Nagle: true}, ""},
		{"replenish+nagle+nosubmss", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond, Nagle: true, NoSubMSS: true}, "replenish=15ms+nagle+nosubmss"},
		{"replenish+kernel", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond, Kernel: true}, "replenish=15ms+kernel"},
		{"replenish=15ms+nagle+nosubmss+kernel", Mode{Policy: Replenish, ReplenishTime: 15 * time.Millisecond, Nagle: true, NoSubMSS: true, Kernel: true},
			"replenish=15ms+kernel+nagle+nosubmss"},
		{"replenish=40ms+kernel+sndbuf=65536", Mode{Policy: Replenish, ReplenishTime: 40 * time.Millisecond, Kernel: true, SendBuffer: 65536}, ""},
		{"lowat=15000", Mode{Policy: Lowat, Lowat: 15000}, ""},
		{"lowat=1+nagle", Mode{Policy: Lowat, Lowat: 1, Nagle: true}, ""},
		{"expire=100ms", Mode{Policy: Expire, Expire: 100 * time.Millisecond}, ""},
		{"default", Mode{Policy: Default}, ""},
		{"default+nagle", Mode{Policy: Default, Nagle: true}, ""},
		{" default ", Mode{Policy: Default}, "default"},
		{"default+sndbuf=4194304", Mode{Policy: Default, SendBuffer: 4194304}, ""},
		{"default+sndbuf=4194304+nagle", Mode{Policy: Default, SendBuffer: 4194304, Nagle: true}, "default+nagle+sndbuf=4194304"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if err != nil {
				t.Fatalf("ParseMode: %v", err)
			}
			if got != tc.want {
				t.Fatalf("ParseMode = %+v, want %+v", got, tc.want)
			}
			want := tc.str
			if want == "" {
				want = tc.in
			}
			if s := got.String(); s != want {
				t.Errorf("String = %q, want %q", s, want)
			}
			again, err := ParseMode(got.String())
			if err != nil || again != got {
				t.Errorf("round trip of %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseModeErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"lowat zero", "lowat=0"},
		{"lowat negative", "lowat=-5"},
		{"lowat without value", "lowat"},
		{"lowat not a number", "lowat=16k"},
		{"lowat too large", "lowat=4294967296"},
		{"replenish not a duration", "replenish=abc"},
		{"replenish negative", "replenish=-1ms"},
		{"replenish zero", "replenish=0"},
		{"replenish without unit", "replenish=15"},
		{"expire without value", "expire"},
		{"expire zero", "expire=0s"},
		{"unknown mode", "fast"},
		{"mode case", "Replenish"},
		{"unknown option", "replenish+foo"},
		{"option alone", "+foo"},
		{"nagle alone", "+nagle"},
		{"nagle twice", "default+nagle+nagle"},
		{"nosubmss without nagle", "replenish+nosubmss"},
		{"kernel twice", "replenish+kernel+kernel"},
		{"kernel with default", "default+kernel"},
		{"kernel with lowat", "lowat=1000+kernel"},
		{"kernel with expire", "expire=100ms+kernel"},
		{"empty option", "replenish+"},
		{"default with value", "default=1"},
		{"sndbuf zero", "default+sndbuf=0"},
		{"sndbuf not a number", "default+sndbuf=8M"},
		{"sndbuf twice", "default+sndbuf=1000+sndbuf=2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMode(tc.in)
			if !errors.Is(err, ErrMode) {
				t.Fatalf("ParseMode(%q) = %+v, %v; want ErrMode", tc.in, m, err)
			}
		})
	}
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{
		{Mode{}, "replenish=15ms"},
		{Mode{ReplenishTime: 40 * time.Millisecond}, "replenish=40ms"},
		{Mode{Policy: Lowat, Lowat: 16384, Nagle: true}, "lowat=16384+nagle"},
		{Mode{Policy: Default}, "default"},
		{Mode{Policy: Default, NoSubMSS: true}, "default"},
		{Mode{Kernel: true}, "replenish=15ms+kernel"},
		{Mode{Policy: Default, Kernel: true}, "default"},
		{DefaultMode, "replenish=15ms"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestModeReplenishing(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want time.Duration
	}{
		{Mode{}, DefaultReplenishTime},
		{Mode{ReplenishTime: 40 * time.Millisecond}, 40 * time.Millisecond},
		{Mode{Policy: Default, ReplenishTime: 40 * time.Millisecond}, 0},
		{Mode{Policy: Lowat, Lowat: 1000}, 0},
	} {
		if got := tc.m.Replenishing(); got != tc.want {
			t.Errorf("%+v.Replenishing() = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// A Mode is a flag through flag.TextVar and a string in JSON.
func TestModeText(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var m Mode
	fs.TextVar(&m, "mode", DefaultMode, "")
	if err := fs.Parse([]string{"-mode", "lowat=2000+nagle"}); err != nil {
		t.Fatal(err)
	}
	if want := (Mode{Policy: Lowat, Lowat: 2000, Nagle: true}); m != want {
		t.Fatalf("flag gave %+v, want %+v", m, want)
	}
	if err := fs.Parse([]string{"-mode", "fast"}); err == nil {
		t.Fatal("a bad -mode was accepted")
	}
	b, err := json.Marshal(struct{ Mode Mode }{m})
	if err != nil || string(b) != `{"Mode":"lowat=2000+nagle"}` {
		t.Fatalf("json = %s, %v", b, err)
	}
	var back struct{ Mode Mode }
	if err := json.Unmarshal(b, &back); err != nil || back.Mode != m {
		t.Fatalf("json round trip = %+v, %v", back, err)
	}
}

func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"replenish=15ms", "lowat=15000+nagle", "default", "replenish+nagle+nosubmss", "+foo", "expire=1s+sndbuf=9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			return
		}
		again, err := ParseMode(m.String())
		if err != nil || again != m {
			t.Fatalf("round trip %q -> %q -> %+v, %v", s, m.String(), again, err)
		}
	})
}
