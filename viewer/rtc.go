package viewer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/twcc"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
)

// WebRTC (pion) plumbing shared by the WHIP endpoint (publishers send to
// the viewer) and the WHEP endpoint (the page's native player receives
// from it).

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
	// rtcTWCCInterval is how often the WHIP side sends transport-wide
	// congestion control feedback (pion's default: 100 ms). A publisher's
	// GCC (pion's, at least) matches feedback against a history of its
	// last 250 packets only; the sooner feedback comes, the higher the
	// rate at which it still matches (transport/webrtc's horizon).
	rtcTWCCInterval = 50 * time.Millisecond
)

// newRTCAPI returns a pion API for one peer connection. recv selects the
// WHIP side (VP8 received, with abs-capture-time, NACKs sent, receiver
// reports and TWCC feedback, without which a sender's congestion
// controller never moves); otherwise the WHEP side (VP8 sent, NACKs
// answered, sender reports).
func newRTCAPI(recv bool, log *slog.Logger) (*pion.API, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(rtc.VP8, pion.RTPCodecTypeVideo); err != nil {
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
		if err := pion.ConfigureTWCCSenderWithOptions(m, reg, twcc.SendInterval(rtcTWCCInterval)); err != nil {
			return nil, err
		}
	}
	var s pion.SettingEngine
	if recv {
		// SRTP's replay protection (pion's default window: 64 packets)
		// rejects a packet more than the window behind the newest one, and
		// so every retransmission at rates where a round trip carries more
		// than 64 packets (6 Mb/s at 100 ms): the gap is never repaired,
		// the NACKs for it repeat until it leaves the generator's log, and
		// each rejected retransmission counts as lost in the TWCC feedback,
		// which drags the publisher's loss-based estimate down. The window
		// spans the reorder buffer, beyond which a packet is late anyway.
		s.SetSRTPReplayProtectionWindow(whipReorderSize)
	}
	s.LoggerFactory = rtc.Logs{Log: log}
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
