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
// step and random loss are drawn independently.
const (
	drawRateMin, drawRateMax = 150.0, 40000.0 // kb/s, drawn log-uniform
	drawRTTMin, drawRTTMax   = 6, 230         // ms, uniform
)

var (
	drawQueues = []int{40, 50, 60, 80, 100, 120, 150, 200, 250, 300} // ms
	drawFPS    = []int{15, 24, 60}                                   // half the paths; the others 30
	drawLosses = []float64{0.002, 0.005, 0.01, 0.02, 0.03}
)

// Shares of the drawn paths.
const (
	drawQUIC   = 1.0 / 3 // over QUIC (quic-go's congestion control; no --cc)
	drawHalve  = 0.2     // the rate halves 20 s into the run
	drawDouble = 1.0 / 6 // the rate doubles 20 s into the run
)

// drawMain writes a matrix of video paths drawn at random, one replenish
// run each: a check of the rate controller on paths no one chose.
func drawMain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "the draw's `seed`: the same seed draws the same paths")
	n := fs.Int("n", 14, "how many paths")
	loss := fs.Float64("loss", 0.25, "the `share` of paths with random loss (0.2 to 3%)")
	mode := fs.String("modes", "replenish=15ms", "the --modes of every line")
	reference := fs.Bool("reference", true, "on paths with random loss, also run mode default: what its backlogged transport carries is what the loss leaves of the link, and the report judges utilization against it")
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
	if fs.NArg() > 0 || *n < 1 || *n > 10000 || !(*loss >= 0 && *loss <= 1) || strings.ContainsAny(*mode, " \t\"#") || *mode == "" {
		fmt.Fprintln(stderr, "draw: need 1 to 10000 paths, a loss share from 0 to 1 and modes without blanks, quotes or #")
		return 2
	}
	fmt.Fprintf(stdout, "# go run ./experiments draw --seed %d --n %d --loss %g --modes %s --reference=%t\n", *seed, *n, *loss, *mode, *reference)
	r := rand.New(rand.NewPCG(*seed, 0))
	for range *n {
		fmt.Fprintln(stdout, drawPath(r, *loss, *mode, *reference))
	}
	return 0
}

// drawPath returns one matrix line. With reference, a path with random
// loss runs the unmanaged sender (mode default) too, if modes lacks it:
// writing at the link's rate, it keeps its transport backlogged, and what
// that carries is what the loss leaves of the link for any sender over the
// same transport, which the report judges utilization against.
func drawPath(r *rand.Rand, lossShare float64, modes string, reference bool) string {
	kb := math.Exp(math.Log(drawRateMin) + r.Float64()*(math.Log(drawRateMax)-math.Log(drawRateMin)))
	rate := int(math.Round(kb/10) * 10)
	if kb >= 1000 {
		rate = int(math.Round(kb/100) * 100)
	}
	rtt := drawRTTMin + r.IntN(drawRTTMax-drawRTTMin+1)
	q := drawQueues[r.IntN(len(drawQueues))]
	cc := []string{"cubic", "bbr"}[r.IntN(2)]
	quic := r.Float64() < drawQUIC
	fps := 30
	if r.IntN(2) == 0 {
		fps = drawFPS[r.IntN(len(drawFPS))]
	}
	warm := "5s"
	if rate < 300 {
		warm = "10s" // the lowest rung's start takes longer to settle
	}
	var sched string
	switch u := r.Float64(); {
	case u < drawHalve:
		sched = fmt.Sprintf(" --schedule 20s=%dkbit", rate/2)
	case u < drawHalve+drawDouble:
		sched = fmt.Sprintf(" --schedule 20s=%dkbit", rate*2)
	}
	var loss string
	if r.Float64() < lossShare {
		loss = fmt.Sprintf(" --loss %g", drawLosses[r.IntN(len(drawLosses))])
		if reference && !slices.Contains(strings.Split(modes, ","), "default") {
			modes += ",default"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--workload video --rate %dkbit --rtt %dms --queue %dms", rate, rtt, q)
	if quic {
		b.WriteString(" --transport quic")
	} else {
		fmt.Fprintf(&b, " --cc %s", cc)
	}
	fmt.Fprintf(&b, " --warmup %s --duration 30s --modes %s", warm, modes)
	if fps != 30 {
		fmt.Fprintf(&b, " --fps %d", fps)
	}
	b.WriteString(sched + loss)
	return b.String()
}
