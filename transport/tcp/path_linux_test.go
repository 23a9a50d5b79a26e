package tcp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"replenish/rate"
	"replenish/transport"
	"replenish/transport/drain"
)

var record = flag.Bool("record", false, "rewrite transport/drain/testdata from the rate-limited paths")

// wireOverhead is what a TCP segment with timestamps costs on the veth
// beyond its payload, as tbf counts it: Ethernet 14, IPv4 20, TCP 20 and
// options 12 bytes.
const wireOverhead = 66

// path is a rate-limited path between two network namespaces: the sender's
// namespace, a router whose egress toward the receiver is a tbf qdisc at
// the given rate, and the receiver's. The bottleneck is not on the sender's
// own interface, so the sender's socket sees no local backpressure.
type path struct {
	sender, router, receiver string // namespace names
	addr                     string // the receiver's address
}

// newPath builds a path at r with a queue of queue bytes, or skips the test
// when it cannot (not root, no ip or tc). It removes its namespaces at the
// end of the test.
func newPath(t *testing.T, r rate.Bitrate, queue int) path {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	base := fmt.Sprintf("rpl%d%s", os.Getpid(), strings.NewReplacer("/", "", " ", "").Replace(t.Name()))
	if len(base) > 40 {
		base = base[:40]
	}
	p := path{sender: base + "s", router: base + "r", receiver: base + "c", addr: "10.201.2.2"}
	t.Cleanup(func() {
		for _, ns := range []string{p.sender, p.router, p.receiver} {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	burst := max(3000, r.Bytes(2*time.Millisecond))
	cmds := [][]string{
		{"ip", "netns", "add", p.sender},
		{"ip", "netns", "add", p.router},
		{"ip", "netns", "add", p.receiver},
		{"ip", "link", "add", "s0", "netns", p.sender, "type", "veth", "peer", "name", "r0", "netns", p.router},
		{"ip", "link", "add", "r1", "netns", p.router, "type", "veth", "peer", "name", "c0", "netns", p.receiver},
		{"ip", "-n", p.sender, "addr", "add", "10.201.1.1/24", "dev", "s0"},
		{"ip", "-n", p.router, "addr", "add", "10.201.1.2/24", "dev", "r0"},
		{"ip", "-n", p.router, "addr", "add", "10.201.2.1/24", "dev", "r1"},
		{"ip", "-n", p.receiver, "addr", "add", "10.201.2.2/24", "dev", "c0"},
		{"ip", "-n", p.sender, "link", "set", "s0", "up"},
		{"ip", "-n", p.router, "link", "set", "r0", "up"},
		{"ip", "-n", p.router, "link", "set", "r1", "up"},
		{"ip", "-n", p.receiver, "link", "set", "c0", "up"},
		{"ip", "-n", p.sender, "route", "add", "default", "via", "10.201.1.2"},
		{"ip", "-n", p.receiver, "route", "add", "default", "via", "10.201.2.1"},
		{"ip", "netns", "exec", p.router, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"tc", "-n", p.router, "qdisc", "add", "dev", "r1", "root", "tbf",
			"rate", fmt.Sprintf("%dbit", int64(r)), "burst", fmt.Sprint(burst), "limit", fmt.Sprint(queue)},
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Skipf("setting up the path: %v: %v: %s", c, err, out)
		}
	}
	return p
}

// inNetns runs fn on a thread in the named network namespace. Sockets that
// fn creates belong to that namespace for their life. The thread is
// discarded afterwards rather than returned to the scheduler.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// connect returns a Conn in the sender's namespace connected to a reader in
// the receiver's that discards everything, with the given congestion
// control.
func (p path) connect(t *testing.T, cc string, cfg Config) *Conn {
	t.Helper()
	var ln net.Listener
	err := inNetns(p.receiver, func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(false)
		ln, err = lc.Listen(context.Background(), "tcp4", p.addr+":0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var tc *net.TCPConn
	err = inNetns(p.sender, func() error {
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
			if err != nil {
				return err
			}
			return serr
		}}
		d.SetMultipathTCP(false)
		nc, err := d.Dial("tcp4", ln.Addr().String())
		if err != nil {
			return err
		}
		tc = nc.(*net.TCPConn)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		tc.Close()
		t.Fatal(err)
	}
	go io.Copy(io.Discard, peer)
	t.Cleanup(func() { tc.Close(); peer.Close() })
	c, err := New(tc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// traced is one TCP_INFO reading as the drain estimator saw it.
type traced struct {
	info Info
	s    drain.Sample
	est  drain.Estimate
}

// videoRun drives c as the video sender does for d: at each invitation it
// waits for the next frame of a 30 fps source, spends encode producing it,
// and writes one frame of size(elapsed) bytes. It returns every TCP_INFO
// reading and the invitations.
func videoRun(t *testing.T, c *Conn, d, encode time.Duration, size func(time.Duration) int) ([]traced, []transport.Invitation) {
	t.Helper()
	var mu sync.Mutex
	var tr []traced
	c.testHookSample = func(i Info, s drain.Sample, e drain.Estimate) {
		mu.Lock()
		tr = append(tr, traced{i, s, e})
		mu.Unlock()
	}
	const frame = time.Second / 30
	start := time.Now()
	next := start
	var invs []transport.Invitation
	for id := uint64(0); time.Since(start) < d; id++ {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		inv, err := c.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		invs = append(invs, inv)
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
		next = next.Add(frame)
		if late := time.Now().Add(-frame); next.Before(late) {
			next = late // the source runs on; missed frames are not made up
		}
		time.Sleep(encode)
		n := max(size(time.Since(start)), 1)
		if err := c.Write(id, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	c.testHookSample = nil
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(tr), invs
}

// payloadRate is the payload rate a link of rate r carries for the segments
// sent between two readings: the wire also carries each segment's headers.
func payloadRate(r rate.Bitrate, from, to Info) rate.Bitrate {
	bytes := float64(to.BytesSent - from.BytesSent)
	segs := float64(to.DataSegsOut - from.DataSegsOut)
	if bytes <= 0 {
		return 0
	}
	return rate.Bitrate(float64(r) * bytes / (bytes + wireOverhead*segs))
}

// median returns the median of v (0 for none).
func median(v []rate.Bitrate) rate.Bitrate {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// writeTrace stores a trace as transport/drain's table tests read it.
func writeTrace(t *testing.T, name, comment string, link, payload rate.Bitrate, skip time.Duration, tr []traced) {
	t.Helper()
	var b strings.Builder
	var uts unix.Utsname
	unix.Uname(&uts)
	fmt.Fprintf(&b, "# %s\n# recorded on Linux %s by transport/tcp TestDrainOnPath -record\n", comment, unix.ByteSliceToString(uts.Release[:]))
	fmt.Fprintf(&b, "# link_bps=%d payload_bps=%d skip_us=%d\n", int64(link), int64(payload), skip.Microseconds())
	b.WriteString("# at_us,delivered,acks,in_flight,backlogged,recovering,srtt_us,min_rtt_us,cwnd,peer_window,pacing_bps,stack_bps,stack_app_limited,unsent,acked_us\n")
	t0 := tr[0].s.At
	b01 := map[bool]int{false: 0, true: 1}
	for _, x := range tr {
		s := x.s
		fmt.Fprintf(&b, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s\n", s.At.Sub(t0).Microseconds(), s.Delivered, s.Acks, s.InFlight,
			b01[s.Backlogged], b01[s.Recovering], s.SRTT.Microseconds(), s.MinRTT.Microseconds(), s.Cwnd, s.PeerWindow,
			int64(min(s.PacingRate, 1<<50)), int64(x.info.DeliveryRate), b01[x.info.AppLimited], x.info.NotsentBytes,
			ackedField(s.AckedAt, t0))
	}
	if err := os.WriteFile(filepath.Join("..", "drain", "testdata", name+".csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ackedField is a trace's acked_us: microseconds from t0, empty if unknown.
func ackedField(acked, t0 time.Time) string {
	if acked.IsZero() {
		return ""
	}
	return strconv.FormatInt(acked.Sub(t0).Microseconds(), 10)
}

// TestDrainOnPath runs a video-like sender over rate-limited paths and
// checks the drain estimate the invitations carry against the link's known
// payload rate, and logs the kernel's tcpi_delivery_rate beside it. With
// -record it also rewrites the traces transport/drain's table tests replay.
func TestDrainOnPath(t *testing.T) {
	type stretch struct {
		until  time.Duration
		factor float64 // frame bitrate over the link rate
	}
	for _, tc := range []struct {
		name     string
		rate     rate.Bitrate
		cc       string
		queue    time.Duration // of the link rate; at least a few packets
		run      time.Duration
		skip     time.Duration // warm-up left out of the check
		frames   []stretch
		check    bool // compare the estimate with the link rate
		recordAs string
	}{
		{name: "100kbit", rate: 100 * rate.Kbps, cc: "cubic", queue: 300 * time.Millisecond, run: 16 * time.Second, skip: 6 * time.Second,
			frames: []stretch{{time.Hour, 1.25}}, check: true, recordAs: "video-100kbit-cubic"},
		{name: "2mbit", rate: 2 * rate.Mbps, cc: "cubic", queue: 100 * time.Millisecond, run: 8 * time.Second, skip: 3 * time.Second,
			frames: []stretch{{time.Hour, 1.25}}, check: true, recordAs: "video-2mbit-cubic"},
		{name: "20mbit", rate: 20 * rate.Mbps, cc: "cubic", queue: 50 * time.Millisecond, run: 8 * time.Second, skip: 3 * time.Second,
			frames: []stretch{{time.Hour, 1.25}}, check: true, recordAs: "video-20mbit-cubic"},
		{name: "2mbit-bbr", rate: 2 * rate.Mbps, cc: "bbr", queue: 100 * time.Millisecond, run: 8 * time.Second, skip: 3 * time.Second,
			frames: []stretch{{time.Hour, 1.25}}, check: true, recordAs: "video-2mbit-bbr"},
		{name: "2mbit-loss", rate: 2 * rate.Mbps, cc: "cubic", queue: 15 * time.Millisecond, run: 8 * time.Second, skip: 3 * time.Second,
			frames: []stretch{{time.Hour, 2}}, check: true, recordAs: "video-2mbit-loss"},
		{name: "2mbit-applimited", rate: 2 * rate.Mbps, cc: "cubic", queue: 100 * time.Millisecond, run: 10 * time.Second, skip: 3 * time.Second,
			frames: []stretch{{4 * time.Second, 1.25}, {8 * time.Second, 0.4}, {time.Hour, 1.25}}, recordAs: "video-2mbit-applimited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.check && !*record {
				t.Skip("recorded only with -record")
			}
			t.Parallel()
			p := newPath(t, tc.rate, max(tc.rate.Bytes(tc.queue), 4500))
			c := p.connect(t, tc.cc, Config{Mode: transport.Mode{ReplenishTime: 15 * time.Millisecond}, NoTimestamps: true})
			size := func(at time.Duration) int {
				for _, s := range tc.frames {
					if at < s.until {
						return tc.rate.Scale(s.factor).Bytes(time.Second / 30)
					}
				}
				return 0
			}
			tr, invs := videoRun(t, c, tc.run, 2*time.Millisecond, size)
			t0 := invs[0].At
			var from, to Info
			var est, stack []rate.Bitrate
			for _, x := range tr {
				if x.s.At.Sub(t0) < tc.skip {
					from = x.info
					continue
				}
				to = x.info
			}
			for _, inv := range invs {
				if inv.At.Sub(t0) >= tc.skip {
					est = append(est, inv.Drain.Estimate.Rate)
					stack = append(stack, inv.Drain.StackRate)
				}
			}
			want := payloadRate(tc.rate, from, to)
			if *record {
				writeTrace(t, tc.recordAs, fmt.Sprintf("%s: video at 30 fps over a %v tbf link, %v queue, %s", tc.name, tc.rate, tc.queue, tc.cc),
					tc.rate, want, tc.skip-tr[0].s.At.Sub(t0), tr)
			}
			got, kernel := median(est), median(stack)
			t.Logf("%s: link %v, payload %v; estimate p50 %v (%.3f), kernel tcpi_delivery_rate p50 %v (%.3f); %d invitations, %d readings, retransmits %d",
				tc.name, tc.rate, want, got, float64(got)/float64(want), kernel, float64(kernel)/float64(want), len(est), len(tr), to.TotalRetrans)
			if tc.check && (float64(got) < 0.95*float64(want) || float64(got) > 1.05*float64(want)) {
				t.Errorf("estimate p50 %v, want within 5%% of %v", got, want)
			}
		})
	}
}

// TestLeadOnPath checks on a 2 Mb/s path that a lead brings the kernel's
// wake forward: after a write of 60 kB, the invitation with a 50 ms lead
// comes at a backlog the rule without a lead would not invite at, about
// 50 ms of drain earlier. A loaded machine can stall the path's emulator,
// which then sends the rest of the backlog in one burst: the wake finds it
// gone. Each lead gets three writes, and one must show the lead's wake
// (a broken lead shows it in none).
func TestLeadOnPath(t *testing.T) {
	const r = 2 * rate.Mbps
	p := newPath(t, r, r.Bytes(100*time.Millisecond))
	c := p.connect(t, "cubic", Config{Mode: transport.Mode{ReplenishTime: 15 * time.Millisecond}, NoTimestamps: true})
	// Warm up so that the estimate measures the path.
	videoRun(t, c, 3*time.Second, 2*time.Millisecond, func(time.Duration) int { return r.Scale(1.25).Bytes(time.Second / 30) })
	for _, lead := range []time.Duration{0, 50 * time.Millisecond} {
		if err := c.SetLead(lead); err != nil {
			t.Fatal(err)
		}
		var bad []string
		for range 3 {
			if bad = leadOnce(t, c, lead); len(bad) == 0 {
				break
			}
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
}

// leadOnce writes 60 kB once the transport invites and returns what is
// wrong with the next invitation.
func leadOnce(t *testing.T, c *Conn, lead time.Duration) []string {
	t.Helper()
	if _, err := c.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Write(1, make([]byte, 60000)); err != nil {
		t.Fatal(err)
	}
	inv, err := c.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	half := inv.DrainRate.Bytes(15*time.Millisecond) / 2
	t.Logf("lead %v: invited after %v at %d unsent (limit %d, half the threshold %d; %v of drain), wake %v, drain %v",
		lead, inv.At.Sub(start), inv.Unsent, inv.Threshold, half, inv.DrainRate.Duration(inv.Unsent), inv.Wake, inv.DrainRate)
	var bad []string
	if inv.Wake != transport.WakeKernel || inv.Unsent > inv.Threshold {
		bad = append(bad, fmt.Sprintf("lead %v: invitation %+v, want a kernel wake at or below its threshold", lead, inv))
	}
	if lead > 0 && inv.Unsent <= half {
		bad = append(bad, fmt.Sprintf("lead %v: invited at %d unsent, where the rule without a lead (%d) would have invited too", lead, inv.Unsent, half))
	}
	if lead > 0 && inv.Unsent < inv.DrainRate.Bytes(lead/2) {
		bad = append(bad, fmt.Sprintf("lead %v: invited at %d unsent, less than half the lead's drain (%d)", lead, inv.Unsent, inv.DrainRate.Bytes(lead/2)))
	}
	return bad
}
