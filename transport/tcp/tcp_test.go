package tcp

import (
	"errors"
	"testing"
	"time"

	"replenish/transport"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value", Config{}, true},
		{"lowat", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: 1}}, true},
		{"lowat zero", Config{Mode: transport.Mode{Policy: transport.Lowat}}, false},
		{"lowat negative", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: -5}}, false},
		{"lowat ignored elsewhere", Config{Mode: transport.Mode{Policy: transport.Default, Lowat: -5}}, true},
		{"negative replenish", Config{Mode: transport.Mode{ReplenishTime: -time.Millisecond}}, false},
		{"negative safety", Config{SafetyTimeout: -time.Second}, false},
		{"negative pending", Config{MaxPending: -1}, false},
		{"unknown mode", Config{Mode: transport.Mode{Policy: 7}}, false},
		{"expire is not a TCP mode", Config{Mode: transport.Mode{Policy: transport.Expire, Expire: time.Second}}, false},
		{"send buffer negative", Config{Mode: transport.Mode{Policy: transport.Default, SendBuffer: -1}}, false},
		{"congestion", Config{Congestion: "cubic"}, true},
		{"congestion with a dash", Config{Congestion: "bad-name"}, false},
		{"congestion too long", Config{Congestion: "a_sixteen_bytes_"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Errorf("validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
