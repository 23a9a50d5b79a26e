package scenario

import (
	"errors"
	"flag"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"replenish/experiments/emu"
	"replenish/transport"

	"replenish/rate"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		name, in string
		want     Workload
		str      string
		wantErr  bool
	}{
		{name: "video", in: "video", want: Workload{Kind: KindVideo}, str: "video"},
		{name: "bulk default size", in: "bulk", want: Workload{Kind: KindBulk, Write: 65536}, str: "bulk=65536"},
		{name: "bulk bytes", in: "bulk=512", want: Workload{Kind: KindBulk, Write: 512}, str: "bulk=512"},
		{name: "bulk KiB", in: "bulk=4KiB", want: Workload{Kind: KindBulk, Write: 4096}, str: "bulk=4096"},
		{name: "bulk decimal k", in: "bulk=15k", want: Workload{Kind: KindBulk, Write: 15000}, str: "bulk=15000"},
		{name: "rr", in: "rr", want: Workload{Kind: KindRR}, str: "rr=16+32"},
		{name: "video with size", in: "video=5", wantErr: true},
		{name: "bulk zero", in: "bulk=0", wantErr: true},
		{name: "bulk too large", in: "bulk=100MiB", wantErr: true},
		{name: "bulk unit", in: "bulk=3parsecs", wantErr: true},
		{name: "unknown", in: "stream", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWorkload(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrSpec) {
					t.Fatalf("ParseWorkload(%q) = %v, %v; want an ErrSpec error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want || got.String() != tt.str {
				t.Fatalf("ParseWorkload(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.String(), err, tt.want, tt.str)
			}
		})
	}
}

func TestParseModes(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{name: "canonical forms", in: "default, lowat=165000,replenish=15ms", want: []string{"default", "lowat=165000", "replenish=15ms"}},
		{name: "replenish alone is 15 ms", in: "replenish", want: []string{"replenish=15ms"}},
		{name: "nagle variants", in: "replenish=15ms+nagle+nosubmss,default+nagle", want: []string{"replenish=15ms+nagle+nosubmss", "default+nagle"}},
		{name: "empty items skipped", in: "default,,", want: []string{"default"}},
		{name: "duplicate after canonicalization", in: "replenish,replenish=15ms", wantErr: true},
		{name: "nosubmss without nagle", in: "replenish=15ms+nosubmss", wantErr: true},
		{name: "bad lowat", in: "lowat=abc", wantErr: true},
		{name: "none", in: " , ", wantErr: true},
		{name: "expire, QUIC's", in: "expire=100ms", want: []string{"expire=100ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseModes(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrSpec) {
					t.Fatalf("ParseModes(%q) = %v, %v; want an ErrSpec error", tt.in, got, err)
				}
				return
			}
			var strs []string
			for _, m := range got {
				strs = append(strs, m.String())
			}
			if err != nil || !reflect.DeepEqual(strs, tt.want) {
				t.Fatalf("ParseModes(%q) = %q, %v; want %q", tt.in, strs, err, tt.want)
			}
		})
	}
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Step
		wantErr  bool
	}{
		{name: "empty", in: ""},
		{name: "rate", in: "20s=500kbit", want: []Step{{At: 20 * time.Second, Rate: 500 * rate.Kbps}}},
		{name: "rate and rtt", in: "20s=500kbit/200ms, 30s=2mbit", want: []Step{
			{At: 20 * time.Second, Rate: 500 * rate.Kbps, RTT: 200 * time.Millisecond},
			{At: 30 * time.Second, Rate: 2 * rate.Mbps},
		}},
		{name: "rtt only", in: "5s=/80ms", want: []Step{{At: 5 * time.Second, RTT: 80 * time.Millisecond}}},
		{name: "outage", in: "20s=down, 23s=up", want: []Step{
			{At: 20 * time.Second, Carrier: emu.CarrierDown},
			{At: 23 * time.Second, Carrier: emu.CarrierUp},
		}},
		{name: "outage among steps", in: "10s=1mbit,20s=down,23s=up,25s=/40ms,30s=down,30500ms=up", want: []Step{
			{At: 10 * time.Second, Rate: rate.Mbps},
			{At: 20 * time.Second, Carrier: emu.CarrierDown},
			{At: 23 * time.Second, Carrier: emu.CarrierUp},
			{At: 25 * time.Second, RTT: 40 * time.Millisecond},
			{At: 30 * time.Second, Carrier: emu.CarrierDown},
			{At: 30500 * time.Millisecond, Carrier: emu.CarrierUp},
		}},
		{name: "down and never up", in: "20s=down", wantErr: true},
		{name: "up without down", in: "20s=up", wantErr: true},
		{name: "down twice", in: "20s=down,21s=down,22s=up", wantErr: true},
		{name: "up twice", in: "20s=down,21s=up,22s=up", wantErr: true},
		{name: "down with a rate", in: "20s=down/80ms,21s=up", wantErr: true},
		{name: "down in capitals", in: "20s=DOWN,21s=up", wantErr: true},
		{name: "up before down", in: "21s=down,20s=up", wantErr: true},
		{name: "outage without time", in: "=down,1s=up", wantErr: true},
		{name: "no equals", in: "20s", wantErr: true},
		{name: "bad time", in: "soon=1mbit", wantErr: true},
		{name: "negative time", in: "-1s=1mbit", wantErr: true},
		{name: "bad rate", in: "1s=fast", wantErr: true},
		{name: "bad rtt", in: "1s=1mbit/long", wantErr: true},
		{name: "changes nothing", in: "1s=/", wantErr: true},
		{name: "out of order", in: "2s=1mbit,1s=2mbit", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSchedule(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrSpec) {
					t.Fatalf("ParseSchedule(%q) = %v, %v; want an ErrSpec error", tt.in, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseSchedule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if len(got) > 0 {
				again, err := ParseSchedule(FormatSchedule(got))
				if err != nil || !reflect.DeepEqual(again, got) {
					t.Errorf("FormatSchedule(%+v) = %q reads back as %+v, %v", got, FormatSchedule(got), again, err)
				}
			}
		})
	}
}

func TestQueueBytes(t *testing.T) {
	tests := []struct {
		name string
		rate rate.Bitrate
		q    time.Duration
		want int
	}{
		{name: "2 Mb/s 200 ms", rate: 2 * rate.Mbps, q: 200 * time.Millisecond, want: 50000},
		{name: "86 Mb/s 200 ms", rate: 86 * rate.Mbps, q: 200 * time.Millisecond, want: 2150000},
		{name: "100 kb/s 200 ms is under 8 packets", rate: 100 * rate.Kbps, q: 200 * time.Millisecond, want: 12000},
		{name: "exactly 8 packets", rate: 480 * rate.Kbps, q: 200 * time.Millisecond, want: 12000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QueueBytes(tt.rate, tt.q); got != tt.want {
				t.Errorf("QueueBytes(%v, %v) = %d, want %d", tt.rate, tt.q, got, tt.want)
			}
		})
	}
}

func TestEmuConfig(t *testing.T) {
	p := Path{Rate: 2 * rate.Mbps, RTT: 171 * time.Millisecond, Queue: 200 * time.Millisecond, Loss: 0.01, Jitter: 8 * time.Millisecond, CC: "bbr"}
	c := p.EmuConfig()
	if c.Forward.Rate != 2*rate.Mbps || c.Forward.QueueBytes != 50000 || c.Forward.Loss != 0.01 || c.Forward.Jitter != 8*time.Millisecond ||
		c.Reverse.Rate != 0 || c.Reverse.Loss != 0 || c.Reverse.Jitter != 0 {
		t.Errorf("EmuConfig = %+v", c)
	}
	if got := c.Forward.Delay + c.Reverse.Delay; got != p.RTT {
		t.Errorf("one-way delays add up to %v, want the RTT %v", got, p.RTT)
	}
	if c.CC != "bbr" {
		t.Errorf("CC %q, want bbr", c.CC)
	}
}

func TestMeanRate(t *testing.T) {
	p := Path{Rate: 2 * rate.Mbps, Schedule: []Step{
		{At: 10 * time.Second, Rate: 1 * rate.Mbps},
		{At: 15 * time.Second, RTT: time.Second}, // RTT only: the rate stays
		{At: 20 * time.Second, Rate: 4 * rate.Mbps},
	}}
	tests := []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		{name: "before the schedule", from: 0, to: 10 * time.Second, want: 2e6},
		{name: "across a step", from: 5 * time.Second, to: 15 * time.Second, want: 1.5e6},
		{name: "across every step", from: 0, to: 30 * time.Second, want: (10*2e6 + 10*1e6 + 10*4e6) / 30},
		{name: "after the schedule", from: 25 * time.Second, to: 30 * time.Second, want: 4e6},
		{name: "empty span", from: 12 * time.Second, to: 12 * time.Second, want: 1e6},
		{name: "no schedule", from: 0, to: time.Second, want: 2e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			if tt.name == "no schedule" {
				q.Schedule = nil
			}
			if got := q.MeanRate(tt.from, tt.to); math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Errorf("MeanRate(%v, %v) = %.0f, want %.0f", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestRateAndRTTAt(t *testing.T) {
	p := Path{Rate: 2 * rate.Mbps, RTT: 40 * time.Millisecond, Schedule: []Step{
		{At: 10 * time.Second, Rate: 1 * rate.Mbps},
		{At: 15 * time.Second, RTT: 172 * time.Millisecond},
		{At: 20 * time.Second, Rate: 4 * rate.Mbps, RTT: 80 * time.Millisecond},
	}}
	for _, tc := range []struct {
		at   time.Duration
		rate rate.Bitrate
		rtt  time.Duration
	}{
		{0, 2 * rate.Mbps, 40 * time.Millisecond},
		{10 * time.Second, rate.Mbps, 40 * time.Millisecond},
		{16 * time.Second, rate.Mbps, 172 * time.Millisecond},
		{time.Minute, 4 * rate.Mbps, 80 * time.Millisecond},
	} {
		if r, d := p.RateAt(tc.at), p.RTTAt(tc.at); r != tc.rate || d != tc.rtt {
			t.Errorf("at %v: %v and %v, want %v and %v", tc.at, r, d, tc.rate, tc.rtt)
		}
	}
}

func TestRunIDAndScenario(t *testing.T) {
	base := Run{
		Path:     Path{Rate: 2 * rate.Mbps, RTT: 172 * time.Millisecond, Queue: 200 * time.Millisecond, CC: "cubic", Sndbuf: defaultSndbuf},
		Mode:     mustMode("replenish=15ms"),
		Workload: Workload{Kind: KindBulk, Write: 65536},
	}
	tests := []struct {
		name         string
		change       func(*Run)
		id, scenario string
	}{
		{name: "defaults", change: func(*Run) {},
			id: "2mbit-172ms-bulk64KiB-replenish=15ms", scenario: "bulk 64 KiB writes, 2.00 Mb/s, 172 ms RTT, 200 ms queue"},
		{name: "small writes at 100 kb/s with Nagle", change: func(s *Run) {
			s.Path.Rate, s.Workload.Write, s.Mode = 100*rate.Kbps, 512, mustMode("lowat=187+nagle")
		}, id: "100kbit-172ms-bulk512B-lowat=187+nagle", scenario: "bulk 512 B writes, 100 kb/s, 172 ms RTT, 200 ms queue"},
		{name: "everything else", change: func(s *Run) {
			s.Path.Queue, s.Path.Loss, s.Path.CC, s.Path.Sndbuf, s.Path.MTU = 50*time.Millisecond, 0.01, "bbr", 0, 1280
			s.Path.Jitter = 10 * time.Millisecond
			s.Path.Schedule = []Step{{At: time.Second, Rate: rate.Mbps}}
			s.Workload, s.Browser, s.Bitrate, s.Cross, s.FPS = Workload{Kind: KindVideo}, true, 500*rate.Kbps, 2, 15
		}, id: "2mbit-172ms-video-replenish=15ms-q50ms-loss0.01-jitter10ms-bbr-sndbuf0-mtu1280-sched1-br500kbit-cross2-fps15-browser",
			scenario: "video, 2.00 Mb/s, 172 ms RTT, 50 ms queue, 1% loss, 10 ms jitter, MTU 1280, bbr, Linux's initial send buffer, schedule 1s=1mbit, sender bitrate 500 kb/s, 2 competing bulk flows, 15 fps, browser"},
		{name: "a download that ends", change: func(s *Run) {
			s.Workload, s.Cross, s.CrossFor = Workload{Kind: KindVideo}, 1, 20*time.Second
		}, id: "2mbit-172ms-video-replenish=15ms-cross1for20s",
			scenario: "video, 2.00 Mb/s, 172 ms RTT, 200 ms queue, a competing bulk flow for the first 20s"},
		{name: "given scenario", change: func(s *Run) { s.Scenario = "Nagle trap" },
			id: "2mbit-172ms-bulk64KiB-replenish=15ms", scenario: "Nagle trap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.change(&s)
			if got := s.ID(); got != tt.id {
				t.Errorf("id = %q, want %q", got, tt.id)
			}
			if got := s.Title(); got != tt.scenario {
				t.Errorf("scenario = %q, want %q", got, tt.scenario)
			}
		})
	}
	if got := sanitizeID("a/b c"); got != "a_b_c" {
		t.Errorf("sanitizeID = %q", got)
	}
}

func TestUniqueIDs(t *testing.T) {
	s := Run{Path: Path{Rate: rate.Mbps, Sndbuf: defaultSndbuf, Queue: 200 * time.Millisecond, CC: "cubic"}, Mode: mustMode("default"), Workload: Workload{Kind: KindRR}}
	other := s
	other.Mode = mustMode("default+nagle")
	got := UniqueIDs([]Run{s, other, s, s})
	want := []string{"1mbit-0ms-rr-default", "1mbit-0ms-rr-default+nagle", "1mbit-0ms-rr-default-2", "1mbit-0ms-rr-default-3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uniqueIDs = %q, want %q", got, want)
	}
}

// TestFlags parses the flags of runs as the run command and a matrix line
// do, and checks what they describe.
func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, specs []Run)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, specs []Run) {
			if len(specs) != 2 || specs[0].Mode.String() != "default" || specs[1].Mode.String() != "replenish=15ms" {
				t.Fatalf("specs %+v", specs)
			}
			s := specs[0]
			if s.Path.Rate != 2*rate.Mbps || s.Path.RTT != Defaults().RTT || s.Path.Queue != 200*time.Millisecond || s.Path.Sndbuf != 8<<20 ||
				s.Workload.Write != 65536 || s.Warmup != 5*time.Second || s.Duration != 40*time.Second || s.Drain != 30*time.Second {
				t.Errorf("spec %+v", s)
			}
		}},
		{name: "all flags", args: []string{"--rate", "86mbit", "--rtt", "40ms", "--queue", "100ms", "--loss", "0.001", "--jitter", "5ms",
			"--schedule", "10s=10mbit", "--modes", "lowat=15000", "--workload", "video", "--duration", "10s", "--warmup", "1s",
			"--cc", "bbr", "--sndbuf", "0", "--mtu", "1280", "--drain", "0s", "--browser", "--max-res", "640x360", "--fps", "15", "--bitrate", "1500kbit", "--scenario", "x", "--cross", "1", "--cross-for", "20s"},
			check: func(t *testing.T, specs []Run) {
				s := specs[0]
				want := Run{
					Path: Path{Rate: 86 * rate.Mbps, RTT: 40 * time.Millisecond, Queue: 100 * time.Millisecond, Loss: 0.001, Jitter: 5 * time.Millisecond,
						Schedule: []Step{{At: 10 * time.Second, Rate: 10 * rate.Mbps}}, CC: "bbr", MTU: 1280},
					Transport: TCP, Mode: mustMode("lowat=15000"), Workload: Workload{Kind: KindVideo}, Warmup: time.Second, Duration: 10 * time.Second,
					Browser: true, MaxRes: "640x360", FPS: 15, Bitrate: 1500 * rate.Kbps, Scenario: "x", Cross: 1, CrossFor: 20 * time.Second,
				}
				if len(specs) != 1 || !reflect.DeepEqual(s, want) {
					t.Errorf("spec\n %+v\nwant\n %+v", s, want)
				}
			}},
		{name: "bad rate", args: []string{"--rate", "fast"}, wantErr: "--rate"},
		{name: "negative rtt", args: []string{"--rtt", "-1ms"}, wantErr: "--rtt"},
		{name: "zero queue", args: []string{"--queue", "0s"}, wantErr: "--queue"},
		{name: "loss of one", args: []string{"--loss", "1"}, wantErr: "--loss"},
		{name: "negative jitter", args: []string{"--jitter", "-1ms"}, wantErr: "--jitter"},
		{name: "jitter above a second", args: []string{"--jitter", "2s"}, wantErr: "--jitter"},
		{name: "zero duration", args: []string{"--duration", "0s"}, wantErr: "--duration"},
		{name: "bad cc", args: []string{"--cc", "../x"}, wantErr: "--cc"},
		{name: "bad sndbuf", args: []string{"--sndbuf", "lots"}, wantErr: "--sndbuf"},
		{name: "bad mtu", args: []string{"--mtu", "9000"}, wantErr: "--mtu"},
		{name: "fps above 120", args: []string{"--workload", "video", "--fps", "121"}, wantErr: "--fps"},
		{name: "negative fps", args: []string{"--workload", "video", "--fps", "-1"}, wantErr: "--fps"},
		{name: "fps of bulk", args: []string{"--fps", "15"}, wantErr: "--fps"},
		{name: "bad bitrate", args: []string{"--workload", "video", "--bitrate", "1gbit"}, wantErr: "--bitrate"},
		{name: "bitrate without video", args: []string{"--bitrate", "1mbit"}, wantErr: "video workload only"},
		{name: "browser without video", args: []string{"--browser"}, wantErr: "video workload only"},
		{name: "cross without video", args: []string{"--cross", "1"}, wantErr: "video workload only"},
		{name: "too many competing flows", args: []string{"--workload", "video", "--cross", "5"}, wantErr: "--cross"},
		{name: "negative competing flows", args: []string{"--workload", "video", "--cross", "-1"}, wantErr: "--cross"},
		{name: "cross-for without cross", args: []string{"--workload", "video", "--cross-for", "20s"}, wantErr: "--cross-for"},
		{name: "negative cross-for", args: []string{"--workload", "video", "--cross", "1", "--cross-for", "-1s"}, wantErr: "--cross-for"},
		{name: "bad max-res", args: []string{"--workload", "video", "--max-res", "big"}, wantErr: "--max-res"},
		{name: "page leg", args: []string{"--workload", "video", "--modes", "default", "--page-rate", "1mbit",
			"--page-schedule", "15s=500kbit", "--page-modes", "replenish=15ms,default"},
			check: func(t *testing.T, specs []Run) {
				if len(specs) != 2 {
					t.Fatalf("%d runs, want one per page mode", len(specs))
				}
				want := PageLeg{Rate: rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond,
					Schedule: []Step{{At: 15 * time.Second, Rate: 500 * rate.Kbps}}, Mode: transport.DefaultMode}
				for i, s := range specs {
					if s.Page == nil || !reflect.DeepEqual(*s.Page, want) || !s.Browser || s.Mode.String() != "default" {
						t.Errorf("run %d: page %+v, browser %v, mode %v; want %+v with a browser", i, s.Page, s.Browser, s.Mode, want)
					}
					want.Mode = transport.Mode{Policy: transport.Default}
				}
				ids := UniqueIDs(specs)
				if ids[0] != "2mbit-172ms-video-default-page1mbit-40ms-sched1-replenish=15ms" || ids[1] != "2mbit-172ms-video-default-page1mbit-40ms-sched1-default" {
					t.Errorf("IDs %q", ids)
				}
				if title := specs[0].Title(); title != specs[1].Title() || !strings.Contains(title, "page leg 1.00 Mb/s, 40 ms RTT, 200 ms queue, page schedule 15s=500kbit") {
					t.Errorf("titles %q and %q", title, specs[1].Title())
				}
			}},
		{name: "page leg without video", args: []string{"--page-rate", "1mbit"}, wantErr: "video workload only"},
		{name: "bad page rate", args: []string{"--workload", "video", "--page-rate", "slow"}, wantErr: "--page-rate"},
		{name: "page mode lowat", args: []string{"--workload", "video", "--page-rate", "1mbit", "--page-modes", "lowat=1000"}, wantErr: "--page-modes"},
		{name: "page schedule without a leg", args: []string{"--workload", "video", "--page-schedule", "1s=1mbit"}, wantErr: "--page-schedule"},
		{name: "bad page schedule", args: []string{"--workload", "video", "--page-rate", "1mbit", "--page-schedule", "soon"}, wantErr: "--page-schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Defaults()
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			f.Register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatalf("parsing: %v", err)
			}
			specs, _, err := f.Runs()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an ErrSpec error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, specs)
		})
	}
}

func TestModesFlag(t *testing.T) {
	f := Defaults()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if got := fs.Lookup("modes").DefValue; got != "default,replenish=15ms" {
		t.Errorf("default modes print as %q", got)
	}
	if err := fs.Parse([]string{"--modes", "lowat=15000,replenish=20ms+nagle"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Modes.String(); got != "lowat=15000,replenish=20ms+nagle" {
		t.Errorf("modes %q", got)
	}
	if err := fs.Parse([]string{"--modes", "sometimes"}); err == nil || !strings.Contains(err.Error(), `mode "sometimes"`) {
		t.Errorf("a bad mode: %v", err)
	}
	if DefaultModes[1] != transport.DefaultMode || Defaults().Modes.String() != "default,replenish=15ms" {
		t.Errorf("defaults changed: %v", DefaultModes)
	}
}

func TestQuick(t *testing.T) {
	runs := []Run{{Warmup: time.Second, Duration: time.Minute}, {Warmup: time.Minute, Duration: time.Second}}
	Quick(runs)
	if runs[0].Warmup != time.Second || runs[0].Duration != QuickDuration || runs[1].Warmup != QuickWarmup || runs[1].Duration != time.Second {
		t.Errorf("quick runs %+v", runs)
	}
}

func TestEmuSchedule(t *testing.T) {
	p := Path{Rate: rate.Mbps, RTT: 40 * time.Millisecond, Schedule: []Step{
		{At: time.Second, Rate: 2 * rate.Mbps},
		{At: 2 * time.Second, RTT: 101 * time.Nanosecond},
		{At: 3 * time.Second, Rate: 3 * rate.Mbps, RTT: 20 * time.Millisecond},
	}}
	p.Schedule = append(p.Schedule, Step{At: 4 * time.Second, Carrier: emu.CarrierDown}, Step{At: 5 * time.Second, Carrier: emu.CarrierUp})
	fwd, rev := p.EmuSchedule()
	outage := []emu.Step{{At: 4 * time.Second, Carrier: emu.CarrierDown}, {At: 5 * time.Second, Carrier: emu.CarrierUp}}
	wantFwd := append([]emu.Step{{At: time.Second, Rate: 2 * rate.Mbps}, {At: 2 * time.Second, Delay: 50 * time.Nanosecond},
		{At: 3 * time.Second, Rate: 3 * rate.Mbps, Delay: 10 * time.Millisecond}}, outage...)
	wantRev := append([]emu.Step{{At: 2 * time.Second, Delay: 51 * time.Nanosecond}, {At: 3 * time.Second, Delay: 10 * time.Millisecond}}, outage...)
	if !reflect.DeepEqual(fwd, wantFwd) || !reflect.DeepEqual(rev, wantRev) {
		t.Errorf("EmuSchedule = %+v, %+v; want %+v, %+v", fwd, rev, wantFwd, wantRev)
	}
}

func TestOutages(t *testing.T) {
	sched, err := ParseSchedule("5s=2mbit,10s=down,13s=up,20s=down,20500ms=up")
	if err != nil {
		t.Fatal(err)
	}
	p := Path{Rate: rate.Mbps, Schedule: sched}
	want := []Outage{{Down: 10 * time.Second, Up: 13 * time.Second}, {Down: 20 * time.Second, Up: 20500 * time.Millisecond}}
	if got := p.Outages(); !reflect.DeepEqual(got, want) {
		t.Errorf("Outages = %+v, want %+v", got, want)
	}
	if got := p.RateAt(12 * time.Second); got != 2*rate.Mbps {
		t.Errorf("RateAt in the outage = %v, want the rate kept", got)
	}
	if got := (Path{Rate: rate.Mbps}).Outages(); got != nil {
		t.Errorf("Outages without a schedule = %+v", got)
	}
}

// A schedule of outages alone names them in the run's ID by their length,
// so that a set can hold the same path with a short and a long outage; any
// other schedule is named by its number of steps.
func TestScheduleID(t *testing.T) {
	for _, tc := range []struct{ sched, want string }{
		{"15s=down,18s=up", "down3s"},
		{"15s=down,25s=up", "down10s"},
		{"10s=down,13s=up,20s=down,20500ms=up", "down3s-down500ms"},
		{"5s=2mbit,10s=down,13s=up", "sched3"},
		{"20s=1mbit", "sched1"},
	} {
		sched, err := ParseSchedule(tc.sched)
		if err != nil {
			t.Fatal(err)
		}
		if got := scheduleID(Path{Rate: rate.Mbps, Schedule: sched}); got != tc.want {
			t.Errorf("scheduleID(%s) = %q, want %q", tc.sched, got, tc.want)
		}
	}
}

func TestVideoBitrate(t *testing.T) {
	tests := []struct {
		name       string
		path, give rate.Bitrate
		want       rate.Bitrate
	}{
		{"the bottleneck's", 2 * rate.Mbps, 0, 2 * rate.Mbps},
		{"given", 2 * rate.Mbps, 500 * rate.Kbps, 500 * rate.Kbps},
		{"a fast path is capped", 1 * rate.Gbps, 0, 100 * rate.Mbps},
		{"a slow path is raised", 5 * rate.Kbps, 0, 10 * rate.Kbps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Run{Path: Path{Rate: tt.path}, Bitrate: tt.give}
			if got := s.VideoBitrate(); got != tt.want {
				t.Errorf("videoBitrate = %v, want %v", got, tt.want)
			}
		})
	}
}

// mustMode parses a mode the test knows to be valid.
func mustMode(s string) transport.Mode {
	m, err := transport.ParseMode(s)
	if err != nil {
		panic(err)
	}
	return m
}

func TestPageLegEmuConfig(t *testing.T) {
	l := PageLeg{Rate: rate.Mbps, RTT: 40 * time.Millisecond, Queue: 200 * time.Millisecond,
		Schedule: []Step{{At: 15 * time.Second, Rate: 4 * rate.Mbps, RTT: 80 * time.Millisecond}}}
	c := l.EmuConfig("rpl-1-abcdef-r")
	if c.SenderNS != "rpl-1-abcdef-r" || c.Forward.Rate != rate.Mbps || c.Forward.Delay != 20*time.Millisecond ||
		c.Reverse.Delay != 20*time.Millisecond || c.Reverse.Rate != 0 || c.Forward.QueueBytes != QueueBytes(rate.Mbps, l.Queue) {
		t.Errorf("emulator configuration %+v", c)
	}
	fwd, rev := l.EmuSchedule()
	if len(fwd) != 1 || fwd[0].Rate != 4*rate.Mbps || fwd[0].Delay != 40*time.Millisecond || len(rev) != 1 || rev[0].Delay != 40*time.Millisecond {
		t.Errorf("schedule %+v, %+v", fwd, rev)
	}
	if l.OneWay() != 20*time.Millisecond {
		t.Errorf("one-way delay %v", l.OneWay())
	}
}
