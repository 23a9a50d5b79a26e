package records

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/rate"
	"replenish/transport"
	"replenish/transport/drain"
)

// TestFormatsKeepTheirNames reads lines as the programs wrote them before
// this package existed and writes them back: every field must keep its
// JSON name, so that results taken earlier still load.
func TestFormatsKeepTheirNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		line string
	}{
		{"sender frame", &Frame{}, `{"kind":"frame","id":0,"rtp_ts":3370439279,"capture_us":1796092342356922,"encode_start_us":1796092342375650,"encode_end_us":1796092342379208,"write_start_us":1796092342379834,"write_end_us":1796092342379975,"left_host_us":1796092342379950,"bytes":7587,"width":320,"height":180,"key":true,"target_bps":800000,"drain_bps":2764018,"app_limited":true,"skipped":2,"retransmits":3}`},
		{"sender conn", &Conn{}, `{"kind":"conn","end_us":1796092347554723,"retransmits":1,"bytes_retrans":2,"bytes_written":529840,"frames":156,"invited_kernel":4,"invited_timer":5,"invited_immediate":157,"records_unstamped":6}`},
		{"sender frame with drain", &Frame{}, `{"kind":"frame","id":1,"rtp_ts":1,"capture_us":1,"encode_start_us":2,"encode_end_us":3,"write_start_us":4,"write_end_us":5,"bytes":7,"width":320,"height":180,"target_bps":800000,"drain_bps":2000000,"retransmits":0,"lead_us":4000,"drain":{"rate_bps":2000000,"source":"measured","measured_bps":2000000,"bound_bps":3000000,"window_bps":1900000,"window_path_limited":true,"at_us":4,"delivered":123456,"acks":99,"in_flight":3000,"backlogged":true,"srtt_us":41000,"min_rtt_us":40000,"cwnd":14480,"peer_window":-1,"stack_bps":2500000}}`},
		{"quic expire conn", &Conn{}, `{"kind":"conn","transport":"quic","end_us":1,"retransmits":1,"bytes_retrans":2,"bytes_written":3,"frames":4,"invited_kernel":4,"invited_timer":5,"invited_immediate":7,"records_unstamped":6,"expired_dropped":3,"expired_reset":2,"bytes_reset":9000}`},
		{"conn with transport", &Conn{}, `{"kind":"conn","transport":"tcp","end_us":1,"retransmits":1,"bytes_retrans":2,"bytes_written":3,"frames":4,"invited_kernel":4,"invited_timer":5,"invited_immediate":7,"records_unstamped":6}`},
		{"viewer received", &ViewerFrame{}, `{"kind":"received","stream":1,"frame":7,"name":"replenish=15ms","rtp_ts":3370439279,"capture_us":1796092342356922,"received_us":1796092342465851,"bytes":7587,"key":true,"width":320,"height":180,"clock_offset_us":-12}`},
		{"viewer displayed", &ViewerFrame{}, `{"kind":"displayed","stream":1,"frame":7,"capture_us":1796092342356922,"client":2,"displayed_us":1796092342500000,"g2g_ms":143.078,"decode_ms":1.5,"draw_ms":0.5}`},
		{"viewer misread", &ViewerFrame{}, `{"kind":"displayed","stream":1,"frame":8,"client":2,"displayed_us":1796092342500000,"misread":true}`},
		{"write pending", &Write{}, `{"kind":"write","id":59,"write_start_us":1796092321595004,"write_end_us":0,"bytes":16384,"unsent":952176,"retransmits":0,"pending":true}`},
		{"write part", &Write{}, `{"kind":"write","id":0,"write_start_us":1796092331677873,"write_end_us":1796092331678031,"left_host_us":1796092331677886,"bytes":16,"drain_bps":125000,"unsent":0,"part":"header","retransmits":0}`},
		{"request", &Request{}, `{"kind":"request","id":0,"start_us":1796092331677871,"end_us":1796092331759360}`},
		{"sink", &Sink{}, `{"us":1796092321618673,"total":1448}`},
		{"run frame", &RunLine{}, `{"kind":"frame","t":0.056808,"bytes":7587,"width":320,"height":180,"key":true,"source_delay_ms":0.116,"capture_to_received_ms":108.929,"g2g_ms":150,"parts_ms":{"encode":3.558,"network":85.901,"source_delay":0.116,"wait":18.728}}`},
		{"run write", &RunLine{}, `{"kind":"write","t":0.088868,"bytes":16384,"source_delay_ms":46.453,"drain_bps":1500000}`},
		{"run body", &RunLine{}, `{"kind":"write","t":0.080654,"bytes":32,"source_delay_ms":40.202,"part":"body"}`},
		{"run sample", &RunLine{}, `{"kind":"sample","t":0.252751827,"goodput_bps":520765.4964767696,"bitrate_bps":635756.1394415848,"queue_ms":47.710208,"drain_bps":656560,"target_bps":527297,"rate_bps":1000000,"delivered_bps":615846.8498310259}`},
		{"run sample zero queue", &RunLine{}, `{"kind":"sample","t":0.251401637,"queue_ms":0,"rate_bps":2000000,"delivered_bps":13573.411517833221}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(tc.line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.v); err != nil {
				t.Fatalf("reading: %v", err)
			}
			b, err := json.Marshal(tc.v)
			if err != nil || string(b) != tc.line {
				t.Fatalf("written back as\n%s\nwant\n%s", b, tc.line)
			}
		})
	}
}

func TestConnOf(t *testing.T) {
	end := time.UnixMicro(1_000_000)
	c := ConnOf(end, "tcp", transport.Counters{Retransmits: 3, Frames: 9, RecordsUnstamped: 1, InvitedKernel: 4})
	if c.Kind != KindConn || c.Transport != "tcp" || c.EndUs != 1_000_000 || c.Retransmits != 3 || c.Frames != 9 ||
		c.RecordsUnstamped != 1 || c.InvitedKernel != 4 {
		t.Fatalf("TCPConn = %+v", c)
	}
	if Micros(time.Time{}) != 0 {
		t.Fatal("the zero time is not 0 µs")
	}
}

func TestDrainOf(t *testing.T) {
	if DrainOf(transport.DrainRecord{}) != nil || (*Drain)(nil).Known() {
		t.Error("an empty record is not nil, or nil is known")
	}
	at := time.UnixMicro(5_000_000)
	d := DrainOf(transport.DrainRecord{
		Input: drain.Sample{At: at, Delivered: 10, Acks: 2, InFlight: 3, Backlogged: true, SRTT: 40 * time.Millisecond,
			MinRTT: 39 * time.Millisecond, Cwnd: 14480, PeerWindow: -1, PacingRate: 4 * rate.Mbps},
		Estimate: drain.Estimate{Rate: 2 * rate.Mbps, Source: drain.SourceMeasured, AppLimited: true, Window: rate.Mbps, WindowPathLimited: true,
			Newest: 1500 * rate.Kbps, NewestAt: at.Add(-time.Millisecond)},
		StackRate: 3 * rate.Mbps,
	})
	want := Drain{RateBps: 2e6, Source: "measured", AppLimited: true, WindowBps: 1e6, WindowPathLimited: true, NewestBps: 1.5e6, NewestAtUs: 4_999_000, AtUs: 5_000_000,
		Delivered: 10, Acks: 2, InFlight: 3, Backlogged: true, SRTTUs: 40000, MinRTTUs: 39000, Cwnd: 14480, PeerWindow: -1,
		PacingBps: 4e6, StackBps: 3e6}
	if d == nil || *d != want || !d.Known() {
		t.Errorf("DrainOf = %+v, want %+v", d, want)
	}
	if (&Drain{Source: "none"}).Known() {
		t.Error("an estimate from source none is known")
	}
}

func TestWriterCaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		w.Write(map[string]int{"i": i})
	}
	err = w.Close()
	if err == nil || !strings.Contains(err.Error(), "3 records dropped") {
		t.Fatalf("Close = %v, want 3 dropped", err)
	}
	b, _ := os.ReadFile(path)
	if got := string(b); got != "{\"i\":0}\n{\"i\":1}\n" {
		t.Fatalf("file %q", got)
	}
}

func TestWriterKeepsError(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "r.jsonl"), 10)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(func() {}) // not JSON
	w.Write(1)
	if err := w.Close(); err == nil {
		t.Fatal("Close = nil after an unmarshalable record")
	}
}

func TestScanner(t *testing.T) {
	long := `{"kind":"x","pad":"` + strings.Repeat("x", MaxLine) + `"}`
	in := strings.Join([]string{`{"a":1}`, ``, `  `, long, `{"b":2}`, `{"c":`}, "\n")
	s := NewScanner(strings.NewReader(in))
	type line struct {
		no        int
		text      string
		long, cut bool
	}
	var got []line
	for s.Scan() {
		got = append(got, line{s.Line(), string(s.Bytes()), s.TooLong(), s.Cut()})
	}
	want := []line{{1, `{"a":1}`, false, false}, {4, "", true, false}, {5, `{"b":2}`, false, false}, {6, `{"c":`, false, true}}
	if s.Err() != nil || !slices.Equal(got, want) {
		t.Fatalf("scanned %+v, %v; want %+v", got, s.Err(), want)
	}
}

func TestRead(t *testing.T) {
	type seen struct {
		kind string
		line string
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    []seen
		wantErr bool
	}{
		{"kinds", "{\"kind\":\"write\",\"id\":1}\n\n{\"us\":5}\n", []seen{{"write", `{"kind":"write","id":1}`}, {"", `{"us":5}`}}, false},
		{"last line cut", "{\"kind\":\"write\"}\n{\"kind\":\"wr", []seen{{"write", `{"kind":"write"}`}}, false},
		{"bad line inside", "{\"kind\":\"write\"}\nnot json\n{\"kind\":\"conn\"}\n", []seen{{"write", `{"kind":"write"}`}}, true},
		{"too long", `{"pad":"` + strings.Repeat("x", MaxLine) + "\"}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []seen
			err := Read(strings.NewReader(tc.in), func(kind string, line []byte) error {
				got = append(got, seen{kind, string(line)})
				return nil
			})
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrLine)) {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
		})
	}
	stop := errors.New("stop")
	err := Read(strings.NewReader("{}\n{}\n"), func(string, []byte) error { return stop })
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("fn's error: %v", err)
	}
	if err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl"), nil); err != nil {
		t.Fatalf("missing file: %v", err)
	}
}

func TestAppend(t *testing.T) {
	var sinks []Sink
	if err := Append(&sinks, []byte(`{"us":5,"total":7}`)); err != nil || len(sinks) != 1 || sinks[0] != (Sink{Us: 5, Total: 7}) {
		t.Fatalf("Append: %v, %+v", err, sinks)
	}
	if err := Append(&sinks, []byte(`{"us":"soon"}`)); err == nil || len(sinks) != 1 {
		t.Fatalf("a bad line: %v, %+v", err, sinks)
	}
}
