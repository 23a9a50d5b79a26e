package viewer

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"replenish/metrics"
	"replenish/rate"
)

// Stats is the viewer's state as GET /api/stats returns it. The JSON
// schema (times and durations in ms, rates in bits per second, percentiles
// by nearest rank over the report window, null when there are no samples):
//
//	{
//	  "now_ms": viewer clock, ms since the Unix epoch,
//	  "tls_fingerprint": "sha256:<64 hex digits>", the viewer's QUIC
//	                                  and HTTPS certificate, for senders to pin
//	  "streams": [{                   one per sender stream, by id
//	    "id", "name", "remote",       name from the sender's SDES (until then
//	                                  its address); remote = its address
//	    "transport": "tcp", "quic" or "webrtc" (WHIP), of the current
//	                                  (or last) connection
//	    "mode",                       the sender's buffer policy as it states
//	                                  it (SDES NOTE), such as "replenish=15ms";
//	                                  "" until it does
//	    "connected": bool,
//	    "frames_received", "bytes",   totals over the stream's life
//	    "bitrate_bps", "fps",         over the last RateWindow (2 s)
//	    "width", "height",            from the last keyframe (0 unknown)
//	    "keyframes",                  keyframes received
//	    "keyframe_requests",          PLIs sent to the sender
//	    "clock_offset_ms",            viewer clock minus sender clock, as the
//	                                  sender reports it; null before a report
//	    "dropped_partial_frames",     incomplete frames the assembler discarded
//	    "frames_lost",                frames that never arrived whole: QUIC
//	                                  streams the sender reset (expire mode),
//	                                  gaps in RTP sequence numbers (one each)
//	    "frames_undecodable",         frames_lost, and the frames that arrived
//	                                  after a loss and depend on a lost frame
//	                                  (delta frames until the next keyframe),
//	                                  which are not sent to pages (totals)
//	    "capture_to_received_ms": {"p50","p95","p99","n"},  received complete
//	                                  minus the RTP capture time (abs-capture-
//	                                  time, offset-corrected): the latency
//	                                  without a browser; null (n 0) for a
//	                                  sender that does not send the extension
//	    "native_players",             WHEP sessions open on the stream
//	    "sender": {"drain_rate_bps", "target_bps"},  from the sender's last
//	                                  report; null before one
//	    "parts_ms": {                 per frame, joined with the sender's timing
//	      "wait":         {"p50","p95"},  capture to encode start
//	      "encode":       {"p50","p95"},  encode start to end
//	      "source_delay": {"p50","p95"},  write start to last byte left the host
//	      "network":      {"p50","p95"}}  left the host to received complete
//	  }],                                 (clock-offset corrected)
//	  "clients": [{                   one per connected page, by id
//	    "id", "remote",
//	    "mode",                       the page connection's buffer policy
//	                                  (Config.PageMode): "replenish=15ms", or
//	                                  "default" where it is unmanaged
//	    "frames_sent", "frames_dropped", "frames_displayed",  totals since
//	                                  the page connected
//	    "frames_sent_by_layer", "frames_dropped_by_layer",
//	    "frames_displayed_by_layer",  the same by temporal layer: four counts,
//	                                  TID 0 to 3 (keyframes and the frames of
//	                                  a stream without layers in 0); displayed
//	                                  as the page reports each frame's layer
//	    "catch_up_frames",            frames sent from a stream's latest
//	                                  keyframe on when the page joined it
//	                                  (counted in frames_sent too)
//	    "keyframes_requested",        keyframe requests that went to a sender
//	                                  for this page (its queue dropped to a
//	                                  keyframe, or the page asked)
//	    "timestamp_misreads",         displayed frames whose stamp did not
//	                                  read (total)
//	    "g2g_ms": {"p50","p95","p99","n"},  glass-to-glass over the report
//	                                  window, all its streams: displayed (viewer
//	                                  clock) minus the capture time read from
//	                                  the pixels, offset-corrected
//	    "decode_ms": {"p50","p95"}, "draw_ms": {"p50","p95"},
//	    "native_g2g_ms": {"p50","p95","p99","n"},  glass-to-glass of the
//	                                  page's native players (WHEP: the
//	                                  browser's own jitter buffer, decoder and
//	                                  renderer), all its streams
//	    "streams": [{                 per stream the page has seen
//	      "stream", "frames_sent", "frames_dropped", "frames_displayed",
//	      "frames_sent_by_layer", "frames_dropped_by_layer",
//	      "frames_displayed_by_layer", "catch_up_frames",
//	      "keyframes_requested",
//	      "timestamp_misreads", "g2g_ms": {"p50","p95","p99","n"},
//	      "decode_ms", "draw_ms",
//	      "delivery_ms": {"p50","p95"}, received complete to arrival in the page
//	      "native": {                 the page's native player of the stream
//	        "frames_displayed", "timestamp_misreads",  totals
//	        "g2g_ms": {"p50","p95","p99","n"}}  from the pixels it presented
//	    }]
//	  }]
//	}
//
// frames_dropped counts frames the viewer did not send to the page: upper
// layer frames that went stale or whose layer awaited a sync frame, and
// frames of a queue dropped to the next keyframe (with those skipped until
// it).
type Stats struct {
	NowMS          int64         `json:"now_ms"`
	TLSFingerprint string        `json:"tls_fingerprint"`
	Streams        []StreamStats `json:"streams"`
	Clients        []ClientStats `json:"clients"`
}

// StreamStats describes one sender stream; see Stats.
type StreamStats struct {
	ID                   uint32              `json:"id"`
	Name                 string              `json:"name"`
	Remote               string              `json:"remote"`
	Transport            string              `json:"transport"`
	Mode                 string              `json:"mode"`
	Connected            bool                `json:"connected"`
	FramesReceived       uint64              `json:"frames_received"`
	Bytes                uint64              `json:"bytes"`
	Bitrate              rate.Bitrate        `json:"bitrate_bps"`
	FPS                  Float               `json:"fps"`
	Width                int                 `json:"width"`
	Height               int                 `json:"height"`
	Keyframes            uint64              `json:"keyframes"`
	KeyframeRequests     uint64              `json:"keyframe_requests"`
	ClockOffsetMS        Float               `json:"clock_offset_ms"`
	DroppedPartialFrames uint64              `json:"dropped_partial_frames"`
	FramesLost           uint64              `json:"frames_lost"`
	FramesUndecodable    uint64              `json:"frames_undecodable"`
	CaptureToReceived    metrics.Percentiles `json:"capture_to_received_ms"` // p50, p95, p99, n
	NativePlayers        int                 `json:"native_players"`
	Sender               SenderStats         `json:"sender"`
	Parts                Parts               `json:"parts_ms"`
}

// SenderStats holds the rates from the sender's last timing report; nil
// before one.
type SenderStats struct {
	DrainRate *rate.Bitrate `json:"drain_rate_bps"`
	Target    *rate.Bitrate `json:"target_bps"`
}

// Parts holds the sender-side latency parts, in ms, each as p50 and p95.
type Parts struct {
	Wait        metrics.Percentiles `json:"wait"`
	Encode      metrics.Percentiles `json:"encode"`
	SourceDelay metrics.Percentiles `json:"source_delay"`
	Network     metrics.Percentiles `json:"network"`
}

// ClientStats describes one connected page; see Stats.
type ClientStats struct {
	ID     uint32 `json:"id"`
	Remote string `json:"remote"`
	// Mode is the page connection's buffer policy (Config.PageMode), as
	// in "replenish=15ms", or "default" where it is unmanaged.
	Mode string `json:"mode"`
	PageFrames
	NativeG2G metrics.Percentiles `json:"native_g2g_ms"` // p50, p95, p99, n
	Streams   []ClientStreamStats `json:"streams"`
}

// ClientStreamStats describes one stream as one page received it.
type ClientStreamStats struct {
	Stream uint32 `json:"stream"`
	PageFrames
	Delivery metrics.Percentiles `json:"delivery_ms"` // p50, p95
	Native   NativeStats         `json:"native"`
}

// NativeStats describes one stream as one page's native player (WHEP, a
// video element) presented it.
type NativeStats struct {
	FramesDisplayed   uint64              `json:"frames_displayed"`
	TimestampMisreads uint64              `json:"timestamp_misreads"`
	G2G               metrics.Percentiles `json:"g2g_ms"` // p50, p95, p99, n
}

// PageFrames are a page's frame counts and times, over all its streams
// (ClientStats) or one (ClientStreamStats); its fields are those objects'
// own in JSON.
type PageFrames struct {
	FramesSent        uint64 `json:"frames_sent"`
	FramesDropped     uint64 `json:"frames_dropped"`
	FramesDisplayed   uint64 `json:"frames_displayed"`
	TimestampMisreads uint64 `json:"timestamp_misreads"`
	// The same by temporal layer, indexed by TID (0 to 3); keyframes and
	// the frames of a stream without layers count in 0.
	FramesSentByLayer      [maxTID + 1]uint64 `json:"frames_sent_by_layer"`
	FramesDroppedByLayer   [maxTID + 1]uint64 `json:"frames_dropped_by_layer"`
	FramesDisplayedByLayer [maxTID + 1]uint64 `json:"frames_displayed_by_layer"`
	// CatchUpFrames counts the frames sent from a stream's latest
	// keyframe on when the page joined it (in FramesSent too).
	CatchUpFrames uint64 `json:"catch_up_frames"`
	// KeyframesRequested counts the keyframe requests that went to the
	// sender for this page: its queue dropped to a keyframe, or the page
	// asked.
	KeyframesRequested uint64 `json:"keyframes_requested"`

	G2G    metrics.Percentiles `json:"g2g_ms"`    // p50, p95, p99, n
	Decode metrics.Percentiles `json:"decode_ms"` // p50, p95
	Draw   metrics.Percentiles `json:"draw_ms"`   // p50, p95
}

// Float is a number that is NaN when unknown; it marshals to JSON rounded
// to three decimals, and NaN or an infinity as null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, math.Round(v*1000)/1000, 'f', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler: null reads as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Known reports whether f holds a value.
func (f Float) Known() bool { return !math.IsNaN(float64(f)) }

// quantilesOf summarises v (ms, sorted in place) as the API gives most
// distributions: p50 and p95, to the microsecond.
func quantilesOf(v []float64) metrics.Percentiles {
	return metrics.Summarize(v).Round(3).Only(metrics.P50 | metrics.P95)
}

// latencyOf summarises v (ms, sorted in place) as the API gives the
// latencies: p50, p95, p99 and the count, to the microsecond.
func latencyOf(v []float64) metrics.Percentiles {
	return metrics.Summarize(v).Round(3).Only(metrics.P50 | metrics.P95 | metrics.P99 | metrics.Count)
}

// Stats returns the viewer's current numbers. It is safe to call at any
// time, also before Run.
func (s *Server) Stats() Stats {
	now := s.now()
	s.mu.Lock()
	streams := slices.Clone(s.streams)
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	players := make(map[uint32]int)
	for _, sess := range s.whep {
		players[sess.stream]++
	}
	s.mu.Unlock()
	slices.SortFunc(clients, func(a, b *client) int { return cmp.Compare(a.id, b.id) })

	out := Stats{NowMS: now.UnixMilli(), TLSFingerprint: s.fp.String(), Streams: make([]StreamStats, 0, len(streams)), Clients: make([]ClientStats, 0, len(clients))}
	for _, st := range streams {
		ss := st.stats(now)
		ss.NativePlayers = players[st.id]
		out.Streams = append(out.Streams, ss)
	}
	for _, c := range clients {
		out.Clients = append(out.Clients, c.stats(now))
	}
	return out
}

// stats returns the stream's numbers over the windows ending at now.
func (st *stream) stats(now time.Time) StreamStats {
	st.mu.Lock()
	defer st.mu.Unlock()
	br, fps := st.ratesLocked(now)
	ss := StreamStats{
		ID:                   st.id,
		Name:                 st.name,
		Remote:               st.remote,
		Transport:            st.transport,
		Mode:                 st.mode,
		Connected:            st.conn != nil,
		FramesReceived:       st.framesReceived,
		Bytes:                st.bytes,
		Bitrate:              br,
		FPS:                  Float(fps),
		Width:                st.width,
		Height:               st.height,
		Keyframes:            st.keyframes,
		KeyframeRequests:     st.keyframeRequests,
		ClockOffsetMS:        Float(math.NaN()),
		DroppedPartialFrames: st.droppedPartial,
		FramesLost:           st.framesLost,
		FramesUndecodable:    st.framesUndecodable,
		CaptureToReceived:    latencyOf(st.captureToReceived.Values(now)),
		Parts: Parts{
			Wait:        quantilesOf(st.wait.Values(now)),
			Encode:      quantilesOf(st.encode.Values(now)),
			SourceDelay: quantilesOf(st.sourceDelay.Values(now)),
			Network:     quantilesOf(st.network.Values(now)),
		},
	}
	if st.haveReport {
		ss.ClockOffsetMS = Float(ms(st.clockOffset))
		drain, target := st.drainRate, st.target
		ss.Sender = SenderStats{DrainRate: &drain, Target: &target}
	}
	return ss
}
