package quic

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"

	"replenish/internal/certs"
	"replenish/rate"
	"replenish/transport"
)

// testViewer is a RoQ receiver on loopback: it accepts one connection and
// reads its media streams when told to.
type testViewer struct {
	ln   *quic.Listener
	fp   certs.Fingerprint
	conn chan *quic.Conn
}

func newTestViewer(t *testing.T) *testViewer {
	t.Helper()
	return newTestViewerOn(t, loopbackUDP(t))
}

// loopbackUDP returns a UDP socket on loopback, closed when the test ends.
func loopbackUDP(t *testing.T) net.PacketConn {
	t.Helper()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	return udp
}

// newTestViewerOn is newTestViewer on a socket of the test's own.
func newTestViewerOn(t *testing.T, pc net.PacketConn) *testViewer {
	t.Helper()
	cert, fp, err := certs.SelfSigned([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{ALPN}},
		&quic.Config{MaxIncomingUniStreams: 10000})
	if err != nil {
		t.Fatal(err)
	}
	v := &testViewer{ln: ln, fp: fp, conn: make(chan *quic.Conn, 1)}
	go func() {
		c, err := ln.Accept(context.Background())
		if err == nil {
			v.conn <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return v
}

func (v *testViewer) addr() string { return v.ln.Addr().String() }

func (v *testViewer) accepted(t *testing.T) *quic.Conn {
	t.Helper()
	select {
	case c := <-v.conn:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the viewer accepted no connection")
		return nil
	}
}

// readStream reads one media stream: its flow identifier, then packets,
// until the stream ends.
func readStream(s io.Reader) (flow uint64, pkts [][]byte, err error) {
	r := bufio.NewReader(s)
	if flow, err = quicvarint.Read(r); err != nil {
		return 0, nil, err
	}
	for {
		n, err := quicvarint.Read(r)
		if errors.Is(err, io.EOF) {
			return flow, pkts, nil
		}
		if err != nil {
			return flow, pkts, err
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			return flow, pkts, err
		}
		pkts = append(pkts, p)
	}
}

// streamLen is the length of a stream carrying pkts after a one-byte flow
// identifier.
func streamLen(pkts [][]byte) int {
	n := 1
	for _, p := range pkts {
		n += quicvarint.Len(uint64(len(p))) + len(p)
	}
	return n
}

func dialTest(t *testing.T, v *testViewer, cfg Config) *Conn {
	t.Helper()
	if cfg.TLS == nil {
		tc, err := certs.ClientTLS(v.fp, nil, "", ALPN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, v.addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recorder keeps send records; it is called on the sending goroutine.
type recorder struct {
	mu   sync.Mutex
	recs []transport.SendRecord
}

func (r *recorder) sent(rec transport.SendRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []transport.SendRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.SendRecord(nil), r.recs...)
}

func packet(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }

// Frames arrive whole and in order on one stream, after the small packets
// that measure the base round trip (empty receiver reports), each with a
// send record whose departure follows its write; paced too.
func TestFramesRoundTrip(t *testing.T) {
	t.Run("unpaced", func(t *testing.T) { framesRoundTrip(t, false) })
	t.Run("paced", func(t *testing.T) { framesRoundTrip(t, true) })
}

func framesRoundTrip(t *testing.T, pace bool) {
	v := newTestViewer(t)
	var rec recorder
	c := dialTest(t, v, Config{Pace: pace, Handler: transport.Handler{Sent: rec.sent}})
	rr, err := (&rtcp.ReceiverReport{}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for range baseProbes {
		want = append(want, rr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a stuck backlog fails, not hangs
	defer cancel()
	for i := range 20 {
		inv, err := c.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if inv.At.IsZero() {
			t.Fatal("invitation without a time")
		}
		pkts := [][]byte{packet(100+i, byte(i)), packet(1200, byte(i)), packet(3000+i, byte(i))}
		if err := c.WriteFrame(uint64(i), pkts); err != nil {
			t.Fatal(err)
		}
		want = append(want, pkts...)
	}
	sc := v.accepted(t)
	s, err := sc.AcceptUniStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.SetReadDeadline(time.Now().Add(10 * time.Second)) // a missing packet fails, not hangs
	// Close abandons what is in flight, so the viewer reads every packet
	// before the sender closes.
	got := make(chan [][]byte, 1)
	go func() {
		_, pkts, _ := readStream(io.LimitReader(s, int64(streamLen(want))))
		got <- pkts
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.all()) < 20 && time.Now().Before(deadline) {
		c.Wait(context.Background())
		time.Sleep(time.Millisecond)
	}
	recs := rec.all()
	if len(recs) != 20 {
		t.Fatalf("%d send records, want 20", len(recs))
	}
	for i, r := range recs {
		if r.ID != uint64(i) || r.LeftHost.IsZero() || r.LeftHost.Before(r.WriteStart) || r.Bytes < 4300 {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	// Once the frame before the last is acknowledged, the invitation
	// pairs the last frame's write with that acknowledgement.
	var inv transport.Invitation
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if inv, err = c.Wait(context.Background()); err != nil || inv.HeadWaitAt.Equal(recs[19].WriteStart) {
			break
		}
	}
	if !inv.HeadWaitAt.Equal(recs[19].WriteStart) || inv.HeadWait < -inv.MinRTT-time.Second || inv.HeadWait > time.Second {
		t.Errorf("invitation's head wait %v for the frame written at %v, want the last frame's (written at %v)", inv.HeadWait, inv.HeadWaitAt, recs[19].WriteStart)
	}
	pkts := <-got
	c.Close()
	if len(pkts) != len(want) {
		t.Fatalf("viewer read %d packets, want %d", len(pkts), len(want))
	}
	for i := range want {
		if !bytes.Equal(pkts[i], want[i]) {
			t.Fatalf("packet %d differs", i)
		}
	}
	if n := c.Counters(); n.Frames != 20 || n.InvitedImmediate == 0 {
		t.Errorf("counters %+v", n)
	}
}

// A viewer whose certificate does not match the pin is refused with
// certs.ErrPinMismatch, and no connection is made.
func TestWrongPinRefused(t *testing.T) {
	v := newTestViewer(t)
	wrong := v.fp
	wrong[5] ^= 0xff
	tc, _ := certs.ClientTLS(wrong, nil, "", ALPN)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, v.addr(), Config{TLS: tc})
	if err == nil {
		c.Close()
		t.Fatal("dialled a viewer whose certificate does not match the pin")
	}
	if !errors.Is(err, certs.ErrPinMismatch) {
		t.Fatalf("error %v does not say the pin did not match", err)
	}
}

// The viewer's feedback stream reaches Handler.Packet; a malformed one ends
// the connection.
func TestFeedback(t *testing.T) {
	v := newTestViewer(t)
	got := make(chan []byte, 4)
	c := dialTest(t, v, Config{Handler: transport.Handler{Packet: func(p []byte) { got <- bytes.Clone(p) }}})
	sc := v.accepted(t)
	fs, err := sc.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	pli := []byte{0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2}
	b := quicvarint.Append(nil, FlowID)
	b = quicvarint.Append(b, uint64(len(pli)))
	fs.Write(append(b, pli...))
	select {
	case p := <-got:
		if !bytes.Equal(p, pli) {
			t.Fatalf("feedback %x, want %x", p, pli)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no feedback delivered")
	}
	fs.Write(quicvarint.Append(nil, 0)) // a zero-length packet
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, err := c.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the connection survived malformed feedback")
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
}

// With the viewer not reading, flow control stops packetization and the
// backlog grows; Wait then parks, and the viewer's reading wakes it
// through the write limiter, not through the safety timer.
func TestWakeFromPacketization(t *testing.T) {
	v := newTestViewer(t)
	c := dialTest(t, v, Config{Mode: transport.Mode{ReplenishTime: time.Microsecond}, SafetyTimeout: time.Hour})
	// 2 MB: well past the initial flow-control windows (512 KB), which
	// grow only when the viewer reads.
	big := [][]byte{packet(60000, 1)}
	for i := range 35 {
		if err := c.WriteFrame(uint64(i), big); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if c.unsent() == 0 {
		t.Fatal("no backlog: flow control did not hold data back")
	}
	sc := v.accepted(t)
	parked := make(chan transport.Invitation, 1)
	go func() {
		inv, _ := c.Wait(context.Background())
		parked <- inv
	}()
	select {
	case inv := <-parked:
		t.Fatalf("invited with a backlog of %d bytes (threshold %d)", inv.Unsent, inv.Threshold)
	case <-time.After(200 * time.Millisecond):
	}
	go func() {
		s, err := sc.AcceptUniStream(context.Background())
		if err == nil {
			io.Copy(io.Discard, s)
		}
	}()
	select {
	case inv := <-parked:
		if inv.Wake != transport.WakeKernel {
			t.Errorf("woken by %v, want the stack (%v)", inv.Wake, transport.WakeKernel)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no invitation after the viewer started reading")
	}
}

// In expire mode a frame that cannot go out before its expiry is reset or
// dropped, and the Conn counts it; its record has no departure.
func TestExpire(t *testing.T) {
	v := newTestViewer(t)
	var rec recorder
	c := dialTest(t, v, Config{Mode: transport.Mode{Policy: transport.Expire, Expire: 50 * time.Millisecond},
		Handler: transport.Handler{Sent: rec.sent}})
	for i := range 40 {
		if _, err := c.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteFrame(uint64(i), [][]byte{packet(60000, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.all()) < 40 && time.Now().Before(deadline) {
		c.Poll()
		time.Sleep(10 * time.Millisecond)
	}
	dropped, reset, bytesReset := c.Expired()
	if dropped+reset == 0 {
		t.Fatal("no frame expired although the viewer read nothing")
	}
	if reset > 0 && bytesReset == 0 {
		t.Errorf("%d frames reset with no bytes sent for them", reset)
	}
	var stamped int
	for _, r := range rec.all() {
		if !r.LeftHost.IsZero() {
			stamped++
		}
	}
	if want := 40 - int(dropped+reset); stamped != want {
		t.Errorf("%d records with a departure, want %d (dropped %d, reset %d)", stamped, want, dropped, reset)
	}
	if c.unsent() != 0 {
		t.Errorf("unsent %d after every frame finished", c.unsent())
	}
}

func TestConfigValidate(t *testing.T) {
	tc := &tls.Config{}
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"replenish", Config{TLS: tc}, true},
		{"no TLS", Config{}, false},
		{"lowat", Config{TLS: tc, Mode: transport.Mode{Policy: transport.Lowat, Lowat: 1000}}, false},
		{"nagle", Config{TLS: tc, Mode: transport.Mode{Nagle: true}}, false},
		{"expire", Config{TLS: tc, Mode: transport.Mode{Policy: transport.Expire, Expire: time.Second}}, true},
		{"expire without duration", Config{TLS: tc, Mode: transport.Mode{Policy: transport.Expire}}, false},
		{"default", Config{TLS: tc, Mode: transport.Mode{Policy: transport.Default}}, true},
		{"negative queue", Config{TLS: tc, MaxQueue: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.validate(); (err == nil) != tc.ok {
				t.Fatalf("validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// Unpaced, the write limiter never limits, counts packetized bytes, stamps
// a frame's departure when its last byte is packetized, and wakes the
// waiter exactly when the backlog falls to the armed limit.
func TestLimiter(t *testing.T) {
	c := &Conn{wake: make(chan struct{}, 1)}
	c.accepted.Store(10000)
	c.limit.Store(3000)
	f := &frame{end: 10000}
	lim := c.limiter(f)
	woke := func() bool {
		select {
		case <-c.wake:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		n        int
		wantWake bool
		left     bool
	}{
		{1200, false, false}, // unsent 8800
		{5000, false, false}, // 3800
		{800, true, false},   // 3000: at the limit
		{1500, true, false},  // 1500
		{1500, true, true},   // 0: the frame's last byte
	} {
		if got := lim(step.n); got != step.n {
			t.Fatalf("limiter(%d) = %d: it limited", step.n, got)
		}
		if w := woke(); w != step.wantWake {
			t.Errorf("after %d more bytes (unsent %d): woke %v, want %v", step.n, c.unsent(), w, step.wantWake)
		}
		if left := f.leftHost.Load() != 0; left != step.left {
			t.Errorf("after %d more bytes: departed %v, want %v", step.n, left, step.left)
		}
	}
	if c.packed.Load() != 10000 {
		t.Errorf("packed %d, want 10000", c.packed.Load())
	}
	c.limit.Store(-1) // disarmed: no wakes
	c.accepted.Add(100)
	lim(100)
	if woke() {
		t.Error("woke with the limit disarmed")
	}
}

// initialDatagram is quic-go's datagram size before path MTU discovery
// (its client pads the first packets to it).
const initialDatagram = 1280

// sizeConn is a viewer's socket that keeps the largest datagram it read.
type sizeConn struct {
	net.PacketConn
	largest atomic.Int64
}

func (c *sizeConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(p)
	if int64(n) > c.largest.Load() {
		c.largest.Store(int64(n))
	}
	return n, addr, err
}

// The sender does not probe the path's MTU: no datagram exceeds quic-go's
// initial size, however long the connection runs (quic-go probes every
// five round trips, within milliseconds on loopback).
func TestNoMTUProbes(t *testing.T) {
	sc := &sizeConn{PacketConn: loopbackUDP(t)}
	v := newTestViewerOn(t, sc)
	c := dialTest(t, v, Config{})
	conn := v.accepted(t)
	go func() {
		s, err := conn.AcceptUniStream(context.Background())
		if err == nil {
			io.Copy(io.Discard, s)
		}
	}()
	for i := range 100 {
		if _, err := c.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteFrame(uint64(i), [][]byte{packet(3000, byte(i))}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := sc.largest.Load(); n == 0 || n > initialDatagram {
		t.Errorf("largest datagram %d bytes, want at most %d", n, initialDatagram)
	}
}

// deafConn is a viewer's socket that, while deaf, discards every datagram
// it reads: a path that stopped carrying packets to the viewer.
type deafConn struct {
	net.PacketConn
	deaf atomic.Bool
}

func (c *deafConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil || !c.deaf.Load() {
			return n, addr, err
		}
	}
}

// A connection whose packets go unacknowledged ends with ErrStalled after
// its StallTimeout, long before its idle timeout; a working one, sending
// the same way, does not, nor after a pause with nothing in flight.
func TestStalled(t *testing.T) {
	dc := &deafConn{PacketConn: loopbackUDP(t)}
	v := newTestViewerOn(t, dc)
	c := dialTest(t, v, Config{StallTimeout: 200 * time.Millisecond, IdleTimeout: time.Minute})
	conn := v.accepted(t)
	go func() {
		s, err := conn.AcceptUniStream(context.Background())
		if err == nil {
			io.Copy(io.Discard, s)
		}
	}()
	send := func(frames int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i := range frames {
			if _, err := c.Wait(ctx); err != nil {
				return err
			}
			if err := c.WriteFrame(uint64(i), [][]byte{packet(3000, byte(i))}); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	for range 2 {
		if err := send(50); err != nil {
			t.Fatalf("on a working path: %v", err)
		}
		time.Sleep(600 * time.Millisecond)
	}
	dc.deaf.Store(true)
	if err := send(1000); !errors.Is(err, ErrStalled) {
		t.Fatalf("on a path that carries nothing: %v, want ErrStalled", err)
	}
}

// The stall limit is the timeout, or three probe timeouts, whichever is
// longer, plus the time the bytes in flight take at the drain rate; and
// a dial after a stall waits for the viewer's first answer 1.5 s, or
// five handshakes' time at the drain rate, at most quic-go's default 5 s
// (and that when the rate is unknown).
func TestStallLimits(t *testing.T) {
	st := quic.ConnectionStats{SmoothedRTT: 100 * time.Millisecond, MeanDeviation: 50 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		inFlight int64
		drained  rate.Bitrate
		want     time.Duration
	}{
		{"the timeout", time.Second, 0, 0, time.Second},
		{"three probe timeouts", 500 * time.Millisecond, 0, 0, 975 * time.Millisecond}, // 3 × (100 + 200 + 25) ms
		{"and the bytes in flight at 30 kb/s", time.Second, 2560, 30 * rate.Kbps, time.Second + 2560*8*time.Second/30000},
		{"no drain rate yet: 20 kb/s", time.Second, 2560, 0, time.Second + 2560*8*time.Second/20000},
	} {
		if got := stallLimit(tc.timeout, st, tc.inFlight, tc.drained); got != tc.want {
			t.Errorf("%s: stallLimit = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		drained rate.Bitrate
		want    time.Duration
	}{
		{0, 5 * time.Second},
		{2 * rate.Mbps, 1500 * time.Millisecond},
		{100 * rate.Kbps, 5 * 4096 * 8 * time.Second / 100000},
		{30 * rate.Kbps, 5 * time.Second},
	} {
		if got := redialIdle(tc.drained); got != tc.want {
			t.Errorf("redialIdle(%v) = %v, want %v", tc.drained, got, tc.want)
		}
	}
}
