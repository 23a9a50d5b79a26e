package drain

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"replenish/rate"
)

// link generates the samples a transport would read from a sender on a
// path: every step, delivered bytes advance at the path's rate in whole
// acknowledgements of ackBytes, as they do on a real link.
type link struct {
	t         time.Time
	delivered float64 // bytes, exact
	acked     uint64  // bytes, in whole acknowledgements
	acks      uint64
	ackBytes  int
	s         Sample // the template: SRTT, MinRTT, Cwnd, ...
}

func newLink() *link {
	return &link{t: time.Unix(1000, 0), ackBytes: 2896, s: Sample{
		SRTT: 40 * time.Millisecond, MinRTT: 20 * time.Millisecond, Cwnd: 1 << 30, PeerWindow: 1 << 30, InFlight: 1 << 30,
	}}
}

// run advances the link by d in steps of step at rate r (bytes delivered),
// with each sample adjusted by f, and feeds the samples to e. It returns the
// last estimate; peak is the highest Measured over the run.
func (l *link) run(e *Estimator, d, step time.Duration, r rate.Bitrate, f func(*Sample)) Estimate {
	est, _ := l.runPeak(e, d, step, r, f)
	return est
}

func (l *link) runPeak(e *Estimator, d, step time.Duration, r rate.Bitrate, f func(*Sample)) (est Estimate, peak rate.Bitrate) {
	for end := l.t.Add(d); l.t.Before(end); {
		l.t = l.t.Add(step)
		l.delivered += r.BytesPerSecond() * step.Seconds()
		for float64(l.acked)+float64(l.ackBytes) <= l.delivered {
			l.acked += uint64(l.ackBytes)
			l.acks++
		}
		s := l.s
		s.At, s.Delivered, s.Acks = l.t, l.acked, l.acks
		if f != nil {
			f(&s)
		}
		est = e.Add(s)
		peak = max(peak, est.Measured)
	}
	return est, peak
}

func near(a, b rate.Bitrate, tol float64) bool {
	return float64(a) >= float64(b)*(1-tol) && float64(a) <= float64(b)*(1+tol)
}

func backlogged(s *Sample) { s.Backlogged = true }

// appLimited makes the sender keep little in flight and no backlog.
func appLimited(s *Sample) { s.Backlogged = false; s.InFlight = 100 }

func TestEstimatorTracksThePath(t *testing.T) {
	for _, r := range []rate.Bitrate{100 * rate.Kbps, 2 * rate.Mbps, 20 * rate.Mbps, 1 * rate.Gbps} {
		e := New(Config{})
		l := newLink()
		est := l.run(e, 20*time.Second, 7*time.Millisecond, r, backlogged)
		if !near(est.Rate, r, 0.05) || est.AppLimited || est.Source != SourceMeasured {
			t.Errorf("%v: estimate %+v", r, est)
		}
	}
}

func TestEstimatorBeforeAnyWindow(t *testing.T) {
	e := New(Config{})
	if est := e.Add(Sample{At: time.Unix(1, 0)}); est.Known() || est.Rate != 0 {
		t.Errorf("nothing known: %+v", est)
	}
	// 100 × 1448 bytes per 100 ms, with a peer window of 72400: the
	// smaller, 724 kB/s.
	est := e.Add(Sample{At: time.Unix(2, 0), Cwnd: 144800, PeerWindow: 72400, SRTT: 100 * time.Millisecond})
	if est.Source != SourceWindow || est.Rate != rate.FromBytesPerSecond(724000) || est.Bound != est.Rate {
		t.Errorf("bootstrap: %+v", est)
	}
	// A closed peer window is a known zero.
	est = e.Add(Sample{At: time.Unix(3, 0), Cwnd: 144800, PeerWindow: 0, SRTT: 100 * time.Millisecond})
	if !est.Known() || est.Rate != 0 {
		t.Errorf("closed window: %+v", est)
	}
	// A pacing rate bounds the bootstrap too.
	est = e.Add(Sample{At: time.Unix(4, 0), Cwnd: 144800, PeerWindow: -1, SRTT: 100 * time.Millisecond, PacingRate: rate.Mbps})
	if est.Source != SourceWindow || est.Rate != rate.Mbps {
		t.Errorf("paced bootstrap: %+v", est)
	}
}

func TestEstimatorMinAcks(t *testing.T) {
	// At 100 kb/s with a 2896-byte acknowledgement, 16 take 3.7 s: no
	// window closes before, however many round trips pass, unless it is
	// path-limited (see TestEstimatorEarlyWindow).
	e := New(Config{})
	l := newLink()
	if est := l.run(e, 3*time.Second, 7*time.Millisecond, 100*rate.Kbps, appLimited); est.Source != SourceWindow {
		t.Errorf("a window closed with fewer than 16 acknowledgements: %+v", est)
	}
	if est := l.run(e, time.Second, 7*time.Millisecond, 100*rate.Kbps, appLimited); est.Source != SourceMeasured {
		t.Errorf("no window after 16 acknowledgements: %+v", est)
	}
}

// TestEstimatorEarlyWindow: a sender that started far above a 100 kb/s
// path keeps the bottleneck busy from its first round trips. Before the
// first window of MinAcks (3.7 s here), a path-limited window of
// earlyAcks gives the path's rate within about a second; the first one,
// begun while nothing was in flight, is not path-limited and begins again.
func TestEstimatorEarlyWindow(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.s.SRTT, l.s.MinRTT = 400*time.Millisecond, 172*time.Millisecond
	idle := func(s *Sample) { s.InFlight = 0 }
	l.run(e, 100*time.Millisecond, 7*time.Millisecond, 100*rate.Kbps, idle)
	queue := func(s *Sample) { s.InFlight = 24000 } // 1.9 s of the path
	est := l.run(e, 1500*time.Millisecond, 7*time.Millisecond, 100*rate.Kbps, queue)
	if est.Source != SourceMeasured || est.AppLimited || !near(est.Rate, 100*rate.Kbps, 0.1) {
		t.Fatalf("1.5 s into a queue of 1.9 s at 100 kb/s: estimate %+v, want the path's rate, path-limited", est)
	}
	if est = l.run(e, 3*time.Second, 7*time.Millisecond, 100*rate.Kbps, queue); est.AppLimited || !near(est.Rate, 100*rate.Kbps, 0.05) {
		t.Errorf("until the first window of 16: estimate %+v, want the early window's", est)
	}
}

// TestEstimatorLossRecovery: acknowledgements stall while a hole is
// repaired and then jump by everything selectively acknowledged meanwhile.
// A window that ended at the jump and started in the stall would measure
// far more than the path. Windows never end or start while recovering;
// and since a window starts at the acknowledgement that last raised the
// count, one that starts in an unflagged stall starts where the stall
// began, and holds it. Without that anchoring (windows between readings)
// the unflagged case measured 5.15 Mb/s on this 2 Mb/s path.
func TestEstimatorLossRecovery(t *testing.T) {
	const r = 2 * rate.Mbps
	for _, tc := range []struct {
		name      string
		flagged   bool
		overshoot bool
	}{
		{"recovery flagged", true, false},
		{"recovery not flagged", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{})
			l := newLink()
			l.run(e, 5*time.Second, 7*time.Millisecond, r, backlogged)
			var peak rate.Bitrate
			for range 5 {
				// 300 ms of recovery: the counter holds, then catches up.
				stall := l.acked
				_, p1 := l.runPeak(e, 300*time.Millisecond, 7*time.Millisecond, r, func(s *Sample) {
					s.Backlogged, s.Recovering = true, tc.flagged
					s.Delivered = stall
				})
				_, p2 := l.runPeak(e, 2*time.Second, 7*time.Millisecond, r, backlogged)
				peak = max(peak, p1, p2)
			}
			// One window's ends round to whole acknowledgements and
			// readings: up to about 1/16 each way.
			if over := !near(peak, r, 0.08); over != tc.overshoot {
				t.Errorf("highest measured %v on a %v path; overshoot %v, want %v", peak, r, over, tc.overshoot)
			}
		})
	}
}

// TestEstimatorAppLimited: application-limited windows only raise the
// estimate, and the newest path-limited window is held while the sender
// stays application-limited, as aged once it is older than the horizon.
func TestEstimatorAppLimited(t *testing.T) {
	e := New(Config{})
	l := newLink()
	est := l.run(e, 10*time.Second, 7*time.Millisecond, 2*rate.Mbps, backlogged)
	if !near(est.Rate, 2*rate.Mbps, 0.05) || est.AppLimited || est.Aged {
		t.Fatalf("path-limited: %+v", est)
	}
	// The sender falls to 500 kb/s for many round trips: the estimate
	// keeps the path's rate and says it is application-limited and aged.
	est = l.run(e, 10*time.Second, 7*time.Millisecond, 500*rate.Kbps, appLimited)
	if !near(est.Rate, 2*rate.Mbps, 0.05) || !est.AppLimited || !est.Aged {
		t.Errorf("application-limited below the path: %+v", est)
	}
	// An application-limited window above the estimate raises it, and is
	// no aged window.
	est = l.run(e, 2*time.Second, 7*time.Millisecond, 3*rate.Mbps, appLimited)
	if !near(est.Rate, 3*rate.Mbps, 0.05) || !est.AppLimited || est.Aged {
		t.Errorf("application-limited above the path: %+v", est)
	}
}

// TestEstimatorQueueInTheNetwork: a sender with no socket backlog whose
// congestion control keeps a queue at the bottleneck (more in flight than
// the path holds) is path-limited, and its windows lower the estimate.
func TestEstimatorQueueInTheNetwork(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.run(e, 10*time.Second, 7*time.Millisecond, 2*rate.Mbps, backlogged)
	// 1 Mb/s is 125 kB/s: 20 ms of minimum RTT plus 7 ms between readings
	// is 3375 bytes of path, so 10000 in flight is a standing queue.
	queued := func(s *Sample) { s.Backlogged = false; s.InFlight = 10000 }
	est := l.run(e, 10*time.Second, 7*time.Millisecond, 1*rate.Mbps, queued)
	if !near(est.Rate, 1*rate.Mbps, 0.05) || est.AppLimited {
		t.Errorf("queue in the network: %+v", est)
	}
	// At 500 kb/s, 27 ms is 1687 bytes: with 1000 in flight the
	// bottleneck could run dry between readings, so the windows are
	// application-limited and the estimate stays.
	short := func(s *Sample) { s.Backlogged = false; s.InFlight = 1000 }
	est = l.run(e, 10*time.Second, 7*time.Millisecond, 500*rate.Kbps, short)
	if !near(est.Rate, 1*rate.Mbps, 0.05) || !est.AppLimited {
		t.Errorf("short of a queue: %+v", est)
	}
}

// TestEstimatorSlack checks the bytes in flight that are not a queue. A
// sender of a segment a frame, 30 a second, at 180 kb/s on a 300 kb/s
// path with a 175 ms minimum round trip: a frame stays in flight for the
// round trip, its serialization and a little more, 4.8 kB, more than
// 180 kb/s times the round trip and the frame interval. The bottleneck
// idles two fifths of the time: with the slack allowed for, the windows
// are application-limited and the estimate keeps the path's rate. A queue
// in the network stays one: 10 kB at 180 kb/s is 444 ms of it. At 1 Mb/s
// with a 20 ms round trip and readings 7 ms apart, the slack is a
// segment, not the 5 kB the rate makes of 40 ms: 6 kB in flight is a
// queue, and 4 kB, under 1 Mb/s times 27 ms and a segment, is not.
func TestEstimatorSlack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     rate.Bitrate
		minRTT   time.Duration
		step     time.Duration
		sent     rate.Bitrate
		inFlight int
		want     rate.Bitrate
		app      bool
	}{
		{"segment a frame", 300 * rate.Kbps, 175 * time.Millisecond, time.Second / 30, 180 * rate.Kbps, 4800, 300 * rate.Kbps, true},
		{"queue in the network", 300 * rate.Kbps, 175 * time.Millisecond, time.Second / 30, 180 * rate.Kbps, 10000, 180 * rate.Kbps, false},
		{"past a segment's slack", 2 * rate.Mbps, 20 * time.Millisecond, 7 * time.Millisecond, 1 * rate.Mbps, 6000, 1 * rate.Mbps, false},
		{"within a segment's slack", 2 * rate.Mbps, 20 * time.Millisecond, 7 * time.Millisecond, 1 * rate.Mbps, 4000, 2 * rate.Mbps, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{})
			l := newLink()
			l.ackBytes = 750
			l.s.MinRTT, l.s.SRTT, l.s.SlackTime, l.s.SlackMax = tc.minRTT, tc.minRTT*6/5, 40*time.Millisecond, 1448
			l.run(e, 10*time.Second, tc.step, tc.path, backlogged)
			est := l.run(e, 10*time.Second, tc.step, tc.sent, func(s *Sample) { s.Backlogged = false; s.InFlight = tc.inFlight })
			if !near(est.Rate, tc.want, 0.05) || est.AppLimited != tc.app {
				t.Errorf("%d bytes in flight at %v: %+v, want %v, application-limited %v", tc.inFlight, tc.sent, est, tc.want, tc.app)
			}
		})
	}
}

// TestEstimatorRateDrop: after the path's rate halves, the old windows age
// out within Rounds round trips and the estimate follows.
func TestEstimatorRateDrop(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.run(e, 10*time.Second, 7*time.Millisecond, 4*rate.Mbps, backlogged)
	if est := e.Estimate(); !near(est.Newest, 4*rate.Mbps, 0.07) || est.NewestAt.Before(l.t.Add(-5*l.s.SRTT)) {
		t.Errorf("before the drop, at %v: %+v, want the newest window at 4 Mb/s", l.t, est)
	}
	// Less than Rounds round trips after the drop, the maximum still holds
	// the old rate (the windows before the drop, the one across it); well
	// after, the new one. The newest path-limited window has the slower
	// path already.
	if est := l.run(e, 7*l.s.SRTT, 7*time.Millisecond, 2*rate.Mbps, backlogged); est.Rate < 3500*rate.Kbps ||
		!near(est.Newest, 2*rate.Mbps, 0.07) {
		t.Errorf("soon after the drop, at %v: %+v, want the rate above 3.5 Mb/s and the newest window at 2", l.t, est)
	}
	if est := l.run(e, 20*l.s.SRTT, 7*time.Millisecond, 2*rate.Mbps, backlogged); !near(est.Rate, 2*rate.Mbps, 0.05) ||
		!near(est.Newest, 2*rate.Mbps, 0.07) || est.NewestAt.Before(l.t.Add(-5*l.s.SRTT)) {
		t.Errorf("long after the drop, at %v: %+v", l.t, est)
	}
}

func TestEstimatorBounds(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.run(e, 10*time.Second, 7*time.Millisecond, 8*rate.Mbps, backlogged)
	// cwnd 40000 bytes per 40 ms is 1 MB/s: below the measured 8 Mb/s...
	est := l.run(e, 100*time.Millisecond, 7*time.Millisecond, 8*rate.Mbps, func(s *Sample) { s.Backlogged = true; s.Cwnd = 40000 })
	if est.Source != SourceWindowCapped || est.Rate != 8*rate.Mbps || !near(est.Measured, 8*rate.Mbps, 0.05) {
		t.Errorf("at the window bound: %+v", est)
	}
	est = l.run(e, 100*time.Millisecond, 7*time.Millisecond, 8*rate.Mbps, func(s *Sample) { s.Backlogged = true; s.Cwnd = 20000 })
	if est.Source != SourceWindowCapped || est.Rate != 4*rate.Mbps {
		t.Errorf("below the window bound: %+v", est)
	}
	// The pacing bound is the highest pacing rate of the last Rounds
	// round trips: a dip in the pacer's gain cycle does not lower it.
	pace := func(p rate.Bitrate) func(*Sample) { return func(s *Sample) { s.Backlogged = true; s.PacingRate = p } }
	l.run(e, 100*time.Millisecond, 7*time.Millisecond, 8*rate.Mbps, pace(6*rate.Mbps))
	est = l.run(e, 40*time.Millisecond, 7*time.Millisecond, 8*rate.Mbps, pace(4*rate.Mbps))
	if est.Source != SourcePacingCapped || est.Rate != 6*rate.Mbps {
		t.Errorf("pacing bound: %+v", est)
	}
	est = l.run(e, 30*l.s.SRTT, 7*time.Millisecond, 8*rate.Mbps, pace(4*rate.Mbps))
	if est.Source != SourcePacingCapped || est.Rate != 4*rate.Mbps {
		t.Errorf("pacing bound after its window: %+v", est)
	}
}

func TestEstimatorResets(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.run(e, 10*time.Second, 7*time.Millisecond, 8*rate.Mbps, backlogged)
	// Counters that go backwards are a new connection: nothing measured.
	est := e.Add(Sample{At: l.t.Add(time.Millisecond), Delivered: 5, Acks: 1, SRTT: 40 * time.Millisecond, Cwnd: 14480})
	if est.Source != SourceWindow || est.Measured != 0 {
		t.Errorf("after counters went backwards: %+v", est)
	}
	// So is a sample from the past.
	est = e.Add(Sample{At: l.t.Add(-time.Hour), Delivered: 5, Acks: 1})
	if est.Known() {
		t.Errorf("after time went backwards: %+v", est)
	}
}

// TestEstimatorBounded: a long run of ever-lower windows keeps at most
// maxEntries of them.
func TestEstimatorBounded(t *testing.T) {
	e := New(Config{Rounds: 1 << 20, MinAcks: 1})
	l := newLink()
	r := 100 * rate.Mbps
	for range 4 * maxEntries {
		l.run(e, 100*time.Millisecond, 50*time.Millisecond, r, backlogged)
		r = r.Scale(0.99)
	}
	if len(e.live) > maxEntries || len(e.pacing) > maxEntries {
		t.Errorf("%d windows, %d pacing readings kept; bound %d", len(e.live), len(e.pacing), maxEntries)
	}
}

func TestSourceWindowBound(t *testing.T) {
	for s := SourceNone; s <= SourceStack; s++ {
		want := s == SourceWindow || s == SourceWindowCapped
		if got := s.WindowBound(); got != want {
			t.Errorf("%v.WindowBound() = %v, want %v", s, got, want)
		}
	}
}

func TestSourceText(t *testing.T) {
	for s, want := range map[Source]string{SourceNone: "none", SourceWindow: "window", SourceMeasured: "measured",
		SourceWindowCapped: "window-capped", SourcePacingCapped: "pacing-capped", SourceStack: "stack", Source(42): "Source(42)"} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", int(s), got, want)
		}
		b, _ := s.MarshalText()
		var back Source
		err := back.UnmarshalText(b)
		if s <= SourceStack && (err != nil || back != s) {
			t.Errorf("%v: round trip %v, %v", s, back, err)
		}
		if s > SourceStack && !errors.Is(err, ErrSource) {
			t.Errorf("%q read back as %v, %v", b, back, err)
		}
	}
}

// TestEstimatorRateDropUnderQueue: a round trip inflated by the
// bottleneck's own queue does not stretch the maximum's memory. After a
// halving the queue grows, and the old rate must age out within Rounds
// round trips of twice the minimum, not of the smoothed RTT the queue
// inflated (4 s at 400 ms, while the cuts that followed aimed at it).
func TestEstimatorRateDropUnderQueue(t *testing.T) {
	e := New(Config{})
	l := newLink()
	l.s.SRTT, l.s.MinRTT = 400*time.Millisecond, 40*time.Millisecond
	l.run(e, 10*time.Second, 7*time.Millisecond, 4*rate.Mbps, backlogged)
	horizon := time.Duration(DefaultRounds) * 2 * l.s.MinRTT
	if est := l.run(e, horizon/2, 7*time.Millisecond, 2*rate.Mbps, backlogged); !near(est.Rate, 4*rate.Mbps, 0.05) {
		t.Errorf("soon after the drop: %+v", est)
	}
	if est := l.run(e, horizon, 7*time.Millisecond, 2*rate.Mbps, backlogged); !near(est.Rate, 2*rate.Mbps, 0.05) {
		t.Errorf("%v after the drop, with the smoothed RTT at %v: %+v, want 2 Mb/s", horizon*3/2, l.s.SRTT, est)
	}
}

// TestEstimatorAckAnchored: a stream of one packet a frame, at 15 frames a
// second, acknowledged a frame at a time, read at each frame's invitation.
// The readings jitter against the acknowledgements, so that a window
// between readings holds one acknowledgement more or less than its span
// carried, and the windowed maximum keeps the highest; a window between
// acknowledgements holds exactly the bytes of its span.
func TestEstimatorAckAnchored(t *testing.T) {
	const (
		frame    = 750 // bytes a frame, one packet
		interval = time.Second / 15
	)
	stream := rate.FromBytesPerSecond(frame / interval.Seconds())
	for _, tc := range []struct {
		name    string
		anchor  bool
		maxOver float64
	}{
		{"acknowledgement times", true, 0.01},
		{"readings only", false, 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			e := New(Config{})
			t0 := time.Unix(1000, 0)
			var peak rate.Bitrate
			var delivered, acks uint64
			var ackedAt time.Time
			for k := 1; k <= 900; k++ {
				frameAt := t0.Add(time.Duration(k) * interval)
				// The frame written a round trip ago is acknowledged
				// 5 to 15 ms after this one's time; the reading
				// comes at the invitation, 0 to 30 ms after it.
				ack := frameAt.Add(5*time.Millisecond + time.Duration(rng.Int64N(int64(10*time.Millisecond))))
				read := frameAt.Add(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
				if !ack.After(read) {
					delivered, acks, ackedAt = delivered+frame, acks+1, ack
				}
				s := Sample{At: read, Delivered: delivered, Acks: acks, InFlight: frame, SRTT: 200 * time.Millisecond,
					MinRTT: 180 * time.Millisecond, Cwnd: 1 << 20, PeerWindow: -1}
				if tc.anchor {
					s.AckedAt = ackedAt
				}
				if ack.After(read) {
					delivered, acks, ackedAt = delivered+frame, acks+1, ack
				}
				if k > 100 {
					peak = max(peak, e.Add(s).Measured)
				} else {
					e.Add(s)
				}
			}
			over := float64(peak)/float64(stream) - 1
			if tc.anchor && over > tc.maxOver {
				t.Errorf("highest window %v for a %v stream: %.1f%% over, want at most %.0f%%", peak, stream, over*100, tc.maxOver*100)
			}
			if !tc.anchor && over < tc.maxOver {
				t.Errorf("highest window %v for a %v stream: %.1f%% over; between readings it should exceed %.0f%% (does the test jitter?)", peak, stream, over*100, tc.maxOver*100)
			}
			t.Logf("%s: highest window %.1f%% over the stream", tc.name, over*100)
		})
	}
}

// TestEstimatorLastingRecovery: random loss at hundreds of packets a round
// trip keeps the sender recovering all along, each hole holding the
// delivered count for a round trip. The estimate still follows the path,
// from a start within the recovery and across a rise of its rate.
func TestEstimatorLastingRecovery(t *testing.T) {
	e := New(Config{})
	l := newLink()
	rng := rand.New(rand.NewPCG(1, 2))
	var held uint64
	var holdUntil time.Time
	recovering := func(s *Sample) {
		s.Backlogged, s.Recovering = true, true
		switch {
		case s.At.Before(holdUntil):
			s.Delivered = held // a hole holds the cumulative count
		case rng.IntN(10) == 0:
			held, holdUntil = s.Delivered, s.At.Add(l.s.SRTT)
		}
	}
	for _, r := range []rate.Bitrate{2 * rate.Mbps, 8 * rate.Mbps} {
		est := l.run(e, 5*time.Second, 7*time.Millisecond, r, recovering)
		if est.Source != SourceMeasured || !near(est.Measured, r, 0.15) {
			t.Errorf("after 5 s at %v, recovering all along: estimate %v (%v), measured %v; want about %v", r, est.Rate, est.Source, est.Measured, r)
		}
	}
}
