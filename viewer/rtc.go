package viewer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/logging"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
)

// WebRTC (pion) plumbing shared by the WHIP endpoint (publishers send to
// the viewer) and the WHEP endpoint (the page's native player receives
// from it).

// vp8Codec is the one codec the viewer negotiates, both ways: VP8 with the
// feedback it sends and answers (NACK, PLI, FIR) and transport-wide
// congestion control feedback. No RTX: a WHIP sender retransmits on the
// media SSRC.
var vp8Codec = pion.RTPCodecParameters{
	RTPCodecCapability: pion.RTPCodecCapability{
		MimeType:  pion.MimeTypeVP8,
		ClockRate: framer.ClockRate,
		RTCPFeedback: []pion.RTCPFeedback{
			{Type: pion.TypeRTCPFBNACK},
			{Type: pion.TypeRTCPFBNACK, Parameter: "pli"},
			{Type: pion.TypeRTCPFBCCM, Parameter: "fir"},
			{Type: pion.TypeRTCPFBTransportCC},
		},
	},
	PayloadType: framer.DefaultPayloadType,
}

// ICE timeouts of the viewer's peer connections: a peer that stops
// answering consent checks is disconnected after rtcDisconnected and
// failed after rtcFailed.
const (
	rtcDisconnected = 5 * time.Second
	rtcFailed       = 10 * time.Second
	rtcKeepAlive    = 2 * time.Second
	// rtcGatherTimeout bounds the gathering of the viewer's own ICE
	// candidates before it answers (host candidates only: milliseconds).
	rtcGatherTimeout = 5 * time.Second
)

// newRTCAPI returns a pion API for one peer connection. recv selects the
// WHIP side (VP8 received, with abs-capture-time, NACKs sent, receiver
// reports and TWCC feedback, without which a sender's congestion
// controller never moves); otherwise the WHEP side (VP8 sent, NACKs
// answered, sender reports).
func newRTCAPI(recv bool, log *slog.Logger) (*pion.API, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(vp8Codec, pion.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	reg := &interceptor.Registry{}
	if err := pion.ConfigureNack(m, reg); err != nil {
		return nil, err
	}
	if err := pion.ConfigureRTCPReports(reg); err != nil {
		return nil, err
	}
	if recv {
		ext := pion.RTPHeaderExtensionCapability{URI: framer.AbsCaptureTimeURI}
		if err := m.RegisterHeaderExtension(ext, pion.RTPCodecTypeVideo, pion.RTPTransceiverDirectionRecvonly); err != nil {
			return nil, err
		}
		if err := pion.ConfigureTWCCSender(m, reg); err != nil {
			return nil, err
		}
	}
	var s pion.SettingEngine
	s.LoggerFactory = pionLogs{log}
	s.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	s.SetIncludeLoopbackCandidate(true)
	// A browser's host candidates are mDNS names; its connectivity checks
	// reach the viewer's candidates and become peer-reflexive ones, so
	// the viewer needs no mDNS socket of its own.
	s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	s.SetICETimeouts(rtcDisconnected, rtcFailed, rtcKeepAlive)
	return pion.NewAPI(pion.WithMediaEngine(m), pion.WithInterceptorRegistry(reg), pion.WithSettingEngine(s)), nil
}

// answer sets offer as pc's remote description and returns pc's answer
// once its ICE candidates are gathered (no trickle ICE: the answer
// carries them all). It blocks until then, ctx is done or
// rtcGatherTimeout passes. prepare, if set, runs between the offer and
// the answer (to add a track).
func answer(ctx context.Context, pc *pion.PeerConnection, offer string, prepare func() error) (string, error) {
	err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeOffer, SDP: offer})
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadOffer, err)
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return "", err
		}
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadOffer, err)
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return "", fmt.Errorf("viewer: setting the answer: %w", err)
	}
	timer := time.NewTimer(rtcGatherTimeout)
	defer timer.Stop()
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timer.C:
		return "", fmt.Errorf("viewer: gathering ICE candidates took over %v", rtcGatherTimeout)
	}
	return pc.LocalDescription().SDP, nil
}

// pionLogs routes pion's logs to a slog.Logger, so that the library never
// prints. pion's Info and Warn (state changes and teardown races, mostly)
// go to Debug, its Error to Warn, its Trace below Debug.
type pionLogs struct{ log *slog.Logger }

var _ logging.LoggerFactory = pionLogs{}

// NewLogger returns the logger for one pion component.
func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return scopedLog{f.log.With("pion", scope)}
}

const levelTrace = slog.LevelDebug - 4

type scopedLog struct{ log *slog.Logger }

func (l scopedLog) logf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

func (l scopedLog) Trace(msg string)                  { l.logf(levelTrace, "%s", msg) }
func (l scopedLog) Tracef(format string, args ...any) { l.logf(levelTrace, format, args...) }
func (l scopedLog) Debug(msg string)                  { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Info(msg string)                   { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Infof(format string, args ...any)  { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Warn(msg string)                   { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Warnf(format string, args ...any)  { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Error(msg string)                  { l.logf(slog.LevelWarn, "%s", msg) }
func (l scopedLog) Errorf(format string, args ...any) { l.logf(slog.LevelWarn, format, args...) }
