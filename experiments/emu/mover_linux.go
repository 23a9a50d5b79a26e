package emu

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// wakeEarly is how long before a departure the mover's timer fires; the
// mover polls for the rest. Timer wakeups arrive some tens of microseconds
// late, so waking early and polling writes packets within a few
// microseconds of their time.
const wakeEarly = 50 * time.Microsecond

// pollBelow is the wait under which the mover polls instead of arming its
// timer. A timer expiry costs far more than a poll (tens of microseconds in
// a virtual machine), so departures closer than this, as at a few hundred
// megabits per second, are waited for by polling, which also keeps reading
// arrivals meanwhile.
const pollBelow = wakeEarly + 25*time.Microsecond

// bufSize is the size of a packet buffer. Packets never exceed MTU; a read
// that fills the buffer is taken as truncated and discarded.
const bufSize = 2048

// readBatch is the most packets read from one TUN before departures are
// served again.
const readBatch = 64

// slabBuffers is how many packet buffers the mover allocates at a time. It
// starts with initialSlabs of them and keeps every buffer for reuse, so that
// in a steady state it does not allocate (an allocation can make it wait for
// the garbage collector).
const (
	slabBuffers  = 256
	initialSlabs = 4
)

// mover moves packets between the two TUN devices of a path on one locked OS
// thread: it reads every packet as soon as it arrives, passes it through the
// direction's Link, holds it, and writes it to the other TUN at its departure
// time, waking on a timerfd armed with absolute CLOCK_MONOTONIC deadlines
// and polling through the last moments before a departure.
type mover struct {
	p *Path
	// tun[s] is the TUN device in side s's namespace. Direction d reads
	// tun[d] and writes tun[1-d]: Forward starts on the Sender side.
	tun      [2]int
	epfd     int
	tfd      int       // timerfd, CLOCK_MONOTONIC
	evfd     int       // eventfd that wakes the loop (Set and stop)
	base     time.Time // link time zero
	monoBase int64     // CLOCK_MONOTONIC in ns at base

	// Owned by the loop goroutine.
	held  [2]fifo[[]byte] // accepted packets per direction, in departure order
	free  [][]byte
	armed int64 // absolute deadline the timer is armed for; 0 when disarmed

	stopping atomic.Bool
	exited   chan struct{} // closed when the loop returns
	tid      atomic.Int64  // the loop thread's id, 0 before it starts and after it ends
	cpuEnd   atomic.Int64  // the loop thread's CPU time in ns when it ended
}

// newMover sets up the descriptors of a mover for the two TUN fds. It starts
// nothing; run does.
func newMover(p *Path, tun [2]int) (*mover, error) {
	m := &mover{p: p, tun: tun, epfd: -1, tfd: -1, evfd: -1, exited: make(chan struct{})}
	for range initialSlabs {
		m.addSlab()
	}
	var err error
	fail := func(what string, err error) (*mover, error) {
		m.closeFDs()
		return nil, fmt.Errorf("emu: %s: %w", what, err)
	}
	if m.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail("epoll_create1", err)
	}
	if m.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return fail("timerfd_create", err)
	}
	if m.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", err)
	}
	for _, fd := range []int{tun[Sender], tun[Receiver], m.tfd, m.evfd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(m.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return fail("epoll_ctl", err)
		}
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fail("clock_gettime", err)
	}
	m.base, m.monoBase = time.Now(), ts.Nano()
	return m, nil
}

// closeFDs closes the mover's own descriptors (not the TUN devices).
func (m *mover) closeFDs() {
	for _, fd := range []*int{&m.epfd, &m.tfd, &m.evfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// now returns the link time: the time since the path started.
func (m *mover) now() time.Duration { return time.Since(m.base) }

// wake makes the loop recompute its next deadline. The caller holds p.mu and
// has checked that the path is not closed, so evfd is open.
func (m *mover) wake() {
	one := [8]byte{1}
	unix.Write(m.evfd, one[:])
}

// cpu returns the CPU time the loop thread has used.
func (m *mover) cpu() time.Duration {
	tid := m.tid.Load()
	if tid == 0 {
		return time.Duration(m.cpuEnd.Load())
	}
	// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) from the kernel's
	// posix-timers.h: the clock of one thread of this process.
	clock := int32(^uint32(tid)<<3 | 6)
	var ts unix.Timespec
	if unix.ClockGettime(clock, &ts) != nil {
		return time.Duration(m.cpuEnd.Load())
	}
	return time.Duration(ts.Nano())
}

// stop ends the loop and waits for it.
func (m *mover) stop() {
	m.stopping.Store(true)
	m.p.mu.Lock()
	m.wake()
	m.p.mu.Unlock()
	<-m.exited
}

// run is the loop. It returns when stop is called.
func (m *mover) run() {
	defer close(m.exited)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m.tid.Store(int64(unix.Gettid()))
	defer func() {
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) == nil {
			m.cpuEnd.Store(ts.Nano())
		}
		m.tid.Store(0)
	}()
	// Timer slack would delay timerfd wakeups by up to 50 us.
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if prio, err := raisePriority(); err != nil {
		m.p.log.Warn("emu: mover runs at normal priority; departures may be late on a loaded machine", "err", err)
	} else {
		m.p.log.Debug("emu: mover priority", "priority", prio)
	}

	events := make([]unix.EpollEvent, 8)
	var scratch [8]byte
	for !m.stopping.Load() {
		timeout := -1
		if next, ok := m.depart(); ok {
			if next-m.now() < pollBelow {
				timeout = 0
			} else {
				m.arm(next)
			}
		}
		n, err := unix.EpollWait(m.epfd, events, timeout)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			m.p.log.Error("emu: epoll_wait", "err", err)
			return
		}
		for _, ev := range events[:n] {
			switch int(ev.Fd) {
			case m.tun[Sender]:
				m.read(Forward)
			case m.tun[Receiver]:
				m.read(Reverse)
			case m.tfd:
				unix.Read(m.tfd, scratch[:])
				m.armed = 0
			case m.evfd:
				unix.Read(m.evfd, scratch[:])
			}
		}
	}
}

// moverPriority is the SCHED_FIFO priority of the mover thread: above every
// ordinary process, below the kernel's interrupt threads (50).
const moverPriority = 10

// raisePriority makes the calling thread a real-time thread (SCHED_FIFO),
// or failing that gives it the highest nice value, so that on a loaded
// machine ordinary processes do not delay packet departures by a scheduler
// time slice. The mover sleeps between departures and polls only through
// the last pollBelow before one; at rates where departures are always that
// close it keeps a core busy, and then the kernel's real-time throttling
// lends that core to other threads for a few tens of milliseconds a second.
// It returns the priority it set.
func raisePriority() (string, error) {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: moverPriority}
	errFIFO := unix.SchedSetAttr(0, &attr, 0)
	if errFIFO == nil {
		return fmt.Sprintf("SCHED_FIFO %d", moverPriority), nil
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, -20); err != nil {
		return "", fmt.Errorf("emu: SCHED_FIFO: %w; nice -20: %w", errFIFO, err)
	}
	return "nice -20", nil
}

// arm sets the timer to wake the loop wakeEarly before next. A timer left
// armed for a departure that has since changed only causes a spare wakeup,
// which costs less than disarming it.
func (m *mover) arm(next time.Duration) {
	dl := max(m.monoBase+int64(next-wakeEarly), 1)
	if dl == m.armed {
		return
	}
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(dl)}
	if err := unix.TimerfdSettime(m.tfd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
		m.p.log.Error("emu: timerfd_settime", "err", err)
		return
	}
	m.armed = dl
}

// read reads up to readBatch packets from the TUN where direction d starts
// and passes them through its Link.
func (m *mover) read(d Direction) {
	fd := m.tun[d]
	for range readBatch {
		buf := m.buffer()
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			m.release(buf)
			continue
		case errors.Is(err, unix.EAGAIN):
			m.release(buf)
			return
		case err != nil:
			m.release(buf)
			m.failed(d, "read from tun", err)
			return
		case n == 0 || n == len(buf):
			// Empty or truncated: not a packet we can forward.
			m.release(buf)
			m.failed(d, "read from tun", errTruncated)
			continue
		}
		now := m.now()
		m.p.mu.Lock()
		v := m.p.links[d].Arrive(now, n)
		if v != Accepted {
			m.p.meters[d].verdict(now, v)
		}
		m.p.mu.Unlock()
		if v == Accepted {
			m.held[d].Push(buf[:n])
		} else {
			m.release(buf)
		}
	}
}

// depart writes every packet that is due and returns the time of the next
// departure, if any.
func (m *mover) depart() (time.Duration, bool) {
	now := m.now()
	for d := range m.held {
		for m.held[d].Len() > 0 {
			m.p.mu.Lock()
			dep, ok := m.p.links[d].Depart(now)
			switch {
			case ok && dep.Lost:
				m.p.meters[d].verdict(dep.At, Lost)
			case ok:
				m.p.meters[d].deliver(dep, m.now())
			}
			m.p.mu.Unlock()
			if !ok {
				break
			}
			buf := m.held[d].Pop()
			if !dep.Lost {
				m.write(Direction(d), buf)
			}
			m.release(buf)
		}
	}
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	next, ok := m.p.links[Forward].Next()
	if r, rok := m.p.links[Reverse].Next(); rok && (!ok || r < next) {
		next, ok = r, true
	}
	return next, ok
}

// write writes a packet of direction d to the TUN where d ends.
func (m *mover) write(d Direction, buf []byte) {
	fd := m.tun[1-d]
	for {
		_, err := unix.Write(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			m.failed(d, "write to tun", err)
		}
		return
	}
}

// errTruncated reports a TUN read that filled the whole buffer.
var errTruncated = errors.New("emu: packet larger than the read buffer")

// failed counts a packet of direction d that could not be moved, and logs
// the first failure of each direction.
func (m *mover) failed(d Direction, what string, err error) {
	m.p.mu.Lock()
	m.p.errs[d]++
	first := m.p.errs[d] == 1
	m.p.mu.Unlock()
	if first {
		m.p.log.Warn("emu: "+what, "dir", d, "err", err)
	}
}

// buffer returns a free packet buffer of bufSize bytes.
func (m *mover) buffer() []byte {
	if len(m.free) == 0 {
		m.addSlab()
	}
	b := m.free[len(m.free)-1]
	m.free = m.free[:len(m.free)-1]
	return b[:cap(b)]
}

// release returns a buffer to the free list.
func (m *mover) release(b []byte) { m.free = append(m.free, b[:cap(b)]) }

// addSlab allocates slabBuffers buffers in one piece and frees them.
func (m *mover) addSlab() {
	slab := make([]byte, slabBuffers*bufSize)
	for i := range slabBuffers {
		m.free = append(m.free, slab[i*bufSize:(i+1)*bufSize:(i+1)*bufSize])
	}
}
