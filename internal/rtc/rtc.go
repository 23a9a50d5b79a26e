// Package rtc holds what the WebRTC sender (transport/webrtc) and the
// viewer's WHIP and WHEP endpoints share about pion: the one codec they
// negotiate and a pion logger that writes to log/slog.
package rtc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
	pion "github.com/pion/webrtc/v4"

	"replenish/framer"
)

// VP8 is the one codec negotiated, both ways: VP8 at the packetizer's
// payload type, with the feedback it sends and answers (NACK, PLI, FIR)
// and transport-wide congestion control. No RTX: retransmissions go on the
// media SSRC, since pion's GCC pacer forwards only the stream it was given.
var VP8 = pion.RTPCodecParameters{
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

// Logs routes pion's logs to a slog.Logger, so that the library never
// prints. pion's Info and Warn (state changes and teardown races, mostly:
// what matters comes back as errors) are logged at Debug, its Error at
// Warn, its Trace below Debug.
type Logs struct{ Log *slog.Logger }

var _ logging.LoggerFactory = Logs{}

// NewLogger returns the logger for one pion component.
func (f Logs) NewLogger(scope string) logging.LeveledLogger {
	return scopedLog{f.Log.With("pion", scope)}
}

// LevelTrace is the level of pion's trace messages.
const LevelTrace = slog.LevelDebug - 4

type scopedLog struct{ log *slog.Logger }

func (l scopedLog) logf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

func (l scopedLog) Trace(msg string)                  { l.logf(LevelTrace, "%s", msg) }
func (l scopedLog) Tracef(format string, args ...any) { l.logf(LevelTrace, format, args...) }
func (l scopedLog) Debug(msg string)                  { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Info(msg string)                   { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Infof(format string, args ...any)  { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Warn(msg string)                   { l.logf(slog.LevelDebug, "%s", msg) }
func (l scopedLog) Warnf(format string, args ...any)  { l.logf(slog.LevelDebug, format, args...) }
func (l scopedLog) Error(msg string)                  { l.logf(slog.LevelWarn, "%s", msg) }
func (l scopedLog) Errorf(format string, args ...any) { l.logf(slog.LevelWarn, format, args...) }
