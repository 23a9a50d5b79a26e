package tcp

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"time"

	"replenish/rate"
	"replenish/transport/drain"
)

// Info is one reading of a socket's struct tcp_info (TCP_INFO), decoded from
// the kernel's bytes, including fields that x/sys's TCPInfo drops (the
// app-limited bit). Durations and rates are converted to their Go types;
// counts of segments and bytes keep the kernel's meaning.
type Info struct {
	State       uint8 // TCP state: 1 established, 7 close, ... (include/net/tcp_states.h)
	CAState     uint8 // congestion-avoidance state: 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss
	Retransmits uint8 // consecutive retransmissions of the head segment
	Probes      uint8
	Backoff     uint8
	Options     uint8 // TCPI_OPT_* bits
	SndWscale   uint8
	RcvWscale   uint8
	// AppLimited is tcpi_delivery_rate_app_limited: the latest delivery-rate
	// sample was taken while the sender had too little data to fill cwnd.
	AppLimited bool

	RTO, ATO time.Duration
	MSS      int // sender MSS, bytes (tcpi_snd_mss)
	RcvMSS   int // bytes

	Unacked int // segments in flight (tcpi_unacked)
	Sacked  int // segments
	Lost    int // segments
	Retrans int // segments being retransmitted now
	Fackets int

	LastDataSent, LastAckSent, LastDataRecv, LastAckRecv time.Duration // since then

	PMTU         int
	RcvSsthresh  int
	RTT          time.Duration // smoothed RTT (tcpi_rtt)
	RTTVar       time.Duration
	SndSsthresh  int // segments
	Cwnd         int // congestion window, segments (tcpi_snd_cwnd)
	AdvMSS       int
	Reordering   int
	RcvRTT       time.Duration
	RcvSpace     int
	TotalRetrans int // segments retransmitted over the connection's life

	PacingRate, MaxPacingRate rate.Bitrate
	BytesAcked, BytesReceived uint64
	SegsOut, SegsIn           uint32
	NotsentBytes              int           // written but not yet sent (tcpi_notsent_bytes)
	MinRTT                    time.Duration // 0 if no sample
	DataSegsIn, DataSegsOut   uint32
	// DeliveryRate is the latest delivery-rate sample; 0 before the first.
	DeliveryRate rate.Bitrate

	// The fields below are zero when the kernel is too old to report them
	// (see Len); SndWnd and RcvWnd are then -1.
	BusyTime, RwndLimited, SndbufLimited time.Duration
	Delivered, DeliveredCE               uint32 // segments
	BytesSent, BytesRetrans              uint64
	DSACKDups, ReordSeen, RcvOOOPack     uint32
	SndWnd                               int // peer's advertised window, bytes; -1 if not reported
	RcvWnd                               int // our advertised window, bytes; -1 if not reported
	Rehash                               uint32
	TotalRTO, TotalRTORecoveries         uint16
	TotalRTOTime                         time.Duration

	// Len is how many bytes of struct tcp_info the kernel returned.
	Len int
}

// MinInfoLen is the shortest struct tcp_info ParseInfo accepts: it ends
// with tcpi_delivery_rate (Linux 4.9 and later).
const MinInfoLen = 168

// Offsets into struct tcp_info (include/uapi/linux/tcp.h) of the fields
// whose presence depends on the kernel version.
const (
	offBusyTime    = 168 // through tcpi_sndbuf_limited: 192
	offDelivered   = 192 // through tcpi_delivered_ce: 200
	offBytesSent   = 200 // through tcpi_bytes_retrans: 216
	offDSACKDups   = 216 // through tcpi_rcv_ooopack: 228
	offSndWnd      = 228
	offRcvWnd      = 232
	offRehash      = 236
	offTotalRTO    = 240 // through tcpi_total_rto_time: 248
	maxInfoLenUsed = 248
)

// ne is the byte order of struct tcp_info: the host's.
var ne = binary.NativeEndian

// bigEndian reports whether the host is big-endian, where C compilers
// allocate bit-fields from the most significant bit.
var bigEndian = ne.Uint16([]byte{0, 1}) == 1

// ParseInfo decodes the bytes of a struct tcp_info, in the host's byte
// order, as getsockopt(TCP_INFO) returns them. It needs at least MinInfoLen
// bytes and returns an error wrapping ErrShortInfo otherwise; fields after
// that are decoded when present. It is pure and never panics.
func ParseInfo(raw []byte) (Info, error) {
	if len(raw) < MinInfoLen {
		return Info{}, fmt.Errorf("%w: %d bytes, need %d", ErrShortInfo, len(raw), MinInfoLen)
	}
	u32 := func(off int) uint32 { return ne.Uint32(raw[off:]) }
	u64 := func(off int) uint64 { return ne.Uint64(raw[off:]) }
	usec := func(off int) time.Duration { return time.Duration(u32(off)) * time.Microsecond }
	msec := func(off int) time.Duration { return time.Duration(u32(off)) * time.Millisecond }
	count := func(off int) int { return int(u32(off)) }
	appLimitedBit := raw[7] & 1
	if bigEndian {
		appLimitedBit = raw[7] >> 7
	}
	wscale := raw[6]
	snd, rcv := wscale&0x0f, wscale>>4
	if bigEndian {
		snd, rcv = rcv, snd
	}
	i := Info{
		State:       raw[0],
		CAState:     raw[1],
		Retransmits: raw[2],
		Probes:      raw[3],
		Backoff:     raw[4],
		Options:     raw[5],
		SndWscale:   snd,
		RcvWscale:   rcv,
		AppLimited:  appLimitedBit == 1,

		RTO:     usec(8),
		ATO:     usec(12),
		MSS:     count(16),
		RcvMSS:  count(20),
		Unacked: count(24),
		Sacked:  count(28),
		Lost:    count(32),
		Retrans: count(36),
		Fackets: count(40),

		LastDataSent: msec(44),
		LastAckSent:  msec(48),
		LastDataRecv: msec(52),
		LastAckRecv:  msec(56),

		PMTU:         count(60),
		RcvSsthresh:  count(64),
		RTT:          usec(68),
		RTTVar:       usec(72),
		SndSsthresh:  count(76),
		Cwnd:         count(80),
		AdvMSS:       count(84),
		Reordering:   count(88),
		RcvRTT:       usec(92),
		RcvSpace:     count(96),
		TotalRetrans: count(100),

		PacingRate:    kernelRate(u64(104)),
		MaxPacingRate: kernelRate(u64(112)),
		BytesAcked:    u64(120),
		BytesReceived: u64(128),
		SegsOut:       u32(136),
		SegsIn:        u32(140),
		NotsentBytes:  count(144),
		DataSegsIn:    u32(152),
		DataSegsOut:   u32(156),
		DeliveryRate:  kernelRate(u64(160)),

		SndWnd: -1,
		RcvWnd: -1,
		Len:    len(raw),
	}
	if m := u32(148); m != math.MaxUint32 {
		i.MinRTT = time.Duration(m) * time.Microsecond
	}
	i.decodeNewer(raw)
	return i, nil
}

// decodeNewer decodes the fields of struct tcp_info that newer kernels
// append after MinInfoLen, those that raw is long enough to hold.
func (i *Info) decodeNewer(raw []byte) {
	u32 := func(off int) uint32 { return ne.Uint32(raw[off:]) }
	u64 := func(off int) uint64 { return ne.Uint64(raw[off:]) }
	usec64 := func(off int) time.Duration { return time.Duration(u64(off)) * time.Microsecond }
	n := len(raw)
	if n >= offBusyTime+24 {
		i.BusyTime = usec64(offBusyTime)
		i.RwndLimited = usec64(offBusyTime + 8)
		i.SndbufLimited = usec64(offBusyTime + 16)
	}
	if n >= offDelivered+8 {
		i.Delivered = u32(offDelivered)
		i.DeliveredCE = u32(offDelivered + 4)
	}
	if n >= offBytesSent+16 {
		i.BytesSent = u64(offBytesSent)
		i.BytesRetrans = u64(offBytesSent + 8)
	}
	if n >= offDSACKDups+12 {
		i.DSACKDups = u32(offDSACKDups)
		i.ReordSeen = u32(offDSACKDups + 4)
		i.RcvOOOPack = u32(offDSACKDups + 8)
	}
	if n >= offSndWnd+4 {
		i.SndWnd = int(u32(offSndWnd))
	}
	if n >= offRcvWnd+4 {
		i.RcvWnd = int(u32(offRcvWnd))
	}
	if n >= offRehash+4 {
		i.Rehash = u32(offRehash)
	}
	if n >= maxInfoLenUsed {
		i.TotalRTO = ne.Uint16(raw[offTotalRTO:])
		i.TotalRTORecoveries = ne.Uint16(raw[offTotalRTO+2:])
		i.TotalRTOTime = time.Duration(u32(offTotalRTO+4)) * time.Millisecond
	}
}

// kernelRate converts a kernel rate in bytes per second, where ~0 means
// unlimited, to a Bitrate without overflowing.
func kernelRate(bytesPerSecond uint64) rate.Bitrate {
	return saturatingRate(float64(bytesPerSecond))
}

// ReadInfo returns a fresh TCP_INFO reading of c. It returns ErrUnsupported
// on platforms other than Linux. It is safe for concurrent use.
func ReadInfo(c *net.TCPConn) (Info, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Info{}, fmt.Errorf("tcp: reading TCP_INFO: %w", err)
	}
	var (
		info Info
		ierr error
		buf  [infoBufLen]byte
	)
	if err := raw.Control(func(fd uintptr) { info, ierr = readInfo(int(fd), buf[:]) }); err != nil {
		return Info{}, fmt.Errorf("tcp: reading TCP_INFO: %w", err)
	}
	return info, ierr
}

// infoBufLen is the buffer offered to getsockopt(TCP_INFO): larger than any
// struct tcp_info so far, so that the kernel's length tells its version.
const infoBufLen = 512

// inputFor returns the rule's input for a TCP_INFO reading under cfg, with
// est as the drain rate and lead as the application's production time. In
// the kernel-faithful mode (cfg.Mode.Kernel) the rule takes the kernel's
// delivery-rate sample instead and no lead.
func inputFor(i Info, cfg Config, est drain.Estimate, lead time.Duration) RuleInput {
	if cfg.Mode.Kernel {
		est, lead = KernelEstimate(i), 0
	}
	return RuleInput{
		Unsent:         i.NotsentBytes,
		MSS:            i.MSS,
		DrainRate:      est.Rate,
		DrainSource:    est.Source,
		Nagle:          cfg.Mode.Nagle,
		NoSubMSSClause: cfg.Mode.NoSubMSS,
		ReplenishTime:  cfg.Mode.ReplenishTime,
		Lead:           lead,
	}
}

// KernelEstimate returns the drain rate of the measured kernel
// implementation of TCP_REPLENISH_TIME (seeds/000): the kernel's
// delivery-rate sample once one exists (drain.SourceStack), before that
// min(cwnd × MSS, peer window) / SRTT (drain.SourceWindow).
func KernelEstimate(i Info) drain.Estimate {
	if i.DeliveryRate > 0 {
		return drain.Estimate{Rate: i.DeliveryRate, AppLimited: i.AppLimited, Source: drain.SourceStack}
	}
	if r, ok := drain.WindowRate(i.Cwnd*i.MSS, i.SndWnd, i.RTT); ok {
		return drain.Estimate{Rate: r, Source: drain.SourceWindow, Bound: r}
	}
	return drain.Estimate{}
}

// SampleOf returns the drain estimator's sample for a TCP_INFO reading
// taken at at. acks is the count of segments received so far, unwrapped
// from tcpi_segs_in (which wraps at 2^32).
//
// The sender counts as backlogged while bytes are unsent, or, with Nagle
// on, while a full segment is: Nagle holds a shorter tail by itself. Since
// the unsent backlog only shrinks between writes, and the Conn reads
// TCP_INFO before every write, a backlog now means one throughout the
// interval since the previous reading. It counts as recovering in the
// disorder, recovery and loss states, and whenever segments are selectively
// acknowledged above a hole: then tcpi_bytes_acked waits for the repair.
// In flight is the bytes sent for the first time less those acknowledged;
// a kernel too old to report tcpi_bytes_sent (before 4.19) gives
// unacknowledged segments times the MSS instead. The latest acknowledgement
// arrived tcpi_last_ack_recv before at, counted in jiffies (4 ms here):
// taken only when it is at least ackClock, since a reading closer to the
// acknowledgement than that is the better end of a window (readings that
// follow acknowledgements closely, as a backlogged sender's do, end every
// window alike, and the rounding of two ends would not cancel). The
// kernel's app-limited bit is not an input: it describes the delivery-rate
// sample the kernel kept, which while the sender is application-limited is
// the stale one.
func SampleOf(i Info, at time.Time, acks uint64, nagle bool) drain.Sample {
	backlog := 1
	if nagle && i.MSS > 0 {
		backlog = i.MSS
	}
	inFlight := i.Unacked * i.MSS
	if i.Len >= offBytesSent+16 && i.BytesSent >= i.BytesRetrans+i.BytesAcked {
		inFlight = int(i.BytesSent - i.BytesRetrans - i.BytesAcked)
	}
	var acked time.Time
	if i.LastAckRecv >= ackClock {
		acked = at.Add(-i.LastAckRecv)
	}
	return drain.Sample{
		At:         at,
		AckedAt:    acked,
		Delivered:  i.BytesAcked,
		Acks:       acks,
		InFlight:   inFlight,
		Backlogged: i.NotsentBytes >= backlog,
		Recovering: i.CAState == caDisorder || i.CAState >= caRecovery || i.Sacked > 0,
		SRTT:       i.RTT,
		MinRTT:     i.MinRTT,
		SlackTime:  FrameSlack,
		SlackMax:   i.MSS,
		Cwnd:       i.Cwnd * i.MSS,
		PeerWindow: i.SndWnd,
		PacingRate: i.PacingRate,
	}
}

// FrameSlack, with a segment at most, is the slack of a reading
// (drain.Sample.SlackTime): the packet in service at the bottleneck, whose
// serialization tcpi_min_rtt (the handshake's, on small packets) leaves
// out. For a stream of a packet a frame that is the frame, the rate over
// a frame interval (40 ms: 25 frames a second or more). The receiver's
// delayed ACK adds nothing for frames: Linux acknowledges a segment that
// ends a write (PSH) as its reader takes it, and the viewer reads at once.
const FrameSlack = 40 * time.Millisecond

// ackClock is the least tcpi_last_ack_recv taken for the time of the
// latest acknowledgement: two jiffies at HZ=250.
const ackClock = 8 * time.Millisecond

// Congestion-avoidance states (tcpi_ca_state, include/net/tcp.h).
const (
	caDisorder = 1 // duplicate acknowledgements or selective ones seen
	caRecovery = 3 // fast recovery; 4 is loss (after a timeout)
)
