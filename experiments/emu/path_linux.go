package emu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"replenish/rate"
)

// tunName is the name of the TUN device in each namespace a path creates;
// in a namespace it borrows (Config.SenderNS, ReceiverNS) the device is named after the
// path's stem instead.
const tunName = "emu0"

// Socket buffer limits set in both namespaces (min, default, max bytes): the
// maximum covers 86 Mb/s over 372 ms (172 ms RTT plus a 200 ms queue) with
// room to spare.
const (
	tcpWmem = "4096 16384 33554432"
	tcpRmem = "4096 131072 33554432"
)

// Path is a running emulated path: two network namespaces joined through TUN
// devices by a mover thread. Its methods are safe for concurrent use.
//
// The mover keeps one of the Go scheduler's processors busy much of the
// time, and must not wait for one when a packet is due: while a Path runs,
// GOMAXPROCS is one higher than it was (Start raises it, Close lowers it).
type Path struct {
	log  *slog.Logger
	ns   [2]string     // namespace names, by Side
	tun  [2]string     // TUN device names, by Side
	addr [2]netip.Addr // TUN addresses, by Side
	// borrowed, by Side: the side is another's namespace
	// (Config.SenderNS, ReceiverNS).
	borrowed [2]bool
	cc       string
	mtu      int
	wmem     [2]string // net.ipv4.tcp_wmem, by Side
	mv       *mover

	nsMu     sync.RWMutex // guards nsfd and nsClosed
	nsfd     [2]int       // open namespace files, for Do
	nsClosed bool

	mu     sync.Mutex // guards the following fields, shared by the mover, Set and Stats
	links  [2]*Link   // by Direction
	meters [2]*meter  // by Direction
	errs   [2]int64   // by Direction
	closed bool       // the mover's eventfd is closed

	created   []string // namespaces created, removed by shutdown
	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed by shutdown when the path is removed
	watcher   sync.WaitGroup
}

// Start creates the two namespaces of a path, configures them (loopback up,
// IPv6 off, TCP buffers raised to a 32 MB maximum, congestion control
// cfg.CC, metrics caching off), creates a TUN device in each with a pair of
// addresses, and starts moving packets between them on a thread of its own
// at real-time priority. It first removes namespaces left behind by dead
// processes (see Sweep). If the kernel's list of congestion controls that
// namespaces may choose (net.ipv4.tcp_allowed_congestion_control, a global
// setting) lacks cfg.CC, Start adds it there and logs that it did.
//
// The path lives until Close or until ctx is done, whichever comes first;
// either removes the namespaces and waits for the mover to stop. Start
// returns ErrNeedRoot without the needed capabilities, an error wrapping
// ErrConfig for a bad configuration and one wrapping ErrCC if the kernel
// lacks the congestion control; it also fails if the iproute2 ip command
// is missing.
func Start(ctx context.Context, cfg Config) (*Path, error) {
	cfg, links, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if err := prepareHost(ctx, cfg.CC, cfg.Logger); err != nil {
		return nil, err
	}
	stem, r, err := newStem()
	if err != nil {
		return nil, err
	}
	p := &Path{
		log:    cfg.Logger,
		ns:     [2]string{stem + "-s", stem + "-r"},
		tun:    [2]string{tunName, tunName},
		addr:   [2]netip.Addr{netip.AddrFrom4([4]byte{10, r[0], r[1], 1}), netip.AddrFrom4([4]byte{10, r[0], r[1], 2})},
		cc:     cfg.CC,
		mtu:    cfg.MTU,
		wmem:   cfg.wmem(),
		nsfd:   [2]int{-1, -1},
		links:  links,
		meters: [2]*meter{newMeter(cfg.Window), newMeter(cfg.Window)},
		done:   make(chan struct{}),
	}
	for s, ns := range [2]string{cfg.SenderNS, cfg.ReceiverNS} {
		if ns != "" {
			p.ns[s], p.borrowed[s] = ns, true
			p.tun[s] = fmt.Sprintf("emu%02x%02x%02x", r[0], r[1], r[2])
		}
	}
	if err := p.build(ctx); err != nil {
		return nil, err
	}
	addProcs(1)
	go p.mv.run()
	p.watcher.Add(1)
	go func() {
		defer p.watcher.Done()
		select {
		case <-ctx.Done():
			p.shutdown()
		case <-p.done:
		}
	}()
	p.log.Info("emu: path up", "sender", p.ns[Sender], "receiver", p.ns[Receiver],
		"sender_addr", p.addr[Sender], "receiver_addr", p.addr[Receiver], "cc", p.cc,
		"forward", describe(cfg.Forward), "reverse", describe(cfg.Reverse))
	return p, nil
}

// resolve returns cfg with its defaults filled in and the links of its two
// directions, or an error wrapping ErrConfig.
func (cfg Config) resolve() (Config, [2]*Link, error) {
	var links [2]*Link
	for i, lc := range []LinkConfig{cfg.Forward, cfg.Reverse} {
		l, err := NewLink(lc)
		if err != nil {
			return cfg, links, fmt.Errorf("%w (%s link)", err, Direction(i))
		}
		links[i] = l
	}
	if cfg.CC == "" {
		cfg.CC = "cubic"
	}
	for _, ns := range []string{cfg.SenderNS, cfg.ReceiverNS} {
		if ns != "" && (strings.ContainsAny(ns, "/\x00") || ns == "." || ns == "..") {
			return cfg, links, fmt.Errorf("%w: namespace %q", ErrConfig, ns)
		}
	}
	if cfg.SenderNS != "" && cfg.SenderNS == cfg.ReceiverNS {
		return cfg, links, fmt.Errorf("%w: both sides in namespace %q", ErrConfig, cfg.SenderNS)
	}
	if strings.ContainsAny(cfg.CC, "/. \t\n") {
		return cfg, links, fmt.Errorf("%w: congestion control %q", ErrConfig, cfg.CC)
	}
	if cfg.MTU == 0 {
		cfg.MTU = MTU
	}
	if cfg.MTU < MinMTU || cfg.MTU > MTU {
		return cfg, links, fmt.Errorf("%w: MTU %d out of range (%d to %d)", ErrConfig, cfg.MTU, MinMTU, MTU)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Window < 0 {
		return cfg, links, fmt.Errorf("%w: negative window %v", ErrConfig, cfg.Window)
	}
	if cfg.SendBuffer < 0 || cfg.SendBuffer > maxSendBuffer {
		return cfg, links, fmt.Errorf("%w: send buffer %d bytes out of range (0 to %d)", ErrConfig, cfg.SendBuffer, maxSendBuffer)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, links, nil
}

// maxSendBuffer caps Config.SendBuffer.
const maxSendBuffer = 1 << 30

// wmem returns net.ipv4.tcp_wmem for each side.
func (cfg Config) wmem() [2]string {
	w := [2]string{tcpWmem, tcpWmem}
	if b := cfg.SendBuffer; b > 0 {
		w[Sender] = fmt.Sprintf("4096 %d %d", b, max(b, 32<<20))
	}
	return w
}

// prepareHost checks what Start needs of this host (capabilities, the ip
// command), lets namespaces choose the congestion control cc, and removes
// the namespaces of dead processes.
func prepareHost(ctx context.Context, cc string, log *slog.Logger) error {
	if err := checkCaps(); err != nil {
		return err
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("emu: the iproute2 ip command is needed: %w", err)
	}
	changed, err := allowCC(cc)
	if err != nil {
		return err
	}
	if changed {
		log.Info("emu: added congestion control to net.ipv4.tcp_allowed_congestion_control so namespaces may use it", "cc", cc)
	}
	if _, err := Sweep(ctx, log); err != nil {
		log.Warn("emu: sweeping stale namespaces", "err", err)
	}
	return nil
}

// build creates the namespaces with their TUN devices and the mover; on
// failure it removes what it created.
func (p *Path) build(ctx context.Context) error {
	tun := [2]int{-1, -1}
	var err error
	for s := range tun {
		if tun[s], err = p.setup(ctx, Side(s)); err != nil {
			break
		}
	}
	if err == nil {
		p.mv, err = newMover(p, tun)
	}
	if err != nil {
		for _, fd := range tun {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		p.nsClosed = true
		return errors.Join(err, p.remove())
	}
	return nil
}

func describe(c LinkConfig) string {
	r := "unlimited"
	if c.Rate > 0 {
		r = c.Rate.String()
	}
	if c.Jitter > 0 {
		return fmt.Sprintf("%s delay %v jitter %v loss %g", r, c.Delay, c.Jitter, c.Loss)
	}
	return fmt.Sprintf("%s delay %v loss %g", r, c.Delay, c.Loss)
}

// setup creates and configures the namespace of one side, or opens the
// borrowed one, and returns the descriptor of its TUN device.
func (p *Path) setup(ctx context.Context, s Side) (int, error) {
	name, dev := p.ns[s], p.tun[s]
	borrowed := p.borrowed[s]
	if !borrowed {
		if err := ipCmd(ctx, "", "netns", "add", name); err != nil {
			return -1, err
		}
		p.created = append(p.created, name)
	}
	nsfd, err := unix.Open(filepath.Join(netnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("emu: open namespace %s: %w", name, err)
	}
	p.nsfd[s] = nsfd
	tun := -1
	err = inNetns(nsfd, func() error {
		if !borrowed {
			if err := p.configure(s); err != nil {
				return err
			}
		}
		fd, err := openTUN(dev)
		if err != nil {
			return err
		}
		tun = fd
		return writeSysctl("net.ipv6.conf."+dev+".disable_ipv6", "1")
	})
	if err != nil {
		if tun >= 0 {
			unix.Close(tun)
		}
		return -1, fmt.Errorf("emu: namespace %s: %w", name, err)
	}
	var batch string
	if !borrowed {
		batch = "link set lo up\n"
	}
	batch += fmt.Sprintf("link set %s mtu %d txqueuelen 10000 up\naddr add %s peer %s dev %s\n",
		dev, p.mtu, p.addr[s], p.addr[1-s], dev)
	if err := ipCmd(ctx, batch, "-n", name, "-batch", "-"); err != nil {
		unix.Close(tun)
		return -1, err
	}
	return tun, nil
}

// configure sets the sysctls of side s's new namespace, from inside it:
// IPv6 off, the TCP buffers, metrics caching off, the congestion control.
func (p *Path) configure(s Side) error {
	for _, kv := range [][2]string{
		{"net.ipv6.conf.all.disable_ipv6", "1"}, // also sets default
		{"net.ipv4.tcp_wmem", p.wmem[s]},
		{"net.ipv4.tcp_rmem", tcpRmem},
		{"net.ipv4.tcp_no_metrics_save", "1"},
	} {
		if err := writeSysctl(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if err := writeSysctl("net.ipv4.tcp_congestion_control", p.cc); err != nil {
		avail, _ := readSysctl("net.ipv4.tcp_available_congestion_control")
		return fmt.Errorf("%w: %q (available: %s): %v", ErrCC, p.cc, avail, err)
	}
	return nil
}

// SenderNS returns the name of the sender side's network namespace, usable
// with "ip netns exec".
func (p *Path) SenderNS() string { return p.ns[Sender] }

// ReceiverNS returns the name of the receiver side's network namespace.
func (p *Path) ReceiverNS() string { return p.ns[Receiver] }

// SenderAddr returns the sender side's address.
func (p *Path) SenderAddr() netip.Addr { return p.addr[Sender] }

// ReceiverAddr returns the receiver side's address.
func (p *Path) ReceiverAddr() netip.Addr { return p.addr[Receiver] }

// CC returns the TCP congestion control set in both namespaces.
func (p *Path) CC() string { return p.cc }

// Done returns a channel that is closed once the path has been removed.
func (p *Path) Done() <-chan struct{} { return p.done }

// Do runs fn on a locked OS thread inside the namespace of side s and returns
// its error. Sockets fn creates stay in that namespace; they can be used from
// any goroutine afterwards. The thread is discarded after fn. Do returns
// ErrClosed after Close.
func (p *Path) Do(s Side, fn func() error) error {
	if s != Sender && s != Receiver {
		return fmt.Errorf("%w: side %v", ErrConfig, s)
	}
	p.nsMu.RLock()
	if p.nsClosed {
		p.nsMu.RUnlock()
		return ErrClosed
	}
	fd, err := unix.FcntlInt(uintptr(p.nsfd[s]), unix.F_DUPFD_CLOEXEC, 0)
	p.nsMu.RUnlock()
	if err != nil {
		return fmt.Errorf("emu: dup namespace fd: %w", err)
	}
	defer unix.Close(fd)
	return inNetns(fd, fn)
}

// Set changes the rate (0 means unlimited) and the one-way delay of direction
// d now. The packet being serialized finishes at the new rate; packets
// already in propagation keep their delay. It does nothing after Close.
func (p *Path) Set(d Direction, r rate.Bitrate, delay time.Duration) {
	p.change(d, func(l *Link, now time.Duration) { l.Set(now, r, delay) })
}

// Schedule adds steps to the schedule of direction d, each at its At after
// now (see Link.Schedule): a run times its schedule from its own start
// rather than the path's. It does nothing after Close.
func (p *Path) Schedule(d Direction, steps []Step) {
	p.change(d, func(l *Link, now time.Duration) { l.Schedule(now, steps) })
}

// change applies fn to the link of direction d at the mover's time now, and
// wakes the mover to recompute its next departure. It does nothing for an
// unknown direction or after Close.
func (p *Path) change(d Direction, fn func(l *Link, now time.Duration)) {
	if d != Forward && d != Reverse {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	fn(p.links[d], p.mv.now())
	p.mv.wake()
}

// ResetTotals restarts the Total counters of both directions now: from then
// on Stats reports in Total only what happened after the call, with
// Total.Span counted from it. Experiments call it at the end of a warm-up so
// that totals and percentiles cover only the measured window. MaxBacklog
// and the recent window are not affected. It does nothing after Close.
func (p *Path) ResetTotals() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := p.mv.now()
	for _, m := range p.meters {
		m.resetTotal(now)
	}
}

// Stats returns a snapshot of the path's counters.
func (p *Path) Stats() Stats {
	st := Stats{MoverCPU: p.mv.cpu()}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.mv.now()
	st.Elapsed = now
	for d, ds := range []*DirStats{&st.Forward, &st.Reverse} {
		l := p.links[d]
		ds.Backlog = l.Backlog(now)
		ds.Rate, ds.Delay, ds.QueueLimit, ds.MaxBacklog = l.Rate(), l.Delay(), l.Limit(), l.MaxBacklog()
		ds.Down = l.Down(now)
		ds.Errors = p.errs[d]
		ds.Total, ds.Window = p.meters[d].counters(now)
	}
	return st
}

// TakeIdle returns the spans of time in which the bottleneck of direction
// d had nothing to send (its queue was empty), since the previous call or
// since the path started, up to now, in time order and in wall-clock time;
// and how many spans it could not keep between the two calls (see
// Link.TakeIdle). A direction without a rate limit has none. A caller
// that wants them all calls it every few seconds at most. It returns
// nothing for an unknown direction or after Close.
func (p *Path) TakeIdle(d Direction) (spans []IdleSpan, lost int) {
	if d != Forward && d != Reverse {
		return nil, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0
	}
	idle, lost := p.links[d].TakeIdle(p.mv.now())
	spans = make([]IdleSpan, len(idle))
	for i, s := range idle {
		spans[i] = IdleSpan{From: p.mv.base.Add(s.From), To: p.mv.base.Add(s.To)}
	}
	return spans, lost
}

// Close stops the mover, closes the TUN devices and removes both namespaces.
// Processes still running inside a namespace keep it alive, unnamed, until
// they exit. Close is idempotent and returns the first removal's error.
func (p *Path) Close() error {
	err := p.shutdown()
	p.watcher.Wait()
	return err
}

// shutdown does the work of Close once.
func (p *Path) shutdown() error {
	p.closeOnce.Do(func() {
		p.mv.stop()
		addProcs(-1)
		p.mu.Lock()
		p.closed = true
		p.mv.closeFDs()
		p.mu.Unlock()
		for _, fd := range p.mv.tun {
			unix.Close(fd)
		}
		p.nsMu.Lock()
		p.nsClosed = true
		p.nsMu.Unlock()
		p.closeErr = p.remove()
		p.log.Info("emu: path removed", "sender", p.ns[Sender], "receiver", p.ns[Receiver], "err", p.closeErr)
		close(p.done)
	})
	return p.closeErr
}

// remove closes the namespace files and deletes the namespaces created so
// far. The caller has set nsClosed.
func (p *Path) remove() error {
	for i, fd := range p.nsfd {
		if fd >= 0 {
			unix.Close(fd)
			p.nsfd[i] = -1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, name := range p.created {
		if err := ipCmd(ctx, "", "netns", "del", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// procsMu serializes the changes of GOMAXPROCS made by Start and Close.
var procsMu sync.Mutex

// addProcs changes GOMAXPROCS by delta, never below 1.
func addProcs(delta int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0)+delta, 1))
}

// PrioritizeProcess gives every thread of the calling process the highest
// nice value (-20); threads created later inherit it. The mover thread runs
// at real-time priority on its own, but Go's scheduler regularly needs
// another thread of the process to hand it back its processor (after a
// forced preemption, every 10 ms while it is busy), so on a loaded machine
// the whole process that hosts a Path should be prioritized. A command that
// hosts a Path calls it at startup; it needs CAP_SYS_NICE.
func PrioritizeProcess() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("emu: prioritize: %w", err)
	}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, -20); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("emu: prioritize thread %d: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}
