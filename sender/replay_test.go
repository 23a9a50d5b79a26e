package sender

import (
	"bufio"
	"cmp"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"replenish/media"
	"replenish/rate"
)

// traceFrame is one line of a recorded trace (testdata/*.csv): the
// transport's state at a frame's invitation and the frame's encoding.
type traceFrame struct {
	at, capture  time.Duration // since the trace's start
	drain        rate.Bitrate
	windowBound  bool
	srtt, minRTT time.Duration
	encoded      int
	key          bool
	encode       time.Duration
	// appLimited and written are in traces written by `experiments
	// trace` from records that keep them; written is 0 where unknown.
	appLimited bool
	written    int
}

func readTrace(t *testing.T, name string) []traceFrame {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []traceFrame
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var v [11]int64
		fields := strings.Split(line, ",")
		if len(fields) != 9 && len(fields) != len(v) {
			t.Fatalf("%s: %q: want 9 or %d fields", name, line, len(v))
		}
		for i, s := range fields {
			if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
		}
		us := func(x int64) time.Duration { return time.Duration(x) * time.Microsecond }
		out = append(out, traceFrame{at: us(v[0]), drain: rate.Bitrate(v[1]), windowBound: v[2] != 0, srtt: us(v[3]), minRTT: us(v[4]),
			encoded: int(v[5]), key: v[6] != 0, encode: us(v[7]), capture: us(v[8]), appLimited: v[9] != 0, written: int(v[10])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// replay feeds c the trace's observations, each frame's encoding reported
// with the next one, and calls each(i, d) after each. Where the trace
// does not keep the bytes written, they are taken as the encoded size and
// 3% (RTP and framing at a few Mb/s).
func replay(c *Controller, tr []traceFrame, fps float64, each func(i int, d Decision)) {
	start := time.Unix(1000, 0)
	for i, fr := range tr {
		o := Observation{Now: start.Add(fr.at), DrainRate: fr.drain, WindowBound: fr.windowBound, AppLimited: fr.appLimited,
			RTT: fr.srtt, MinRTT: fr.minRTT}
		if i > 0 {
			p := tr[i-1]
			o.Encoded, o.Written, o.Keyframe, o.EncodeTime = p.encoded, cmp.Or(p.written, p.encoded*103/100), p.key, p.encode
			if sk := int(math.Round((fr.capture-p.capture).Seconds()*fps)) - 1; sk > 0 {
				o.Skipped, o.Late = sk, sk
			}
		}
		each(i, c.Update(o))
	}
}

// TestControllerRTTStepReplay replays real runs whose round trip stepped
// from 20 to 172 ms: the base must move up to the new round trip. In the
// first, the first shift came while the smoothed RTT still rose (the
// lowest of the second before it, 104 ms over the minimum against the 156
// that stayed), and the excess left over, about 20 ms once the self term
// grew, was below half the excess at the first cut after the shift, which
// the controller took for a queue draining: it cut every half second for
// the rest of the run (2 Mb/s down to 150 kb/s, utilization 0.55) and
// never moved the base again. An excess that no longer falls below the
// last cut's is not draining. Once the base has moved, the cuts it took
// (three, down to 265 kb/s) are known to have answered the round trip, not
// the rate: the capacity from before them must be back (it stayed at
// 265 kb/s, and the stream crept back at the probe's speed, under a sixth
// of the link for seconds). In the second, after four cuts (2 Mb/s down to
// 185 kb/s) the smoothed RTT fell by 3 ms a second, which would take 40 s
// to drain the 130 ms excess: taken for a queue draining, it held the base
// for 2 s more than the series needed (4.6 s after the step; utilization
// 0.68 over the run). In the third (BBR), the excess stood, slowly falling
// below the last cut's, for 2.1 s between two cuts, and a series then
// ended on time alone: the next cut began another, the base moved 5.9 s
// after the step, and the capacity it took back was the 416 kb/s the
// first series had left (utilization 0.61). A series ends on time only
// once the excess has been below the band's top since its last cut.
// In the fourth (CUBIC), three cuts within 1.1 s of the step took the
// capacity to 440 kb/s, and the excess stood at 136 to 155 ms while the
// stream sent 280 to 400 kb/s of the 1.86 Mb/s it had sent before them;
// the base waited for six feedback delays, which the cuts had lengthened
// to 0.45 s each, and a fourth cut took the capacity to 269 kb/s first:
// the base moved 2.8 s after the step (the first two runs: 2.9 and 2.8 s;
// utilization 0.82 over the run). A queue of the stream's own would have
// drained by half within 0.25 s of the third cut showing (see
// Controller.unanswered).
func TestControllerRTTStepReplay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		within time.Duration // the base moves this soon after the step
	}{
		{"testdata/rttstep.csv", 2 * time.Second},
		{"testdata/rttstep-slowfall.csv", 2 * time.Second},
		{"testdata/rttstep-bbr.csv", 4 * time.Second},
		{"testdata/rttstep-fourth.csv", 2 * time.Second},
	} {
		tr := readTrace(t, tc.name)
		c := NewController(media.Ladder, 2*rate.Mbps)
		var shiftAt time.Duration
		var capBefore, capShift rate.Bitrate
		replay(c, tr, 30, func(i int, d Decision) {
			if tr[i].at < 20*time.Second {
				capBefore = c.capacity
			}
			if shiftAt == 0 && c.shift > 140*time.Millisecond {
				shiftAt, capShift = tr[i].at, c.capacity
			}
		})
		t.Logf("%s: capacity %v before the step, %v once the base moved", tc.name, capBefore, capShift)
		if capShift < capBefore.Scale(0.9) {
			t.Errorf("%s: capacity %v once the base moved, %v before the step: the cuts on the round trip's rise were kept", tc.name, capShift, capBefore)
		}
		// The path's round trip rose from 20 to 172 ms. (Not the least
		// smoothed RTT over the minimum at the end of the run: where the
		// run ended at 2 Mb/s, a frame's own serialization, which the
		// excess's self term takes, held it 20 ms higher.)
		want := 152 * time.Millisecond
		t.Logf("%s: base shift %v at the end, first past 140 ms at %v", tc.name, c.shift, shiftAt)
		if c.shift < want*9/10 {
			t.Errorf("%s: base shift %v after the round trip rose %v for good", tc.name, c.shift, want)
		}
		if step := 20 * time.Second; shiftAt == 0 || shiftAt > step+tc.within {
			t.Errorf("%s: base moved at %v, %v after the step (want within %v)", tc.name, shiftAt, shiftAt-step, tc.within)
		}
	}
}

// TestControllerShiftRegainsRate replays the second run of
// TestControllerRTTStepReplay up to the frame at which the base moved, and
// then goes on with an encoder that fills its target on the path as it
// was (172 ms, 2 Mb/s, the drain rate following the stream's rate): the
// rate must climb back to what was sent before the cuts as a recovery does,
// not step by step behind the encoder (sentLead). The cuts had taken the
// stream to 286 kb/s and down a rung, which forgets the rate sent at the
// rung before; the run took 5 s to climb back.
func TestControllerShiftRegainsRate(t *testing.T) {
	tr := readTrace(t, "testdata/rttstep-slowfall.csv")
	moved := -1
	c := NewController(media.Ladder, 2*rate.Mbps)
	replay(c, tr, 30, func(i int, d Decision) {
		if moved < 0 && c.shift > 140*time.Millisecond {
			moved = i
		}
	})
	if moved < 0 {
		t.Fatal("the base never moved")
	}
	c = NewController(media.Ladder, 2*rate.Mbps)
	var before rate.Bitrate
	var last Decision
	replay(c, tr[:moved+1], 30, func(i int, d Decision) {
		if tr[i].at < 20*time.Second {
			before = d.Bitrate
		}
		last = d
	})
	f := newFeed(c)
	f.now, f.d = time.Unix(1000, 0).Add(tr[moved].at), last
	at := tr[moved] // the round trip when the base moved, without a queue
	t.Logf("target %v before the step, %v at %v when the base moved", before, last.Bitrate, last.Rung.Size)
	for f.now.Sub(time.Unix(1000, 0)) < tr[moved].at+2*time.Second {
		d := f.frame(Observation{DrainRate: min(2*rate.Mbps, c.Target().Scale(1.03)), AppLimited: true, RTT: at.srtt, MinRTT: at.minRTT})
		if d.Bitrate >= before.Scale(0.9) {
			t.Logf("back at %v, %v after the base moved", d.Bitrate, f.now.Sub(time.Unix(1000, 0).Add(at.at)))
			return
		}
	}
	t.Errorf("2 s after the base moved: target %v at %v, want back at 90%% of %v", f.d.Bitrate, f.d.Rung.Size, before)
}

// largestShift replays the trace in name through a controller started at
// start (fps frames a second) and returns the largest base shift it took,
// and when.
func largestShift(t *testing.T, name string, start rate.Bitrate, fps float64) (most, at time.Duration) {
	t.Helper()
	tr := readTrace(t, name)
	c := NewController(media.Ladder, start)
	replay(c, tr, fps, func(i int, d Decision) {
		if c.shift > most {
			most, at = c.shift, tr[i].at
		}
	})
	t.Logf("%s: largest base shift %v at %v", name, most, at)
	return most, at
}

// TestControllerHalvingReplay replays real runs whose link halved from 2
// to 1 Mb/s while the cuts after a probe were under way. The first cuts
// aimed at the drain rate's windowed maximum, which still remembered
// 2 Mb/s; the queue rose to 300 to 380 ms over the minimum, and as it fell
// (the transport had stopped for half a second on its window) the
// controller, two seconds after the probe's first cut and with the excess
// not halved, took the falling queue for a raised round trip and put the
// base 135 and 182 ms above the minimum, so that the next queue read as
// short.
// An excess that rises or falls is not standing, and over the transport's
// stall (no samples for 0.7 s in the BBR run) the trend must still show
// the fall: the base must stay. In a third (BBR) run the series had begun
// with a probe's cut of 13 ms before the halving, the cuts after it aimed
// at the remembered 2 Mb/s, and 1.9 s after the step, the drain rate just
// measured at 965 kb/s and the excess down from 184 to 60 ms but flat,
// the base moved 70 ms; a quarter second later the rate sent was 1.29
// Mb/s against a drain rate of 942 kb/s. In a fourth (BBR) the series
// began with three cuts on a probe's queue (13 to 23 ms) before the step,
// aimed at the drain rate's 2 Mb/s; BBR then held its window for 0.76 s
// with no invitation, and at the first frame after it the excess, 130 ms
// and six times the last cut's, read as standing over the gap: the base
// moved 82 ms, and the queue rose to 300 ms over the minimum.
// In a fifth (BBR), the queue fell from 165 to 100 ms within half a second
// of the last cut and then stood a moment: with any fall short of draining
// the excess within shiftFall taken as standing, the base moved 120 ms and
// the capacity came back to 2 Mb/s on the halved path (a 200 ms queue
// followed). An excess a fifth below the last cut's is draining.
func TestControllerHalvingReplay(t *testing.T) {
	for _, name := range []string{"testdata/halving.csv", "testdata/halving-bbr.csv", "testdata/halving-bbr-late.csv", "testdata/halving-bbr-stall.csv", "testdata/halving-bbr-fall.csv"} {
		most, at := largestShift(t, name, 2*rate.Mbps, 30)
		if most > 50*time.Millisecond {
			t.Errorf("%s: base moved %v at %v on the halving's queue", name, most, at)
		}
	}
}

// TestControllerLowRateNoShiftReplay replays real runs at 100 kb/s on
// paths whose round trip never changed (TCP, and QUIC with the bytes
// written and the drain rate's application-limited flag recorded): the
// base must stay. A series of
// cuts was counted until the next cut, so a new queue seconds after an
// earlier series had drained met the shift's conditions at once (two
// cuts, two seconds and six feedback delays since the first): the base
// moved 68 ms here, and in 44 of 71 such runs 40 to 68 ms, so that
// 40 ms of queue then read as none. A series ends when the queue drains.
func TestControllerLowRateNoShiftReplay(t *testing.T) {
	for _, name := range []string{"testdata/lowrate.csv", "testdata/lowrate-quic.csv"} {
		most, at := largestShift(t, name, 100*rate.Kbps, 15)
		if most > 20*time.Millisecond {
			t.Errorf("%s: base moved %v at %v on a path whose round trip stayed", name, most, at)
		}
	}
}

// TestControllerRungProbeReplay replays a real QUIC run whose path rose
// from 0.79 to 1.8 Mb/s (and from 104 to 172 ms) at 21 s while the stream
// sent 320x180 at its Max. The probe that found the faster path climbed
// past the Max with the frames held at it; at 26 s the stream moved up to
// 640x360, whose encoder wrote under its target for half a second after
// the keyframe. QUIC's drain rate was not application-limited (the frames
// waited for the pacer), so the probe was taken for one the transport
// could not carry: it ended, the capacity fell to what the encoder had
// written (0.84 Mb/s), and the stream cruised there for another second
// before probing again; it was not back at 90% of the path 8 s after the
// step. The encoder, not the transport, held the stream: once the base
// has moved to the new round trip (the trace shows no queue after 23 s),
// the rate must not fall back.
//
// The replayed frames are the run's own, written at 320x180 until 26 s, so
// the controller gets the ladder up to 320x180. With the whole ladder it
// moved up to 640x360 early in the replay, whose Max no longer bounds what
// counts as asked of the encoder (see sendLimited), and its probe met frames
// still written at 320x180's Max, which a replay cannot let follow its
// rate. A controller that read the faster path sooner (the self term
// keeping the round trips from before the step: see self) had its probe
// ended so at 25 s of the replay, while in two real runs of this path it
// filled the faster path 4.2 and 5.7 s after the step, against 6.5 s in
// both for the controller before it.
func TestControllerRungProbeReplay(t *testing.T) {
	tr := readTrace(t, "testdata/rise-rung-quic.csv")
	c := NewController(media.Ladder[:2], 570*rate.Kbps)
	var peak, fell rate.Bitrate
	var fellAt time.Duration
	replay(c, tr, 15, func(i int, d Decision) {
		if tr[i].at < 23*time.Second {
			return
		}
		peak = max(peak, c.rate)
		if c.rate < peak.Scale(0.95) && fell == 0 {
			fell, fellAt = c.rate, tr[i].at
		}
	})
	t.Logf("rate %v at the end, its peak since 23 s %v", c.rate, peak)
	if peak < 950*rate.Kbps {
		t.Fatalf("the probe never passed 320x180's Max: peak %v", peak)
	}
	if fell > 0 {
		t.Errorf("the rate fell to %v at %v from its peak %v with no queue: the probe was ended on the encoder's shortfall", fell, fellAt, peak)
	}
}
