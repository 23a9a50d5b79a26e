package drain

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"replenish/rate"
)

// trace is a recorded sequence of TCP_INFO readings as a TCP transport
// samples them (testdata/*.csv, written by transport/tcp's TestDrainOnPath
// -record on rate-limited paths between network namespaces), with the
// kernel's own delivery-rate sample beside each.
type trace struct {
	link, payload rate.Bitrate  // the link's rate, and the payload rate it carried after skip
	skip          time.Duration // warm-up before the payload rate was measured
	rows          []traceRow
}

// tcpSlackTime and tcpSlackMax are the slack transport/tcp's SampleOf
// gives every reading (a frame interval, a segment at most), which the
// traces leave out.
const (
	tcpSlackTime = 40 * time.Millisecond
	tcpSlackMax  = 1448
)

type traceRow struct {
	s               Sample
	stack           rate.Bitrate // tcpi_delivery_rate
	stackAppLimited bool
	unsent          int
}

// readTrace parses testdata/name.csv.
func readTrace(t *testing.T, name string) trace {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tr trace
	t0 := time.Unix(1000, 0)
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if h, ok := strings.CutPrefix(text, "# link_bps="); ok {
			var link, payload, skip int64
			if _, err := fmt.Sscanf(h, "%d payload_bps=%d skip_us=%d", &link, &payload, &skip); err != nil {
				t.Fatalf("%s:%d: %v", name, line, err)
			}
			tr.link, tr.payload, tr.skip = rate.Bitrate(link), rate.Bitrate(payload), time.Duration(skip)*time.Microsecond
			continue
		}
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		var v [15]int64
		fields := strings.Split(text, ",")
		if len(fields) != len(v) {
			t.Fatalf("%s:%d: %d fields, want %d", name, line, len(fields), len(v))
		}
		acked := fields[len(v)-1] != "" // acked_us: empty if unknown
		if !acked {
			fields = fields[:len(v)-1]
		}
		for i, s := range fields {
			if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				t.Fatalf("%s:%d: %v", name, line, err)
			}
		}
		tr.rows = append(tr.rows, traceRow{
			s: Sample{
				At: t0.Add(time.Duration(v[0]) * time.Microsecond), Delivered: uint64(v[1]), Acks: uint64(v[2]),
				InFlight: int(v[3]), Backlogged: v[4] == 1, Recovering: v[5] == 1,
				SRTT: time.Duration(v[6]) * time.Microsecond, MinRTT: time.Duration(v[7]) * time.Microsecond,
				Cwnd: int(v[8]), PeerWindow: int(v[9]), PacingRate: rate.Bitrate(v[10]),
				SlackTime: tcpSlackTime, SlackMax: tcpSlackMax,
			},
			stack: rate.Bitrate(v[11]), stackAppLimited: v[12] == 1, unsent: int(v[13]),
		})
		if acked {
			tr.rows[len(tr.rows)-1].s.AckedAt = t0.Add(time.Duration(v[14]) * time.Microsecond)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if tr.payload == 0 || len(tr.rows) < 100 {
		t.Fatalf("%s: no payload rate or too few rows (%d)", name, len(tr.rows))
	}
	return tr
}

// replay feeds a trace to a fresh Estimator and returns the estimate after
// every row.
func (tr trace) replay(cfg Config) []Estimate {
	e := New(cfg)
	out := make([]Estimate, len(tr.rows))
	for i, r := range tr.rows {
		out[i] = e.Add(r.s)
	}
	return out
}

// ratio is a over b.
func ratio(a, b rate.Bitrate) float64 { return float64(a) / float64(b) }

// p50 is the median of v.
func p50(v []rate.Bitrate) rate.Bitrate {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// TestRecordedPaths replays recorded TCP_INFO sequences of a video sender
// over rate-limited links and checks the estimate against the payload rate
// each link carried, where the kernel's sample is inflated by short
// segments or stuck on a stale application-limited value.
func TestRecordedPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		// The estimate's median after the warm-up, over the payload rate.
		lo, hi float64
		// The kernel's median over the payload rate is at least this
		// (0: not checked).
		stackAbove float64
		// The trace must show these.
		recovery, backlog bool
		// Share of estimates after the warm-up from path-limited windows,
		// at least.
		pathLimited float64
	}{
		// 520-byte frames, one short segment each: the kernel counts each
		// as a full MSS.
		{name: "video-100kbit-cubic", lo: 0.97, hi: 1.03, stackAbove: 2.5, pathLimited: 0.9},
		{name: "video-2mbit-cubic", lo: 0.97, hi: 1.03, backlog: true, pathLimited: 0.9},
		{name: "video-2mbit-bbr", lo: 0.97, hi: 1.03, pathLimited: 0.9},
		{name: "video-20mbit-cubic", lo: 0.97, hi: 1.03, backlog: true, pathLimited: 0.9},
		// A 15 ms queue and frames at twice the link rate: a loss every
		// few round trips, so that bytes_acked stalls and jumps. The queue
		// is shorter than the wait for the next frame, so the link idles
		// in most windows: the estimate holds the path-limited ones.
		{name: "video-2mbit-loss", lo: 0.97, hi: 1.03, recovery: true, pathLimited: 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := readTrace(t, tc.name)
			ests := tr.replay(Config{})
			t0 := tr.rows[0].s.At
			var got, stack []rate.Bitrate
			var path, recovering, backlogged int
			for i, r := range tr.rows {
				if r.s.Recovering {
					recovering++
				}
				if r.s.Backlogged {
					backlogged++
				}
				if r.s.At.Sub(t0) < tr.skip {
					continue
				}
				got = append(got, ests[i].Rate)
				stack = append(stack, r.stack)
				if !ests[i].AppLimited && ests[i].Source != SourceWindow {
					path++
				}
			}
			m, k := ratio(p50(got), tr.payload), ratio(p50(stack), tr.payload)
			t.Logf("payload %v: estimate p50 %v (%.3f), kernel %v (%.3f); %d of %d path-limited, %d recovering, %d backlogged readings",
				tr.payload, p50(got), m, p50(stack), k, path, len(got), recovering, backlogged)
			if m < tc.lo || m > tc.hi {
				t.Errorf("estimate p50 %.3f of the payload rate, want %.2f to %.2f", m, tc.lo, tc.hi)
			}
			if tc.stackAbove > 0 && k < tc.stackAbove {
				t.Errorf("kernel sample p50 %.3f of the payload rate: the trace no longer shows the inflation (want above %.1f)", k, tc.stackAbove)
			}
			if share := float64(path) / float64(len(got)); share < tc.pathLimited {
				t.Errorf("%.2f of estimates path-limited, want at least %.2f", share, tc.pathLimited)
			}
			if tc.recovery && recovering == 0 {
				t.Error("the trace has no loss recovery")
			}
			if tc.backlog && backlogged == 0 {
				t.Error("the trace has no socket backlog")
			}
		})
	}
}

// TestRecordedAppLimited replays a sender that fills a 2 Mb/s link, then
// sends at 0.4 of it for four seconds, then fills it again. While it is
// application-limited the estimate keeps the path's rate (and says it is
// application-limited) rather than falling to the sender's own rate, and
// the kernel's sample, kept from a burst the token bucket let through at
// line rate, is far above the path.
func TestRecordedAppLimited(t *testing.T) {
	tr := readTrace(t, "video-2mbit-applimited")
	ests := tr.replay(Config{})
	t0 := tr.rows[0].s.At
	var during, stack []rate.Bitrate
	appLimited := 0
	for i, r := range tr.rows {
		// The application-limited stretch is from 4 to 8 s of the run;
		// leave its first second for the backlog to drain.
		if at := r.s.At.Sub(t0); at < 5*time.Second || at >= 8*time.Second {
			continue
		}
		during = append(during, ests[i].Rate)
		stack = append(stack, r.stack)
		if ests[i].AppLimited {
			appLimited++
		}
	}
	lo, hi := slices.Min(during), slices.Max(during)
	t.Logf("application-limited stretch: estimate %v to %v (payload %v), %d of %d marked application-limited; kernel p50 %v",
		lo, hi, tr.payload, appLimited, len(during), p50(stack))
	if ratio(lo, tr.payload) < 0.9 || ratio(hi, tr.payload) > 1.05 {
		t.Errorf("estimate ranged %v to %v while application-limited, want within 0.9 to 1.05 of %v", lo, hi, tr.payload)
	}
	if float64(appLimited) < 0.8*float64(len(during)) {
		t.Errorf("%d of %d estimates marked application-limited, want most", appLimited, len(during))
	}
	if ratio(p50(stack), tr.payload) < 2 {
		t.Errorf("kernel p50 %v: the trace no longer shows the stale sample", p50(stack))
	}
}
