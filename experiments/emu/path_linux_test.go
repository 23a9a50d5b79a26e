package emu

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
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
	"unsafe"

	"golang.org/x/sys/unix"

	"replenish/rate"
)

// needRoot skips t when this process cannot create network namespaces.
func needRoot(t testing.TB) {
	t.Helper()
	if err := checkCaps(); err != nil {
		t.Skip("skipping: creating network namespaces needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: the iproute2 ip command is not installed")
	}
}

// startPath starts a path for cfg and closes it when t ends.
func startPath(t testing.TB, cfg Config) *Path {
	t.Helper()
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// tunTxDrops returns the packets the TUN device of side s dropped on
// transmit: packets its own queue could not hold because the mover did not
// read them in time.
func tunTxDrops(t testing.TB, p *Path, s Side) int64 {
	t.Helper()
	var drops int64 = -1
	err := p.Do(s, func() error {
		f, err := os.Open("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, rest, ok := strings.Cut(sc.Text(), ":")
			if !ok || strings.TrimSpace(name) != tunName {
				continue
			}
			// Receive: 8 fields; transmit: bytes packets errs drop ...
			f := strings.Fields(rest)
			if len(f) < 12 {
				return fmt.Errorf("short line %q", sc.Text())
			}
			drops, err = strconv.ParseInt(f[11], 10, 64)
			return err
		}
		return fmt.Errorf("%s not in /proc/net/dev", tunName)
	})
	if err != nil {
		t.Fatal(err)
	}
	return drops
}

// listenUDP opens a UDP socket on side s's address with kernel receive
// timestamps and a large receive buffer.
func listenUDP(t testing.TB, p *Path, s Side) *net.UDPConn {
	t.Helper()
	addr := p.SenderAddr()
	if s == Receiver {
		addr = p.ReceiverAddr()
	}
	var c *net.UDPConn
	err := p.Do(s, func() error {
		var err error
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		if err != nil {
			return err
		}
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		err = raw.Control(func(fd uintptr) {
			serr = errors.Join(
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20),
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20))
		})
		return errors.Join(err, serr)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// datagram is one received UDP datagram.
type datagram struct {
	at   time.Time // kernel receive time
	sent time.Time // send time carried in the payload
	seq  uint64
	hold uint64 // ns an echo held the datagram, carried in the payload
	n    int    // IP bytes
}

// udpIPOverhead is the IPv4 and UDP header bytes of a datagram.
const udpIPOverhead = 28

// payload writes a datagram's sequence number and send time into b, and
// zeroes the echo's hold time.
func payload(b []byte, seq uint64, sent time.Time) {
	binary.BigEndian.PutUint64(b, seq)
	binary.BigEndian.PutUint64(b[8:], uint64(sent.UnixNano()))
	if len(b) >= 24 {
		binary.BigEndian.PutUint64(b[16:], 0)
	}
}

// readDatagram reads one datagram from c with its kernel receive time.
func readDatagram(c *net.UDPConn, buf, oob []byte) (datagram, *net.UDPAddr, error) {
	n, oobn, _, from, err := c.ReadMsgUDP(buf, oob)
	if err != nil {
		return datagram{}, nil, err
	}
	d := datagram{n: n + udpIPOverhead, at: time.Now()}
	if n >= 16 {
		d.seq = binary.BigEndian.Uint64(buf)
		d.sent = time.Unix(0, int64(binary.BigEndian.Uint64(buf[8:])))
	}
	if n >= 24 {
		d.hold = binary.BigEndian.Uint64(buf[16:])
	}
	// One control message is expected: SCM_TIMESTAMPNS, a struct
	// timespec of two 64-bit fields. Parsed by hand: this runs for every
	// datagram and should not allocate.
	if oob = oob[:oobn]; len(oob) >= unix.CmsgSpace(16) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			data := oob[unix.CmsgLen(0):]
			sec := int64(binary.NativeEndian.Uint64(data))
			nsec := int64(binary.NativeEndian.Uint64(data[8:]))
			d.at = time.Unix(sec, nsec)
		}
	}
	return d, from, nil
}

// collector receives datagrams on a socket until it is stopped.
type collector struct {
	c    *net.UDPConn
	mu   sync.Mutex // guards got
	got  []datagram
	done chan struct{}
}

func collect(c *net.UDPConn) *collector {
	k := &collector{c: c, done: make(chan struct{}), got: make([]datagram, 0, 1<<16)}
	go func() {
		defer close(k.done)
		buf, oob := make([]byte, 2048), make([]byte, 128)
		for {
			d, _, err := readDatagram(c, buf, oob)
			if err != nil {
				return
			}
			k.mu.Lock()
			k.got = append(k.got, d)
			k.mu.Unlock()
		}
	}()
	return k
}

// stop closes the socket and returns what was received.
func (k *collector) stop() []datagram {
	k.c.Close()
	<-k.done
	return k.got
}

// blast sends datagrams of ipBytes IP bytes from c to dst at r, in bursts
// at most a millisecond apart, for d or until it has sent limit of them (0
// means no limit), and returns how many it sent.
func blast(t testing.TB, c *net.UDPConn, dst netip.Addr, port int, ipBytes int, r rate.Bitrate, d time.Duration, limit int) int {
	t.Helper()
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, uint16(port)))
	b := make([]byte, ipBytes-udpIPOverhead)
	start := time.Now()
	sent := 0
	for {
		el := time.Since(start)
		if el >= d || (limit > 0 && sent >= limit) {
			return sent
		}
		due := int(r.BytesPerSecond()*el.Seconds()/float64(ipBytes)) + 1
		if limit > 0 {
			due = min(due, limit)
		}
		for ; sent < due; sent++ {
			payload(b, uint64(sent), time.Now())
			if _, err := c.WriteToUDP(b, to); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func port(c *net.UDPConn) int { return c.LocalAddr().(*net.UDPAddr).Port }

// rateBetween returns the rate of the datagrams received in [from, to),
// from the first arrival to the last, counting the bytes of all but the
// first, and the number of datagrams.
func rateBetween(got []datagram, from, to time.Time) (float64, int) {
	var first, last time.Time
	bytes, n := 0, 0
	for _, d := range got {
		if d.at.Before(from) || !d.at.Before(to) {
			continue
		}
		if n == 0 {
			first = d.at
		} else {
			bytes += d.n
		}
		last = d.at
		n++
	}
	if n < 2 || !last.After(first) {
		return 0, n
	}
	return float64(bytes) * 8 / last.Sub(first).Seconds(), n
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestStartAndClose(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name   string
		cc     string
		sndbuf int  // Config.SendBuffer
		inside bool // a process is running in the receiver namespace when the path ends
		end    func(p *Path, cancel context.CancelFunc) error
	}{{
		name: "Close",
		end:  func(p *Path, _ context.CancelFunc) error { return p.Close() },
	}, {
		name:   "send buffer",
		sndbuf: 8 << 20,
		end:    func(p *Path, _ context.CancelFunc) error { return p.Close() },
	}, {
		name: "context cancelled",
		end: func(p *Path, cancel context.CancelFunc) error {
			cancel()
			select {
			case <-p.Done():
				return nil
			case <-time.After(30 * time.Second):
				return errors.New("path not removed 30 s after the context was cancelled")
			}
		},
	}, {
		name: "bbr",
		cc:   "bbr",
		end:  func(p *Path, _ context.CancelFunc) error { return p.Close() },
	}, {
		name:   "with a process inside",
		inside: true,
		end:    func(p *Path, _ context.CancelFunc) error { return p.Close() },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procs := runtime.GOMAXPROCS(0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := Start(ctx, Config{CC: tt.cc, SendBuffer: tt.sndbuf, Forward: LinkConfig{Rate: 10 * rate.Mbps, Delay: ms}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			wantCC := tt.cc
			if wantCC == "" {
				wantCC = "cubic"
			}
			names := []string{p.SenderNS(), p.ReceiverNS()}
			for _, s := range []Side{Sender, Receiver} {
				if !nsExists(names[s]) {
					t.Fatalf("namespace %s does not exist", names[s])
				}
				local, peer := p.SenderAddr(), p.ReceiverAddr()
				if s == Receiver {
					local, peer = peer, local
				}
				wmem := tcpWmem
				if s == Sender && tt.sndbuf > 0 {
					wmem = fmt.Sprintf("4096 %d 33554432", tt.sndbuf)
				}
				err := p.Do(s, func() error {
					ifi, err := net.InterfaceByName(tunName)
					if err != nil {
						return err
					}
					if ifi.MTU != MTU || ifi.Flags&net.FlagUp == 0 {
						return fmt.Errorf("%s: mtu %d flags %v", tunName, ifi.MTU, ifi.Flags)
					}
					addrs, err := ifi.Addrs()
					if err != nil {
						return err
					}
					if len(addrs) != 1 || !strings.HasPrefix(addrs[0].String(), local.String()+"/") {
						return fmt.Errorf("%s addresses %v, want only %v", tunName, addrs, local)
					}
					for key, want := range map[string]string{
						"net.ipv4.tcp_congestion_control":            wantCC,
						"net.ipv4.tcp_wmem":                          wmem,
						"net.ipv4.tcp_rmem":                          tcpRmem,
						"net.ipv6.conf." + tunName + ".disable_ipv6": "1",
						"net.ipv6.conf.default.disable_ipv6":         "1",
						"net.ipv4.tcp_no_metrics_save":               "1",
					} {
						got, err := readSysctl(key)
						if err != nil {
							return err
						}
						if strings.Join(strings.Fields(got), " ") != want {
							return fmt.Errorf("%s = %q, want %q", key, got, want)
						}
					}
					return nil
				})
				if err != nil {
					t.Errorf("%v side: %v", s, err)
				}
				for _, c := range []struct{ args, want string }{
					{"link show " + tunName, "qlen 10000"},
					{"route get " + peer.String(), "dev " + tunName},
				} {
					out, err := exec.Command("ip", append([]string{"-n", names[s]}, strings.Fields(c.args)...)...).CombinedOutput()
					if err != nil || !strings.Contains(string(out), c.want) {
						t.Errorf("%v side: ip %s: %v %q, want %q in it", s, c.args, err, out, c.want)
					}
				}
			}

			// A TCP connection across the path works.
			var ln net.Listener
			if err := p.Do(Receiver, func() (err error) {
				ln, err = net.Listen("tcp4", net.JoinHostPort(p.ReceiverAddr().String(), "0"))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err == nil {
					c.Write([]byte("pong"))
					c.Close()
				}
			}()
			if err := p.Do(Sender, func() error {
				c, err := net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
				if err != nil {
					return err
				}
				defer c.Close()
				b := make([]byte, 4)
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Read(b); err != nil || string(b) != "pong" {
					return fmt.Errorf("read %q, %v", b, err)
				}
				return nil
			}); err != nil {
				t.Errorf("tcp across the path: %v", err)
			}

			var inside *exec.Cmd
			if tt.inside {
				inside = exec.Command("ip", "netns", "exec", p.ReceiverNS(), "sleep", "60")
				if err := inside.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					inside.Process.Kill()
					inside.Wait()
				}()
			}

			if err := tt.end(p, cancel); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if nsExists(n) {
					t.Errorf("namespace %s still exists", n)
				}
			}
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("GOMAXPROCS %d after the path ended, want %d as before", got, procs)
			}
			if err := p.Do(Sender, func() error { return nil }); !errors.Is(err, ErrClosed) {
				t.Errorf("Do after close: %v, want ErrClosed", err)
			}
			p.Set(Forward, rate.Mbps, 0) // must not panic or block
			if err := p.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestStartNeedsRoot(t *testing.T) {
	needRoot(t)
	// Drop the capabilities on one locked thread only, and call Start from
	// it; the thread is discarded afterwards.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		data[0].Effective &^= 1<<unix.CAP_NET_ADMIN | 1<<unix.CAP_SYS_ADMIN
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		p, err := Start(context.Background(), Config{})
		if err == nil {
			p.Close()
		}
		errc <- err
	}()
	err := <-errc
	if !errors.Is(err, ErrNeedRoot) {
		t.Fatalf("Start without capabilities: %v, want ErrNeedRoot", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "root") {
		t.Errorf("error %q: want one line that says root is needed", msg)
	}
}

func TestStartConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"bad loss", Config{Forward: LinkConfig{Loss: 2}}, ErrConfig},
		{"negative reverse delay", Config{Reverse: LinkConfig{Delay: -ms}}, ErrConfig},
		{"negative window", Config{Window: -time.Second}, ErrConfig},
		{"congestion control with a slash", Config{CC: "../x"}, ErrConfig},
		{"MTU too small", Config{MTU: 500}, ErrConfig},
		{"MTU too large", Config{MTU: 9000}, ErrConfig},
		{"negative send buffer", Config{SendBuffer: -1}, ErrConfig},
		{"send buffer too large", Config{SendBuffer: 2 << 30}, ErrConfig},
		{"sender namespace with a slash", Config{SenderNS: "../x"}, ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(context.Background(), tt.cfg)
			if err == nil {
				p.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Start: %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("unknown congestion control", func(t *testing.T) {
		needRoot(t)
		p, err := Start(context.Background(), Config{CC: "nosuchcc"})
		if err == nil {
			p.Close()
		}
		if !errors.Is(err, ErrCC) {
			t.Errorf("Start: %v, want ErrCC", err)
		}
	})
}

func TestSweep(t *testing.T) {
	needRoot(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-abcdef-s", nsPrefix, dead.Process.Pid)
	live := fmt.Sprintf("%s%d-abcdef-s", nsPrefix, os.Getpid())
	other := fmt.Sprintf("other-%d-abcdef-s", dead.Process.Pid)
	for _, n := range []string{stale, live, other} {
		if err := ipCmd(context.Background(), "", "netns", "add", n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if nsExists(n) {
				ipCmd(context.Background(), "", "netns", "del", n)
			}
		})
	}
	removed, err := Sweep(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{stale}) {
		t.Errorf("Sweep removed %v, want [%s]", removed, stale)
	}
	for n, want := range map[string]bool{stale: false, live: true, other: true} {
		if got := nsExists(n); got != want {
			t.Errorf("%s exists: %v, want %v", n, got, want)
		}
	}
}

func TestCloseOnSignal(t *testing.T) {
	needRoot(t)
	p := startPath(t, Config{})
	stop := CloseOnSignal(p, syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("path not removed 30 s after the signal")
	}
	if nsExists(p.SenderNS()) || nsExists(p.ReceiverNS()) {
		t.Error("namespaces still exist after the signal")
	}
}

// TestRTT measures the round-trip time of small probes on an idle path with
// a UDP echo between the namespaces, timed by kernel receive timestamps.
func TestRTT(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name string
		rtt  time.Duration
		rate rate.Bitrate
	}{
		{"40 ms unlimited", 40 * ms, 0},
		{"40 ms at 2 Mb/s", 40 * ms, 2 * rate.Mbps},
		{"172 ms at 86 Mb/s", 172 * ms, 86 * rate.Mbps},
	}
	const probes, gap, size = 200, 5 * ms, 92
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := LinkConfig{Rate: tt.rate, Delay: tt.rtt / 2}
			p := startPath(t, Config{Forward: link, Reverse: link})
			server, client := listenUDP(t, p, Receiver), listenUDP(t, p, Sender)
			// The echo reports how long it held each probe, from the
			// kernel's receive time to its reply, so that its own
			// scheduling delays do not count as path delay.
			go func() {
				buf, oob := make([]byte, 2048), make([]byte, 128)
				for {
					d, from, err := readDatagram(server, buf, oob)
					if err != nil {
						return
					}
					binary.BigEndian.PutUint64(buf[16:], uint64(time.Since(d.at)))
					server.WriteToUDP(buf[:d.n-udpIPOverhead], from)
				}
			}()
			replies := collect(client)
			blast(t, client, p.ReceiverAddr(), port(server), size, rate.Bitrate(size*8*int64(time.Second/gap)), probes*gap, probes)
			time.Sleep(tt.rtt + 500*ms)
			got := replies.stop()
			if len(got) < probes*9/10 {
				t.Fatalf("%d replies to %d probes", len(got), probes)
			}
			rtts := make([]time.Duration, len(got))
			var holds []time.Duration
			for i, d := range got {
				hold := time.Duration(d.hold)
				rtts[i] = d.at.Sub(d.sent) - hold
				holds = append(holds, hold)
			}
			slices.Sort(rtts)
			want := tt.rtt + 2*tt.rate.Duration(size)
			med := median(rtts)
			st := p.Stats()
			t.Logf("rtt %v (set %v): min %v p50 %v p95 %v max %v; echo hold p50 %v max %v; mover late p50 %v p99 %v ms",
				want, tt.rtt, rtts[0], med, rtts[len(rtts)*95/100], rtts[len(rtts)-1], median(holds), slices.Max(holds),
				st.Forward.Total.Late.P50, st.Forward.Total.Late.P99)
			if d := med - want; d < -ms || d > ms {
				t.Errorf("median rtt %v, want %v ± 1ms", med, want)
			}
		})
	}
}

// TestRate measures the delivered rate of a saturated path at the receiver,
// from kernel receive timestamps, in five windows, and checks the median.
func TestRate(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name string
		rate rate.Bitrate
		dur  time.Duration
	}{
		{"100 kb/s", 100 * rate.Kbps, 4 * time.Second},
		{"2 Mb/s", 2 * rate.Mbps, 3 * time.Second},
		{"86 Mb/s", 86 * rate.Mbps, 3 * time.Second},
		{"200 Mb/s", 200 * rate.Mbps, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startPath(t, Config{
				Forward: LinkConfig{Rate: tt.rate, Delay: 10 * ms},
				Reverse: LinkConfig{Delay: 10 * ms},
			})
			recv, send := listenUDP(t, p, Receiver), listenUDP(t, p, Sender)
			k := collect(recv)
			// 1.25 times the rate keeps the queue full without burning a
			// core on the sender.
			blast(t, send, p.ReceiverAddr(), port(recv), MTU, tt.rate.Scale(1.25), tt.dur, 0)
			time.Sleep(300 * ms)
			got := k.stop()
			if len(got) < 10 {
				t.Fatalf("received %d datagrams", len(got))
			}
			// Skip the first 10%, then five equal windows.
			first, last := got[0].at, got[len(got)-1].at
			from := first.Add(last.Sub(first) / 10)
			w := last.Sub(from) / 5
			var rates []float64
			for i := range 5 {
				r, n := rateBetween(got, from.Add(time.Duration(i)*w), from.Add(time.Duration(i+1)*w+1))
				if n < 3 {
					t.Fatalf("window %d: %d datagrams", i, n)
				}
				rates = append(rates, r)
			}
			st := p.Stats()
			med := median(rates)
			t.Logf("set %v: windows %.5v Mb/s, median %.4f%% off; drops %d, late p50 %v p99 %v max %v ms, mover cpu %.0f%% of a core",
				tt.rate, scaled(rates, 1e-6), 100*(med/float64(tt.rate)-1),
				st.Forward.Total.Drops, st.Forward.Total.Late.P50, st.Forward.Total.Late.P99, st.Forward.Total.Late.Max,
				100*st.MoverCPU.Seconds()/st.Elapsed.Seconds())
			if off := med/float64(tt.rate) - 1; off < -0.02 || off > 0.02 {
				t.Errorf("median delivered rate %.0f b/s, want %d ± 2%%", med, tt.rate)
			}
			if st.Forward.Total.Drops == 0 {
				t.Error("no drops: the sender did not saturate the bottleneck")
			}
			if d := tunTxDrops(t, p, Sender); d != 0 {
				t.Errorf("the sender's TUN dropped %d packets: the mover did not keep up reading", d)
			}
			if st.Forward.Errors != 0 {
				t.Errorf("%d mover errors", st.Forward.Errors)
			}
		})
	}
}

func scaled(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// TestDropTail overloads the bottleneck and checks that the queue stays
// within its limit, by the emulator's counters and by the one-way delay the
// receiver sees.
func TestDropTail(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name  string
		link  LinkConfig
		limit int // expected limit in bytes
		dur   time.Duration
	}{
		{"2 Mb/s, 50 ms", LinkConfig{Rate: 2 * rate.Mbps, QueueTime: 50 * ms}, 12500, 1500 * ms},
		{"2 Mb/s, 20000 bytes", LinkConfig{Rate: 2 * rate.Mbps, QueueBytes: 20000}, 20000, 1500 * ms},
		{"100 kb/s, 10 ms is raised to two packets", LinkConfig{Rate: 100 * rate.Kbps, QueueTime: 10 * ms}, 3000, 3 * time.Second},
	}
	const delay = 5 * ms
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.link.Delay = delay
			p := startPath(t, Config{Forward: tt.link})
			recv, send := listenUDP(t, p, Receiver), listenUDP(t, p, Sender)
			k := collect(recv)
			sent := blast(t, send, p.ReceiverAddr(), port(recv), MTU, 2*tt.link.Rate, tt.dur, 0)
			time.Sleep(delay + tt.link.Rate.Duration(tt.limit) + 200*ms)
			got := k.stop()
			st := p.Stats().Forward

			if st.QueueLimit != tt.limit {
				t.Errorf("queue limit %d bytes, want %d", st.QueueLimit, tt.limit)
			}
			if st.MaxBacklog > tt.limit {
				t.Errorf("backlog reached %d bytes, above the limit %d", st.MaxBacklog, tt.limit)
			}
			// An accepted packet waits for at most the rest of the queue.
			if maxWait := tt.link.Rate.Duration(tt.limit - MTU); durationsOf(st.Total.Queue).Max > maxWait+time.Microsecond {
				t.Errorf("queueing delay reached %v ms, above %v", st.Total.Queue.Max, maxWait)
			}
			if st.Total.Drops == 0 {
				t.Error("no drops counted")
			}
			if int64(len(got)) != st.Total.Packets || int64(sent) != st.Total.Packets+st.Total.Drops+st.Total.Losses {
				t.Errorf("sent %d, received %d; counted %d delivered, %d dropped, %d lost",
					sent, len(got), st.Total.Packets, st.Total.Drops, st.Total.Losses)
			}
			// Once the queue is full, an accepted packet finds between
			// limit-2 and limit-1 packets' worth ahead of it, then is
			// serialized itself.
			var owd []time.Duration
			for _, d := range got[len(got)/2:] {
				owd = append(owd, d.at.Sub(d.sent))
			}
			lo := delay + tt.link.Rate.Duration(tt.limit-2*MTU) + tt.link.Rate.Duration(MTU)
			hi := delay + tt.link.Rate.Duration(tt.limit)
			med := median(owd)
			t.Logf("one-way delay median %v (want %v..%v), queue p50 %v max %v ms, drops %d",
				med, lo, hi, st.Total.Queue.P50, st.Total.Queue.Max, st.Total.Drops)
			if med < lo-ms || med > hi+ms {
				t.Errorf("median one-way delay with a full queue %v, want %v..%v ± 1ms", med, lo, hi)
			}
		})
	}
}

// TestLoss checks the loss rate against binomial bounds and that the same
// seed loses the same packets on a new path.
func TestLoss(t *testing.T) {
	needRoot(t)
	const n, p, seed = 4000, 0.1, 42
	var lostSets [2][]uint64
	for run := range lostSets {
		t.Run(fmt.Sprintf("run %d", run), func(t *testing.T) {
			path := startPath(t, Config{Forward: LinkConfig{Delay: ms, Loss: p, Seed: seed}})
			recv, send := listenUDP(t, path, Receiver), listenUDP(t, path, Sender)
			k := collect(recv)
			sent := blast(t, send, path.ReceiverAddr(), port(recv), 100, 8*rate.Mbps, time.Minute, n)
			time.Sleep(200 * ms)
			got := k.stop()
			seen := make([]bool, sent)
			for _, d := range got {
				seen[d.seq] = true
			}
			for i, ok := range seen {
				if !ok {
					lostSets[run] = append(lostSets[run], uint64(i))
				}
			}
			st := path.Stats().Forward.Total
			lost := len(lostSets[run])
			if int64(lost) != st.Losses || st.Drops != 0 {
				t.Errorf("%d of %d missing, counted %d losses and %d drops", lost, sent, st.Losses, st.Drops)
			}
			mean, sd := float64(sent)*p, math.Sqrt(float64(sent)*p*(1-p))
			t.Logf("lost %d of %d (expected %.0f ± %.0f)", lost, sent, mean, sd)
			if math.Abs(float64(lost)-mean) > 5*sd {
				t.Errorf("lost %d of %d, want %.0f ± %.0f", lost, sent, mean, 5*sd)
			}
		})
	}
	if !slices.Equal(lostSets[0], lostSets[1]) {
		t.Errorf("same seed, different losses: %d and %d packets lost", len(lostSets[0]), len(lostSets[1]))
	}
}

// TestRateChange checks that a step of the configured schedule, a step
// scheduled once the path runs and a live Set change the delivered rate.
func TestRateChange(t *testing.T) {
	needRoot(t)
	const before, after = 2 * rate.Mbps, 8 * rate.Mbps
	const at = 1500 * ms
	tests := []struct {
		name string
		how  string
	}{{"schedule", "config"}, {"Schedule", "later"}, {"live Set", "live"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := LinkConfig{Rate: before, Delay: 10 * ms}
			if tt.how == "config" {
				link.Schedule = []Step{{At: at, Rate: after}}
			}
			p := startPath(t, Config{Forward: link})
			recv, send := listenUDP(t, p, Receiver), listenUDP(t, p, Sender)
			k := collect(recv)
			var stepAt time.Time // wall time of the step
			switch tt.how {
			case "later": // off by the microseconds between the two clock readings
				p.Schedule(Forward, []Step{{At: at - p.mv.now(), Rate: after}})
			case "live":
				timer := time.AfterFunc(at-p.mv.now(), func() {
					p.Set(Forward, after, 10*ms)
				})
				defer timer.Stop()
			}
			stepAt = p.mv.base.Add(at)
			blast(t, send, p.ReceiverAddr(), port(recv), MTU, after.Scale(1.5), 3*time.Second, 0)
			got := k.stop()
			for _, c := range []struct {
				name     string
				from, to time.Time
				want     rate.Bitrate
			}{
				{"before", stepAt.Add(-1200 * ms), stepAt.Add(-100 * ms), before},
				{"after", stepAt.Add(300 * ms), stepAt.Add(1400 * ms), after},
			} {
				r, n := rateBetween(got, c.from, c.to)
				t.Logf("%s: %.4f Mb/s over %d datagrams", c.name, r/1e6, n)
				if off := r/float64(c.want) - 1; off < -0.02 || off > 0.02 {
					t.Errorf("%s the step: %.0f b/s, want %d ± 2%%", c.name, r, c.want)
				}
			}
			if got := p.Stats().Forward.Rate; got != after {
				t.Errorf("rate after the step %v, want %v", got, after)
			}
		})
	}
}

// BenchmarkMover86Mbps moves 1500-byte UDP packets through an 86 Mb/s path
// at 86 Mb/s, one packet per op, and reports the mover thread's CPU time per
// packet and as a share of one core.
func BenchmarkMover86Mbps(b *testing.B) {
	needRoot(b)
	const r = 86 * rate.Mbps
	p := startPath(b, Config{
		Forward: LinkConfig{Rate: r, Delay: 20 * ms},
		Reverse: LinkConfig{Rate: r, Delay: 20 * ms},
	})
	recv, send := listenUDP(b, p, Receiver), listenUDP(b, p, Sender)
	k := collect(recv)
	cpu0, t0 := p.Stats().MoverCPU, time.Now()
	b.ResetTimer()
	blast(b, send, p.ReceiverAddr(), port(recv), MTU, r, time.Hour, b.N)
	time.Sleep(100 * ms)
	b.StopTimer()
	st := p.Stats()
	got := k.stop()
	cpu, wall := st.MoverCPU-cpu0, time.Since(t0)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(len(got), 1)), "cpu-ns/pkt")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "core-%")
	b.ReportMetric(1000*st.Forward.Total.Late.P99, "late-p99-µs")
}

func TestMTU(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name string
		mtu  int
		want int
	}{
		{"default", 0, MTU},
		{"tunnel", 1280, 1280},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startPath(t, Config{MTU: tt.mtu})
			for _, s := range []Side{Sender, Receiver} {
				var got int
				if err := p.Do(s, func() error {
					ifi, err := net.InterfaceByName(tunName)
					if err == nil {
						got = ifi.MTU
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("%v side: MTU %d, want %d", s, got, tt.want)
				}
			}
		})
	}
}

// TestUDPFlow sends UDP across a path as a QUIC or WebRTC sender would and
// checks that the bottleneck treats it as it treats TCP: at half the rate,
// the one-way delay is the propagation delay plus one packet's
// serialization and the bottleneck sits idle half the time (TakeIdle);
// above the rate, the delivered rate is the bottleneck's and the one-way
// delay is bounded by the queue.
func TestUDPFlow(t *testing.T) {
	needRoot(t)
	const r, delay, queue = 4 * rate.Mbps, 20 * ms, 50 * ms
	p := startPath(t, Config{Forward: LinkConfig{Rate: r, Delay: delay, QueueTime: queue}, Reverse: LinkConfig{Delay: delay}})
	recv, send := listenUDP(t, p, Receiver), listenUDP(t, p, Sender)
	k := collect(recv)
	p.TakeIdle(Forward) // the idle time before the flow
	start := time.Now()
	blast(t, send, p.ReceiverAddr(), port(recv), MTU, r/2, 1500*ms, 0)
	halfEnd := time.Now()
	time.Sleep(delay + 100*ms)
	spans, lost := p.TakeIdle(Forward)
	blast(t, send, p.ReceiverAddr(), port(recv), MTU, r.Scale(1.5), 1500*ms, 0)
	fullEnd := time.Now()
	time.Sleep(delay + queue + 100*ms)
	got := k.stop()

	var idle time.Duration
	for _, s := range spans {
		from, to := s.From, s.To
		if from.Before(start) {
			from = start
		}
		if to.After(halfEnd) {
			to = halfEnd
		}
		idle += max(to.Sub(from), 0)
	}
	share := idle.Seconds() / halfEnd.Sub(start).Seconds()
	var half, full []time.Duration
	for _, d := range got {
		switch {
		case d.sent.Before(halfEnd):
			half = append(half, d.at.Sub(d.sent))
		case d.sent.After(fullEnd.Add(-750 * ms)):
			full = append(full, d.at.Sub(d.sent))
		}
	}
	if len(half) < 100 || len(full) < 100 {
		t.Fatalf("%d and %d datagrams in the two phases", len(half), len(full))
	}
	st := p.Stats().Forward
	loaded, _ := rateBetween(got, halfEnd.Add(500*ms), fullEnd)
	t.Logf("half rate: one-way p50 %v, idle %.1f%% (%d spans, %d lost); above the rate: %.4f Mb/s, one-way p50 %v, drops %d",
		median(half), 100*share, len(spans), lost, loaded/1e6, median(full), st.Total.Drops)
	if want := delay + r.Duration(MTU); median(half)-want < -ms || median(half)-want > ms {
		t.Errorf("one-way delay at half the rate %v, want %v ± 1ms", median(half), want)
	}
	if share < 0.45 || share > 0.55 || lost != 0 {
		t.Errorf("idle %.1f%% of the time at half the rate (%d spans lost), want 50%% ± 5%%", 100*share, lost)
	}
	if off := loaded/float64(r) - 1; off < -0.02 || off > 0.02 {
		t.Errorf("delivered %.0f b/s above the rate, want %d ± 2%%", loaded, r)
	}
	limit := st.QueueLimit
	lo, hi := delay+r.Duration(limit-MTU), delay+r.Duration(limit)
	if m := median(full); m < lo-ms || m > hi+ms || st.Total.Drops == 0 {
		t.Errorf("one-way delay with the queue full %v (drops %d), want %v..%v ± 1ms", m, st.Total.Drops, lo, hi)
	}
}

// TestSecondPathFromANamespace checks a path whose sender side is another
// path's receiver namespace: a process there reaches both paths' far
// sides; the second path carries (and shapes) what goes across it; and
// its Close removes its device but leaves the borrowed namespace, and the
// first path, working.
func TestSecondPathFromANamespace(t *testing.T) {
	needRoot(t)
	first := startPath(t, Config{})
	second, err := Start(context.Background(), Config{SenderNS: first.ReceiverNS(), Forward: LinkConfig{Rate: 10 * rate.Mbps}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if second.SenderNS() != first.ReceiverNS() || second.SenderAddr() == first.ReceiverAddr() {
		t.Fatalf("second path: sender %s at %v; first's receiver %s at %v", second.SenderNS(), second.SenderAddr(), first.ReceiverNS(), first.ReceiverAddr())
	}
	fetch := serveBytes(t, first, Receiver, 100_000)
	before := second.Stats().Forward.Total.Bytes
	if n, err := fetch(second, Receiver, second.SenderAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the second path: %d bytes, %v", n, err)
	}
	if moved := second.Stats().Forward.Total.Bytes - before; moved < 100_000 {
		t.Errorf("the second path moved %d bytes forward, want the 100000 sent across it", moved)
	}
	if n, err := fetch(first, Sender, first.ReceiverAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the first path: %d bytes, %v", n, err)
	}
	dev := second.tun[Sender]
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if !nsExists(first.ReceiverNS()) {
		t.Fatal("closing the second path removed the namespace it borrowed")
	}
	var links []net.Interface
	first.Do(Receiver, func() (err error) { links, err = net.Interfaces(); return err })
	if slices.ContainsFunc(links, func(i net.Interface) bool { return i.Name == dev }) {
		t.Errorf("device %s still in the borrowed namespace after Close", dev)
	}
	if n, err := fetch(first, Sender, first.ReceiverAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the first path after the second closed: %d bytes, %v", n, err)
	}
}

// serveBytes listens on every address of side s of p (port chosen) and
// writes n bytes to each connection; it returns a function that dials it
// from side s2 of path p2 at addr and returns the bytes read.
func serveBytes(t *testing.T, p *Path, s Side, n int) func(p2 *Path, s2 Side, addr netip.Addr) (int64, error) {
	t.Helper()
	var ln net.Listener
	if err := p.Do(s, func() (err error) { ln, err = net.Listen("tcp4", "0.0.0.0:0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lport := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); c.Write(make([]byte, n)) }()
		}
	}()
	return func(p2 *Path, s2 Side, addr netip.Addr) (int64, error) {
		var c net.Conn
		if err := p2.Do(s2, func() (err error) {
			c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(addr, uint16(lport)).String(), 5*time.Second)
			return err
		}); err != nil {
			return 0, err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		return io.Copy(io.Discard, c)
	}
}

// TestPathsIntoOneNamespace checks a path whose receiver side is another
// path's receiver namespace: one listener there serves senders across
// both paths, each path carrying its own sender's traffic; closing the
// second leaves the first working.
func TestPathsIntoOneNamespace(t *testing.T) {
	needRoot(t)
	first := startPath(t, Config{})
	second, err := Start(context.Background(), Config{ReceiverNS: first.ReceiverNS(), Reverse: LinkConfig{Rate: 10 * rate.Mbps}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if second.ReceiverNS() != first.ReceiverNS() || second.SenderNS() == first.SenderNS() || second.ReceiverAddr() == first.ReceiverAddr() {
		t.Fatalf("second path %s -> %s at %v; first %s -> %s at %v", second.SenderNS(), second.ReceiverNS(), second.ReceiverAddr(),
			first.SenderNS(), first.ReceiverNS(), first.ReceiverAddr())
	}
	fetch := serveBytes(t, first, Receiver, 100_000)
	before := second.Stats().Reverse.Total.Bytes
	if n, err := fetch(second, Sender, second.ReceiverAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the second path: %d bytes, %v", n, err)
	}
	if moved := second.Stats().Reverse.Total.Bytes - before; moved < 100_000 {
		t.Errorf("the second path moved %d bytes, want the 100000 sent across it", moved)
	}
	if n, err := fetch(first, Sender, first.ReceiverAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the first path: %d bytes, %v", n, err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := fetch(first, Sender, first.ReceiverAddr()); err != nil || n != 100_000 {
		t.Fatalf("across the first path after the second closed: %d bytes, %v", n, err)
	}
}

// TestOutage checks that a scheduled outage loses every datagram sent
// while the path is down, counts them as losses, and that datagrams pass
// again once it is up. The expectations are timed: a machine that starves
// the sender or the mover for much of the second (other packages' tests
// under -race beside it) moves datagrams across the outage's edges, or
// leaves them in the TUN device's queue, uncounted. So the outage gets
// three tries and must show in one of them.
func TestOutage(t *testing.T) {
	needRoot(t)
	var problems []string
	for try := range 3 {
		if problems = outageOnce(t); len(problems) == 0 {
			return
		}
		t.Logf("try %d: %d problems, the first: %s", try+1, len(problems), strings.Join(problems[:min(3, len(problems))], "; "))
	}
	t.Error(strings.Join(problems, "\n"))
}

// outageOnce runs TestOutage's scenario on a path of its own and returns
// what went wrong.
func outageOnce(t *testing.T) (problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	const delay, margin = 10 * ms, 5 * ms
	path := startPath(t, Config{Forward: LinkConfig{Delay: delay}, Reverse: LinkConfig{Delay: delay}})
	recv, send := listenUDP(t, path, Receiver), listenUDP(t, path, Sender)
	k := collect(recv)
	t0 := time.Now()
	down, up := 300*ms, 600*ms
	outage := []Step{{At: down, Carrier: CarrierDown}, {At: up, Carrier: CarrierUp}}
	path.Schedule(Forward, outage)
	path.Schedule(Reverse, outage)
	mid := make(chan Stats, 1)
	go func() {
		time.Sleep((down + up) / 2)
		mid <- path.Stats()
	}()
	sent := blast(t, send, path.ReceiverAddr(), port(recv), 100, rate.Mbps, 900*ms, 0)
	time.Sleep(100 * ms)
	got := k.stop()
	if st := <-mid; !st.Forward.Down || !st.Reverse.Down {
		bad("in the outage: forward down %v, reverse down %v; want both", st.Forward.Down, st.Reverse.Down)
	}
	seen := make([]bool, sent)
	for _, d := range got {
		seen[d.seq] = true
		if at := d.sent.Sub(t0); at > down+margin && at < up-margin {
			bad("datagram %d sent %v after the start, in the outage, arrived", d.seq, at)
		}
	}
	lost, lostAfter := 0, 0
	for i, ok := range seen {
		if !ok {
			lost++
			if time.Duration(i)*time.Second/1250 > up+margin {
				lostAfter++
			}
		}
	}
	st := path.Stats()
	if st.Forward.Down || st.Reverse.Down {
		bad("after the outage: forward down %v, reverse down %v; want up", st.Forward.Down, st.Reverse.Down)
	}
	if int64(lost) != st.Forward.Total.Losses || st.Forward.Total.Drops != 0 {
		bad("%d of %d missing, counted %d losses and %d drops", lost, sent, st.Forward.Total.Losses, st.Forward.Total.Drops)
	}
	// 1250 datagrams a second for the 300 ms outage, and the 10 ms in
	// propagation as it began.
	if want := 1250 * (up - down + delay) / time.Second; math.Abs(float64(lost-int(want))) > float64(want)/10 {
		bad("lost %d, want about %d", lost, want)
	}
	if lostAfter > 0 {
		bad("%d datagrams sent after the path came back were lost", lostAfter)
	}
	return problems
}
