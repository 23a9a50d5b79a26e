package sender

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"replenish/media"
	"replenish/rate"
	"replenish/transport"
)

func TestReportPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		since  time.Duration
		target rate.Bitrate
		n      int
		due    bool
		keep   int
	}{
		{"every frame fits at 2 Mb/s", 200 * time.Millisecond, 2 * rate.Mbps, 7, true, 7},
		{"too soon", 100 * time.Millisecond, 2 * rate.Mbps, 3, false, 3},
		{"a sample at 500 kb/s", time.Second, 500 * rate.Kbps, 30, true, 18},
		{"no room yet at 100 kb/s", 200 * time.Millisecond, 100 * rate.Kbps, 3, false, 1},
		{"room for one at 100 kb/s", 600 * time.Millisecond, 100 * rate.Kbps, 9, true, 1},
		{"the cap forces one out", 100 * time.Millisecond, 100 * rate.Kbps, maxReport / 2, true, 1},
		{"unknown target: no limit", 200 * time.Millisecond, 0, 7, true, 7},
		{"nothing to report", time.Second, 2 * rate.Mbps, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, keep := ReportPlan(tc.since, tc.target, tc.n)
			if due != tc.due || (due && keep != tc.keep) {
				t.Errorf("ReportPlan(%v, %v, %d) = %v, %d; want %v, %d", tc.since, tc.target, tc.n, due, keep, tc.due, tc.keep)
			}
			if due {
				size := reportBaseBytes + keep*reportEntryBytes
				if budget := tc.target.BytesPerSecond() * reportShare * tc.since.Seconds(); tc.target > 0 && keep > 1 && float64(size) > budget {
					t.Errorf("%d timings: %d bytes, over the share's %.0f", keep, size, budget)
				}
			}
		})
	}
}

// TestSampleUniform checks that every timing is as likely to be kept, and
// that the kept ones stay in order.
func TestSampleUniform(t *testing.T) {
	const n, k, draws = 8, 2, 8000
	var count [n]int
	for range draws {
		ts := []int{0, 1, 2, 3, 4, 5, 6, 7}
		got := sampleOf(ts, k)
		if len(got) != k || !slices.IsSorted(got) {
			t.Fatalf("sampleOf: %v, want %d in order", got, k)
		}
		for _, i := range got {
			count[i]++
		}
	}
	// Each index is kept with probability k/n: 2000 of 8000, standard
	// deviation 39.
	for i, c := range count {
		if c < 1700 || c > 2300 {
			t.Errorf("index %d kept %d times of %d, want about %d", i, c, draws, draws*k/n)
		}
	}
	if got := sampleOf([]int{1, 2}, 5); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("sampleOf of more than there are: %v", got)
	}
}

// TestReportsWithinShare runs the sender at 100 kb/s (a transport with no
// drain rate, so that the target stays there) for six seconds and checks
// that its timing reports keep to reportShare of the target while still
// going out.
func TestReportsWithinShare(t *testing.T) {
	bubble(t, Config{Mode: "default", Start: 100 * rate.Kbps}, func(s *Sender, src *media.Source, f *fakeTransport) {
		start := time.Now()
		for time.Since(start) < 6*time.Second {
			f.invite <- transport.Invitation{}
			synctest.Wait()
			w := f.writes[len(f.writes)-1]
			now := time.Now()
			s.Sent(transport.SendRecord{ID: w.id, Bytes: 500, WriteStart: now, WriteEnd: now, LeftHost: now})
			time.Sleep(time.Second / 15)
		}
		_, ctrl := f.frames(t)
		var bytes, reports, timings int
		for _, c := range ctrl[1:] { // the first report, on connecting, is not held to the share
			if rep := reportIn(c); rep != nil {
				reports++
				timings += len(rep.Frames)
				bytes += reportBaseBytes + reportEntryBytes*len(rep.Frames)
			}
		}
		target := s.Status().Target
		if target <= 0 || target > 100*rate.Kbps {
			t.Errorf("target %v, want at most the start's 100 kb/s", target)
			return
		}
		budget := target.BytesPerSecond() * reportShare * time.Since(start).Seconds()
		if reports < 5 || float64(bytes) > budget {
			t.Errorf("%d reports with %d timings, %d bytes in %v; want at least 5 within %.0f bytes (1%% of %v)",
				reports, timings, bytes, time.Since(start), budget, target)
		}
	})
}
