package framer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"replenish/rate"
)

func sampleReport(n int) *SenderReport {
	r := &SenderReport{
		ClockOffset: -1234567 * time.Microsecond,
		DrainRate:   2 * rate.Mbps,
		Target:      2200 * rate.Kbps,
	}
	for i := range n {
		r.Frames = append(r.Frames, FrameTiming{
			RTPTimestamp: 0xFFFFF000 + uint32(i)*3000, // wraps
			Capture:      testEpoch.Add(time.Duration(i) * 33 * time.Millisecond),
			EncodeStart:  time.Duration(i) * time.Microsecond,
			EncodeEnd:    3 * time.Millisecond,
			WriteStart:   3100 * time.Microsecond,
			LeftHost:     UnknownDuration,
			Bytes:        8000 + i,
		})
	}
	return r
}

// parseReport runs the whole receive path: RTCP parse, find the APP packet,
// parse the report.
func parseReport(t *testing.T, b []byte) (*SenderReport, uint32, error) {
	t.Helper()
	pkts, err := ParseControl(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if app, ok := p.(*rtcp.ApplicationDefined); ok {
			r, err := ParseSenderReport(app)
			return r, app.SSRC, err
		}
	}
	t.Fatal("no APP packet")
	return nil, 0, nil
}

func TestSenderReportRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *SenderReport
	}{
		{"no frames", &SenderReport{}},
		{"unknown offset", &SenderReport{DrainRate: 100 * rate.Kbps, Target: 120 * rate.Kbps, Frames: sampleReport(1).Frames}},
		{"one frame", sampleReport(1)},
		{"30 frames", sampleReport(30)},
		{"255 frames", sampleReport(MaxReportFrames)},
		{"largest values", &SenderReport{
			ClockOffset: 100 * 24 * time.Hour,
			DrainRate:   (1<<32 - 1) * rate.Kbps,
			Frames: []FrameTiming{{
				RTPTimestamp: 1<<32 - 1,
				EncodeStart:  (1<<32 - 2) * time.Microsecond,
				EncodeEnd:    UnknownDuration,
				WriteStart:   UnknownDuration,
				LeftHost:     UnknownDuration,
				Bytes:        1<<32 - 1,
			}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.r.Marshal(0xC0FFEE)
			if err != nil {
				t.Fatal(err)
			}
			if want := 12 + reportHeaderSize + reportEntrySize*len(tc.r.Frames); len(b) != want {
				t.Errorf("%d bytes, want %d", len(b), want)
			}
			// An APP packet travels with other RTCP in a compound packet.
			got, ssrc, err := parseReport(t, slices.Concat(MarshalPLI(1, 2), b))
			if err != nil {
				t.Fatal(err)
			}
			if ssrc != 0xC0FFEE {
				t.Errorf("SSRC %#x", ssrc)
			}
			if err := sameReport(got, tc.r); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSenderReportWireLayout(t *testing.T) {
	r := &SenderReport{
		ClockOffset: -2 * time.Microsecond,
		DrainRate:   1499 * rate.BitPerSecond, // rounds to 1 kb/s
		Target:      1500 * rate.BitPerSecond, // rounds to 2 kb/s
		Frames: []FrameTiming{{
			RTPTimestamp: 0x01020304,
			Capture:      time.UnixMicro(0x0A0B0C0D0E0F),
			EncodeStart:  1500 * time.Nanosecond, // truncates to 1 µs
			EncodeEnd:    5 * time.Microsecond,
			WriteStart:   UnknownDuration,
			LeftHost:     -time.Second, // any negative is unknown
			Bytes:        0x11223344,
		}},
	}
	b, err := r.Marshal(0x55667788)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x80, 204, 0, 15, // V=2, subtype 0, APP, 16 words less one
		0x55, 0x66, 0x77, 0x88, 'R', 'P', 'L', 'N',
		1, 1, 0, 0, // version, N, reserved
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, // -2 µs
		0, 0, 0, 1, 0, 0, 0, 2, // kb/s
		1, 2, 3, 4,
		0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
		0, 0, 0, 1, 0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		0x11, 0x22, 0x33, 0x44,
	}
	if !slices.Equal(b, want) {
		t.Errorf("got  % x\nwant % x", b, want)
	}
}

func TestSenderReportMarshalErrors(t *testing.T) {
	tooLong := (1<<32 - 1) * time.Microsecond
	for _, tc := range []struct {
		name string
		edit func(r *SenderReport)
	}{
		{"256 frames", func(r *SenderReport) { r.Frames = sampleReport(256).Frames }},
		{"negative drain rate", func(r *SenderReport) { r.DrainRate = -1 }},
		{"negative target", func(r *SenderReport) { r.Target = -1 * rate.Kbps }},
		{"rate over 32 bits of kb/s", func(r *SenderReport) { r.Target = (1 << 32) * rate.Kbps }},
		{"rate near int64 limit", func(r *SenderReport) { r.DrainRate = 1<<63 - 1 }},
		{"encode start too long", func(r *SenderReport) { r.Frames[0].EncodeStart = tooLong }},
		{"encode end too long", func(r *SenderReport) { r.Frames[1].EncodeEnd = 72 * time.Minute }},
		{"write start too long", func(r *SenderReport) { r.Frames[2].WriteStart = tooLong }},
		{"left host too long", func(r *SenderReport) { r.Frames[2].LeftHost = tooLong + time.Hour }},
		{"negative bytes", func(r *SenderReport) { r.Frames[0].Bytes = -1 }},
		{"bytes over 32 bits", func(r *SenderReport) { r.Frames[0].Bytes = 1 << 32 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleReport(3)
			tc.edit(r)
			if _, err := r.Marshal(1); !errors.Is(err, ErrReportRange) {
				t.Errorf("err = %v, want ErrReportRange", err)
			}
		})
	}
}

func TestParseSenderReportErrors(t *testing.T) {
	good, err := sampleReport(2).Marshal(1)
	if err != nil {
		t.Fatal(err)
	}
	data := good[12:]
	edit := func(f func(d []byte) []byte) []byte { return f(slices.Clone(data)) }
	for _, tc := range []struct {
		name string
		app  *rtcp.ApplicationDefined
		want error
	}{
		{"nil", nil, ErrNotSenderReport},
		{"other name", &rtcp.ApplicationDefined{Name: "RPLM", Data: data}, ErrNotSenderReport},
		{"other subtype", &rtcp.ApplicationDefined{SubType: 1, Name: ReportName, Data: data}, ErrNotSenderReport},
		{"no data", &rtcp.ApplicationDefined{Name: ReportName}, ErrBadReport},
		{"short header", &rtcp.ApplicationDefined{Name: ReportName, Data: data[:19]}, ErrBadReport},
		{"version 0", &rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte { d[0] = 0; return d })}, ErrBadReport},
		{"version 2", &rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte { d[0] = 2; return d })}, ErrBadReport},
		{"count too high", &rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte { d[1] = 3; return d })}, ErrBadReport},
		{"count too low", &rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte { d[1] = 1; return d })}, ErrBadReport},
		{"truncated entry", &rtcp.ApplicationDefined{Name: ReportName, Data: data[:len(data)-4]}, ErrBadReport},
		{"trailing bytes", &rtcp.ApplicationDefined{Name: ReportName, Data: append(slices.Clone(data), 0, 0, 0, 0)}, ErrBadReport},
		{"clock offset beyond a Duration", &rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte {
			binary.BigEndian.PutUint64(d[4:], 1<<62)
			return d
		})}, ErrBadReport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseSenderReport(tc.app); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// The reserved field is ignored.
	r, err := ParseSenderReport(&rtcp.ApplicationDefined{Name: ReportName, Data: edit(func(d []byte) []byte { d[2], d[3] = 1, 2; return d })})
	if err != nil || len(r.Frames) != 2 {
		t.Errorf("reserved bits set: %v, %v", r, err)
	}
}

// sameReport compares reports, times by instant.
func sameReport(got, want *SenderReport) error {
	if got.ClockOffset != want.ClockOffset || got.DrainRate != want.DrainRate || got.Target != want.Target {
		return fmt.Errorf("header: got %v %v %v, want %v %v %v",
			got.ClockOffset, got.DrainRate, got.Target, want.ClockOffset, want.DrainRate, want.Target)
	}
	if len(got.Frames) != len(want.Frames) {
		return fmt.Errorf("%d frames, want %d", len(got.Frames), len(want.Frames))
	}
	for i, g := range got.Frames {
		w := want.Frames[i]
		if !g.Capture.Equal(w.Capture) {
			return fmt.Errorf("frame %d: capture %v, want %v", i, g.Capture, w.Capture)
		}
		g.Capture, w.Capture = time.Time{}, time.Time{}
		if g != w {
			return fmt.Errorf("frame %d: got %+v, want %+v", i, g, w)
		}
	}
	return nil
}
