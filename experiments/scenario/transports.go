package scenario

import (
	"fmt"
	"slices"
	"strings"

	"replenish/transport"
)

// Transports a run sends over.
const (
	TCP    = "tcp"    // transport/tcp: every workload
	QUIC   = "quic"   // transport/quic, RTP over QUIC: video only
	WebRTC = "webrtc" // transport/webrtc, WHIP with pion's congestion control: video only
)

// GCC is the mode name of a WebRTC run: pion's send-side bandwidth
// estimation (Google congestion control) sets the rate, and no mode of
// the send buffer applies.
const GCC = "gcc"

// AllTransports lists the transports in report order.
var AllTransports = []string{TCP, QUIC, WebRTC}

// ParseTransports reads a comma-separated list of transports (tcp, quic,
// webrtc). Repeats and an empty list are errors.
func ParseTransports(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "":
			continue
		case !slices.Contains(AllTransports, f):
			return nil, fmt.Errorf("%w: transport %q (want tcp, quic or webrtc)", ErrSpec, f)
		case slices.Contains(out, f):
			return nil, fmt.Errorf("%w: transport %s given twice", ErrSpec, f)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no transports", ErrSpec)
	}
	return out, nil
}

// Transports is a list of transports as a flag.Value (see
// ParseTransports).
type Transports []string

// Set parses s with ParseTransports.
func (t *Transports) Set(s string) error {
	v, err := ParseTransports(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// String returns the list as Set reads it: "tcp,quic".
func (t Transports) String() string { return strings.Join(t, ",") }

// Supports returns nil when a run of workload w in mode m over transport
// tr exists, and otherwise why not, in words for a note: QUIC and WebRTC
// carry the video workload only; TCP has no expire mode; QUIC has no
// lowat mode, no Nagle and no kernel-faithful rule; WebRTC takes no mode
// at all (its runs are GCC's, whatever the modes).
func Supports(tr string, w Workload, m transport.Mode) error {
	if tr != TCP && w.Kind != KindVideo {
		return fmt.Errorf("%s carries the video workload only, not %s", tr, w)
	}
	switch tr {
	case TCP:
		if m.Policy == transport.Expire {
			return fmt.Errorf("expire is a QUIC mode")
		}
	case QUIC:
		switch {
		case m.Policy == transport.Lowat:
			return fmt.Errorf("lowat is TCP_NOTSENT_LOWAT, a TCP mode")
		case m.Nagle:
			return fmt.Errorf("+nagle is a TCP option")
		case m.Kernel:
			return fmt.Errorf("+kernel reproduces the Linux TCP rule")
		}
	case WebRTC:
	default:
		return fmt.Errorf("unknown transport %q", tr)
	}
	return nil
}

// runsOver returns, for the runs of one line (one per mode, over TCP),
// those of each transport in turn, and a note for every combination that
// does not exist. A WebRTC run is one per line whatever the modes: GCC's.
func runsOver(transports []string, proto Run, modes []transport.Mode) (runs []Run, skipped []string) {
	for _, tr := range transports {
		if tr == WebRTC {
			if err := Supports(tr, proto.Workload, transport.Mode{}); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s skipped: %v", tr, err))
				continue
			}
			r := proto
			r.Transport, r.Mode = WebRTC, transport.Mode{Policy: transport.Default}
			runs = append(runs, r)
			continue
		}
		for _, m := range modes {
			if err := Supports(tr, proto.Workload, m); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s %s skipped: %v", tr, m, err))
				continue
			}
			r := proto
			r.Transport, r.Mode = tr, m
			runs = append(runs, r)
		}
	}
	return runs, skipped
}

// Stream is one sender of the live demo: a transport and a mode.
type Stream struct {
	Transport string
	Mode      transport.Mode // Default for WebRTC, whose mode is GCC
}

// ModeName returns the stream's mode: the mode's canonical form, or GCC
// over WebRTC.
func (s Stream) ModeName() string {
	if s.Transport == WebRTC {
		return GCC
	}
	return s.Mode.String()
}

// String returns the stream as ParseStreams reads it: "replenish=15ms"
// (TCP), "quic:replenish=15ms", "webrtc".
func (s Stream) String() string {
	switch s.Transport {
	case TCP, "":
		return s.Mode.String()
	case WebRTC:
		return WebRTC
	}
	return s.Transport + ":" + s.Mode.String()
}

// ParseStreams reads a comma-separated list of senders, each
// "[TRANSPORT:]MODE" (TCP when the transport is left out) or "webrtc", as
// in "replenish=15ms,default,quic:replenish=15ms,webrtc". A combination
// that does not exist, or a sender given twice, is an error.
func ParseStreams(s string) ([]Stream, error) {
	var out []Stream
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		st, err := parseStream(f)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, st) {
			return nil, fmt.Errorf("%w: sender %s given twice", ErrSpec, st)
		}
		out = append(out, st)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no senders", ErrSpec)
	}
	return out, nil
}

// parseStream reads one item of ParseStreams.
func parseStream(f string) (Stream, error) {
	tr, mode, hasTransport := strings.Cut(f, ":")
	if !hasTransport {
		tr, mode = TCP, f
	}
	tr = strings.ToLower(tr)
	if f == WebRTC || (tr == WebRTC && (mode == "" || mode == GCC)) {
		return Stream{Transport: WebRTC, Mode: transport.Mode{Policy: transport.Default}}, nil
	}
	if !slices.Contains(AllTransports, tr) {
		return Stream{}, fmt.Errorf("%w: sender %q: transport %q (want tcp, quic or webrtc)", ErrSpec, f, tr)
	}
	if tr == WebRTC {
		return Stream{}, fmt.Errorf("%w: sender %q: webrtc takes no mode (pion's GCC sets the rate)", ErrSpec, f)
	}
	m, err := transport.ParseMode(mode)
	if err != nil {
		return Stream{}, fmt.Errorf("%w: sender %q: %v", ErrSpec, f, err)
	}
	if err := Supports(tr, Workload{Kind: KindVideo}, m); err != nil {
		return Stream{}, fmt.Errorf("%w: sender %q: %v", ErrSpec, f, err)
	}
	return Stream{Transport: tr, Mode: m}, nil
}

// Streams is a list of senders as a flag.Value (see ParseStreams).
type Streams []Stream

// Set parses s with ParseStreams.
func (l *Streams) Set(s string) error {
	v, err := ParseStreams(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// String returns the list as Set reads it.
func (l Streams) String() string {
	s := make([]string, len(l))
	for i, st := range l {
		s[i] = st.String()
	}
	return strings.Join(s, ",")
}
