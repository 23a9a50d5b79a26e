package sender

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/rtcp"

	"replenish/framer"
	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/rate"
	"replenish/transport"
	"replenish/transport/drain"
)

// fakeTransport invites only when the test sends on invite, and keeps what
// the sender writes.
type fakeTransport struct {
	invite chan transport.Invitation
	writes []write
	leads  []time.Duration
	caps   []rate.Bitrate
}

func (f *fakeTransport) CapPacing(r rate.Bitrate) error {
	f.caps = append(f.caps, r)
	return nil
}

func (f *fakeTransport) SetLead(d time.Duration) error {
	f.leads = append(f.leads, d)
	return nil
}

type write struct {
	id   uint64
	pkts [][]byte
}

func newFake() *fakeTransport { return &fakeTransport{invite: make(chan transport.Invitation)} }

func (f *fakeTransport) Wait(ctx context.Context) (transport.Invitation, error) {
	select {
	case inv := <-f.invite:
		inv.At = time.Now()
		return inv, nil
	case <-ctx.Done():
		return transport.Invitation{}, ctx.Err()
	}
}

func (f *fakeTransport) WriteFrame(id uint64, pkts [][]byte) error {
	cp := make([][]byte, len(pkts))
	for i, p := range pkts {
		cp[i] = append([]byte(nil), p...)
	}
	f.writes = append(f.writes, write{id, cp})
	return nil
}

// frames decodes the writes: each write's RTP packets give one frame, and
// its RTCP packets are returned alongside.
func (f *fakeTransport) frames(t *testing.T) ([]*framer.Frame, [][]rtcp.Packet) {
	t.Helper()
	asm := framer.NewAssembler(0)
	var frames []*framer.Frame
	var ctrl [][]rtcp.Packet
	for _, w := range f.writes {
		var c []rtcp.Packet
		var got *framer.Frame
		for _, p := range w.pkts {
			if framer.IsRTCP(p) {
				pk, err := framer.ParseControl(p)
				if err != nil {
					t.Fatalf("write %d: %v", w.id, err)
				}
				c = append(c, pk...)
				continue
			}
			fr, err := asm.Push(p)
			if err != nil {
				t.Fatalf("write %d: %v", w.id, err)
			}
			if fr != nil {
				got = fr
			}
		}
		if got == nil {
			t.Fatalf("write %d carries no complete frame", w.id)
		}
		frames = append(frames, got)
		ctrl = append(ctrl, c)
	}
	return frames, ctrl
}

// bubble runs a source and a sender over a fake transport in a synctest
// bubble, calls test, then stops both. The sender's encoder is
// fakecodec's unless cfg names one.
func bubble(t *testing.T, cfg Config, test func(s *Sender, src *media.Source, f *fakeTransport)) {
	synctest.Test(t, func(t *testing.T) {
		src := media.NewSource(media.SourceConfig{Name: "test"})
		cfg.Source = src
		if cfg.NewEncoder == nil {
			cfg.NewEncoder = NewEncoderOf(fakecodec.NewEncoder)
		}
		if cfg.MaxSize == (media.Size{}) {
			cfg.MaxSize = media.Size{W: 320, H: 180}
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		f := newFake()
		ctx, cancel := context.WithCancel(t.Context())
		srcDone := make(chan error, 1)
		runDone := make(chan error, 1)
		go func() { srcDone <- src.Run(ctx) }()
		go func() { runDone <- s.Run(ctx, f) }()
		synctest.Wait()
		test(s, src, f)
		cancel()
		if err := <-runDone; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		<-srcDone
	})
}

func TestNoInvitationNoEncode(t *testing.T) {
	bubble(t, Config{}, func(s *Sender, src *media.Source, f *fakeTransport) {
		time.Sleep(time.Second)
		synctest.Wait()
		st := src.Stats()
		if st.Rendered < 30 || st.Taken != 0 || len(f.writes) != 0 || s.Status().Frames != 0 {
			t.Fatalf("without invitations: rendered %d, taken %d, written %d, encoded %d; want ~30 rendered and nothing else",
				st.Rendered, st.Taken, len(f.writes), s.Status().Frames)
		}
	})
}

func TestFreshestFrameAndKeyframes(t *testing.T) {
	bubble(t, Config{MinKeyframeGap: 500 * time.Millisecond}, func(s *Sender, src *media.Source, f *fakeTransport) {
		invite := func() time.Time {
			f.invite <- transport.Invitation{DrainRate: 1 * rate.Mbps}
			synctest.Wait()
			return time.Now()
		}
		var invited []time.Time
		// Frame 0 at once; frame 1 after 200 ms (six frames rendered
		// unseen); then a keyframe request, honoured only 500 ms after
		// the first keyframe; then one more.
		invited = append(invited, invite())
		time.Sleep(200 * time.Millisecond)
		invited = append(invited, invite())
		s.RequestKeyframe()
		time.Sleep(100 * time.Millisecond)
		invited = append(invited, invite()) // 300 ms after the first keyframe: deferred
		time.Sleep(300 * time.Millisecond)
		invited = append(invited, invite()) // 600 ms: now a keyframe
		time.Sleep(100 * time.Millisecond)
		invited = append(invited, invite())

		frames, _ := f.frames(t)
		if len(frames) != len(invited) {
			t.Fatalf("%d frames for %d invitations", len(frames), len(invited))
		}
		wantKey := []bool{true, false, false, true, false}
		for i, fr := range frames {
			if fr.Key != wantKey[i] {
				t.Errorf("frame %d: key %v, want %v", i, fr.Key, wantKey[i])
			}
			// The freshest frame: captured at the latest tick at or
			// before the invitation, so less than one frame interval
			// earlier.
			if age := invited[i].Sub(fr.Capture); age < 0 || age >= time.Second/30 {
				t.Errorf("frame %d: captured %v before its invitation, want the freshest (< 1/30 s)", i, age)
			}
			// The frame the encoder made from that picture. The capture
			// time rides on keyframes (in units of 2^-32 s) and the
			// receiver extrapolates the others by the 90 kHz RTP clock,
			// to within a tick.
			if c, err := fakecodec.Capture(fr.Data); err != nil || c.Sub(fr.Capture).Abs() > time.Second/framer.ClockRate+time.Microsecond {
				t.Errorf("frame %d: encoded from the picture captured %v (%v), sent as captured %v", i, c, err, fr.Capture)
			}
		}
		if st := s.Status(); st.Discarded < 6 {
			t.Errorf("discarded %d raw frames, want at least 6 (never encoded)", st.Discarded)
		}
		if st := src.Stats(); st.Taken != uint64(len(invited)) {
			t.Errorf("source handed out %d frames for %d invitations", st.Taken, len(invited))
		}
	})
}

// reportIn returns the timing report among a write's control packets, or
// nil if it carries none.
func reportIn(ctrl []rtcp.Packet) *framer.SenderReport {
	for _, p := range ctrl {
		if app, ok := p.(*rtcp.ApplicationDefined); ok {
			if rep, _ := framer.ParseSenderReport(app); rep != nil {
				return rep
			}
		}
	}
	return nil
}

// reportedFrames returns the number of frame timings in a write's timing
// report, or -1 if it carries none.
func reportedFrames(ctrl []rtcp.Packet) int {
	if rep := reportIn(ctrl); rep != nil {
		return len(rep.Frames)
	}
	return -1
}

// TestReportsBatched checks that timing reports go out at most every
// reportEvery, with every timing gathered since (at 2 Mb/s every timing
// fits reportShare): the first at once, the frames of the next 200 ms
// together.
func TestReportsBatched(t *testing.T) {
	bubble(t, Config{Mode: "default", Start: 2 * rate.Mbps, MaxSize: media.Size{W: 1280, H: 720}}, func(s *Sender, src *media.Source, f *fakeTransport) {
		write := func() {
			t.Helper()
			f.invite <- transport.Invitation{}
			synctest.Wait()
			w := f.writes[len(f.writes)-1]
			now := time.Now()
			s.Sent(transport.SendRecord{ID: w.id, Bytes: 1000, WriteStart: now, WriteEnd: now, LeftHost: now})
			time.Sleep(time.Second / 30)
		}
		for range 9 {
			write()
		}
		_, ctrl := f.frames(t)
		var got []int
		for _, c := range ctrl {
			got = append(got, reportedFrames(c))
		}
		// The first write has nothing to report; the second reports the
		// first frame; the next six fall within 200 ms of it (six
		// intervals of 1/30 s, a few ns short); the ninth, 233 ms on,
		// reports the seven frames since.
		want := []int{-1, 1, -1, -1, -1, -1, -1, -1, 7}
		if !slices.Equal(got, want) {
			t.Errorf("frames per write's report %v, want %v", got, want)
		}
	})
}

func TestReportsNameAndTimings(t *testing.T) {
	var got []FrameRecord
	bubble(t, Config{Name: "cam-1", Mode: "replenish=15ms", OnFrame: func(r FrameRecord) { got = append(got, r) }}, func(s *Sender, src *media.Source, f *fakeTransport) {
		drain := transport.DrainRecord{StackRate: 3 * rate.Mbps}
		f.invite <- transport.Invitation{DrainRate: 2 * rate.Mbps, Drain: drain, Lead: 7 * time.Millisecond,
			RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond}
		synctest.Wait()
		w := f.writes[0]
		start := time.Now()
		left := start.Add(3 * time.Millisecond)
		s.Sent(transport.SendRecord{ID: w.id, Bytes: 1000, WriteStart: start, WriteEnd: start, LeftHost: left, Retransmits: 4})
		time.Sleep(time.Second / 30)
		f.invite <- transport.Invitation{DrainRate: 2 * rate.Mbps}
		synctest.Wait()

		frames, ctrl := f.frames(t)
		if name, err := framer.StreamName(ctrl[0], s.SSRC()); err != nil || name != "cam-1" {
			t.Errorf("first write: stream name %q, %v; want cam-1", name, err)
		}
		if mode, err := framer.StreamMode(ctrl[0], s.SSRC()); err != nil || mode != "replenish=15ms" {
			t.Errorf("first write: mode %q, %v; want replenish=15ms", mode, err)
		}
		rep := reportIn(ctrl[1])
		if rep == nil || len(rep.Frames) != 1 {
			t.Fatalf("second write: report %+v, want one frame's timing", rep)
		}
		ft := rep.Frames[0]
		if ft.RTPTimestamp != frames[0].Timestamp || !ft.Capture.Equal(frames[0].Capture) {
			t.Errorf("timing for ts %d captured %v; want frame 0 (ts %d, %v)", ft.RTPTimestamp, ft.Capture, frames[0].Timestamp, frames[0].Capture)
		}
		if d := ft.LeftHost - ft.WriteStart; d != 3*time.Millisecond {
			t.Errorf("reported source delay %v, want 3ms", d)
		}
		if len(got) != 1 || got[0].LeftHost.Sub(got[0].WriteStart) != 3*time.Millisecond || got[0].Size.W == 0 || got[0].Retransmits != 4 ||
			got[0].Drain != drain || got[0].Lead != 7*time.Millisecond {
			t.Errorf("OnFrame records %+v, want frame 0 with its 3 ms source delay, 4 retransmits and its invitation's drain record and lead", got)
		}
		if written := size(w.pkts); len(got) == 1 && (got[0].Written != written || got[0].Control.Phase == "" || got[0].Control.Rate == 0) {
			t.Errorf("OnFrame record written %d, control %+v; want the %d bytes of its write and the controller's state", got[0].Written, got[0].Control, written)
		}
		if st := s.Status(); st.SourceDelayN != 1 || st.SourceDelayP50 != 3*time.Millisecond {
			t.Errorf("status source delay %v over %d frames, want 3ms over 1", st.SourceDelayP50, st.SourceDelayN)
		}
	})
}

// A name or mode text the viewer would refuse is an error at once, not a
// stream that never gets its name.
func TestNewRejectsBadText(t *testing.T) {
	for _, tc := range []struct{ name, mode string }{
		{"a\nb", ""},
		{"ok", "replenish\x00"},
		{"ok", strings.Repeat("m", 65)},
	} {
		_, err := New(Config{Source: media.NewSource(media.SourceConfig{}), NewEncoder: NewEncoderOf(fakecodec.NewEncoder),
			Name: tc.name, Mode: tc.mode})
		if !errors.Is(err, framer.ErrBadName) {
			t.Errorf("New(name %q, mode %q): err = %v, want ErrBadName", tc.name, tc.mode, err)
		}
	}
}

// Before each write the sender declares its lead: its recent encode time
// and a margin.
func TestDeclaresLead(t *testing.T) {
	bubble(t, Config{}, func(s *Sender, src *media.Source, f *fakeTransport) {
		for range 5 {
			f.invite <- transport.Invitation{DrainRate: rate.Mbps}
			synctest.Wait()
			time.Sleep(40 * time.Millisecond)
		}
		if len(f.leads) != len(f.writes) || len(f.writes) != 5 {
			t.Fatalf("%d leads declared for %d writes, want one before each of 5", len(f.leads), len(f.writes))
		}
		for i, d := range f.leads {
			if d < leadMargin {
				t.Errorf("lead %d = %v, want at least the margin %v", i, d, leadMargin)
			}
		}
	})
}

// TestCapsPacing checks that the sender caps the transport's pacing
// before each frame it writes under source buffer management, and leaves
// it alone without a drain rate (no source buffer management).
func TestCapsPacing(t *testing.T) {
	bubble(t, Config{}, func(s *Sender, src *media.Source, f *fakeTransport) {
		for _, drain := range []rate.Bitrate{0, 0, rate.Mbps, rate.Mbps, rate.Mbps} {
			f.invite <- transport.Invitation{DrainRate: drain}
			synctest.Wait()
			time.Sleep(40 * time.Millisecond)
		}
		if len(f.writes) != 5 || len(f.caps) != 3 {
			t.Fatalf("%d pacing caps for %d writes, want one before each of the 3 with a drain rate", len(f.caps), len(f.writes))
		}
		if f.caps[2] != pacingCap(s.ctrl.State()) {
			t.Errorf("last cap %v, want pacingCap of the controller's state, %v", f.caps[2], pacingCap(s.ctrl.State()))
		}
	})
}

// TestWindowBoundNotCapacity invites with the transport's window bound (no
// window measured yet, or a bound below the measurement) and then with the
// same rate measured: only the measurement raises the controller's
// capacity.
func TestWindowBoundNotCapacity(t *testing.T) {
	for _, tc := range []struct {
		src  drain.Source
		want bool // the capacity reaches the drain rate
	}{{drain.SourceWindow, false}, {drain.SourceWindowCapped, false}, {drain.SourceMeasured, true}} {
		bubble(t, Config{}, func(s *Sender, src *media.Source, f *fakeTransport) {
			const r = 11 * rate.Mbps
			for range 5 {
				f.invite <- transport.Invitation{DrainRate: r, RTT: 10 * time.Millisecond, MinRTT: 10 * time.Millisecond,
					Drain: transport.DrainRecord{Estimate: drain.Estimate{Rate: r, Source: tc.src}}}
				synctest.Wait()
				time.Sleep(40 * time.Millisecond)
			}
			if got := s.ctrl.capacity >= r; got != tc.want {
				t.Errorf("invited at %v from the %v source: capacity %v, want it at the rate: %v", r, tc.src, s.ctrl.capacity, tc.want)
			}
		})
	}
}

// TestRungFrameRate runs on the lowest rung (15 fps) with invitations as
// fast as the source renders: the sender takes every other frame and
// discards the rest unseen, without counting them as skipped.
func TestRungFrameRate(t *testing.T) {
	bubble(t, Config{MaxSize: media.Ladder[0].Size}, func(s *Sender, src *media.Source, f *fakeTransport) {
		if fps := s.ctrl.Rung().Rate(30); fps != 15 {
			t.Fatalf("lowest rung at %d fps, want 15", fps)
		}
		for range 30 {
			f.invite <- transport.Invitation{DrainRate: 1 * rate.Mbps}
			synctest.Wait()
		}
		time.Sleep(time.Second / 15) // the last invitation waits for its frame
		synctest.Wait()
		frames, _ := f.frames(t)
		if len(frames) != 30 {
			t.Fatalf("%d frames for 30 invitations", len(frames))
		}
		for i := 1; i < len(frames); i++ {
			if gap := frames[i].Capture.Sub(frames[i-1].Capture); gap < time.Second/15-time.Millisecond || gap > time.Second/15+time.Millisecond {
				t.Errorf("frames %d and %d captured %v apart, want 1/15 s", i-1, i, gap)
			}
		}
		if st := s.Status(); st.Discarded < 29 {
			t.Errorf("discarded %d raw frames, want every other one (29)", st.Discarded)
		}
	})
}

// TestFramesSpreadBelowMin starts at a target below the lowest rung's
// Min: the sender takes frames further apart (media.Rung.IntervalAt, at the
// ladder's floor five a second) and the encoder spends each one's interval,
// so that a frame keeps the bits of one at Min.
func TestFramesSpreadBelowMin(t *testing.T) {
	low := media.Ladder[0]
	floor := low.Min / media.MaxStretch
	bubble(t, Config{MaxSize: low.Size, Start: floor / 2}, func(s *Sender, src *media.Source, f *fakeTransport) {
		want := low.IntervalAt(30, floor)
		if want != time.Second/5 {
			t.Fatalf("interval at %v: %v, want 200ms", floor, want)
		}
		for range 10 {
			f.invite <- transport.Invitation{}
			synctest.Wait()
		}
		time.Sleep(want) // the last invitation waits for its frame
		synctest.Wait()
		frames, _ := f.frames(t)
		if len(frames) != 10 {
			t.Fatalf("%d frames for 10 invitations", len(frames))
		}
		size := fakecodec.FrameLen(floor, int(time.Second/want), false)
		for i := 1; i < len(frames); i++ {
			if gap := frames[i].Capture.Sub(frames[i-1].Capture); gap < want-time.Millisecond || gap > want+time.Millisecond {
				t.Errorf("frames %d and %d captured %v apart, want %v", i-1, i, gap, want)
			}
			if n := len(frames[i].Data); !frames[i].Key && n != size {
				t.Errorf("frame %d: %d bytes, want %d (%v over %v)", i, n, size, floor, want)
			}
		}
	})
}

// With temporal layers each frame's layer reaches the wire in its payload
// descriptor, in the encoder's pattern, which a keyframe restarts; without
// them frames carry none.
func TestTemporalLayers(t *testing.T) {
	for _, mode := range []media.Scalability{media.L1T1, media.L1T3} {
		t.Run(mode.String(), func(t *testing.T) {
			bubble(t, Config{Scalability: mode, MinKeyframeGap: time.Millisecond}, func(s *Sender, src *media.Source, f *fakeTransport) {
				for i := range 11 {
					if i == 6 {
						s.RequestKeyframe()
					}
					f.invite <- transport.Invitation{DrainRate: rate.Mbps}
					synctest.Wait()
					time.Sleep(40 * time.Millisecond)
				}
				frames, _ := f.frames(t)
				ref := media.NewLayeringAt(mode, frames[0].Layer.TL0PicIdx)
				for i, fr := range frames {
					if fr.Key != (i == 0 || i == 6) {
						t.Fatalf("frame %d: key %v", i, fr.Key)
					}
					if want := framer.Layer(ref.Next(fr.Key)); fr.Layer != want {
						t.Fatalf("frame %d: layer %+v, want %+v", i, fr.Layer, want)
					}
				}
				if mode == media.L1T3 && frames[6].Layer.TID != 0 {
					t.Fatalf("keyframe in layer %d", frames[6].Layer.TID)
				}
			})
		})
	}
	_, err := New(Config{Source: media.NewSource(media.SourceConfig{}), NewEncoder: NewEncoderOf(fakecodec.NewEncoder), Scalability: 9})
	if !errors.Is(err, media.ErrScalability) {
		t.Errorf("New with an unknown mode: %v", err)
	}
}

// TestPacketSize checks that a frame goes out in RTP packets of at most
// the configured size: 1200 bytes by default (a datagram), fewer and
// larger ones over a byte stream.
func TestPacketSize(t *testing.T) {
	for _, limit := range []int{0, 16 << 10} {
		bubble(t, Config{MaxPacketSize: limit}, func(s *Sender, src *media.Source, f *fakeTransport) {
			f.invite <- transport.Invitation{DrainRate: 2 * rate.Mbps}
			synctest.Wait()
			frames, _ := f.frames(t)
			if len(frames) != 1 {
				t.Fatalf("%d frames, want 1", len(frames))
			}
			want := nonzero(limit, framer.DefaultRTPPacketSize)
			var media, largest int
			for _, p := range f.writes[0].pkts {
				if !framer.IsRTCP(p) {
					media++
					largest = max(largest, len(p))
				}
			}
			n := len(frames[0].Data)
			if n <= 2*framer.DefaultRTPPacketSize || n >= 8<<10 {
				t.Fatalf("a first frame of %d bytes does not tell the sizes apart", n)
			}
			if largest > want {
				t.Errorf("limit %d: a packet of %d bytes", want, largest)
			}
			if fewest := (n + want - 1) / want; media < fewest || media > fewest+1 {
				t.Errorf("limit %d: %d bytes of VP8 in %d packets, want %d or %d", want, n, media, fewest, fewest+1)
			}
		})
	}
}

func nonzero(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
