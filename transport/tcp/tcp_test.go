package tcp

import (
	"errors"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Config
		str  string // canonical form; "" means tc.in
	}{
		{"replenish=15ms", Config{Mode: ModeReplenish, ReplenishTime: 15 * time.Millisecond}, ""},
		{"replenish", Config{Mode: ModeReplenish, ReplenishTime: 15 * time.Millisecond}, "replenish=15ms"},
		{"replenish=2.5ms", Config{Mode: ModeReplenish, ReplenishTime: 2500 * time.Microsecond}, ""},
		{"replenish=1s", Config{Mode: ModeReplenish, ReplenishTime: time.Second}, ""},
		{"replenish=100us", Config{Mode: ModeReplenish, ReplenishTime: 100 * time.Microsecond}, "replenish=100µs"},
		{"replenish=15ms+nagle", Config{Mode: ModeReplenish, ReplenishTime: 15 * time.Millisecond, Nagle: true}, ""},
		{"replenish+nagle+nosubmss", Config{Mode: ModeReplenish, ReplenishTime: 15 * time.Millisecond, Nagle: true, NoSubMSSClause: true}, "replenish=15ms+nagle+nosubmss"},
		{"lowat=15000", Config{Mode: ModeLowat, Lowat: 15000}, ""},
		{"lowat=1+nagle", Config{Mode: ModeLowat, Lowat: 1, Nagle: true}, ""},
		{"default", Config{Mode: ModeDefault}, ""},
		{"default+nagle", Config{Mode: ModeDefault, Nagle: true}, ""},
		{" default ", Config{Mode: ModeDefault}, "default"},
		{"default+sndbuf=4194304", Config{Mode: ModeDefault, SendBuffer: 4194304}, ""},
		{"default+sndbuf=4194304+nagle", Config{Mode: ModeDefault, SendBuffer: 4194304, Nagle: true}, "default+nagle+sndbuf=4194304"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if err != nil {
				t.Fatalf("ParseMode: %v", err)
			}
			if modeFields(got) != modeFields(tc.want) {
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
			if err != nil || again.String() != got.String() {
				t.Errorf("round trip of %q: %q, %v", got.String(), again.String(), err)
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
		{"unknown mode", "fast"},
		{"mode case", "Replenish"},
		{"unknown option", "replenish+foo"},
		{"option alone", "+foo"},
		{"nagle alone", "+nagle"},
		{"nagle twice", "default+nagle+nagle"},
		{"nosubmss without nagle", "replenish+nosubmss"},
		{"empty option", "replenish+"},
		{"default with value", "default=1"},
		{"sndbuf zero", "default+sndbuf=0"},
		{"sndbuf not a number", "default+sndbuf=8M"},
		{"sndbuf twice", "default+sndbuf=1000+sndbuf=2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseMode(tc.in)
			if !errors.Is(err, ErrMode) {
				t.Fatalf("ParseMode(%q) = %+v, %v; want ErrMode", tc.in, cfg, err)
			}
		})
	}
}

func TestConfigString(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "replenish=15ms"},
		{Config{ReplenishTime: 40 * time.Millisecond}, "replenish=40ms"},
		{Config{Mode: ModeLowat, Lowat: 16384, Nagle: true}, "lowat=16384+nagle"},
		{Config{Mode: ModeDefault}, "default"},
		{Config{Mode: ModeDefault, NoSubMSSClause: true}, "default"},
	} {
		if got := tc.cfg.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value", Config{}, true},
		{"lowat", Config{Mode: ModeLowat, Lowat: 1}, true},
		{"lowat zero", Config{Mode: ModeLowat}, false},
		{"lowat negative", Config{Mode: ModeLowat, Lowat: -5}, false},
		{"lowat ignored elsewhere", Config{Mode: ModeDefault, Lowat: -5}, true},
		{"negative replenish", Config{ReplenishTime: -time.Millisecond}, false},
		{"negative safety", Config{SafetyTimeout: -time.Second}, false},
		{"negative pending", Config{MaxPending: -1}, false},
		{"unknown mode", Config{Mode: 7}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Errorf("validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// modeFields returns the fields of cfg that ParseMode fills.
func modeFields(cfg Config) [5]any {
	return [5]any{cfg.Mode, cfg.ReplenishTime, cfg.Lowat, cfg.Nagle, cfg.NoSubMSSClause}
}

func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"replenish=15ms", "lowat=15000+nagle", "default", "replenish+nagle+nosubmss", "+foo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := ParseMode(s)
		if err != nil {
			return
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("ParseMode(%q) accepted an invalid config: %v", s, err)
		}
		again, err := ParseMode(cfg.String())
		if err != nil || modeFields(again) != modeFields(cfg) {
			t.Fatalf("round trip %q -> %q -> %+v, %v", s, cfg.String(), again, err)
		}
	})
}
