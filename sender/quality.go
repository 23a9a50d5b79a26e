package sender

import (
	"math"
	"time"

	"replenish/media"
	"replenish/rate"
)

// Controller tuning; the Controller's doc comment says where each number
// comes from.
const (
	cruiseGain   = 0.98                   // the cruising rate, as a fraction of the capacity
	cruiseTime   = time.Second            // at least this long cruising before probing
	cruiseFb     = 4                      // and at least this many feedback delays
	probeK       = 0.008                  // s: a probe's speed is probeK/fb², see probeSpeed
	probeMax     = 0.2                    // the fastest probe near the capacity, per second
	probePast    = 1.05                   // past this times the capacity the probe accelerates
	probeDouble  = 300 * time.Millisecond // the shortest time in which its speed doubles
	probeFastest = 1.0                    // and its greatest speed, per second
	regainSpeed  = 0.25                   // the speed back to the capacity before a cut, per second
	fasterShare  = 0.35                   // an excess below minus this share of a frame's serialization says the path is faster
	foreignSpeed = 0.5                    // the probe's least speed while another flow's queue stands, per second
	regainBelow  = 0.8                    // for a cut that lowered the capacity below this share of it
	startGrowth  = 0.7                    // e-folds per second while starting (doubling each second)
	cutFactor    = 0.9                    // a cut's rate as a fraction of the capacity estimate
	overshootCut = 0.95                   // a cut's rate on a probe's overshoot the drain rate confirms
	drainTrust   = 0.8                    // a congestion estimate above this share of the drain rate trusts it
	agedGain     = 1.25                   // an aged drain rate raises the capacity to at most this times the rate sent
	minCut       = 0.3                    // the deepest single cut
	lagFactor    = 2                      // the queue's growth over the smoothed RTT's slope when a queue first shows
	slowerShare  = 0.7                    // a queue growing as if the path carried less than this share of the capacity is cut again at once
	drainTime    = time.Second            // a cut also drains the excess queue within this
	qHigh        = 12 * time.Millisecond  // excess queueing that means congestion, at least (see band)
	qLow         = 6 * time.Millisecond   // excess queueing below which the rate may rise, at least
	noiseK       = 2                      // the band's top is at least this many standard deviations of a frame's serialization
	noiseGain    = 0.02                   // the size deviation's average, per frame
	slopeHigh    = 0.25                   // a round trip growing this fast (s/s) means congestion
	burstSlope   = 3                      // growing faster than this (s/s), the queue is a burst
	refWindow    = 4 * time.Second        // the window of the self term (and of the kept round trips)
	envelope     = 100 * time.Millisecond // the shortest window of the round trip's lower envelope
	selfRank     = 20                     // the percentile of the smoothed RTT taken as the frames' own queueing
	selfPackets  = 2                      // frames of up to this many segments have their own queueing scaled in full
	selfGrown    = 1.15                   // frames this much larger than a round trip's are larger by more than their noise
	selfScale    = 2                      // the most a round trip's own queueing is scaled to today's frame size
	selfWait     = 2                      // feedback delays from the first update before the self term takes a round trip
	shiftCuts    = 2                      // cuts without effect before the base round trip moves
	shiftTime    = 2 * time.Second        // over at least this long
	shiftFb      = 6                      // and this many feedback delays
	shiftSoonest = 500 * time.Millisecond // or this long, if the last cut left a standing excess unanswered
	shiftStand   = 4                      // of at least this many band tops
	shiftSent    = 0.5                    // with the rate sent under this share of what was sent before the series
	overDrain    = 1.1                    // the rate sent over the drain rate that says the excess is its own
	shiftGrown   = 1.25                   // an excess over this times the last cut's grew since it: not standing
	shiftFall    = 5 * time.Second        // an excess falling too slowly to be gone within this is standing
	ownFall      = 0.75                   // an excess below this share of its peak since a cut is draining: the stream's own
	maxUndos     = 3                      // the quiet time after an undo doubles with each in a streak, up to this many
	slopeWindow  = 500 * time.Millisecond // the window of the round trip's trend
	sentWindow   = 500 * time.Millisecond // the window of the sent rate
	sentKeep     = 3 * time.Second        // how long sent samples are kept
	sentLead     = 1.25                   // the rate leads what was actually sent by at most this
	skipHigh     = 0.3                    // the fraction of frames skipped that lowers the rate
	skipStep     = 0.9                    // by at least this factor
	keyPayback   = 500 * time.Millisecond // a keyframe's excess is paid back over this
	stallGap     = 200 * time.Millisecond // an invitation this late, with frames waiting and no queue, ends a stall
	outageGap    = 500 * time.Millisecond // an invitation this late, at least, ends an outage (see outage)
	outageRTTs   = 4                      // and this many smoothed round trips
	upHold       = time.Second            // the rate must qualify this long before moving up a rung
	downHold     = time.Second            // and be below the rung's Min this long before moving down
	downFar      = 0.6                    // unless it is below this share of the Min
	rungGap      = time.Second            // at least this long between rung changes (each costs a keyframe)
	saturated    = 0.8                    // encoder output below this fraction of its target: saturated
	makeUpLow    = 0.9                    // while cruising, encoder output down to this fraction of its target is made up
	encodeBudget = 20 * time.Millisecond  // the most a frame may take to encode at a rung moved up to
	maxSamples   = 512                    // bound on the kept samples
	waitFrames   = 3                      // frames whose least wait behind their predecessors counts (see headWait)
	freshSamples = 3                      // the transport's newest round-trip samples that must all lie below the smoothed RTT (see freshRTT)
	waitMargin   = 5 * time.Millisecond   // taken off that wait
	waitTrendMax = 0.75                   // the frames' waits growing this fast (s/s) are no queue's: a path a quarter as fast would build it
	waitSteps    = 3                      // the steps between frames' waits whose least is a growth (two may hold a jump)
	mssGuess     = 1448                   // bytes per segment, for counting ACKs
	unknownDrain = 0                      // a drain rate at or below this is unknown
)

// phase is where the controller is in its cycle.
type phase int

const (
	starting   phase = iota // growing exponentially to the first congestion
	recovering              // back up toward the cruising rate after a cut
	cruising                // holding just below the capacity
	probing                 // growing past it to find out whether the path carries more
)

func (p phase) String() string {
	switch p {
	case starting:
		return "starting"
	case recovering:
		return "recovering"
	case cruising:
		return "cruising"
	case probing:
		return "probing"
	}
	return "unknown"
}

// Controller chooses the encoder's target bitrate and the resolution rung for
// each frame. It is a pure function of its observations and the times they
// carry; it is not safe for concurrent use.
//
// # Physics
//
// A TCP flow kept backlogged in its socket grows CUBIC's window until the
// bottleneck queue overflows: keeping the socket just backlogged keeps the
// bottleneck queue full. So the controller keeps the flow
// application-limited, a little below the bottleneck rate, and takes the
// queueing delay (the round trip above its minimum) as its congestion
// signal, as WebRTC's GCC and BBR do. Application-limited, the drain rate
// measures only the stream's own bitrate, so the controller finds extra
// bandwidth itself by probing above it. A frame written to an idle link
// leaves as a burst and takes size/rate to cross the bottleneck: that
// serialization is the frame's own, part of the delay floor, not queueing.
//
// # Signals
//
// The rate sent: the bytes written per frame (Written) over sentWindow,
// each frame's spread over its interval (see sentRate). The excess: the
// smoothed RTT's lower envelope over the last 2.5 frames (at least
// envelope; the smallest value, so the peaks of a frame's own
// serialization drop out; see The start for a gap), less the base
// (MinRTT, plus a shift learned when the round trip rises for good), less
// the self term (the frames' own
// serialization: the selfRank percentile of the smoothed RTT over
// refWindow above the base, each counted at the frames' size now, at most
// one average frame at the capacity).
// The slope: the smoothed RTT's trend, over slopeWindow or since the
// excess last was below the band (see band). The feedback delay: a round trip plus the
// time the kernel's smoothing (an eighth per ACK) takes to follow, at
// least a frame. The drain rate: a lower bound on the capacity, once the
// transport has measured it. Before that it reports its window bound, cwnd
// over the round trip (Observation.WindowBound), which says what the
// transport could send, not what the path carries: at the start, the
// initial window over the handshake's round trip, 11 Mb/s at 10 ms on any
// path. Taken for the capacity it would shrink the self term's cap (one
// frame at the capacity) below the frames' own serialization, which would
// then read as excess: on a 2 Mb/s path, 6 to 12 ms, inside the hold band,
// and the controller would neither grow nor cut (the path model showed
// the stream held at 320x180, a third of the path). So the capacity starts
// at the initial rate and rises only with what the stream has shown: the
// rate it sent without a queue and the measured drain rate. Skipped
// frames: the transport drains slower than the encoder fills it.
//
// # Phases
//
// Starting, the rate doubles each second (startGrowth: VP8's rate control
// follows a new target over about a second; faster growth outruns it)
// until the first congestion. Recovering, it approaches cruiseGain of the
// capacity with a time constant of half a feedback delay. Cruising, it
// holds there for cruiseTime and cruiseFb feedback delays. Probing, it
// grows at probeK/fb² per second (at most probeMax): a probe that crosses
// the capacity builds queue as v·t²/2 until its signal returns a feedback
// delay later, so this speed keeps the overshoot near 30 ms. Past probePast
// times the capacity last congested (the ceiling) without a queue, the
// path has grown: the speed doubles every probeDouble or feedback delay up
// to probeFastest, so that a doubled link is found within seconds. The
// rate never leads the rate actually sent by more than sentLead (the
// encoder reaches 85% of a raised target at once), so it cannot run away
// from an encoder that does not fill it; except that recovering, it may
// lead up to the rate sent when the cut came, which the encoder filled at
// this rung. Held to sentLead there, a stream cut to the lowest rung's
// floor by its start's queue (100 kb/s, 172 ms) took 2.4 s to climb back
// to the capacity once the queue had drained: each step waits for the
// encoder to show it. A cut deep enough to move the stream down a rung
// keeps that lead up to the lower rung's Max, which the encoder fills at
// fewer pixels as readily (TestControllerRecoversAcrossRungDown).
//
// # Congestion
//
// An excess above the band (qHigh, or more where the frames' own size noise
// moves the signal more: see band), or above its bottom while the slope
// exceeds slopeHigh, is congestion, except within keyPayback and a round
// trip of a keyframe (whose queue is paid back instead). The capacity is
// then the rate sent a feedback delay ago divided by one plus the queue's
// growth, or the drain rate if that agrees within drainTrust (the drain
// rate measured the bottleneck while the queue built, unless the path
// slowed and the windowed maximum remembers). The agreement is judged on
// the highest rate sent over the span from a feedback delay to a round
// trip ago: the smoothing spreads the arrivals the growth shows over it,
// and a probe's rise leaves the least of them a feedback delay back (at
// 100 kb/s and 15 fps the span is half a second; the cruising rate there
// over the growth put the path at two thirds of the drain rate, a cut
// to half the rate). The smoothed RTT's slope
// shows about half the queue's real growth when the queue first shows
// (lagFactor, measured on the bench), and the queue now is the excess plus
// its growth over the feedback delay; the cut takes the rate to cutFactor
// of the capacity, less what drains that queue within drainTime, never
// below minCut of it. A cut before the last one's queue drained (still
// recovering) takes no capacity above the last one's unless the drain
// rate confirms it: what was sent a feedback delay before it may be the
// start's overshoot (at 100 kb/s and 172 ms, such a cut 2 s in set the
// capacity to 126 kb/s, and the recovery overfilled the path). A probe's
// overshoot is cut to overshootCut instead: the first cut since the queue
// rose, on a queue that grows at a rate the drain rate confirms (the rate
// sent over one plus the growth is within drainTrust of it), so the
// capacity is known and the path did not slow.
// cutFactor's margin is for a capacity that may be overestimated (a path
// that slowed while the drain rate's windowed maximum remembers it
// faster); on an overshoot it only left the link idle. Interleaved runs
// at 100 kb/s (TCP and QUIC, 20 to 172 ms, fourteen a side): utilization
// 81.3 to 83.2%, capture to received 1 ms longer at the median; the
// halvings from 2 to 1 Mb/s back as fast (0.7 to 1.0 s). After such a
// cut the queue is followed in bytes (drainPlan): the bytes written since,
// at the capacity the drain rate confirmed, drain it, and once they have
// the rate climbs back to the cruising rate, a feedback delay before the
// smoothed RTT shows the queue gone; until then a reading of no more queue
// than the cut saw coming is that queue draining, not a second cut's
// cause. Waiting for the signal, the link sat idle 1.8% of the time at
// 500 kb/s while recovering (at 0.9 of the link, the queue empty for most
// of a feedback delay), of 3.8% in all (median of eighteen runs); with
// the plan 0.8 of 2.2%, and utilization 89.6 → 90.7%. One cut per
// feedback delay and 100 ms, none while the queue drains (it is below the
// excess at the last cut, or falls fast enough to be gone within
// drainTime). A queue that grows faster than
// burstSlope (arrivals at four times the link rate, more than a probe or a
// step makes) is a burst, a stall's backlog leaving at once: it is drained
// and the capacity kept. So is the first queue within a feedback delay and
// drainTime of a stall the transport reported while no queue showed (its
// window fell below what it had measured, Observation.WindowBound: BBR's
// PROBE_RTT holds cwnd at four segments for 200 ms every 10 s), or a wait
// of stallGap or more for an invitation, with frames skipped, while no
// queue showed: no invitation comes while the window is small, and the
// frame after it may see the window back (at 15 fps on 2 Mb/s and
// 123 ms, BBR, such a stall held 5 frames, and the cut on its backlog
// took the capacity to 972 kb/s). On a slow
// path that backlog builds its queue more slowly than burstSlope, and read
// as congestion the rate sent a feedback delay earlier, low because of the
// stall, became the capacity: half the path's at 500 kb/s and 172 ms,
// regained over seconds. A window that falls while a queue shows is the
// path's doing (the round trip grew, as after a halving), not a stall;
// either way, a cut whose estimate would read the rate written over a time
// the window fell takes the rate asked for instead: what was written then
// left later, at once, and the rate written, low because frames were
// skipped, is not the load that built the queue (at 500 kb/s and 172 ms
// with BBR, taken for it after PROBE_RTT, it halved the capacity). A
// cut that lowered the capacity below regainBelow of its old value is
// regained at regainSpeed in case it was a burst; if it congests again the
// path did slow. Where the bottleneck's buffer is too short for a queue to
// show (shorter than a frame's serialization, which the self term takes for
// the frames' own), the transport's loss rate is the signal: a loss rate
// over lossHigh above the path's own is a cut to the rate the losses leave
// (see lossMeter). A standing excess that shiftCuts cuts over shiftTime and
// shiftFb feedback delays did not halve is not the stream's own (a longer
// route, another flow's queue), nor one that cuts to under half the rate
// that built it left standing for as long as a queue of its own would
// have taken to drain by half (see unanswered), unless the path slowed
// and overflowed meanwhile (see slowed): the base moves up to it rather
// than starve the stream, and the capacity those cuts lowered is taken
// back. Once it has moved, cuts not answered are undone (see answered):
// beside a CUBIC download each of its cycles drew a series, each taking
// the capacity from a drain rate that measured only the stream's share,
// and the stream kept 5 to 7% of a 2 Mb/s path in the path model (11 to
// 27% with the undo; beside BBR 28 → 39% since the time without cuts
// after an undo doubles with each in a streak: foreignQueue). Frames
// skipped while waiting for invitations
// (Observation.Late; not those a slow encode skipped) at more than skipHigh
// of the frames without a queue mean the transport is the limit (BBR paces
// at its own estimate of an application-limited flow): the rate falls by
// skipStep, below the drain rate unless that is only the window's bound
// (Observation.WindowBound: PROBE_RTT's four segments would cut a 2 Mb/s
// stream to a tenth, to climb back over ten seconds).
//
// # The start
//
// The initial rate is a guess (cmd/sender's default is 1 Mb/s). On a path
// far below it the transport takes the first frames into its initial
// window and then holds the sender (frames skipped, Observation.Late)
// while the bottleneck's queue grows; at 100 kb/s a window of the drain
// rate's takes seconds to measure, and loss recovery (an initial window
// larger than the bottleneck's buffer) delays it further. Until the
// transport has measured a drain rate, three rules hold. The excess's
// envelope spans 2.5 frame intervals, not 2.5 times the gap since the last
// frame: over a gap of 0.84 s (1 Mb/s on 100 kb/s, 172 ms) it reached back
// to the empty path and read a 400 ms queue as none. A cut after frames
// the transport held takes no capacity above its window per round trip
// (the drain rate, Observation.WindowBound): that is more than it let
// through, while the rate sent a feedback delay ago, unknown so early, was
// taken as the rate asked for, and the queue stood for seconds. And a
// capacity the transport never measured is not regained (regainBelow):
// it was the guess. A fourth holds until the first congestion's queue
// (the start's) has drained: a cut takes no capacity below the measured
// drain rate. With no congestion before, that is a lower bound of the
// path's rate (the path's rate, where the start's queue kept the
// bottleneck busy), and no older, faster path is remembered in it; what
// stands is what the start wrote, not the rate sent since. Over QUIC the
// start's losses took seconds to repair, and cuts that read the rate sent
// after the first (a third of the path) over the queue's growth as the
// capacity left the stream at 8 kb/s.
//
// # Per frame and rung
//
// A keyframe's excess over a nominal frame is paid back over keyPayback. A
// frame after skipped ones is one frame interval's worth (the encoder is
// told the interval, not the gap), so its output against the target is
// reckoned over the interval. The rung moves up when the target has held
// for upHold at the current rung's Max or the next rung's default (the
// lesser), or at the next rung's Min with the encoder below saturated of
// its target (it cannot fill the rung), and the next rung's frames would
// encode within encodeBudget (60% of a 30 fps interval); down after
// downHold below the rung's Min, at once below downFar of it; never within
// rungGap of the last change, each costing a keyframe.
//
// qHigh and qLow hold the standing queue between 6 and 12 ms, well inside
// the 25 ms the capture-to-received median may exceed the floor, with
// room for a probe's overshoot. On the lowest rung a frame is 65 ms of
// the link and one larger than the last queues more than 12 ms: there
// the band follows the frames' size noise (band), about 8 to 16 ms. cruiseGain leaves 2% for the frames' size
// noise: with L1T3's even split (media/vpx) a frame's size varies by 2 to
// 10% (log standard deviation, measured at 500 kb/s to 20 Mb/s), and the
// packets carry 3 to 5% besides the payload, so the cruising rate must
// sit within a few percent of the capacity for the payload to reach 90%
// of the link. Measured against 0.95 on emulated paths (TCP, two
// interleaved runs each): utilization +1.0 to +1.5 points with CUBIC at
// 500 kb/s to 20 Mb/s, capture to received 1 to 2.5 ms longer at the
// median (5 to 9 ms over the floor).
type Controller struct {
	ladder     []media.Rung
	rung       int
	upSince    time.Time // when the rate began to qualify for the next rung; zero if it does not
	downSince  time.Time // when the rate fell below the rung's Min; zero if it is not
	lastChange time.Time // last rung change

	started   bool
	prev      time.Time
	phase     phase
	phaseAt   time.Time
	rate      rate.Bitrate // the rate (bytes written, in bits per second) to send at now
	capacity  rate.Bitrate // the path's capacity as last measured
	speed     float64      // the probe's relative growth per second
	lastCut   time.Time
	shotAt    time.Time    // the last cut that judged a probe's overshoot,
	shotDrain rate.Bitrate // and the drain rate then (see evidence)
	lastCutQ  time.Duration
	overhead  float64      // bytes written per encoded byte
	shown     rate.Bitrate // the rate sent when the last congestion cut came, at the current rung or, after a move down, up to its Max; 0 if none
	prevBits  rate.Bitrate
	outRatio  float64 // encoder output over its target
	debt      float64 // keyframe bytes still to pay back
	keyUntil  time.Time
	fb        time.Duration // the feedback delay
	skips     float64       // the recent fraction of frames skipped
	frameAvg  float64       // bytes written per frame, averaged
	encode    time.Duration // encode time per frame at the current rung, averaged; 0 if unknown
	ceiling   rate.Bitrate  // the capacity estimated at the last congestion
	riseFrom  time.Time     // the last time the excess was below the band (low)
	lastBurst bool          // the last cut took the queue for a burst
	measured  bool          // the transport has measured a drain rate
	stallAt   time.Time     // the last stall: its window fell below what it measured, or no invitation for stallGap, no queue showing
	outageAt  time.Time     // the last outage's end (see outage)
	cappedAt  time.Time     // the last time its window fell below what it measured, queue or not
	before    rate.Bitrate  // the capacity before a cut that lowered it much; 0 once regained or refuted
	shift     time.Duration // the base round trip above the transport's minimum
	excessNow time.Duration // the excess the last update read
	fastFrom  time.Time     // since when the excess has read a faster path (see faster)
	sizeDev   float64       // the log size's change from frame to frame, mean absolute
	lastSize  int           // bytes written for the frame before, 0 after a keyframe
	plainAvg  float64       // bytes written per frame, keyframes aside, averaged
	low, high time.Duration // the congestion band, see band
	cuts      int           // cuts in the series since firstCut (see shifted)
	dipped    bool          // the excess fell below the band's top since the last cut
	firstCut  time.Time
	firstCutQ time.Duration
	firstCap  rate.Bitrate // the capacity and ceiling before the series' first cut
	firstCeil rate.Bitrate
	firstSent rate.Bitrate // the rate sent when it came
	firstPkts int64        // and the transport's packets sent and lost then
	firstLost int64
	ans       answer       // the first cut since the last was judged, until its queue shows (see answered)
	foreign   foreignQueue // the judgement that the excess is another flow's queue (see answered)
	// congestedOnce says a congestion cut came; startQueue, that the
	// first one's queue (the start's) has not drained since.
	congestedOnce, startQueue bool
	loss                      lossMeter
	aged                      agedMemory
	overflow                  overflowed
	plan                      drainPlan // the drain of a probe's overshoot

	waits    frameWaits
	fresh    rttSamples
	rttNow   time.Duration // the round trip the last update read (see freshRTT)
	rtts     []sample      // (time, the RTT read (see freshRTT), plainAvg)
	selfFrom time.Time     // the first round trip the self term takes (see excess)
	waited   []sample      // (time, the frames' least wait (see headWait)) while it counts
	scratch  []time.Duration
	sent     []written
}

type sample struct {
	t     time.Time
	v     float64
	size  float64       // bytes written per frame, keyframes aside, averaged (plainAvg) when taken
	shift time.Duration // the base's shift when taken: a round trip's own queueing is over the base it had
}

func (s sample) at() time.Time { return s.t }

// written is a frame's bytes written, spread over the interval from its
// write to the next frame's, in which the link carried them.
type written struct {
	from, to time.Time
	bytes    float64
}

func (w written) at() time.Time { return w.from }

// timed is a sample kept over a window of time.
type timed interface{ at() time.Time }

// Observation is what the sender knows when it is about to encode a frame:
// what the transport reported at the invitation, and what the previous
// frame cost.
type Observation struct {
	Now time.Time
	// DrainRate is the transport's estimate of the rate its backlog
	// drains at: bytes delivered over windows of at least an SRTT while
	// backlogged, a windowed maximum over about ten round trips which
	// application-limited windows may only raise; zero if unknown.
	DrainRate rate.Bitrate
	// WindowBound says DrainRate is only the transport's window bound,
	// min(cwnd, peer window) per smoothed round trip: no window has been
	// measured yet (drain.SourceWindow: at the start, the initial window
	// over the handshake's round trip, 11 Mb/s at 10 ms whatever the
	// path), or the bound is below the measurement (drain.SourceWindowCapped:
	// a stall shrinks it for a moment, as BBR's PROBE_RTT holds cwnd at
	// four segments for 200 ms, or loss recovery). It is what the window
	// lets through now, not what the path carries: the controller neither
	// takes it for the capacity nor cuts to it. After a measurement and
	// without a queue it marks a stall, whose backlog's queue the
	// controller drains as a burst.
	WindowBound bool
	// AppLimited says the estimate comes from application-limited
	// windows: it measured the stream's own rate, a lower bound on the
	// path's. At a cut the controller then takes the queue's growth over
	// it when the growth says the path carries more (see congested).
	AppLimited bool
	// Aged says the estimate is held from a window that closed before
	// the transport's horizon (drain.Estimate.Aged): every window since
	// was application-limited, and the path may have slowed since. It
	// raises the capacity at once only until a cut refutes it (see
	// agedRate).
	Aged bool
	// Newest is the rate of the transport's newest path-limited window
	// (the backlog never ran out over it), which closed at NewestAt; zero
	// if none has. A delivered rate of the path as it was then, while
	// DrainRate's maximum may still hold an older, faster path's.
	Newest   rate.Bitrate
	NewestAt time.Time
	// Unsent is the transport's unsent backlog at the invitation, bytes.
	// The invitation rule keeps it below a few packets, so it carries no
	// rate signal of its own; the controller does not read it.
	Unsent int
	// RTT and MinRTT are the transport's smoothed and smallest round
	// trips; zero if unknown. The RTT's rise above the minimum is the
	// controller's congestion signal.
	RTT, MinRTT time.Duration
	// Sent and Lost are the transport's counts of packets sent and
	// declared lost since the connection began (transport.Invitation);
	// zero if unknown. A fall (a new connection) restarts the count.
	Sent, Lost int64
	// Skipped counts the frames the rung's frame rate would have taken
	// between the previous frame and this one; their bits are not spent
	// (the encoder spends one frame interval's worth on this frame). Late
	// counts those of them that fell while the sender waited for the
	// invitation: the transport drained slower than the encoder filled it.
	// The others fell while the previous frame was encoded or written (a
	// slow encode, a stalled CPU), which says nothing of the path.
	Skipped, Late int
	// Keyframe says the previous frame was a keyframe: its queue is paid
	// back, not taken for congestion.
	Keyframe bool
	// Encoded and Written are the previous frame's size from the encoder
	// and the bytes written for it (packet headers, control packets and
	// framing included); zero before the first frame. Written gives the
	// rate actually sent (the path's load), Encoded against the target
	// tells a saturated encoder.
	Encoded, Written int
	// EncodeTime is how long the previous frame took to encode, for the
	// rung choice: a rung whose frames cannot be encoded in time is not
	// taken.
	EncodeTime time.Duration
	// HeadWait is how long the newest frame whose predecessor the
	// transport has seen acknowledged waited at the bottleneck behind it
	// (transport.Invitation.HeadWait); HeadWaitAt is that frame's write,
	// zero if the transport does not measure it. HeadWaitRepaired says
	// the transport retransmitted since the predecessor's write, so the
	// wait may hold a repair's round trip (see headWait).
	HeadWait         time.Duration
	HeadWaitAt       time.Time
	HeadWaitRepaired bool
	// LatestRTT is the transport's newest round-trip sample and
	// LatestRTTAt the acknowledgement that gave it; zero if it has none
	// (transport.Invitation.LatestRTT). Where the last few samples all lie
	// below RTT, the controller takes them for it (see freshRTT).
	LatestRTT   time.Duration
	LatestRTTAt time.Time
	// Target says DrainRate is a congestion controller's target to follow
	// as is (WebRTC's send-side bandwidth estimate), not a measurement:
	// the controller then sends at it, without corrections of its own.
	Target bool
}

// Decision is the controller's choice for the next frame.
type Decision struct {
	Bitrate     rate.Bitrate // the encoder's target for this frame
	Rung        media.Rung
	RungChanged bool
}

// FrameInterval returns how long a frame rendered at rung frame stands
// for under this decision, the interval the encoder is told: the
// decision's own (its rung's, spread below the rung's Min:
// media.Rung.IntervalAt) if the frame is at its rung, and a frame rendered
// before a rung change its own rung's.
func (d Decision) FrameInterval(frame media.Rung, srcFPS int) time.Duration {
	if frame.Size != d.Rung.Size {
		return frame.Interval(srcFPS)
	}
	return d.Interval(srcFPS)
}

// Interval returns the time between frames the decision asks for from a
// source rendering srcFPS frames per second: its rung's, spread below the
// rung's Min (media.Rung.IntervalAt).
func (d Decision) Interval(srcFPS int) time.Duration {
	return d.Rung.IntervalAt(srcFPS, d.Bitrate)
}

// NewController returns a controller over ladder (ascending, non-empty) that
// starts at the given bitrate, clamped to the ladder's range.
func NewController(ladder []media.Rung, start rate.Bitrate) *Controller {
	c := &Controller{ladder: ladder, overhead: 1, outRatio: 1}
	c.rate = c.clamp(start)
	c.capacity = c.rate
	c.rung = c.startRung(c.rate)
	return c
}

// ControlState is the controller's state after an update: what a frame's
// record keeps of why its target was chosen.
type ControlState struct {
	Phase    string        // starting, recovering, cruising or probing
	Rate     rate.Bitrate  // the rate to send at, in bytes written (packets and control included)
	Capacity rate.Bitrate  // the path's capacity as last estimated, in the same bytes
	Excess   time.Duration // the queueing the update read above the base and the frames' own (see excess)
	Shift    time.Duration // the base round trip above the transport's minimum
	RTT      time.Duration // the round trip the update read: the smoothed RTT, or fresher samples below it (see freshRTT)
	// Wait is the least of the last frames' waits behind their
	// predecessors, less the shift (see headWait); WaitKnown says the
	// transport reported enough of them and not every one of them spans
	// a repair.
	Wait      time.Duration
	WaitKnown bool
	Cut       bool // the update made a cut (congestion, or the transport's limit)
	// Loss is the share of packets lost over the last window judged,
	// LossBase the share taken for the path's own (see lossMeter).
	Loss, LossBase float64
	// Overflow says a probe lost packets within overflowKeep: probes lead
	// the drain rate by little (see overflowed).
	Overflow bool
}

// State returns the controller's state after the last update: zero until
// it has acted on a drain rate (none in modes that give the sender no view
// of the path).
func (c *Controller) State() ControlState {
	if c.fb == 0 { // control has not run (it sets the feedback delay, a round trip at least)
		return ControlState{}
	}
	s := ControlState{
		Phase: c.phase.String(), Rate: c.rate, Capacity: c.capacity, Excess: c.excessNow, Shift: c.shift, RTT: c.rttNow,
		Cut: c.lastCut.Equal(c.prev), Loss: c.loss.frac, LossBase: c.loss.base,
		Overflow: c.overflowing(c.prev),
	}
	s.Wait, s.WaitKnown = c.waits.least()
	return s
}

// Rung returns the current rung.
func (c *Controller) Rung() media.Rung { return c.ladder[c.rung] }

// Target returns the encoder's target before the rung's limits: the
// bitrate the controller believes the path carries now.
func (c *Controller) Target() rate.Bitrate {
	return c.clamp(rate.Bitrate(float64(c.rate) / c.overhead))
}

// Update takes one observation and returns the decision for the next frame.
func (c *Controller) Update(o Observation) Decision {
	if !c.started {
		c.started, c.prev, c.phaseAt = true, o.Now, o.Now
	}
	dt := max(o.Now.Sub(c.prev), 0)
	o.RTT = c.freshRTT(o)
	c.rttNow = o.RTT
	c.account(o, dt)
	// Without a drain rate the transport gives no view of the path (no
	// source buffer management): the target stays where it is, as an
	// application configured for a bitrate would keep it.
	switch {
	case o.Target && o.DrainRate > unknownDrain:
		c.rate = c.clamp(o.DrainRate) // it already probes and backs off
	case o.DrainRate > unknownDrain && o.RTT > 0:
		c.control(o, dt)
	}
	c.prev = o.Now
	changed := c.chooseRung(o.Now)
	r := c.ladder[c.rung]
	video := rate.Bitrate(max(float64(c.rate)-c.debt/keyPayback.Seconds()*8, float64(c.rate)*0.5) / c.overhead)
	if c.phase == cruising && c.riseFrom.Equal(o.Now) { // no queue now
		// libvpx's CBR output runs a few percent under its target
		// (0.96 at a steady target); while cruising on an empty queue,
		// ask for what it leaves short, so that what is written is the
		// rate. Not below makeUpLow: there the output is still rising to
		// a raised target or the rung saturates. Not otherwise: a cut's
		// drain margin and a probe's step are reckoned on the bytes
		// written, and the shortfall left in them keeps queues short.
		video = video.Scale(1 / min(max(c.outRatio, makeUpLow), 1))
	}
	// Below the lowest rung's Min the frame rate falls instead
	// (media.Rung.IntervalAt): the sender spreads the frames so that
	// each keeps a frame's bits at Min. (Above it, from a source faster
	// than 30 fps, the frames of a target between Min and MinAt are
	// spread too.)
	lo := r.Min
	if c.rung == 0 {
		lo = 0
	}
	b := min(max(c.clamp(video), lo), r.Max)
	c.prevBits = b
	return Decision{Bitrate: b, Rung: r, RungChanged: changed}
}

// Interval returns the time between frames the last decision asks for
// from a source rendering srcFPS frames per second: its rung's interval,
// spread below the rung's Min (media.Rung.IntervalAt); before the
// first decision, the starting rung's.
func (c *Controller) Interval(srcFPS int) time.Duration {
	return c.ladder[c.rung].IntervalAt(srcFPS, c.prevBits)
}

// account takes in what the previous frame cost: the overhead of packets
// and control, the encoder's output against its target, the bytes sent,
// and a keyframe's excess to pay back.
func (c *Controller) account(o Observation, dt time.Duration) {
	// The lowered target (see Update) pays the debt back at
	// debt/keyPayback.
	c.debt -= c.debt * min(dt.Seconds()/keyPayback.Seconds(), 1)
	if c.outage(o, dt) {
		c.stallAt, c.outageAt = o.Now, o.Now
		c.loss.from = later(c.loss.from, o.Now.Add(c.fb))
	} else if !o.Now.Before(c.keyUntil) {
		miss := float64(o.Late) / float64(o.Late+1)
		c.skips += (miss - c.skips) * min(dt.Seconds(), 1)
	}
	if o.EncodeTime > 0 {
		if c.encode == 0 {
			c.encode = o.EncodeTime
		}
		c.encode += (o.EncodeTime - c.encode) / 8
	}
	if o.Written <= 0 || o.Encoded <= 0 {
		return
	}
	if c.frameAvg == 0 {
		c.frameAvg = float64(o.Written)
	}
	if c.lastSize > 0 && !o.Keyframe {
		d := math.Abs(math.Log(float64(o.Written) / float64(c.lastSize)))
		c.sizeDev += (d - c.sizeDev) * noiseGain
	}
	c.lastSize = o.Written
	if o.Keyframe {
		c.lastSize = 0
	} else if c.plainAvg == 0 {
		c.plainAvg = float64(o.Written)
	} else {
		c.plainAvg += (float64(o.Written) - c.plainAvg) * 0.1
	}
	c.frameAvg += (float64(o.Written) - c.frameAvg) * 0.1
	c.overhead += (float64(o.Written)/float64(o.Encoded) - c.overhead) * 0.1
	c.sent = push(c.sent, written{c.prev, o.Now, float64(o.Written)}, o.Now.Add(-sentKeep))
	c.plan.add(o.Written, dt, o.Now)
	if c.prevBits > 0 && dt > 0 {
		// The previous frame was one interval's worth; the gap before
		// this one spans 1+Skipped intervals.
		got := float64(o.Encoded*8) / (dt.Seconds() / float64(1+o.Skipped)) / float64(c.prevBits)
		c.outRatio += (min(got, 2) - c.outRatio) * min(dt.Seconds(), 1)
	}
	if o.Keyframe {
		nominal := float64(c.rate) / 8 * dt.Seconds()
		if extra := float64(o.Written) - nominal; extra > 0 {
			c.debt += extra
		}
		c.keyUntil = later(c.keyUntil, o.Now.Add(keyPayback+o.RTT))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// push appends s to xs, dropping samples before since and beyond
// maxSamples.
func push[S timed](xs []S, s S, since time.Time) []S {
	i := 0
	for i < len(xs) && (xs[i].at().Before(since) || len(xs)-i >= maxSamples) {
		i++
	}
	if i > 0 {
		xs = append(xs[:0], xs[i:]...)
	}
	return append(xs, s)
}

// sentRate returns the rate of bytes written in [from, to), in bits per
// second; 0 if unknown. Each frame's bytes count spread over the interval
// to the next frame, so that a window holds whole frame intervals' worth.
// Counted at their write times, a window of 500 ms held 7 or 8 frames at
// 15 frames a second: the rate jumped by a frame's share (7%) with the
// frames' jitter against the window's ends, and the capacity, raised to
// the rate sent without a queue, took the highest; at exactly 15 frames a
// second (the path model) it read 7% low, and a probe stopped short of a
// doubled 200 kb/s link.
func (c *Controller) sentRate(from, to time.Time) rate.Bitrate {
	if to.Sub(from) <= 0 || len(c.sent) == 0 || c.sent[0].from.After(from) {
		return 0
	}
	var n float64
	for _, w := range c.sent {
		if !w.from.Before(to) {
			break
		}
		d := w.to.Sub(w.from)
		if d <= 0 {
			if !w.from.Before(from) {
				n += w.bytes
			}
			continue
		}
		lo, hi := later(w.from, from), w.to
		if hi.After(to) {
			hi = to
		}
		if hi.After(lo) {
			n += w.bytes * float64(hi.Sub(lo)) / float64(d)
		}
	}
	return rate.Bitrate(n * 8 / to.Sub(from).Seconds())
}

// control is one step of the rate control proper.
func (c *Controller) control(o Observation, dt time.Duration) {
	c.rtts = push(c.rtts, sample{o.Now, float64(o.RTT), c.plainAvg, c.shift}, o.Now.Add(-refWindow))
	c.fb = c.feedback(o, dt)
	if c.selfFrom.IsZero() {
		c.selfFrom = o.Now.Add(selfWait * c.fb)
	}
	c.low, c.high = c.band()
	excess := c.excess(o, dt)
	c.shifted(o, excess)
	own := c.excess(o, dt)
	wait, waits := c.headWait(o)
	excess = max(own, wait)
	c.excessNow = excess
	c.watchFaster(o.Now, own, waits)
	lossy := c.lossCongested(o, dt)
	c.watchOverflow(o)
	if measured(o) > 0 {
		c.measured = true
	} else if c.measured && o.WindowBound {
		c.cappedAt = o.Now
		if excess < c.high {
			c.stallAt = o.Now
		}
	}
	if c.measured && o.Late > 0 && dt >= stallGap && excess < c.high {
		c.stallAt = o.Now
	}
	c.evidence(o, excess)
	if excess <= c.high {
		c.dipped = true
	}
	if excess < c.low {
		c.riseFrom = o.Now
		c.cuts = 0 // the queue drained: a series of cuts without effect ends
		c.startQueue = false
	}
	c.answered(o, excess)
	slope := c.slope(o.Now)
	// A keyframe's queue is paid back, another flow's not the stream's.
	foreign := c.foreign.holds(o.Now, c.shift, func() bool { return c.overDrained(o) })
	quiet := o.Now.Before(c.keyUntil) || foreign
	plan := c.plan.state(o.Now, excess, c.fb+planLag)
	switch {
	case !lossy && plan == planDrained:
		c.grow(o, dt) // the queue is gone; the signal shows it a feedback delay late
	case !quiet && plan != planDraining && (excess > c.high || (slope > slopeHigh && excess > c.low)):
		c.congested(o, excess, slope)
	case !quiet && lossy && o.Now.Sub(c.lastCut) >= c.fb && c.loadLost(o):
		c.lossCut(o)
	case !quiet && c.skips > skipHigh:
		c.transportLimited(o)
	case excess < c.low || (c.phase == recovering && excess < c.high) || foreign:
		c.grow(o, dt) // another flow's queue stands: see answered
	default:
		c.phaseAt = c.phaseAt.Add(dt) // hold: the phase's clock waits
	}
	if c.lastCut.Equal(o.Now) {
		// The window's losses came from the load before the cut.
		c.loss.from = later(c.loss.from, o.Now.Add(c.fb))
	}
}
