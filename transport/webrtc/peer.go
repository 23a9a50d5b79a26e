package webrtc

import (
	"errors"
	"fmt"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/cc"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/sdp/v3"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
	"replenish/internal/rtc"
)

// mediaEngine returns the codecs and header extensions the Conn offers:
// VP8, transport-wide sequence numbers and abs-capture-time, both sent
// only.
func mediaEngine() (*pion.MediaEngine, error) {
	m := &pion.MediaEngine{}
	if err := m.RegisterCodec(rtc.VP8, pion.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	for _, uri := range []string{sdp.TransportCCURI, framer.AbsCaptureTimeURI} {
		ext := pion.RTPHeaderExtensionCapability{URI: uri}
		if err := m.RegisterHeaderExtension(ext, pion.RTPCodecTypeVideo, pion.RTPTransceiverDirectionSendonly); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// interceptors returns the chain, network end first: departures (sees
// packets leave the pacer, for the send records, the feedback horizon and
// the window), the GCC bandwidth estimator with our pacer (pion's leaky
// bucket, gated by the feedback window), the TWCC header extension, the
// NACK responder (its retransmissions go through the pacer and get
// transport-wide sequence numbers) and RTCP sender reports. onBWE
// receives the estimator when the PeerConnection is built.
func (c *Conn) interceptors(onBWE func(cc.BandwidthEstimator)) (*interceptor.Registry, error) {
	logs := rtc.Logs{Log: c.log}
	reg := &interceptor.Registry{}
	reg.Add(&departures{t: c.deps, h: c.hz, w: c.win})
	bwe, err := cc.NewInterceptor(func() (cc.BandwidthEstimator, error) {
		c.pacer = newPacer(c.cfg.InitialBitrate, c.win, c.log)
		return gcc.NewSendSideBWE(
			gcc.SendSideBWEInitialBitrate(int(c.cfg.InitialBitrate)),
			gcc.SendSideBWEMinBitrate(int(c.cfg.MinBitrate)),
			gcc.SendSideBWEMaxBitrate(int(c.cfg.MaxBitrate)),
			gcc.SendSideBWEPacer(c.pacer),
			gcc.WithLoggerFactory(logs),
		)
	})
	if err != nil {
		return nil, err
	}
	bwe.OnNewPeerConnection(func(_ string, e cc.BandwidthEstimator) { onBWE(e) })
	reg.Add(bwe)
	// What ConfigureTWCCHeaderExtensionSender adds, without the audio
	// extension it also registers.
	twccExt, err := twcc.NewHeaderExtensionInterceptor()
	if err != nil {
		return nil, err
	}
	reg.Add(twccExt)
	responder, err := nack.NewResponderInterceptor(nack.WithResponderLoggerFactory(logs))
	if err != nil {
		return nil, err
	}
	reg.Add(responder)
	reports, err := report.NewSenderInterceptor(report.WithSenderLoggerFactory(logs))
	if err != nil {
		return nil, err
	}
	reg.Add(reports)
	return reg, nil
}

// settings are the ICE and logging settings: host candidates over UDP and
// IPv4, loopback included, no mDNS, and a failure after FailTimeout
// without consent.
func (c *Conn) settings() pion.SettingEngine {
	var s pion.SettingEngine
	s.LoggerFactory = rtc.Logs{Log: c.log}
	s.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	s.SetIncludeLoopbackCandidate(true)
	s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	disconnected := min(c.cfg.FailTimeout/3, 5*time.Second)
	s.SetICETimeouts(disconnected, c.cfg.FailTimeout, min(disconnected/2, 2*time.Second))
	return s
}

// newPeer builds the PeerConnection with its one sendonly VP8 track.
func (c *Conn) newPeer() error {
	m, err := mediaEngine()
	if err != nil {
		return fmt.Errorf("webrtc: media engine: %w", err)
	}
	reg, err := c.interceptors(func(e cc.BandwidthEstimator) { c.bwe = e })
	if err != nil {
		return fmt.Errorf("webrtc: interceptors: %w", err)
	}
	api := pion.NewAPI(pion.WithMediaEngine(m), pion.WithInterceptorRegistry(reg), pion.WithSettingEngine(c.settings()))
	pc, err := api.NewPeerConnection(pion.Configuration{})
	if err != nil {
		return fmt.Errorf("webrtc: peer connection: %w", err)
	}
	stream := c.cfg.Name
	if stream == "" {
		stream = "replenish"
	}
	track, err := pion.NewTrackLocalStaticRTP(rtc.VP8.RTPCodecCapability, "video", stream)
	if err == nil {
		c.pc, c.track = pc, track
		var tr *pion.RTPTransceiver
		tr, err = pc.AddTransceiverFromTrack(track, pion.RTPTransceiverInit{Direction: pion.RTPTransceiverDirectionSendonly})
		if err == nil {
			c.sender = tr.Sender()
		}
	}
	if err != nil {
		pc.Close()
		return fmt.Errorf("webrtc: adding the track: %w", err)
	}
	if c.bwe == nil {
		pc.Close()
		return errors.New("webrtc: no bandwidth estimator was built")
	}
	pc.OnConnectionStateChange(c.stateChanged)
	return nil
}
