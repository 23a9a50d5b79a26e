package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"replenish/experiments/scenario"
	"replenish/rate"
)

func draw(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	if code := drawMain(context.Background(), args, &out, &errs); code != 0 {
		t.Fatalf("draw %v: exit %d, %s", args, code, errs.String())
	}
	return out.String()
}

// TestDraw checks that a draw is a matrix the run command reads, the same
// for the same seed, and spread as its doc says.
func TestDraw(t *testing.T) {
	const n = 600
	a := draw(t, "--seed", "7", "--n", "600")
	if b := draw(t, "--seed", "7", "--n", "600"); a != b {
		t.Error("two draws with seed 7 differ")
	}
	if c := draw(t, "--seed", "8", "--n", "600"); a == c {
		t.Error("seeds 7 and 8 drew the same paths")
	}
	all, skipped, err := scenario.ParseMatrix(strings.NewReader(a), scenario.Defaults())
	if err != nil || len(skipped) != 0 {
		t.Fatalf("the draw as a matrix: skipped %v, %v", skipped, err)
	}
	// Each path runs replenish; those with random loss default too.
	var runs []scenario.Run
	defaults := 0
	for _, r := range all {
		switch r.Mode.String() {
		case "replenish=15ms":
			runs = append(runs, r)
		case "default":
			defaults++
			if r.Path.Loss == 0 {
				t.Errorf("%s: default on a path without loss", r.ID())
			}
		default:
			t.Errorf("%s: mode %v", r.ID(), r.Mode)
		}
	}
	if len(runs) != n {
		t.Fatalf("%d replenish runs, want %d", len(runs), n)
	}
	var quic, lossy, steps, fast, jittery, walks int
	for _, r := range runs {
		p := r.Path
		if p.Rate < 150*rate.Kbps || p.Rate > 40*rate.Mbps || p.RTT.Milliseconds() < 6 || p.RTT.Milliseconds() > 230 {
			t.Errorf("%s: rate %v, RTT %v outside the draw's ranges", r.ID(), p.Rate, p.RTT)
		}
		if p.Jitter > 0 {
			jittery++
			if p.Jitter < 2*time.Millisecond || p.Jitter > 30*time.Millisecond {
				t.Errorf("%s: jitter %v outside 2 to 30 ms", r.ID(), p.Jitter)
			}
		}
		if len(p.Schedule) > 1 {
			walks++
			checkWalk(t, r)
		}
		if r.Transport == scenario.QUIC {
			quic++
		}
		if p.Loss > 0 {
			lossy++
		}
		if len(p.Schedule) > 0 {
			steps++
		}
		if p.Rate >= 4*rate.Mbps {
			fast++
		}
	}
	// Shares within about four standard deviations of 600 draws.
	for _, c := range []struct {
		name      string
		got       int
		want, tol float64
	}{
		{"over QUIC", quic, 1.0 / 3, 0.08},
		{"with random loss", lossy, 0.25, 0.08},
		{"with a step", steps, 0.2 + 1.0/6 + 0.2*(1-0.2-1.0/6), 0.08},
		{"with jitter", jittery, 0.2, 0.08},
		{"wandering", walks, 0.2, 0.08},
		{"at 4 Mb/s or more (log-uniform: 0.44)", fast, 0.44, 0.08},
	} {
		if share := float64(c.got) / n; share < c.want-c.tol || share > c.want+c.tol {
			t.Errorf("%.2f of the paths %s, want %.2f", share, c.name, c.want)
		}
	}

	if defaults != lossy {
		t.Errorf("%d default runs for %d paths with loss", defaults, lossy)
	}

	_, body, _ := strings.Cut(draw(t, "--seed", "1", "--loss", "0"), "\n") // after the header
	if lines := strings.Count(body, "--loss"); lines != 0 {
		t.Errorf("--loss 0: %d lines with loss", lines)
	}
	var errs bytes.Buffer
	for _, args := range [][]string{{"--n", "0"}, {"--loss", "2"}, {"--jitter", "-0.1"}, {"--walk", "1.5"}, {"--modes", "a b"}, {"extra"}} {
		if code := drawMain(context.Background(), args, &bytes.Buffer{}, &errs); code != 2 {
			t.Errorf("draw %v: exit %d, want 2", args, code)
		}
	}
}

// checkWalk checks a wandering path's schedule: steps walkGapMin to
// walkGapMax apart, the first 5 to 7 s into the window and the last
// walkGapMin before its end, each moving the rate by walkFactorMin to
// walkFactor within the draw's rates.
func checkWalk(t *testing.T, r scenario.Run) {
	t.Helper()
	p := r.Path
	if r.Duration != walkDuration*time.Second {
		t.Errorf("%s: a wandering path measures %v, want %ds", r.ID(), r.Duration, walkDuration)
	}
	if first := p.Schedule[0].At - r.Warmup; first < 5*time.Second || first > 7*time.Second {
		t.Errorf("%s: first step %v into the window", r.ID(), first)
	}
	if left := r.Warmup + r.Duration - p.Schedule[len(p.Schedule)-1].At; left < walkGapMin*time.Second {
		t.Errorf("%s: %v left after the last step", r.ID(), left)
	}
	prev := p.Rate
	for i, st := range p.Schedule {
		if i > 0 {
			if gap := st.At - p.Schedule[i-1].At; gap < walkGapMin*time.Second || gap > walkGapMax*time.Second {
				t.Errorf("%s: steps %v apart", r.ID(), gap)
			}
		}
		f := float64(st.Rate) / float64(prev)
		// A rounded rate (10 kb/s steps) may move a little past the bounds.
		if f = max(f, 1/f); f < walkFactorMin*0.97 || f > walkFactor*1.03 || st.Rate < 150*rate.Kbps || st.Rate > 80*rate.Mbps {
			t.Errorf("%s: a step from %v to %v", r.ID(), prev, st.Rate)
		}
		prev = st.Rate
	}
}

// TestDrawKeepsOldSeeds checks that with neither jitter nor a wandering
// rate a seed draws the paths it drew before those existed (the first
// paths of the seed of the notebook's draw at 957facd).
func TestDrawKeepsOldSeeds(t *testing.T) {
	_, body, _ := strings.Cut(draw(t, "--seed", "20261227", "--n", "4", "--jitter", "0", "--walk", "0"), "\n")
	want := `--workload video --rate 940kbit --rtt 55ms --queue 80ms --transport quic --warmup 5s --duration 30s --modes replenish=15ms,default --loss 0.002
--workload video --rate 21600kbit --rtt 130ms --queue 200ms --cc cubic --warmup 5s --duration 30s --modes replenish=15ms --fps 24 --schedule 20s=43200kbit
--workload video --rate 250kbit --rtt 114ms --queue 200ms --transport quic --warmup 10s --duration 30s --modes replenish=15ms --schedule 20s=500kbit
--workload video --rate 1500kbit --rtt 219ms --queue 150ms --cc bbr --warmup 5s --duration 30s --modes replenish=15ms --fps 60 --schedule 20s=3000kbit
`
	if body != want {
		t.Errorf("seed 20261227 without jitter and walk:\n%s\nwant\n%s", body, want)
	}
}

// TestDrawReference checks that --reference adds default to the paths with
// loss alone, once, and changes nothing else: the same seed draws the same
// paths with and without it.
func TestDrawReference(t *testing.T) {
	body := func(args ...string) []string {
		_, b, _ := strings.Cut(draw(t, append([]string{"--seed", "3", "--n", "200"}, args...)...), "\n")
		return strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	}
	with, without := body(), body("--reference=false")
	both := body("--modes", "replenish=15ms,default")
	if len(with) != 200 || len(without) != 200 || len(both) != 200 {
		t.Fatalf("%d, %d and %d lines, want 200 each", len(with), len(without), len(both))
	}
	lossy := 0
	for i := range with {
		if !strings.Contains(with[i], "--loss") {
			if with[i] != without[i] {
				t.Errorf("a path without loss changed:\n%s\n%s", with[i], without[i])
			}
			continue
		}
		lossy++
		if want := strings.Replace(without[i], "--modes replenish=15ms ", "--modes replenish=15ms,default ", 1); with[i] != want {
			t.Errorf("with the reference:\n%s\nwant\n%s", with[i], want)
		}
		if both[i] != with[i] {
			t.Errorf("default asked for and added:\n%s\nwant\n%s", both[i], with[i])
		}
	}
	if lossy == 0 {
		t.Fatal("no path with loss in 200")
	}
}
