package workload

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"replenish/framer"
	"replenish/transport"
)

func TestRRAnswerIsOneFrame(t *testing.T) {
	p, err := framer.NewReader(bytes.NewReader(rrAnswer)).ReadPacket()
	if err != nil || string(p) != "OK" {
		t.Fatalf("rrAnswer reads as %q, %v; want one framed OK", p, err)
	}
}

func TestRecentDelays(t *testing.T) {
	var r recentDelays
	now := time.Unix(100, 0)
	if st := r.status(now); st.P50Ms != -1 || st.Writes != 0 {
		t.Errorf("empty: %+v", st)
	}
	r.add(now.Add(-5*time.Second), 900*time.Millisecond) // too old
	r.add(now.Add(-time.Second), 10*time.Millisecond)
	r.add(now.Add(-time.Second), 30*time.Millisecond)
	r.add(now, 20*time.Millisecond)
	r.add(now, -1) // departure unknown: counted, not summarized
	if st := r.status(now); st.P50Ms != 20 || st.Writes != 5 {
		t.Errorf("status %+v, want p50 20 ms over the last 2 s and 5 writes", st)
	}
}

// TestSpecArgs checks that every role's command line reads back as the
// Spec it was written from.
func TestSpecArgs(t *testing.T) {
	replenish, _ := transport.ParseMode("replenish=15ms+nagle")
	for _, s := range []Spec{
		{Role: BulkSend, Addr: "10.0.0.2:9000", Mode: replenish, Size: 512, Records: "/r/send.jsonl"},
		{Role: BulkSink, Addr: "10.0.0.2:9000", Records: "/r/sink.jsonl"},
		{Role: RRClient, Addr: "10.0.0.2:9000", Mode: transport.Mode{Policy: transport.Default, Nagle: true}, Records: "/r/send.jsonl"},
		{Role: RRServer, Addr: "10.0.0.2:9000"},
	} {
		t.Run(string(s.Role), func(t *testing.T) {
			args := s.Args()
			if args[0] != string(s.Role) {
				t.Fatalf("args %q do not start with the role", args)
			}
			got, err := ParseSpec(Role(args[0]), args[1:], io.Discard)
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", args, err)
			}
			want := s
			if want.Role != BulkSend {
				got.Size = 0 // only bulk-send has one
			}
			if want.Role == BulkSink || want.Role == RRServer {
				want.Mode = got.Mode // receivers have no mode
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back as %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		role Role
		args []string
		want string
	}{
		{BulkSend, []string{"-to", "x:1", "-records", "r", "-size", "0"}, "need -to, -records and -size"},
		{BulkSend, []string{"-to", "x:1"}, "need -to, -records"},
		{BulkSink, []string{"-listen", "x:1"}, "need -listen and -records"},
		{RRClient, []string{"-to", "x:1", "-mode", "sometimes", "-records", "r"}, "invalid value"},
		{RRServer, nil, "need -listen"},
		{RRServer, []string{"-listen", "x:1", "extra"}, "unexpected arguments"},
		{"bulk-receive", nil, "unknown role"},
	} {
		if _, err := ParseSpec(tc.role, tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%s, %q) = %v, want an error mentioning %q", tc.role, tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if code := Main(t.Context(), RRServer, nil, io.Discard, &out); code != 2 || !strings.Contains(out.String(), "rr-server: need -listen") {
		t.Errorf("Main with bad flags: code %d, %q", code, out.String())
	}
}
