package pathmodel

import (
	"slices"
	"time"

	"replenish/media"
)

// Targets the summary measures recovery against.
const (
	recoverExcess = 25 * time.Millisecond // the median's bound over recoverHold
	recoverPeak   = 80 * time.Millisecond // and every frame's
	recoverHold   = time.Second
	recoverUtil   = 0.9
	utilSettle    = 5 * time.Second // excluded from Util after a rate step
	delaySettle   = 2 * time.Second // excluded from the delay percentiles after a step
)

// segment of the run between two path changes, with its floor.
type pathSeg struct {
	a, b  time.Duration
	floor time.Duration
	ser   time.Duration
}

// result summarises the run.
func (s *sim) result() *Result {
	r := &Result{Frames: s.frames, Drops: s.drops, Retransmits: s.retrans, Rungs: map[media.Size]float64{}}
	segs := s.segments()
	for i, f := range s.frames {
		if f.Capture < s.cfg.Warmup {
			r.Frames0 = i + 1
		}
	}
	var sd, sx, c2r, ex, q []time.Duration
	received, n := 0, 0
	for _, f := range s.measured() {
		if f.Received >= 0 {
			received++
		}
		if s.stepping(f.Capture) {
			continue // measured by Recoveries
		}
		n++
		sg := segFor(segs, f.Capture)
		d := s.c2r(f)
		c2r = append(c2r, d)
		ex = append(ex, d-sg.floor)
		if v := f.SourceDelay(); v >= 0 {
			sd = append(sd, v)
			sx = append(sx, v-sg.ser*6/5-5*time.Millisecond)
		}
		if f.Queue >= 0 {
			q = append(q, f.Queue)
		}
		r.Rungs[f.Rung.Size]++
	}
	for k := range r.Rungs {
		r.Rungs[k] /= float64(max(n, 1))
	}
	r.SourceDelay, r.SourceExcess = percentiles(sd), percentiles(sx)
	r.CaptureToReceived, r.Excess, r.Queue = percentiles(c2r), percentiles(ex), percentiles(q)
	r.FPS = float64(received) / (s.cfg.Duration - s.cfg.Warmup).Seconds()
	first := segFor(segs, s.cfg.Warmup)
	r.Floor, r.Ser = first.floor, first.ser
	r.Util, r.RawUtil, r.VideoUtil, r.CrossUtil = s.utilization()
	r.Recoveries = s.recoveries(segs)
	return r
}

// measured returns the frames captured after the warm-up and before the
// end.
func (s *sim) measured() []Frame {
	i, _ := slices.BinarySearchFunc(s.frames, s.cfg.Warmup, func(f Frame, t time.Duration) int { return int(f.Capture - t) })
	j, _ := slices.BinarySearchFunc(s.frames, s.cfg.Duration, func(f Frame, t time.Duration) int { return int(f.Capture - t) })
	return s.frames[i:j]
}

// c2r is capture to received, counting a frame never received as received
// at the end of the run.
func (s *sim) c2r(f Frame) time.Duration {
	if f.Received < 0 {
		return s.cfg.Duration + drainTail - f.Capture
	}
	return f.Received - f.Capture
}

// segments splits the run at the path's steps and computes each piece's
// floor: the one-way delay, the median frame's serialization at the
// bottleneck and the median encode, over its frames after the warm-up (all
// its frames if it ends before).
func (s *sim) segments() []pathSeg {
	cuts := []time.Duration{0}
	for _, st := range s.cfg.Path.Steps {
		if st.At < s.cfg.Duration {
			cuts = append(cuts, st.At)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	cuts = append(cuts, s.cfg.Duration)
	var out []pathSeg
	for i := 0; i+1 < len(cuts); i++ {
		sg := pathSeg{a: cuts[i], b: cuts[i+1]}
		var wire, enc []time.Duration
		from := max(sg.a, s.cfg.Warmup)
		if from >= sg.b {
			from = sg.a
		}
		for _, f := range s.frames {
			if f.Capture >= from && f.Capture < sg.b {
				wire = append(wire, time.Duration(f.Wire))
				enc = append(enc, f.Encode)
			}
		}
		sg.ser = s.sched.rateAt(sg.a).Duration(int(percentiles(wire).P50))
		sg.floor = s.sched.owdAt(sg.a) + s.cfg.Path.Jitter/2 + sg.ser + percentiles(enc).P50
		out = append(out, sg)
	}
	return out
}

func segFor(segs []pathSeg, t time.Duration) pathSeg {
	for _, sg := range segs {
		if t >= sg.a && t < sg.b {
			return sg
		}
	}
	return segs[len(segs)-1]
}

// fill returns the most the top rung can put on the wire, in bits per
// second.
func (s *sim) fill() float64 {
	top := s.cfg.Ladder[len(s.cfg.Ladder)-1]
	video := min(top.Max, s.cfg.Encoder.Saturation(top))
	fps := top.Rate(s.cfg.FPS)
	frame := video.Bytes(time.Second / time.Duration(fps))
	return float64(8*wireBytes(writeBytes(frame)+reportShare(fps))) * float64(fps)
}

// utilization returns the bottleneck's use over the measured time less the
// settling after rate steps, relative to what the ladder can fill and to
// the link rate, and the VP8 bytes of the frames received over that time
// relative to the link rate: what the experiments report as utilization
// (goodput over the bottleneck's mean rate), headers and framing not
// counted; and the competing flows' use relative to the link rate.
func (s *sim) utilization() (rel, raw, video, cross float64) {
	var used, can, link, vp8, other float64
	fill := s.fill() * meterBin.Seconds()
	for t := s.cfg.Warmup; t < s.cfg.Duration; t += meterBin {
		if s.settling(t) {
			continue
		}
		b := s.sched.bits(t, t+meterBin)
		used += float64(8 * s.util.bytes(t, t+meterBin))
		other += float64(8 * s.crossUtil.bytes(t, t+meterBin))
		can += min(b, fill)
		link += b
	}
	for _, f := range s.frames {
		if f.Received >= s.cfg.Warmup && f.Received < s.cfg.Duration && !s.settling(f.Received) {
			vp8 += float64(8 * f.Video)
		}
	}
	if can == 0 {
		return 0, 0, 0, 0
	}
	return used / can, used / link, vp8 / link, other / link
}

// stepping says a frame captured at t is within delaySettle after a step.
func (s *sim) stepping(t time.Duration) bool {
	for _, st := range s.cfg.Path.Steps {
		if t >= st.At && t < st.At+delaySettle {
			return true
		}
	}
	return false
}

func (s *sim) settling(t time.Duration) bool {
	for _, st := range s.cfg.Path.Steps {
		if st.Rate > 0 && t >= st.At && t < st.At+utilSettle {
			return true
		}
	}
	return false
}

// windowUtil returns the utilization over [a, b) relative to what the
// ladder can fill.
func (s *sim) windowUtil(a, b time.Duration) float64 {
	var used, can float64
	fill := s.fill() * meterBin.Seconds()
	for t := a; t < b; t += meterBin {
		used += float64(8 * s.util.bytes(t, t+meterBin))
		can += min(s.sched.bits(t, t+meterBin), fill)
	}
	if can == 0 {
		return 0
	}
	return used / can
}

// recoveries measures how each step settled.
func (s *sim) recoveries(segs []pathSeg) []Recovery {
	var out []Recovery
	for _, st := range s.cfg.Path.Steps {
		if st.At >= s.cfg.Duration {
			continue
		}
		sg := segFor(segs, st.At)
		rc := Recovery{Step: st, Latency: -1, Util: -1}
		rc.Latency = s.latencyRecovery(st.At, sg)
		for t := st.At + time.Second; t <= sg.b; t += 100 * time.Millisecond {
			if s.windowUtil(t-time.Second, t) >= recoverUtil {
				rc.Util = t - st.At
				break
			}
		}
		out = append(out, rc)
	}
	return out
}

// latencyRecovery returns the time from at until the frames captured over
// a second met the steady-state bounds again, or -1: their median within
// the floor plus recoverExcess and every one within the floor plus
// recoverPeak. (Every frame within recoverExcess would ask more of the
// second after a step than of the steady state, where 5% of frames may
// exceed it.)
func (s *sim) latencyRecovery(at time.Duration, sg pathSeg) time.Duration {
	fr := s.frames
	var win []time.Duration
	for i := range fr {
		if fr[i].Capture < at {
			continue
		}
		if fr[i].Capture+recoverHold > sg.b {
			return -1
		}
		win = win[:0]
		ok := true
		for j := i; j < len(fr) && fr[j].Capture < fr[i].Capture+recoverHold; j++ {
			e := s.c2r(fr[j]) - sg.floor
			win = append(win, e)
			if e > recoverPeak {
				ok = false
				break
			}
		}
		if ok {
			slices.Sort(win)
			ok = win[len(win)/2] <= recoverExcess
		}
		if ok {
			return fr[i].Capture - at
		}
	}
	return -1
}
