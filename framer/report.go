package framer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pion/rtcp"

	"replenish/rate"
)

// The sender's timing report is an RTCP APP packet (RFC 3550 section 6.7)
// with subtype 0 and name "RPLN", sent with the media SSRC. Its data, all
// big-endian:
//
//	u8  version (1)
//	u8  N, the number of frame entries
//	u16 reserved (0)
//	i64 clock_offset_us  viewer clock minus sender clock; 0 if unknown
//	u32 drain_rate_kbps
//	u32 target_kbps
//	N entries of 32 bytes:
//	  u32 rtp_timestamp
//	  i64 capture_us     µs since the Unix epoch, sender clock
//	  u32 encode_start_us, encode_end_us, write_start_us, left_host_us
//	                     µs after capture; 0xFFFFFFFF = unknown
//	  u32 bytes
const (
	// ReportName is the APP packet name of a SenderReport.
	ReportName = "RPLN"
	// ReportSubtype is the APP packet subtype of a SenderReport.
	ReportSubtype = 0
	// ReportVersion is the SenderReport layout this package writes and
	// reads.
	ReportVersion = 1
	// MaxReportFrames is the most frame entries one report holds.
	MaxReportFrames = 255

	reportHeaderSize = 20
	reportEntrySize  = 32
	unknownMicros    = math.MaxUint32
)

// UnknownDuration marks a FrameTiming duration as unknown. Any negative
// duration means unknown; parsing gives this value.
const UnknownDuration time.Duration = -1

// Errors of the sender's timing report.
var (
	ErrNotSenderReport = errors.New("framer: not a sender timing report")
	ErrBadReport       = errors.New("framer: malformed sender timing report")
	ErrReportRange     = errors.New("framer: sender timing report value out of range")
)

// SenderReport is the sender's timing report: its clock offset estimate,
// its rates, and the timing of recent frames.
type SenderReport struct {
	// ClockOffset is the viewer's clock minus the sender's, as the sender
	// estimated it; 0 if unknown. Carried in microseconds.
	ClockOffset time.Duration
	// DrainRate is the transport's drain-rate estimate, carried in kb/s.
	DrainRate rate.Bitrate
	// Target is the encoder's target bitrate, carried in kb/s.
	Target rate.Bitrate
	// Frames holds up to MaxReportFrames frame entries.
	Frames []FrameTiming
}

// FrameTiming is the sender's record of one frame. The durations count from
// Capture, in microseconds on the wire, up to about 71 minutes; a negative
// duration means unknown.
type FrameTiming struct {
	RTPTimestamp uint32
	Capture      time.Time // sender clock; the zero Time travels as 0
	EncodeStart  time.Duration
	EncodeEnd    time.Duration
	WriteStart   time.Duration
	LeftHost     time.Duration
	Bytes        int // bytes of the frame on the wire
}

// Marshal returns r as an RTCP APP packet sent by ssrc, the media SSRC.
// Values are truncated to whole microseconds and rates rounded to the
// nearest kb/s. It returns an error wrapping ErrReportRange if r has more
// than 255 frames or a value that does not fit its field (a negative rate,
// a duration of 2^32-1 µs or more, a size over 2^32-1 bytes); it never
// clamps a value.
func (r *SenderReport) Marshal(ssrc uint32) ([]byte, error) {
	if len(r.Frames) > MaxReportFrames {
		return nil, fmt.Errorf("%w: %d frames, at most %d", ErrReportRange, len(r.Frames), MaxReportFrames)
	}
	drain, err := kbps(r.DrainRate)
	if err != nil {
		return nil, fmt.Errorf("drain rate: %w", err)
	}
	target, err := kbps(r.Target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	data := make([]byte, 0, reportHeaderSize+reportEntrySize*len(r.Frames))
	data = append(data, ReportVersion, byte(len(r.Frames)), 0, 0)
	data = binary.BigEndian.AppendUint64(data, uint64(r.ClockOffset.Microseconds()))
	data = binary.BigEndian.AppendUint32(data, drain)
	data = binary.BigEndian.AppendUint32(data, target)
	for i, f := range r.Frames {
		if f.Bytes < 0 || int64(f.Bytes) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: frame %d: %d bytes", ErrReportRange, i, f.Bytes)
		}
		data = binary.BigEndian.AppendUint32(data, f.RTPTimestamp)
		data = binary.BigEndian.AppendUint64(data, uint64(unixMicro(f.Capture)))
		for _, d := range []struct {
			name string
			d    time.Duration
		}{
			{"encode start", f.EncodeStart},
			{"encode end", f.EncodeEnd},
			{"write start", f.WriteStart},
			{"left host", f.LeftHost},
		} {
			us, err := micros32(d.d)
			if err != nil {
				return nil, fmt.Errorf("frame %d: %s: %w", i, d.name, err)
			}
			data = binary.BigEndian.AppendUint32(data, us)
		}
		data = binary.BigEndian.AppendUint32(data, uint32(f.Bytes))
	}
	app := rtcp.ApplicationDefined{SubType: ReportSubtype, SSRC: ssrc, Name: ReportName, Data: data}
	b, err := app.Marshal()
	if err != nil {
		return nil, fmt.Errorf("framer: marshalling sender report: %w", err)
	}
	return b, nil
}

// ParseSenderReport reads a SenderReport from an APP packet, as found in
// the result of ParseControl; the sender's media SSRC is app.SSRC. It
// returns ErrNotSenderReport for an APP packet of another name or subtype,
// and an error wrapping ErrBadReport for an unknown version or a data
// length that does not match the entry count. The reserved field is
// ignored.
func ParseSenderReport(app *rtcp.ApplicationDefined) (*SenderReport, error) {
	if app == nil || app.Name != ReportName || app.SubType != ReportSubtype {
		return nil, ErrNotSenderReport
	}
	d := app.Data
	if len(d) < reportHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes of data", ErrBadReport, len(d))
	}
	if d[0] != ReportVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadReport, d[0])
	}
	n := int(d[1])
	if want := reportHeaderSize + reportEntrySize*n; len(d) != want {
		return nil, fmt.Errorf("%w: %d bytes of data for %d frames, want %d", ErrBadReport, len(d), n, want)
	}
	offset := int64(binary.BigEndian.Uint64(d[4:]))
	if offset > math.MaxInt64/int64(time.Microsecond) || offset < math.MinInt64/int64(time.Microsecond) {
		return nil, fmt.Errorf("%w: clock offset of %d µs", ErrBadReport, offset)
	}
	r := &SenderReport{
		ClockOffset: time.Duration(offset) * time.Microsecond,
		DrainRate:   rate.Bitrate(binary.BigEndian.Uint32(d[12:])) * rate.Kbps,
		Target:      rate.Bitrate(binary.BigEndian.Uint32(d[16:])) * rate.Kbps,
	}
	if n > 0 {
		r.Frames = make([]FrameTiming, n)
	}
	for i := range r.Frames {
		e := d[reportHeaderSize+reportEntrySize*i:]
		r.Frames[i] = FrameTiming{
			RTPTimestamp: binary.BigEndian.Uint32(e[0:]),
			Capture:      fromUnixMicro(int64(binary.BigEndian.Uint64(e[4:]))),
			EncodeStart:  fromMicros32(binary.BigEndian.Uint32(e[12:])),
			EncodeEnd:    fromMicros32(binary.BigEndian.Uint32(e[16:])),
			WriteStart:   fromMicros32(binary.BigEndian.Uint32(e[20:])),
			LeftHost:     fromMicros32(binary.BigEndian.Uint32(e[24:])),
			Bytes:        int(binary.BigEndian.Uint32(e[28:])),
		}
	}
	return r, nil
}

// kbps converts b to whole kb/s, rounding to nearest.
func kbps(b rate.Bitrate) (uint32, error) {
	if b < 0 {
		return 0, fmt.Errorf("%w: negative rate %v", ErrReportRange, b)
	}
	k := b / rate.Kbps
	if b%rate.Kbps >= rate.Kbps/2 {
		k++
	}
	if k > math.MaxUint32 {
		return 0, fmt.Errorf("%w: %v", ErrReportRange, b)
	}
	return uint32(k), nil
}

// micros32 converts d to the 32-bit microsecond field: negative means
// unknown, and values that would collide with the unknown marker are out of
// range.
func micros32(d time.Duration) (uint32, error) {
	if d < 0 {
		return unknownMicros, nil
	}
	us := d.Microseconds()
	if us >= unknownMicros {
		return 0, fmt.Errorf("%w: %v is more than %v", ErrReportRange, d, time.Duration(unknownMicros-1)*time.Microsecond)
	}
	return uint32(us), nil
}

func fromMicros32(us uint32) time.Duration {
	if us == unknownMicros {
		return UnknownDuration
	}
	return time.Duration(us) * time.Microsecond
}

// unixMicro returns t in µs since the Unix epoch, and 0 for the zero Time.
func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromUnixMicro is the inverse of unixMicro.
func fromUnixMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}
