package sender

import (
	"time"

	"replenish/rate"
)

// overflowed remembers whether a probe lost packets before its queue
// showed: the bottleneck's buffer is shorter than the queue a probe builds
// before its signal returns. A probe that crosses the capacity builds
// queue for a feedback delay before the smoothed RTT shows it (see
// probeSpeed), and past the ceiling it accelerates: at 6.3 Mb/s and
// 230 ms, with a 60 ms buffer (a quarter of the path's BDP), the path
// model's probes reached 1.3 times the drain rate before a cut, each
// overfilled the buffer, and every frame a lost segment belonged to waited
// a round trip for its repair (capture to received p95 167 ms over the
// floor; 177 ms in a real run). Once a probe has lost packets, later
// probes lead the drain rate by at most overflowLead of queue over a
// feedback delay (see overflowCap), for overflowKeep, or until the stream
// sends past the ceiling without a queue (see evidence): on a faster path
// the buffer's limit is no longer known, and the cap, which lets the
// stream lead its own drain rate by a few percent (libvpx writes a few
// percent under its target, so about none), held the climb after a
// doubling at 4.3 Mb/s and 225 ms to 6% a second: back at 90% after 13 s.
//
// The losses of a rate step's queue are not a probe's: the cut after a
// halving lowers the capacity, and the watch ends there. (Counted as well,
// they slowed the path model's doublings at 300 ms after a halving from 5
// to 17 s.)
type overflowed struct {
	on         bool         // a probe is being watched
	lost, sent int64        // the transport's counts when it began
	capacity   rate.Bitrate // the capacity when it began
	end        time.Time    // the update after its cut (zero while it lasts)
	at         time.Time    // when a probe last lost packets
	before     time.Time    // and before this watch began
	// The packets sent and lost while cruising, outside any watch: the
	// path's random loss, which a cruise below the capacity shows and a
	// probe's overflow does not (halved past quietMax), and the counts
	// at the last update.
	quietSent, quietLost float64
	lastSent, lastLost   int64
	// Since when the cap has held a probe without the drain rate rising,
	// and the drain rate then: see held.
	heldAt    time.Time
	heldDrain rate.Bitrate
}

// Overflow tuning.
const (
	overflowLead = 15 * time.Millisecond // the queue a probe may build over the drain rate in a feedback delay
	overflowKeep = 30 * time.Second      // how long a probe's losses are remembered
	overflowTail = 2                     // feedback delays after a probe's cut in which its losses count
	overflowKept = 0.9                   // a cut below this share of the capacity before the probe found a slower path
	quietMin     = 200                   // packets sent while cruising before their loss rate counts
	quietMax     = 20000                 // and the most counted
	overflowHold = 2                     // feedback delays a held probe waits for the drain rate to rise
	heldLead     = 1.1                   // a rate past this multiple of the drain rate, and
	heldSent     = 1.05                  // what was written within this one of it, is one the stream cannot send
)

// watchOverflow follows the probes: it judges each while it lasts and for
// overflowTail feedback delays after the cut that ends it (a segment
// dropped before the cut acted is declared lost about a round trip later),
// unless that cut or one in the tail took the capacity below overflowKept
// of what it was when the probe began: the path slowed, and the losses are
// that step's, even those already taken for the probe's. (A halving's
// first cuts can keep the capacity, taking its fast-growing queue for a
// burst: at 500 kb/s and 40 ms, halved during a probe, the losses declared
// before the third cut found 200 kb/s held every probe for the next 30 s
// to a few percent over the drain rate, the stream's own at 160x90, and the
// stream used 45% of the 250 kb/s for the rest of the run.) (Not
// of the capacity at the probe's end: the probe's own rate, sent without a
// queue, raises it on the way, and at 6.3 Mb/s and 230 ms a cut from
// there to the drain rate, 17% lower, took a probe that had lost 40
// segments for a slower path's.) A probe lost packets if
// more were declared lost than the path's random loss explains, by
// lossSigma standard deviations (see significant): four at least. The
// path's random loss is the loss meter's base, or the loss rate while
// cruising if higher (randomLoss): the base is learned only from loss
// cuts, which random loss under lossHigh never draws (at 1% over QUIC,
// 2 Mb/s and 40 ms, the probes' losses were taken for overflows and
// capped a third to two thirds of the frames).
func (c *Controller) watchOverflow(o Observation) {
	w := &c.overflow
	c.quietLoss(o)
	if c.afterOutage(o.Now) {
		w.lost, w.sent = o.Lost, o.Sent // the outage's losses (see afterOutage)
		return
	}
	switch {
	case c.phase == probing:
		if !w.on {
			w.on, w.lost, w.sent, w.capacity, w.before = true, o.Lost, o.Sent, c.capacity, w.at
		}
		w.end = time.Time{}
	case !w.on:
		return
	case c.capacity < w.capacity.Scale(overflowKept):
		// A cut found a slower path, the probe's or one in its tail
		// (a halving's first cuts may take its queue for a burst and
		// keep the capacity): what was lost is the step's.
		w.on, w.at = false, w.before
		return
	case w.end.IsZero():
		w.end = o.Now
	case o.Now.Sub(w.end) > overflowTail*c.fb:
		w.on = false
		return
	}
	lost, sent := o.Lost-w.lost, o.Sent-w.sent
	if lost < 0 || sent <= 0 {
		w.lost, w.sent = o.Lost, o.Sent // a new connection
		return
	}
	if significant(float64(lost)/float64(sent), lost, c.randomLoss()) {
		w.at = o.Now
		w.lost, w.sent = o.Lost, o.Sent
	}
}

// quietLoss counts the packets sent and lost since the last update if the
// stream cruised, outside any watch.
func (c *Controller) quietLoss(o Observation) {
	w := &c.overflow
	sent, lost := o.Sent-w.lastSent, o.Lost-w.lastLost
	first := w.lastSent == 0
	w.lastSent, w.lastLost = o.Sent, o.Lost
	if first || c.phase != cruising || w.on || sent <= 0 || lost < 0 || c.afterOutage(o.Now) {
		return
	}
	w.quietSent += float64(sent)
	w.quietLost += float64(lost)
	if w.quietSent > quietMax {
		w.quietSent, w.quietLost = w.quietSent/2, w.quietLost/2
	}
}

// overflowCap bounds a probe's rate once a probe lost packets: it leads
// the drain rate by no more than overflowLead of queue over a feedback
// delay. Where the transport gives only its window's bound (loss recovery
// shrank the window), the capacity stands for the drain rate: uncapped
// there, a probe begun in CUBIC's recovery at 18.3 Mb/s and 200 ms ran to
// 1.2 times the capacity, and its overflow cost 80 segments and halved
// the window.
func (c *Controller) overflowCap(o Observation, want rate.Bitrate) rate.Bitrate {
	d := measured(o)
	if d <= 0 {
		d = c.capacity
	}
	if !c.overflowing(o.Now) || d <= 0 {
		return want
	}
	return min(want, max(c.rate, d.Scale(1+c.overflowShare())))
}

// overflowShare is overflowLead over a feedback delay: the share of the
// drain rate by which the overflow cap lets a probe lead it.
func (c *Controller) overflowShare() float64 { return overflowLead.Seconds() / c.fb.Seconds() }

// overflowing reports whether a probe lost packets within overflowKeep of
// now.
func (c *Controller) overflowing(now time.Time) bool {
	return !c.overflow.at.IsZero() && now.Sub(c.overflow.at) <= overflowKeep
}

// held ends a probe that the overflow cap holds (want above capped) with
// the transport backlogged once the drain rate has not risen by half the
// cap's lead over overflowHold feedback delays: the path carried no more. Held at the cap, a probe's
// queue stands at the sender instead of the bottleneck, since the
// transport (CUBIC's window near its last maximum) drains no faster than
// before, and the round trip does not show it: at 18.3 Mb/s, 200 ms and a
// 50 ms buffer, real runs sat there for seconds, each frame 45 ms longer
// in the socket (capture to received 185 ms at the median, against 147
// while cruising), and the path model's for the rest of the run. The
// capacity is then what the transport drains, and the stream cruises
// under it until the next probe. Not where the drain rate comes from
// application-limited windows: nothing waits at the sender then, and the
// drain rate is the stream's own rate, which follows the capped probe a
// little late (the encoder runs under its target). Ended there too, a
// stream at 2.8 Mb/s and 260 ms, climbing back from a cut to half the
// path, had its probe ended five times in 15 s and kept 65% of the link.
//
// A rate the stream cannot send (sendLimited) is held the same way,
// capped or not, in a probe and in the start. With BBR, which paces at
// its estimate, at 2.8 and 10 Mb/s and 10 ms the path model's start and
// probes climbed to 1.2 to 1.3 times the path and stayed there for the
// run: the queue stood at the sender, where the invitation came too late
// for one frame in five and no round trip showed it, and the frames, each
// sized for a rate the path did not carry, met half a replenish time of
// backlog. Capture to received over the floor fell from 29 to 13 and from
// 30 to 21 ms at the median, the link as busy. (Real BBR keeps a queue of
// its own at those rates, and its start ended without this.)
//
// Not kept: ending any probe that leads a drain rate measured while the
// transport is backlogged, whatever the stream wrote. The path model's
// p95 over the floor fell by 4 to 9 ms, but beside a download (whose
// queue keeps the transport backlogged while the stream's writes keep
// pace) the stream's share fell below TestBesideDownload's floors, and
// after a doubling at 300 ms, where CUBIC's window and with it the drain
// rate grow slowly, three seeds of five took 18 s to find it
// (TestRateControlOnPaths allows 9.4).
func (c *Controller) held(o Observation, want, capped rate.Bitrate) bool {
	w := &c.overflow
	d := measured(o)
	if (capped >= want && !c.sendLimited(o, d)) || d <= 0 || o.AppLimited {
		w.heldAt = time.Time{}
		return false
	}
	rise := 1 + c.overflowShare()/2
	if w.heldAt.IsZero() || d > w.heldDrain.Scale(rise) {
		w.heldAt, w.heldDrain = o.Now, d
		return false
	}
	if o.Now.Sub(w.heldAt) < overflowHold*c.fb {
		return false
	}
	w.heldAt = time.Time{}
	c.capacity = min(c.capacity, d)
	c.ceiling = c.capacity
	c.rate = min(c.rate, c.capacity.Scale(cruiseGain))
	c.phase, c.phaseAt = cruising, o.Now
	return true
}

// sendLimited reports that the rate leads a drain rate d by more than
// heldLead while what the stream wrote over the last sentWindow does not
// lead it by heldSent: the transport drains no faster, and the frames the
// rate asks for wait at the sender or are skipped, so that the rate is
// not what the stream sends.
//
// Not where the encoder, not the transport, holds the stream: the rate
// counts only up to what the rung lets the encoder write (its Max, and the
// packets' overhead), and not while a keyframe is paid back (keyUntil),
// whose rung's encoder, new after a rung change, writes under its target
// for a few hundred milliseconds. A QUIC stream at 0.79 Mb/s, 15 fps and
// 186 ms, whose path had risen to 1.8 Mb/s, probed past 320x180's Max
// with its frames at the Max; once at 640x360 the probe was ended while
// the new rung's encoder climbed, and the stream cruised at the old Max
// for another second and took 8 s to fill the faster path.
func (c *Controller) sendLimited(o Observation, d rate.Bitrate) bool {
	if o.Now.Before(c.keyUntil) {
		return false
	}
	asked := min(c.rate, c.ladder[c.rung].Max.Scale(c.overhead))
	return asked > d.Scale(heldLead) && c.sentRate(o.Now.Add(-sentWindow), o.Now) <= d.Scale(heldSent)
}
