package framer

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTimeProbeRoundTrip(t *testing.T) {
	req := TimeProbe{Origin: testEpoch.Add(123456789 * time.Nanosecond)}
	reply := req.Answer(testEpoch.Add(time.Second), testEpoch.Add(time.Second+150*time.Microsecond), 0)
	for _, tc := range []struct {
		name string
		p    TimeProbe
		want TimeProbe // after truncation to µs
	}{
		{"request", req, TimeProbe{Origin: testEpoch.Add(123456 * time.Microsecond)}},
		{"reply", reply, TimeProbe{Reply: true, Origin: testEpoch.Add(123456 * time.Microsecond), Receive: testEpoch.Add(time.Second), Transmit: testEpoch.Add(time.Second + 150*time.Microsecond)}},
		{"zero", TimeProbe{}, TimeProbe{}},
		{"before 1970", TimeProbe{Origin: time.Unix(-100, 0)}, TimeProbe{Origin: time.Unix(-100, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.p.Marshal()
			if len(b) != TimeProbeSize {
				t.Fatalf("%d bytes", len(b))
			}
			got, err := ParseTimeProbe(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Reply != tc.want.Reply || !got.Origin.Equal(tc.want.Origin) ||
				!got.Receive.Equal(tc.want.Receive) || !got.Transmit.Equal(tc.want.Transmit) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTimeProbeWireLayout(t *testing.T) {
	p := TimeProbe{Reply: true, Origin: time.UnixMicro(1), Receive: time.UnixMicro(0x0102030405060708), Transmit: time.UnixMicro(-2)}
	want := []byte{
		0x0e, 'R', 'P', 'L', 1, 2, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 1,
		1, 2, 3, 4, 5, 6, 7, 8,
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
	}
	if got := p.Marshal(); !slices.Equal(got, want) {
		t.Errorf("got  % x\nwant % x", got, want)
	}
	// A clock identifier follows when there is one.
	p.Clock = 0x1122334455667788
	if got, want := p.Marshal(), append(want, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88); !slices.Equal(got, want) {
		t.Errorf("with clock: got  % x\nwant % x", got, want)
	}
	if got, err := ParseTimeProbe(p.Marshal()); err != nil || got.Clock != p.Clock {
		t.Errorf("with clock: parsed %+v, %v", got, err)
	}
	// A request leaves the viewer's times zero on the wire.
	req := TimeProbe{Origin: time.UnixMicro(1)}.Marshal()
	if want := append([]byte{0x0e, 'R', 'P', 'L', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 16)...); !slices.Equal(req, want) {
		t.Errorf("request: got  % x\nwant % x", req, want)
	}
}

func TestParseTimeProbeErrors(t *testing.T) {
	good := TimeProbe{Origin: testEpoch}.Marshal()
	edit := func(i int, v byte) []byte { b := slices.Clone(good); b[i] = v; return b }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrNotTimeProbe},
		{"short magic", good[:3], ErrNotTimeProbe},
		{"wrong magic", edit(0, 'X'), ErrNotTimeProbe},
		{"truncated", good[:31], ErrBadTimeProbe},
		{"too long", append(slices.Clone(good), 0), ErrBadTimeProbe},
		{"clock of 0", append(slices.Clone(good), 0, 0, 0, 0, 0, 0, 0, 0), ErrBadTimeProbe},
		{"longer than with a clock", append(slices.Clone(good), make([]byte, 9)...), ErrBadTimeProbe},
		{"version 0", edit(4, 0), ErrBadTimeProbe},
		{"version 2", edit(4, 2), ErrBadTimeProbe},
		{"kind 0", edit(5, 0), ErrBadTimeProbe},
		{"kind 3", edit(5, 3), ErrBadTimeProbe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseTimeProbe(tc.b); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ParseTimeProbe(edit(7, 9)); err != nil {
		t.Errorf("reserved bits set: %v", err)
	}
}

// exchange builds one probe exchange: the viewer's clock is offset ahead of
// the sender's, the request takes up and the reply down, and the viewer
// holds it for turn.
func exchange(start time.Time, offset, up, down, turn time.Duration) (t1, t2, t3, t4 time.Time) {
	t1 = start
	t2 = start.Add(up + offset)
	t3 = t2.Add(turn)
	t4 = start.Add(up + turn + down)
	return
}

func TestOffsetEstimator(t *testing.T) {
	ms := time.Millisecond
	type sample struct{ offset, up, down, turn time.Duration }
	for _, tc := range []struct {
		name       string
		n          int
		samples    []sample
		wantOffset time.Duration
		wantRTT    time.Duration
	}{
		{"symmetric path", 0, []sample{{500 * ms, 10 * ms, 10 * ms, ms}}, 500 * ms, 20 * ms},
		{"viewer behind", 0, []sample{{-3 * time.Hour, 5 * ms, 5 * ms, 0}}, -3 * time.Hour, 10 * ms},
		{"asymmetric path errs by half the difference", 0, []sample{{0, 30 * ms, 10 * ms, 0}}, 10 * ms, 40 * ms},
		{"picks the smallest round trip", 0, []sample{
			{100 * ms, 50 * ms, 10 * ms, 0}, // queued on the way up
			{100 * ms, 5 * ms, 5 * ms, 2 * ms},
			{100 * ms, 10 * ms, 60 * ms, 0}, // queued on the way down
		}, 100 * ms, 10 * ms},
		{"forgets samples older than N", 2, []sample{
			{100 * ms, 1 * ms, 1 * ms, 0}, // best, but pushed out
			{200 * ms, 10 * ms, 10 * ms, 0},
			{200 * ms, 20 * ms, 20 * ms, 0},
		}, 200 * ms, 20 * ms},
		{"ring wraps more than once", 2, []sample{
			{1 * ms, 1 * ms, 1 * ms, 0},
			{2 * ms, 2 * ms, 2 * ms, 0},
			{3 * ms, 9 * ms, 9 * ms, 0},
			{4 * ms, 8 * ms, 8 * ms, 0},
			{5 * ms, 7 * ms, 7 * ms, 0},
		}, 5 * ms, 14 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewOffsetEstimator(tc.n)
			if _, _, ok := e.Offset(); ok {
				t.Fatal("estimate before any sample")
			}
			start := testEpoch
			for i, s := range tc.samples {
				if err := e.Add(exchange(start, s.offset, s.up, s.down, s.turn)); err != nil {
					t.Fatalf("sample %d: %v", i, err)
				}
				start = start.Add(time.Second)
			}
			off, rtt, ok := e.Offset()
			if !ok || off != tc.wantOffset || rtt != tc.wantRTT {
				t.Errorf("Offset = %v, %v, %v; want %v, %v", off, rtt, ok, tc.wantOffset, tc.wantRTT)
			}
		})
	}
}

func TestOffsetEstimatorRejects(t *testing.T) {
	ms := time.Millisecond
	t1, t2, t3, t4 := exchange(testEpoch, 0, 10*ms, 10*ms, ms)
	for _, tc := range []struct {
		name           string
		t1, t2, t3, t4 time.Time
	}{
		{"zero origin", time.Time{}, t2, t3, t4},
		{"zero receive", t1, time.Time{}, t3, t4},
		{"reply before request", t1, t2, t3, t1.Add(-ms)},
		{"viewer sent before it received", t1, t2, t2.Add(-ms), t4},
		{"turnaround longer than round trip", t1, t2, t2.Add(time.Second), t4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e OffsetEstimator // the zero value works
			if err := e.Add(tc.t1, tc.t2, tc.t3, tc.t4); !errors.Is(err, ErrBadSample) {
				t.Errorf("err = %v, want ErrBadSample", err)
			}
			if _, _, ok := e.Offset(); ok {
				t.Error("a rejected sample was recorded")
			}
			if err := e.Add(t1, t2, t3, t4); err != nil {
				t.Fatal(err)
			}
			if _, _, ok := e.Offset(); !ok {
				t.Error("good sample after a bad one not recorded")
			}
		})
	}
}

func TestOffsetOverWire(t *testing.T) {
	// The whole exchange through Marshal and ParseTimeProbe, as the sender
	// and viewer run it.
	const offset = 2*time.Second + 345*time.Microsecond
	t1 := testEpoch
	req, err := ParseTimeProbe(TimeProbe{Origin: t1}.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	t2 := t1.Add(offset + 4*time.Millisecond)
	reply, err := ParseTimeProbe(req.Answer(t2, t2.Add(100*time.Microsecond), 0).Marshal())
	if err != nil || !reply.Reply {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	t4 := t1.Add(8*time.Millisecond + 100*time.Microsecond)
	var e OffsetEstimator
	if err := e.Add(reply.Origin, reply.Receive, reply.Transmit, t4); err != nil {
		t.Fatal(err)
	}
	if got, rtt, _ := e.Offset(); got != offset || rtt != 8*time.Millisecond {
		t.Errorf("offset %v rtt %v, want %v and 8ms", got, rtt, offset)
	}
}

// A probe shares its UDP port with QUIC: its first byte must not look like
// a QUIC packet's (quic-go treats a byte with either high bit set as QUIC).
func TestTimeProbeIsNotQUIC(t *testing.T) {
	for _, p := range []TimeProbe{{Origin: testEpoch}, TimeProbe{Origin: testEpoch, Clock: 3}.Answer(testEpoch, testEpoch, 7)} {
		if b := p.Marshal(); b[0]&0xC0 != 0 {
			t.Errorf("first byte %#02x has a high bit set: QUIC would take the probe", b[0])
		}
	}
}

// A reply is never larger than its request: the viewer's clock identifier
// goes only to a request that carries the sender's.
func TestTimeProbeReplyNoLarger(t *testing.T) {
	for _, req := range []TimeProbe{{Origin: testEpoch}, {Origin: testEpoch, Clock: 5}} {
		in, err := ParseTimeProbe(req.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		for _, clock := range []uint64{0, 7} {
			reply := in.Answer(testEpoch, testEpoch, clock)
			if got, limit := len(reply.Marshal()), len(req.Marshal()); got > limit || reply.Size() != got {
				t.Errorf("request of %d bytes, clock %d: reply of %d bytes (Size %d)", limit, clock, got, reply.Size())
			}
			if want := clock != 0 && req.Clock != 0; (reply.Clock != 0) != want {
				t.Errorf("request clock %d, viewer clock %d: reply clock %d", req.Clock, clock, reply.Clock)
			}
		}
	}
}
