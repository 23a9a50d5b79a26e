package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
	"replenish/transport/drain"
)

type waitOutcome struct {
	inv transport.Invitation
	err error
}

// waitAsync runs Wait on its own goroutine.
func waitAsync(ctx context.Context, c *Conn) <-chan waitOutcome {
	ch := make(chan waitOutcome, 1)
	go func() {
		inv, err := c.Wait(ctx)
		ch <- waitOutcome{inv, err}
	}()
	return ch
}

// receive waits for a Wait to finish, failing the test at the guard.
func receive(t *testing.T, ch <-chan waitOutcome) waitOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(guard):
		t.Fatal("Wait did not return")
	}
	panic("unreachable")
}

// parkedWait starts a Wait on a backlogged connection and returns once it
// has parked for a kernel event (and not returned).
func parkedWait(t *testing.T, ctx context.Context, c *Conn) <-chan waitOutcome {
	t.Helper()
	parks := c.Stats().Parks
	ch := waitAsync(ctx, c)
	eventually(t, "Wait to park", func() bool { return c.Stats().Parks > parks })
	select {
	case o := <-ch:
		t.Fatalf("Wait returned on a backlogged socket: %+v, %v (unsent %d)", o.inv, o.err, info(t, c).NotsentBytes)
	default:
	}
	return ch
}

// backlogged returns pair options for tests that build a backlog. In
// default mode, which waits for send-buffer space, the send buffer and the
// peer's receive buffer are small, so that the send buffer fills. Elsewhere
// the send buffer is large (8 MiB), so that filling never finds it full:
// a write that runs out of space marks the socket SOCK_NOSPACE, which
// would mask a missing arming poll.
func backlogged(mode transport.Policy) pairOptions {
	if mode != transport.Default {
		return pairOptions{before: func(fd int) error {
			return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
		}}
	}
	return pairOptions{
		peerRcvBuf: 8 << 10,
		before: func(fd int) error {
			return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 256<<10)
		},
	}
}

// backlog makes the Conn's policy stop inviting while the peer does not
// read (the pair must have the backlogged options): 512 KiB unsent, which
// no peer receive buffer here absorbs, or a full send buffer in default
// mode.
func backlog(t *testing.T, e endpoint) {
	t.Helper()
	switch cfg := e.c.Config(); cfg.Mode.Policy {
	case transport.Replenish:
		fillUnsent(t, e, 32000, 512<<10)
		settleNetpoll(t, e.c)
	case transport.Lowat:
		// Linux gates writes at the lowat, so lift it while filling,
		// then put it back.
		setLowatRaw(t, e.c, NoLowat)
		fillUnsent(t, e, 32000, 512<<10)
		settleNetpoll(t, e.c)
		setLowatRaw(t, e.c, uint32(cfg.Mode.Lowat))
	case transport.Default:
		fillUnwritable(t, e, 32000)
	}
	if e.c.Config().Mode.Policy != transport.Replenish && writable(t, e.c) {
		t.Fatal("the socket is still writable after filling")
	}
}

// settleNetpoll makes the runtime consume any readiness event still queued
// in epoll for the socket, which must be writable. Such a leftover (from a
// setsockopt that woke the socket's waiters, say) would otherwise be
// re-polled at some later moment, and a re-poll that finds the socket not
// writable marks it SOCK_NOSPACE: the arming a Wait must do itself, which a
// test that checks the arming must not get for free. Setting
// TCP_NOTSENT_LOWAT on a writable socket wakes its waiters, and the raw
// write below parks until the runtime has delivered that wake.
func settleNetpoll(t *testing.T, c *Conn) {
	t.Helper()
	c.tc.SetWriteDeadline(time.Now().Add(guard))
	defer c.tc.SetWriteDeadline(time.Time{})
	first := true
	var serr error
	err := c.raw.Write(func(fd uintptr) bool {
		if first {
			first = false
			serr = setLowat(int(fd), NoLowat)
			return false
		}
		return true
	})
	if err != nil || serr != nil {
		t.Fatal("settling the netpoller:", err, serr)
	}
}

// setLowatRaw sets TCP_NOTSENT_LOWAT behind the Conn's back.
func setLowatRaw(t *testing.T, c *Conn, v uint32) {
	t.Helper()
	var serr error
	if err := c.raw.Control(func(fd uintptr) { serr = setLowat(int(fd), v) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
}

// TestKernelWake checks that a parked Wait is ended by the kernel's
// write-space wake once the peer reads, not by the safety timer. The safety
// timer is long enough that a correct build never sees it and short enough
// that a build without the wake fails in seconds (with WakeTimer).
func TestKernelWake(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"replenish", Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}}},
		{"replenish without timestamps", Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, NoTimestamps: true}},
		{"replenish nagle without timestamps", Config{Mode: transport.Mode{ReplenishTime: time.Microsecond, Nagle: true}, NoTimestamps: true}},
		{"lowat without timestamps", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: 64 << 10}, NoTimestamps: true}},
		{"default without timestamps", Config{Mode: transport.Mode{Policy: transport.Default}, NoTimestamps: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.SafetyTimeout = 3 * time.Second
			e := newPair(t, tc.cfg, backlogged(tc.cfg.Mode.Policy))
			backlog(t, e)
			before := info(t, e.c)
			ch := parkedWait(t, context.Background(), e.c)
			done := discard(e.peer)
			o := receive(t, ch)
			if o.err != nil {
				t.Fatalf("Wait: %v", o.err)
			}
			st := e.c.Stats()
			t.Logf("unsent before %d, invitation %+v; stats %+v", before.NotsentBytes, o.inv, st)
			if o.inv.Wake != transport.WakeKernel {
				t.Errorf("Wake = %v, want kernel (timer wakes %d)", o.inv.Wake, st.TimerWakes)
			}
			// With timestamps on, a departure stamp may wake the wait
			// before EPOLLOUT does (when send-buffer space, which the rule
			// ignores, still holds poll back); that is a kernel event too.
			// Without them only EPOLLOUT can end the wait.
			if tc.cfg.NoTimestamps && (st.KernelWakes == 0 || st.ErrQueueWakes != 0) {
				t.Errorf("timestamps off: %d EPOLLOUT wakes, %d error-queue wakes", st.KernelWakes, st.ErrQueueWakes)
			}
			if tc.cfg.Mode.Policy != transport.Default && o.inv.Unsent > o.inv.Threshold {
				t.Errorf("invited with %d unsent above threshold %d", o.inv.Unsent, o.inv.Threshold)
			}
			e.tc.CloseWrite()
			<-done
		})
	}
}

// TestNotificationOnly checks that after an invitation the frame is written
// with TCP_NOTSENT_LOWAT at no limit in replenish mode (so the write is
// never gated or cut short), at the configured value in lowat mode, and
// that the frame, far larger than the threshold, arrives whole.
func TestNotificationOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want uint32
	}{
		{"replenish", Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}}, NoLowat},
		{"replenish nagle", Config{Mode: transport.Mode{ReplenishTime: time.Microsecond, Nagle: true}}, NoLowat},
		{"lowat", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: 16 << 10}}, 16 << 10},
		{"default", Config{Mode: transport.Mode{Policy: transport.Default}}, NoLowat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPair(t, tc.cfg, backlogged(tc.cfg.Mode.Policy))
			var got <-chan []pktSummary
			if tc.cfg.Mode.Policy != transport.Default {
				// Park once so that replenish mode has armed a small
				// lowat before the write.
				backlog(t, e)
				ch := parkedWait(t, context.Background(), e.c)
				got = drainPeer(e.peer)
				if o := receive(t, ch); o.err != nil {
					t.Fatalf("Wait: %v", o.err)
				}
			} else {
				got = drainPeer(e.peer)
				if _, err := e.c.Wait(context.Background()); err != nil {
					t.Fatalf("Wait: %v", err)
				}
			}
			filled := e.c.Stats().Frames
			if tc.cfg.Mode.Policy == transport.Replenish && e.c.Stats().Lowat == NoLowat && e.c.Stats().Parks == 0 {
				t.Fatal("the wait never armed a lowat; the test proves nothing")
			}
			var during []uint32
			e.c.testHookBeforeWrite = func() {
				v, err := e.c.notsentLowat()
				if err != nil {
					t.Error(err)
				}
				during = append(during, v)
			}
			big := frame(20, 50000, 1) // 1 MB, far above any threshold here
			if err := e.c.WriteFrame(1, big); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
			if v, err := e.c.notsentLowat(); err != nil || v != tc.want {
				t.Errorf("TCP_NOTSENT_LOWAT after the write = %d, %v; want %d", v, err, tc.want)
			}
			e.tc.CloseWrite()
			if !slices.Equal(during, []uint32{tc.want}) {
				t.Errorf("TCP_NOTSENT_LOWAT during the write = %v, want %d (never 0)", during, tc.want)
			}
			pkts := <-got
			if want := int(filled) + len(big); len(pkts) != want {
				t.Fatalf("peer got %d packets, want %d", len(pkts), want)
			}
			for i, p := range pkts[filled:] {
				if p.size != 50000 || p.first != byte(1+i) || !p.uniform {
					t.Errorf("packet %d of the big frame: %+v", i, p)
				}
			}
			if st := e.c.Stats(); tc.cfg.Mode.Policy != transport.Default && st.BytesWritten != uint64(int(filled)*32002+20*50002) {
				t.Errorf("BytesWritten = %d", st.BytesWritten)
			}
		})
	}
}

func TestOptionsReadBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		nodelay bool
		lowat   uint32
	}{
		{"replenish", Config{}, true, NoLowat},
		{"replenish nagle", Config{Mode: transport.Mode{Nagle: true}}, false, NoLowat},
		{"lowat", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: 20000}}, true, 20000},
		{"lowat nagle", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: 1, Nagle: true}}, false, 1},
		{"default", Config{Mode: transport.Mode{Policy: transport.Default}}, true, NoLowat},
		{"default nagle", Config{Mode: transport.Mode{Policy: transport.Default, Nagle: true}}, false, NoLowat},
		{"no timestamps", Config{NoTimestamps: true}, true, NoLowat},
		{"default send buffer", Config{Mode: transport.Mode{Policy: transport.Default, SendBuffer: 1 << 20}}, true, NoLowat},
		{"user timeout", Config{UserTimeout: 7 * time.Second}, true, NoLowat},
		{"rto max", Config{RTOMax: 1500 * time.Millisecond}, true, NoLowat},
		{"congestion reno", Config{Congestion: "reno"}, true, NoLowat},
		{"paced", Config{Pace: true}, true, NoLowat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Start from the opposite of what New should set, and a
			// socket lowat of 0, which would mean the sysctl's value.
			e := newPair(t, tc.cfg, pairOptions{before: func(fd int) error {
				nd := 1
				if tc.nodelay {
					nd = 0
				}
				return errors.Join(
					unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, nd),
					unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, 0))
			}})
			var nodelay, lowat, ts int
			var gerr error
			e.c.raw.Control(func(fd uintptr) {
				var e1, e2, e3 error
				nodelay, e1 = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
				lowat, e2 = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
				ts, e3 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING)
				gerr = errors.Join(e1, e2, e3)
			})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if (nodelay != 0) != tc.nodelay {
				t.Errorf("TCP_NODELAY = %d, want %v", nodelay, tc.nodelay)
			}
			if uint32(int32(lowat)) != tc.lowat || lowat == 0 {
				t.Errorf("TCP_NOTSENT_LOWAT = %d, want %d", uint32(int32(lowat)), tc.lowat)
			}
			o := e.c.Options()
			if o.NoDelay != tc.nodelay || o.NotsentLowat != tc.lowat {
				t.Errorf("Options = %+v", o)
			}
			if tc.cfg.NoTimestamps != (ts == 0) || o.Timestamping != ts {
				t.Errorf("SO_TIMESTAMPING = %#x, Options %#x, NoTimestamps %v", ts, o.Timestamping, tc.cfg.NoTimestamps)
			}
			// Linux doubles SO_SNDBUF (within net.core.wmem_max).
			if tc.cfg.Mode.SendBuffer > 0 && o.SendBuffer < tc.cfg.Mode.SendBuffer {
				t.Errorf("SO_SNDBUF reads %d, set %d", o.SendBuffer, tc.cfg.Mode.SendBuffer)
			}
			var uto int
			e.c.raw.Control(func(fd uintptr) { uto, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
			if want := int(tc.cfg.UserTimeout.Milliseconds()); uto != want {
				t.Errorf("TCP_USER_TIMEOUT = %d ms, want %d", uto, want)
			}
			var rtoMax int
			var rtoErr error
			e.c.raw.Control(func(fd uintptr) { rtoMax, rtoErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS) })
			if errors.Is(rtoErr, unix.ENOPROTOOPT) {
				t.Logf("this kernel has no TCP_RTO_MAX_MS")
			} else if tc.cfg.RTOMax > 0 && (rtoMax != int(tc.cfg.RTOMax.Milliseconds()) || o.RTOMax != tc.cfg.RTOMax) {
				t.Errorf("TCP_RTO_MAX_MS = %d ms, Options.RTOMax %v; want %v", rtoMax, o.RTOMax, tc.cfg.RTOMax)
			}
			if tc.cfg.RTOMax == 0 && o.RTOMax != 0 {
				t.Errorf("Options.RTOMax %v without Config.RTOMax", o.RTOMax)
			}
			if tc.cfg.Mode.SendBuffer == 0 && o.SendBuffer != 0 {
				t.Errorf("Options.SendBuffer %d without Config.SendBuffer", o.SendBuffer)
			}
			var cc string
			e.c.raw.Control(func(fd uintptr) { cc, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
			if cc == "" || o.Congestion != cc || (tc.cfg.Congestion != "" && cc != tc.cfg.Congestion) {
				t.Errorf("TCP_CONGESTION = %q, Options.Congestion %q, Config.Congestion %q", cc, o.Congestion, tc.cfg.Congestion)
			}
			// Unset, SO_MAX_PACING_RATE reads all ones; any other value
			// turns the kernel's pacing on.
			var pacing uint64
			e.c.raw.Control(func(fd uintptr) { pacing, _ = unix.GetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE) })
			if (pacing != math.MaxUint64) != tc.cfg.Pace || o.Paced != tc.cfg.Pace {
				t.Errorf("SO_MAX_PACING_RATE = %#x, Options.Paced %v, Config.Pace %v", pacing, o.Paced, tc.cfg.Pace)
			}
		})
	}
}

// TestCapPacing checks that CapPacing sets SO_MAX_PACING_RATE where the
// kernel paces anyway (Config.Pace, BBR), lifts it again with zero, and
// leaves an unpaced socket unpaced: the option would turn pacing on.
func TestCapPacing(t *testing.T) {
	if err := CheckCongestion("bbr"); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		paced bool
	}{
		{"cubic", Config{Congestion: "cubic"}, false},
		{"cubic paced", Config{Congestion: "cubic", Pace: true}, true},
		{"bbr", Config{Congestion: "bbr"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPair(t, tc.cfg, pairOptions{})
			read := func() uint64 {
				var v uint64
				e.c.raw.Control(func(fd uintptr) { v, _ = unix.GetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE) })
				return v
			}
			unset := read()
			for _, step := range []struct {
				cap  rate.Bitrate
				want uint64
			}{
				{2 * rate.Mbps, 250_000},
				{2 * rate.Mbps, 250_000},
				{10 * rate.Mbps, 1_250_000},
				{0, math.MaxUint64 - 1},
			} {
				if err := e.c.CapPacing(step.cap); err != nil {
					t.Fatal(err)
				}
				want := step.want
				if !tc.paced {
					want = unset
				}
				if got := read(); got != want {
					t.Errorf("after CapPacing(%v): SO_MAX_PACING_RATE = %d, want %d", step.cap, got, want)
				}
			}
		})
	}
}

// TestCongestionUnavailable checks that a congestion control the kernel
// does not have is refused, by CheckCongestion and by Dial, with an error
// that lists the ones it has.
func TestCongestionUnavailable(t *testing.T) {
	if err := CheckCongestion("reno"); err != nil {
		t.Fatalf("CheckCongestion(reno) = %v", err) // built into every kernel
	}
	for _, name := range []string{"nosuchcc", "bad-name", ""} {
		err := CheckCongestion(name)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("CheckCongestion(%q) = %v, want ErrConfig", name, err)
		}
		t.Logf("CheckCongestion(%q): %v", name, err)
	}
	if err := CheckCongestion("nosuchcc"); err == nil || !strings.Contains(err.Error(), "reno") {
		t.Errorf("CheckCongestion(nosuchcc) = %v, want the loaded ones (reno among them)", err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := Dial(context.Background(), ln.Addr().String(), Config{Congestion: "nosuchcc"}); !errors.Is(err, ErrConfig) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial with congestion nosuchcc = %v, want ErrConfig", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"lowat zero", Config{Mode: transport.Mode{Policy: transport.Lowat}}},
		{"lowat negative", Config{Mode: transport.Mode{Policy: transport.Lowat, Lowat: -5}}},
		{"negative replenish", Config{Mode: transport.Mode{ReplenishTime: -time.Millisecond}}},
		{"rto max under a second", Config{RTOMax: 500 * time.Millisecond}},
		{"rto max over 120 s", Config{RTOMax: 121 * time.Second}},
		{"rto max not in milliseconds", Config{RTOMax: 1500*time.Millisecond + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if _, err := Dial(context.Background(), ln.Addr().String(), tc.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("Dial = %v, want ErrConfig", err)
			}
		})
	}
}

// recorder collects SendRecords from OnSent.
type recorder struct {
	mu   sync.Mutex
	recs []transport.SendRecord
}

func (r *recorder) add(rec transport.SendRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) get() []transport.SendRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// TestTimestampKeys checks the OPT_ID key arithmetic on real sockets: a
// frame written as bytes [a, b) of the stream is stamped with key b-1 when
// nothing coalesces with it, when it leaves (SND) and when the peer has
// acknowledged it (ACK), and its record departs at or after its write
// started. Each frame is written after the one before was acknowledged, so
// the invitation reports the last frame's wait behind it as negative: it
// met no queue.
func TestTimestampKeys(t *testing.T) {
	var rec recorder
	e := newPair(t, Config{OnSent: rec.add}, pairOptions{})
	done := discard(e.peer)
	var mu sync.Mutex
	var snd, ack []uint32
	e.c.testHookStamp = func(s stamp) {
		mu.Lock()
		defer mu.Unlock()
		switch s.kind {
		case unix.SCM_TSTAMP_SND:
			snd = append(snd, s.key)
		case unix.SCM_TSTAMP_ACK:
			ack = append(ack, s.key)
		}
	}
	var offset uint32
	for i, pkts := range [][][]byte{frame(1, 1, 1), frame(1, 998, 2), frame(2, 60000, 3), frame(1, 65535, 4), frame(3, 1000, 5)} {
		id := uint64(i + 1)
		if _, err := e.c.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.c.WriteFrame(id, pkts); err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			offset += uint32(2 + len(p))
		}
		eventually(t, "the frame's record and acknowledgement", func() bool {
			e.c.Poll()
			mu.Lock()
			defer mu.Unlock()
			return len(rec.get()) == int(id) && slices.Contains(ack, offset-1)
		})
		mu.Lock()
		if !slices.Contains(snd, offset-1) {
			t.Errorf("frame %d ends at byte %d: SND keys %v lack %d", id, offset, snd, offset-1)
		}
		mu.Unlock()
	}
	for _, r := range rec.get() {
		if r.LeftHost.IsZero() || r.LeftHost.Before(r.WriteStart) {
			t.Errorf("record %+v: LeftHost not at or after WriteStart", r)
		}
		t.Logf("frame %d: %d bytes, write %v, left host %v after write start", r.ID, r.Bytes, r.WriteEnd.Sub(r.WriteStart), r.SourceDelay())
	}
	t.Logf("SND keys %v, ACK keys %v", snd, ack)
	inv, err := e.c.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	recs := rec.get()
	if last := recs[len(recs)-1]; !inv.HeadWaitAt.Equal(last.WriteStart) || inv.HeadWait >= 0 {
		t.Errorf("invitation's head wait %v for the frame written at %v, want a negative wait for the last frame (written at %v)",
			inv.HeadWait, inv.HeadWaitAt, last.WriteStart)
	}
	e.tc.CloseWrite()
	<-done
}

// TestTimestampsCoalesced writes small frames behind a closed window. With
// Nagle on, Linux coalesces them into one skb carrying only the last write's
// stamp key, and every record must still get a departure time. With
// TCP_NODELAY each write ends its own skb (MSG_EOR), so each gets its own
// stamp.
func TestTimestampsCoalesced(t *testing.T) {
	for _, nagle := range []bool{true, false} {
		t.Run(fmt.Sprintf("nagle=%v", nagle), func(t *testing.T) {
			var rec recorder
			e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond, Nagle: nagle}, OnSent: rec.add}, pairOptions{peerRcvBuf: 64 << 10})
			filled := fillUnsent(t, e, 32000, 256<<10)
			const small = 50
			for i := range small {
				if err := e.c.WriteFrame(uint64(i), frame(1, 200, byte(i))); err != nil {
					t.Fatal(err)
				}
			}
			stampsBefore := e.c.Stats().StampsSent
			done := discard(e.peer)
			want := filled + small
			eventually(t, "every record", func() bool {
				e.c.Poll()
				return len(rec.get()) == want
			})
			st := e.c.Stats()
			t.Logf("%d frames (%d small), SND stamps while backlogged %d, total %d; stats %+v", want, small, stampsBefore, st.StampsSent, st)
			var ids []uint64
			for _, r := range rec.get() {
				if r.LeftHost.IsZero() || r.LeftHost.Before(r.WriteStart) {
					t.Errorf("record %d: LeftHost %v, WriteStart %v", r.ID, r.LeftHost, r.WriteStart)
				}
				if r.ID < 1000000 {
					ids = append(ids, r.ID)
				}
			}
			if len(ids) != small || !slices.IsSorted(ids) {
				t.Errorf("small frames delivered as %v", ids)
			}
			n := st.StampsSent - stampsBefore
			if nagle && n >= small {
				t.Errorf("%d SND stamps for %d small frames: they did not coalesce, so this test did not exercise matching", n, small)
			}
			if !nagle && n < small {
				t.Errorf("%d SND stamps for %d small frames with TCP_NODELAY: writes merged, so some took a later write's departure", n, small)
			}
			if st.Pending != 0 || st.RecordsUnstamped != 0 || st.RecordsStamped != uint64(want) {
				t.Errorf("stats %+v", st)
			}
			e.tc.CloseWrite()
			<-done
		})
	}
}

// TestTimestampsBounded checks that records whose stamp does not come stay
// bounded: the oldest are evicted and reported without a departure time.
func TestTimestampsBounded(t *testing.T) {
	var rec recorder
	const max = 8
	e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, OnSent: rec.add, MaxPending: max}, pairOptions{peerRcvBuf: 64 << 10})
	filled := fillUnsent(t, e, 32000, 256<<10)
	for i := range 40 {
		if err := e.c.WriteFrame(uint64(i), frame(1, 100, 1)); err != nil {
			t.Fatal(err)
		}
		if p := e.c.Stats().Pending; p > max {
			t.Fatalf("%d records pending, bound %d", p, max)
		}
	}
	st := e.c.Stats()
	if st.RecordsEvicted == 0 || st.Pending != max {
		t.Fatalf("no eviction behind a closed window: %+v", st)
	}
	done := discard(e.peer)
	eventually(t, "every record", func() bool {
		e.c.Poll()
		return len(rec.get()) == filled+40
	})
	st = e.c.Stats()
	var unstamped uint64
	for _, r := range rec.get() {
		if r.LeftHost.IsZero() {
			unstamped++
		}
	}
	if unstamped != st.RecordsEvicted || st.RecordsUnstamped != st.RecordsEvicted || st.Pending != 0 {
		t.Errorf("%d records without departure, stats %+v", unstamped, st)
	}
	e.tc.CloseWrite()
	<-done
}

func TestTimestampsOff(t *testing.T) {
	var rec recorder
	e := newPair(t, Config{NoTimestamps: true, OnSent: rec.add}, pairOptions{})
	done := discard(e.peer)
	for i := range 5 {
		if err := e.c.WriteFrame(uint64(i), frame(2, 500, 1)); err != nil {
			t.Fatal(err)
		}
	}
	recs := rec.get()
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5 (delivered at write)", len(recs))
	}
	for _, r := range recs {
		if !r.LeftHost.IsZero() || r.Bytes != 1004 || r.WriteEnd.Before(r.WriteStart) {
			t.Errorf("record %+v", r)
		}
	}
	if st := e.c.Stats(); st.RecordsUnstamped != 5 || st.StampsSent != 0 {
		t.Errorf("stats %+v", st)
	}
	e.tc.CloseWrite()
	<-done
}

// TestWaitCancel checks that cancelling a parked Wait returns the context's
// error and leaves no deadline behind for the next write.
func TestWaitCancel(t *testing.T) {
	e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: time.Hour}, backlogged(transport.Replenish))
	backlog(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	ch := parkedWait(t, ctx, e.c)
	cancel()
	if o := receive(t, ch); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Wait after cancel = %+v, %v", o.inv, o.err)
	}
	if st := e.c.Stats(); st.TimerWakes != 0 {
		t.Errorf("cancel counted as a timer wake: %+v", st)
	}
	if v, err := e.c.notsentLowat(); err != nil || v != NoLowat {
		t.Errorf("TCP_NOTSENT_LOWAT after a cancelled Wait = %d, %v; want no limit", v, err)
	}
	if err := e.c.WriteFrame(1, frame(1, 100, 1)); err != nil {
		t.Errorf("WriteFrame after a cancelled Wait: %v", err)
	}
	if _, err := e.c.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a done context = %v", err)
	}
}

func TestWaitClose(t *testing.T) {
	e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: time.Hour}, backlogged(transport.Replenish))
	backlog(t, e)
	ch := parkedWait(t, context.Background(), e.c)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if o := receive(t, ch); !errors.Is(o.err, net.ErrClosed) {
		t.Fatalf("Wait after Close = %+v, %v", o.inv, o.err)
	}
}

// TestWaitTimer checks the safety net: with a wake that never comes (the
// peer never reads), each timer expiry re-evaluates and re-arms rather than
// inviting.
func TestWaitTimer(t *testing.T) {
	e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: 20 * time.Millisecond}, backlogged(transport.Replenish))
	backlog(t, e)
	ch := waitAsync(context.Background(), e.c)
	eventually(t, "two timer wakes", func() bool { return e.c.Stats().TimerWakes >= 2 })
	select {
	case o := <-ch:
		t.Fatalf("Wait returned on a backlogged socket: %+v, %v", o.inv, o.err)
	default:
	}
	done := discard(e.peer)
	o := receive(t, ch)
	if o.err != nil {
		t.Fatal(o.err)
	}
	e.tc.CloseWrite()
	<-done
}

func TestWaitImmediate(t *testing.T) {
	for _, cfg := range []Config{{}, {Mode: transport.Mode{Policy: transport.Lowat, Lowat: 1000}}, {Mode: transport.Mode{Policy: transport.Default}}} {
		t.Run(cfg.Mode.String(), func(t *testing.T) {
			e := newPair(t, cfg, pairOptions{})
			inv, err := e.c.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if inv.Wake != transport.WakeImmediate || inv.Unsent != 0 || inv.At.IsZero() {
				t.Errorf("invitation %+v", inv)
			}
			if st := e.c.Stats(); st.InvitedImmediate != 1 || st.Parks != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestPeerPackets checks that the peer's packets reach OnPacket from the
// sending goroutine's own calls, also when they arrive while Wait is parked
// with timestamps on (a blocked reader would get spurious errors from Go's
// netpoller then), and that the end of the peer's stream and garbage end
// the connection with ErrPeerClosed.
func TestPeerPackets(t *testing.T) {
	var got [][]byte
	cfg := Config{
		Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: guard,
		OnPacket: func(p []byte) { got = append(got, slices.Clone(p)) },
	}
	e := newPair(t, cfg, pairOptions{peerRcvBuf: 64 << 10})
	fillUnsent(t, e, 16<<10, 256<<10)
	// The peer writes and drains only once Wait has parked: a drain that
	// beat the Wait would make its invitation immediate.
	ch := parkedWait(t, context.Background(), e.c)
	go func() {
		var b []byte
		for _, p := range frame(3, 40, 7) {
			b, _ = framer.AppendFramed(b, p)
		}
		e.peer.Write(b)
		io.Copy(io.Discard, e.peer) // drains the backlog, which ends the wait
	}()
	o := receive(t, ch)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.inv.Wake != transport.WakeKernel {
		t.Errorf("wake %v, want kernel", o.inv.Wake)
	}
	eventually(t, "three packets", func() bool { e.c.Poll(); return len(got) == 3 })
	for i, p := range got {
		if len(p) != 40 || p[0] != byte(7+i) {
			t.Fatalf("packet %d: %v", i, p)
		}
	}
	if st := e.c.Stats(); st.PacketsIn != 3 {
		t.Errorf("PacketsIn %d", st.PacketsIn)
	}

	e.peer.CloseWrite()
	var perr error
	eventually(t, "the end of the peer's stream", func() bool { perr = e.c.Poll(); return perr != nil })
	if !errors.Is(perr, ErrPeerClosed) || !errors.Is(perr, io.EOF) {
		t.Errorf("Poll after the peer closed: %v", perr)
	}
	if _, err := e.c.Wait(context.Background()); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("Wait after the peer closed: %v", err)
	}

	// Garbage: a zero-length packet ends the connection too.
	e2 := newPair(t, Config{}, pairOptions{})
	e2.peer.Write([]byte{0, 1, 9, 0, 0})
	eventually(t, "the garbage", func() bool { perr = e2.c.Poll(); return perr != nil })
	if !errors.Is(perr, ErrPeerClosed) || !errors.Is(perr, framer.ErrEmptyPacket) {
		t.Errorf("Poll after garbage: %v", perr)
	}
}

func TestWriteFrameErrors(t *testing.T) {
	e := newPair(t, Config{}, pairOptions{})
	if err := e.c.WriteFrame(1, nil); !errors.Is(err, ErrEmptyFrame) {
		t.Errorf("no packets: %v", err)
	}
	if err := e.c.WriteFrame(1, [][]byte{{1}, {}}); err == nil {
		t.Error("empty packet accepted")
	}
	if err := e.c.WriteFrame(1, [][]byte{make([]byte, 70000)}); err == nil {
		t.Error("oversized packet accepted")
	}
	if st := e.c.Stats(); st.Frames != 0 || st.BytesWritten != 0 {
		t.Errorf("rejected frames were written: %+v", st)
	}
}

func TestPeerReset(t *testing.T) {
	e := newPair(t, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: time.Hour}, backlogged(transport.Replenish))
	backlog(t, e)
	ch := parkedWait(t, context.Background(), e.c)
	e.peer.SetLinger(0)
	e.peer.Close() // unread data: the peer resets the connection
	o := receive(t, ch)
	if o.err == nil {
		t.Fatalf("Wait after the peer reset = %+v", o.inv)
	}
	t.Logf("Wait after reset: %v", o.err)
}

// TestAbort: a connection aborted with unsent data resets, and its peer
// reads the reset, not the data the socket held.
func TestAbort(t *testing.T) {
	e := newPair(t, Config{Mode: transport.Mode{Policy: transport.Default}}, backlogged(transport.Default))
	backlog(t, e)
	if err := e.c.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	e.peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	var n int64
	buf := make([]byte, 64<<10)
	for {
		k, err := e.peer.Read(buf)
		n += int64(k)
		if err != nil {
			if !errors.Is(err, unix.ECONNRESET) {
				t.Errorf("the peer read %d bytes, then %v; want a reset", n, err)
			}
			break
		}
	}
	if err := e.c.Abort(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Abort again: %v, want net.ErrClosed", err)
	}
}

// TestNewRejectsMPTCP checks that New refuses an MPTCP socket, which Go
// can pick by default, rather than read subflow state as if it were TCP.
func TestNewRejectsMPTCP(t *testing.T) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	var d net.Dialer
	d.SetMultipathTCP(true)
	nc, err := d.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if mp, err := nc.(*net.TCPConn).MultipathTCP(); err != nil || !mp {
		t.Skip("the kernel has no MPTCP here")
	}
	if _, err := New(nc.(*net.TCPConn), Config{}); !errors.Is(err, ErrNotTCP) {
		t.Fatalf("New on an MPTCP socket = %v, want ErrNotTCP", err)
	}
	c, err := Dial(context.Background(), ln.Addr().String(), Config{})
	if err != nil {
		t.Fatalf("Dial to an MPTCP listener: %v", err)
	}
	c.Close()
}

// TestLeadArmsEarlierWake checks on real sockets that a lead moves the
// wake: while parked, TCP_NOTSENT_LOWAT is what Decide gives with the lead
// (so the kernel's wake comes when the rule with the lead invites, at a
// larger backlog, that is earlier), the invitation that ends the wait comes
// from the kernel and carries the lead, and the kernel-faithful mode
// ignores the lead.
func TestLeadArmsEarlierWake(t *testing.T) {
	for _, kernel := range []bool{false, true} {
		t.Run(fmt.Sprintf("kernel=%v", kernel), func(t *testing.T) {
			cfg := Config{Mode: transport.Mode{ReplenishTime: time.Microsecond, Kernel: kernel}, SafetyTimeout: guard}
			e := newPair(t, cfg, backlogged(transport.Replenish))
			backlog(t, e)
			i := info(t, e.c)
			e.c.mu.Lock()
			est := e.c.drainOut
			e.c.mu.Unlock()
			if !est.Known() || est.Rate <= 0 {
				t.Fatalf("no drain estimate on a backlogged socket: %+v", est)
			}
			// A lead worth a quarter of the backlog at the drain rate.
			lead := max(est.Rate.Duration(i.NotsentBytes/4), time.Microsecond)
			without := Decide(inputFor(i, e.c.Config(), est, 0)).Limit
			with := Decide(inputFor(i, e.c.Config(), est, lead)).Limit
			if !kernel && (with <= without || with >= i.NotsentBytes) {
				t.Fatalf("limit %d with a %v lead, %d without, %d unsent: the test needs without < with < unsent", with, lead, without, i.NotsentBytes)
			}
			if err := e.c.SetLead(lead); err != nil {
				t.Fatal(err)
			}
			ch := parkedWait(t, context.Background(), e.c)
			want := lowatFor(with)
			if kernel {
				want = Lowat(inputFor(i, e.c.Config(), est, 0))
			}
			if got := e.c.Stats().Lowat; got != want {
				t.Errorf("TCP_NOTSENT_LOWAT while parked = %d, want %d (without the lead %d)", got, want, lowatFor(without))
			}
			done := discard(e.peer)
			o := receive(t, ch)
			if o.err != nil {
				t.Fatal(o.err)
			}
			t.Logf("lead %v: invited at %d unsent, limit %d (without the lead %d), %+v", lead, o.inv.Unsent, o.inv.Threshold, without, o.inv.Drain.Estimate)
			wantLead := lead
			if kernel {
				wantLead = 0
			}
			if o.inv.Wake != transport.WakeKernel || o.inv.Lead != wantLead || o.inv.Unsent > o.inv.Threshold {
				t.Errorf("invitation %+v, want a kernel wake with lead %v at or below its threshold", o.inv, wantLead)
			}
			e.tc.CloseWrite()
			<-done
		})
	}
}

func TestSetLead(t *testing.T) {
	e := newPair(t, Config{}, pairOptions{})
	if err := e.c.SetLead(-time.Millisecond); !errors.Is(err, ErrConfig) {
		t.Errorf("SetLead(-1ms) = %v, want ErrConfig", err)
	}
	if got := e.c.Lead(); got != 0 {
		t.Errorf("a rejected lead changed it to %v", got)
	}
	if err := e.c.SetLead(12 * time.Millisecond); err != nil || e.c.Lead() != 12*time.Millisecond {
		t.Errorf("SetLead(12ms) = %v, Lead %v", err, e.c.Lead())
	}
	inv, err := e.c.Wait(context.Background())
	if err != nil || inv.Lead != 12*time.Millisecond {
		t.Errorf("Wait = %+v, %v; want the lead in the invitation", inv, err)
	}
	if inv.Drain.Input.At.IsZero() || inv.Drain.Estimate.Source == drain.SourceNone {
		t.Errorf("invitation without the drain record: %+v", inv.Drain)
	}
}

// Where the kernel lacks TCP_RTO_MAX_MS (an option number no kernel has
// stands for it here), the Conn sets UncappedUserTimeout as
// TCP_USER_TIMEOUT instead of UserTimeout; where it has the option,
// UserTimeout stays.
func TestUncappedUserTimeout(t *testing.T) {
	cfg := Config{UserTimeout: 20 * time.Second, RTOMax: time.Second, UncappedUserTimeout: 2 * time.Second}
	userTimeout := func(e endpoint) time.Duration {
		var ms int
		var err error
		e.c.raw.Control(func(fd uintptr) { ms, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ms) * time.Millisecond
	}
	if o := newPair(t, cfg, pairOptions{}).c.Options(); o.RTOMax != 0 {
		if o.UserTimeout != cfg.UserTimeout {
			t.Errorf("with TCP_RTO_MAX_MS: Options.UserTimeout %v, want %v", o.UserTimeout, cfg.UserTimeout)
		}
	} else {
		t.Logf("this kernel has no TCP_RTO_MAX_MS")
	}
	defer func(opt int) { rtoMaxOption = opt }(rtoMaxOption)
	rtoMaxOption = 0x7fff
	e := newPair(t, cfg, pairOptions{})
	o := e.c.Options()
	if got := userTimeout(e); got != cfg.UncappedUserTimeout || o.UserTimeout != got || o.RTOMax != 0 {
		t.Errorf("without TCP_RTO_MAX_MS: TCP_USER_TIMEOUT %v, Options.UserTimeout %v, RTOMax %v; want %v, %v, 0",
			got, o.UserTimeout, o.RTOMax, cfg.UncappedUserTimeout, cfg.UncappedUserTimeout)
	}
}
