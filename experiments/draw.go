package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// What draw picks from. The rates span the ladder, from a little above the
// lowest rung's floor on the wire to twice the top rung's Max; a path's
// buffer, round trip, congestion control, transport, source frame rate,
// step and random loss are drawn independently. Jitter and a wandering
// rate come from a second stream of the seed, so that with --jitter 0
// --walk 0 a seed draws what it drew before they existed.
const (
	drawRateMin, drawRateMax = 150.0, 40000.0 // kb/s, drawn log-uniform
	drawRTTMin, drawRTTMax   = 6, 230         // ms, uniform
)

var (
	drawQueues = []int{40, 50, 60, 80, 100, 120, 150, 200, 250, 300} // ms
	drawFPS    = []int{15, 24, 60}                                   // half the paths; the others 30
	drawLosses = []float64{0.002, 0.005, 0.01, 0.02, 0.03}
	drawJitter = []int{2, 5, 10, 20, 30} // ms
)

// A wandering path (--walk): its rate moves every walkGapMin to
// walkGapMax (whole seconds) by a factor drawn log-uniform in
// [1/walkFactor, walkFactor] but never within walkFactorMin of 1, kept
// within the draw's rates (to twice drawRateMax); a step also moves the
// round trip with probability walkRTT. A step comes only while the
// window has walkGapMin left after it, time for the recovery targets (5 s
// after a rise, judged over a sustained second of 1 s windows).
const (
	walkGapMin, walkGapMax = 8, 10 // s
	walkFactor             = 2.5
	walkFactorMin          = 1.25
	walkRTT                = 0.3
	walkDuration           = 40 // s: the measured window of a wandering path
)

// Shares of the drawn paths.
const (
	drawQUIC   = 1.0 / 3 // over QUIC (quic-go's congestion control; no --cc)
	drawHalve  = 0.2     // the rate halves 20 s into the run
	drawDouble = 1.0 / 6 // the rate doubles 20 s into the run
)

// drawOpts are draw's flags that shape each path.
type drawOpts struct {
	loss, jitter, walk float64 // shares of the paths
	modes              string
	reference          bool
}

// drawMain writes a matrix of video paths drawn at random, one replenish
// run each: a check of the rate controller on paths no one chose.
func drawMain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o drawOpts
	seed := fs.Uint64("seed", 1, "the draw's `seed`: the same seed draws the same paths")
	n := fs.Int("n", 14, "how many paths")
	fs.Float64Var(&o.loss, "loss", 0.25, "the `share` of paths with random loss (0.2 to 3%)")
	fs.Float64Var(&o.jitter, "jitter", 0.2, "the `share` of paths whose one-way delay varies by up to 2 to 30 ms (--jitter of run)")
	fs.Float64Var(&o.walk, "walk", 0.2, "the `share` of paths whose rate wanders: a step every 8 to 10 s by a factor up to 2.5 either way, some with a new round trip (these measure 40 s)")
	fs.StringVar(&o.modes, "modes", "replenish=15ms", "the --modes of every line")
	fs.BoolVar(&o.reference, "reference", true, "on paths with random loss, also run mode default: what its backlogged transport carries is what the loss leaves of the link, and the report judges utilization against it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./experiments draw [flags] > paths.txt\n\nWrites a matrix file (run --matrix) of video paths drawn at random.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	share := func(v float64) bool { return v >= 0 && v <= 1 }
	if fs.NArg() > 0 || *n < 1 || *n > 10000 || !share(o.loss) || !share(o.jitter) || !share(o.walk) || strings.ContainsAny(o.modes, " \t\"#") || o.modes == "" {
		fmt.Fprintln(stderr, "draw: need 1 to 10000 paths, shares (loss, jitter, walk) from 0 to 1 and modes without blanks, quotes or #")
		return 2
	}
	fmt.Fprintf(stdout, "# go run ./experiments draw --seed %d --n %d --loss %g --jitter %g --walk %g --modes %s --reference=%t\n", *seed, *n, o.loss, o.jitter, o.walk, o.modes, o.reference)
	r := rand.New(rand.NewPCG(*seed, 0))
	v := rand.New(rand.NewPCG(*seed, 1))
	for range *n {
		fmt.Fprintln(stdout, drawPath(r, v, o))
	}
	return 0
}

// drawPath returns one matrix line. With reference, a path with random
// loss runs the unmanaged sender (mode default) too, if modes lacks it:
// writing at the link's rate, it keeps its transport backlogged, and what
// that carries is what the loss leaves of the link for any sender over the
// same transport, which the report judges utilization against.
// The second stream v draws the jitter and the walk, and always as many
// numbers per path, whatever the shares.
func drawPath(r, v *rand.Rand, o drawOpts) string {
	modes := o.modes
	kb := math.Exp(math.Log(drawRateMin) + r.Float64()*(math.Log(drawRateMax)-math.Log(drawRateMin)))
	rate := roundRate(kb)
	rtt := drawRTTMin + r.IntN(drawRTTMax-drawRTTMin+1)
	q := drawQueues[r.IntN(len(drawQueues))]
	cc := []string{"cubic", "bbr"}[r.IntN(2)]
	quic := r.Float64() < drawQUIC
	fps := 30
	if r.IntN(2) == 0 {
		fps = drawFPS[r.IntN(len(drawFPS))]
	}
	warm := 5 // s
	if rate < 300 {
		warm = 10 // the lowest rung's start takes longer to settle
	}
	var sched string
	switch u := r.Float64(); {
	case u < drawHalve:
		sched = fmt.Sprintf(" --schedule 20s=%dkbit", rate/2)
	case u < drawHalve+drawDouble:
		sched = fmt.Sprintf(" --schedule 20s=%dkbit", rate*2)
	}
	var loss string
	if r.Float64() < o.loss {
		loss = fmt.Sprintf(" --loss %g", drawLosses[r.IntN(len(drawLosses))])
		if o.reference && !slices.Contains(strings.Split(modes, ","), "default") {
			modes += ",default"
		}
	}
	var jitter string
	if u, j := v.Float64(), drawJitter[v.IntN(len(drawJitter))]; u < o.jitter {
		jitter = fmt.Sprintf(" --jitter %dms", j)
	}
	dur := 30
	if u, walk := v.Float64(), drawWalk(rand.New(rand.NewPCG(v.Uint64(), v.Uint64())), rate, warm); u < o.walk {
		sched, dur = " --schedule "+walk, walkDuration
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--workload video --rate %dkbit --rtt %dms --queue %dms", rate, rtt, q)
	if quic {
		b.WriteString(" --transport quic")
	} else {
		fmt.Fprintf(&b, " --cc %s", cc)
	}
	fmt.Fprintf(&b, " --warmup %ds --duration %ds --modes %s", warm, dur, modes)
	if fps != 30 {
		fmt.Fprintf(&b, " --fps %d", fps)
	}
	b.WriteString(sched + loss + jitter)
	return b.String()
}

// drawWalk returns the schedule of a wandering path (see walkFactor) that
// starts at rate kb/s after a warm-up of warm seconds: its first
// step 5 to 7 s into the window.
func drawWalk(r *rand.Rand, rate, warm int) string {
	var steps []string
	for at := warm + 5 + r.IntN(3); at <= warm+walkDuration-walkGapMin; at += walkGapMin + r.IntN(walkGapMax-walkGapMin+1) {
		f := 1.0
		for math.Abs(math.Log(f)) < math.Log(walkFactorMin) {
			f = math.Exp((2*r.Float64() - 1) * math.Log(walkFactor))
		}
		next := roundRate(float64(rate) * f)
		if next < drawRateMin || next > 2*drawRateMax {
			next = roundRate(float64(rate) / f) // turn back at the draw's edges
		}
		rate = next
		st := fmt.Sprintf("%ds=%dkbit", at, rate)
		if r.Float64() < walkRTT {
			st += fmt.Sprintf("/%dms", drawRTTMin+r.IntN(drawRTTMax-drawRTTMin+1))
		}
		steps = append(steps, st)
	}
	return strings.Join(steps, ",")
}

// roundRate rounds a drawn rate in kb/s to 10 kb/s, or to 100 kb/s from
// 1 Mb/s.
func roundRate(kb float64) int {
	if kb >= 1000 {
		return int(math.Round(kb/100) * 100)
	}
	return int(math.Round(kb/10) * 10)
}
