// Package pathmodel is a virtual-time bench for the sender's rate
// controller: a model of one bottleneck path fed by the controller, fast
// and deterministic, so that the controller can be checked on many paths.
//
// The model, from the camera to the receiver:
//
//   - A 30 fps source; the sender takes the newest picture when the
//     transport invites a frame (the invitation rule is transport/tcp's
//     Decide on the model's socket state, with the lead the sender declares:
//     sender.LeadMeter over the model's encode times), no more often than
//     the rung's frame rate. Without the lead the model's frames
//     met a socket emptied by their encode, where the sender's meet half a
//     replenish time of backlog: the model read the stream's utilization
//     low by up to 11 points and capture to received over the floor low by
//     up to 14 ms at the median (BBR at 2.8 and 10 Mb/s, 10 ms), and hid a
//     start that never ended there (sender's held).
//   - An encoder (EncoderModel): frame sizes around target/fps by
//     temporal layer (L1T3's layers each the mean by default) with
//     log-normal noise, keyframes at the start, on request and on a rung
//     change, one frame interval's worth after a gap (the sender tells
//     libvpx the interval, not the gap), rate control that follows a
//     raised target over about a second, a saturation rate per rung and an
//     encode time per rung, all measured on libvpx.
//   - The sender's packet overhead (RTP headers, framing, a timing report
//     every 200 ms) and a TCP sender: an unsent backlog, segments, cwnd, the
//     ACK clock, SACK/RACK loss detection, tail-loss probes and RTO,
//     Linux's delivery-rate sampling and application-limited marking, the
//     smoothed RTT and minimum RTT (the handshake's round trip among them),
//     and cwnd validation; optionally a receiver that delays its ACKs as
//     Linux does (Path.DelayedAck). Two congestion
//     controls: CUBIC (slow start with HyStart, the cubic function, the
//     Reno-friendly region, growth only while cwnd-limited; paced as
//     Linux paces a socket that asks, where the sender asks) and BBR v1
//     (STARTUP, DRAIN, the PROBE_BW gain cycle, PROBE_RTT, cwnd at twice
//     the BDP, pacing at the bandwidth estimate times the gain).
//   - The drain-rate estimate the controller sees: the transport's own
//     estimator (transport/drain) fed a reading at every ACK and write
//     (Estimator).
//   - The path: a bottleneck whose rate follows a schedule of steps, a
//     drop-tail queue limited in bytes, optional random loss, a base
//     round trip (which may step too) split evenly between the directions,
//     optional jitter on the forward direction's delay (no reordering),
//     and optional competing bulk TCP flows of the same congestion control
//     sharing the bottleneck (Path.Cross; Result.CrossUtil is their share).
//
// Run returns every frame's times and a summary: source delay (write to
// the last byte leaving the host), capture to received, the floor (one-way
// delay with half the jitter, the median frame's serialization at the
// bottleneck, the median encode) and the excess over it, the standing queue, utilization, rung
// fractions, frame rate, and the recovery after each step. Bulk returns
// what a backlogged flow of the same congestion control makes of the same
// path, the bound for utilization.
//
// The model does not have reordering, TSO or qdisc behaviour (fq, TSQ),
// ACK compression, Linux's adaptive delayed-ACK timer, or cross traffic
// other than bulk flows of the path's congestion control; loss recovery is exact where Linux's is heuristic, and PRR is a single
// reduction. Its results are a check of the controller's design, not a
// prediction of a particular Linux path.
package pathmodel
