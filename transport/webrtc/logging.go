package webrtc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLogs routes pion's logs to a slog.Logger, so that the library never
// prints. pion's Info and Warn (state changes and teardown races, mostly:
// what matters comes back as the Conn's errors) are logged at Debug, its
// Error at Warn, its Trace below Debug.
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
