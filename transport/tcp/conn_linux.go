package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"replenish/framer"
	"replenish/rate"
	"replenish/transport"
)

// timestampingFlags are the SO_TIMESTAMPING flags a Conn asks for: software
// transmit stamps when the driver takes the packet (SND) and when the peer
// has acknowledged it in full (ACK), keyed by byte offset (OPT_ID), without
// the packet (OPT_TSONLY). Each is one message in the socket's error queue,
// which counts against its receive buffer, and the kernel drops stamps
// beyond it: a third kind per write (SCHED, when the packet enters the
// qdisc, taken before the ACK stamps were and never used) made 62 writes
// released at once lose SND stamps (TestTimestampsCoalesced).
const timestampingFlags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_ACK |
	unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// maxRechecks bounds re-evaluations in one wake when poll keeps reporting
// the socket writable while the rule does not invite; past it the rule's
// bias toward inviting wins.
const maxRechecks = 8

// maxDrain bounds the error-queue messages read in one drain.
const maxDrain = 4096

// setup sets and reads back the socket options for c.cfg.
func (c *Conn) setup() error {
	var serr error
	err := c.raw.Control(func(fd uintptr) { serr = c.setupFD(int(fd)) })
	if err != nil {
		return fmt.Errorf("tcp: setting socket options: %w", err)
	}
	return serr
}

// setupFD does setup's work on the socket's descriptor.
func (c *Conn) setupFD(fd int) error {
	proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt SO_PROTOCOL: %w", err)
	}
	if proto != unix.IPPROTO_TCP {
		return fmt.Errorf("%w: protocol %d", ErrNotTCP, proto)
	}
	for _, step := range []func(int) error{c.setupCongestion, c.setupNoDelay, c.setupLowat, c.setupBuffers, c.setupRTOMax, c.setupPacing, c.setupTimestamping} {
		if err := step(fd); err != nil {
			return err
		}
	}
	return nil
}

// setupCongestion sets the configured congestion control, if any, and
// reads back the one the socket uses. A connected socket switches at once;
// the handshake is the same under every congestion control.
func (c *Conn) setupCongestion(fd int) error {
	if name := c.cfg.Congestion; name != "" {
		if err := setCongestion(fd, name); err != nil {
			return err
		}
	}
	got, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt TCP_CONGESTION: %w", err)
	}
	if c.cfg.Congestion != "" && got != c.cfg.Congestion {
		return fmt.Errorf("%w: TCP_CONGESTION reads %q, set %q", ErrOption, got, c.cfg.Congestion)
	}
	c.opts.Congestion = got
	return nil
}

// availableCongestion is where Linux lists the congestion controls it has
// loaded.
const availableCongestion = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// setCongestion sets TCP_CONGESTION on fd. The kernel loads a module it
// does not have yet if the caller may (CAP_NET_ADMIN); a name it cannot
// find (ENOENT) or may not use (EPERM: not in
// net.ipv4.tcp_allowed_congestion_control) is an error wrapping ErrConfig
// that lists the ones it has.
func setCongestion(fd int, name string) error {
	err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("tcp: setsockopt TCP_CONGESTION %q: %w", name, err)
	}
	have := "unknown"
	if b, rerr := os.ReadFile(availableCongestion); rerr == nil {
		have = strings.Join(strings.Fields(string(b)), ", ")
	}
	why := "not available"
	if errors.Is(err, unix.EPERM) {
		why = "not allowed (net.ipv4.tcp_allowed_congestion_control)"
	}
	return fmt.Errorf("%w: congestion control %q %s: %v (loaded: %s)", ErrConfig, name, why, err, have)
}

// CheckCongestion reports whether a TCP socket can use the congestion
// control name, as Config.Congestion would set it: nil, or an error
// wrapping ErrConfig that says why and lists those the kernel has. It
// opens a socket and closes it; nothing connects.
func CheckCongestion(name string) error {
	if name == "" {
		return fmt.Errorf("%w: no congestion control named", ErrConfig)
	}
	if err := (Config{Congestion: name}).validate(); err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	}
	if err != nil {
		return fmt.Errorf("tcp: checking congestion control %q: %w", name, err)
	}
	defer unix.Close(fd)
	return setCongestion(fd, name)
}

// setupNoDelay sets TCP_NODELAY unless the mode keeps Nagle on.
func (c *Conn) setupNoDelay(fd int) error {
	nodelay := 1
	if c.cfg.Mode.Nagle {
		nodelay = 0
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, nodelay); err != nil {
		return fmt.Errorf("tcp: setsockopt TCP_NODELAY: %w", err)
	}
	got, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt TCP_NODELAY: %w", err)
	}
	if (got != 0) != (nodelay != 0) {
		return fmt.Errorf("%w: TCP_NODELAY reads %d, set %d", ErrOption, got, nodelay)
	}
	c.opts.NoDelay = got != 0
	return nil
}

// setupLowat sets an explicit TCP_NOTSENT_LOWAT in every mode, never the
// sysctl's: the mode's byte count in lowat mode, no limit otherwise.
func (c *Conn) setupLowat(fd int) error {
	lowat := uint32(NoLowat)
	if c.cfg.Mode.Policy == transport.Lowat {
		lowat = uint32(c.cfg.Mode.Lowat)
	}
	if err := setLowat(fd, lowat); err != nil {
		return err
	}
	var err error
	if c.opts.NotsentLowat, err = getLowat(fd); err != nil {
		return err
	}
	if c.opts.NotsentLowat != lowat {
		return fmt.Errorf("%w: TCP_NOTSENT_LOWAT reads %d, set %d", ErrOption, c.opts.NotsentLowat, lowat)
	}
	return nil
}

// setupBuffers fixes SO_SNDBUF and sets TCP_USER_TIMEOUT where the
// configuration asks.
func (c *Conn) setupBuffers(fd int) error {
	if c.cfg.Mode.SendBuffer > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, c.cfg.Mode.SendBuffer); err != nil {
			return fmt.Errorf("tcp: setsockopt SO_SNDBUF %d: %w", c.cfg.Mode.SendBuffer, err)
		}
		var err error
		if c.opts.SendBuffer, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err != nil {
			return fmt.Errorf("tcp: getsockopt SO_SNDBUF: %w", err)
		}
	}
	return c.setUserTimeout(fd, c.cfg.UserTimeout)
}

// setUserTimeout sets TCP_USER_TIMEOUT to d, if positive.
func (c *Conn) setUserTimeout(fd int, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ms := int(min(d.Milliseconds(), math.MaxInt32))
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms); err != nil {
		return fmt.Errorf("tcp: setsockopt TCP_USER_TIMEOUT %d ms: %w", ms, err)
	}
	c.opts.UserTimeout = time.Duration(ms) * time.Millisecond
	return nil
}

// rtoMaxOption is TCP_RTO_MAX_MS; tests replace it with an option no
// kernel has.
var rtoMaxOption = unix.TCP_RTO_MAX_MS

// setupRTOMax caps the retransmission timeout where the configuration
// asks and the kernel can (TCP_RTO_MAX_MS, Linux 6.15), and reads it back.
// A kernel that does not know the option (ENOPROTOOPT) leaves
// Options.RTOMax 0 and gets Config.UncappedUserTimeout, if set, as
// TCP_USER_TIMEOUT instead; any other refusal is an error.
func (c *Conn) setupRTOMax(fd int) error {
	if c.cfg.RTOMax <= 0 {
		return nil
	}
	ms := int(min(c.cfg.RTOMax.Milliseconds(), math.MaxInt32))
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, rtoMaxOption, ms); err != nil {
		if errors.Is(err, unix.ENOPROTOOPT) {
			c.cfg.Logger.Debug("tcp: TCP_RTO_MAX_MS not supported by this kernel; the retransmission timeout backs off uncapped",
				"user_timeout", c.cfg.UncappedUserTimeout, "err", err)
			return c.setUserTimeout(fd, c.cfg.UncappedUserTimeout)
		}
		return fmt.Errorf("tcp: setsockopt TCP_RTO_MAX_MS %d ms: %w", ms, err)
	}
	got, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, rtoMaxOption)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt TCP_RTO_MAX_MS: %w", err)
	}
	if got != ms {
		return fmt.Errorf("%w: TCP_RTO_MAX_MS reads %d, set %d", ErrOption, got, ms)
	}
	c.opts.RTOMax = time.Duration(got) * time.Millisecond
	return nil
}

// setupPacing turns the kernel's pacing on where the configuration asks.
// Any SO_MAX_PACING_RATE but the unset value (all ones) does; the largest
// other leaves the rate the kernel's, and reads back as set.
func (c *Conn) setupPacing(fd int) error {
	if !c.cfg.Pace {
		return nil
	}
	const uncapped = math.MaxUint64 - 1
	if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, uncapped); err != nil {
		return fmt.Errorf("tcp: setsockopt SO_MAX_PACING_RATE: %w", err)
	}
	got, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt SO_MAX_PACING_RATE: %w", err)
	}
	if got != uncapped {
		return fmt.Errorf("%w: SO_MAX_PACING_RATE reads %d, set %d", ErrOption, got, uint64(uncapped))
	}
	c.opts.Paced = true
	return nil
}

// CapPacing caps the kernel's pacing rate at r (SO_MAX_PACING_RATE; its
// bytes are the segments', headers and all), or lifts the cap where r is
// zero, on a socket the kernel paces anyway: one that asked for pacing
// (Config.Pace), or whose congestion control is BBR, which paces at its
// own rate. On any other it does nothing: the option would turn pacing
// on. See sender's pacing cap for why.
func (c *Conn) CapPacing(r rate.Bitrate) error {
	if !c.opts.Paced && c.opts.Congestion != "bbr" {
		return nil
	}
	v := uint64(math.MaxUint64 - 1) // set, uncapped (see setupPacing)
	if r > 0 {
		v = uint64(r) / 8
	}
	if c.pacingCap.Swap(v) == v {
		return nil
	}
	var err error
	if cerr := c.raw.Control(func(fd uintptr) {
		err = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, v)
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		c.pacingCap.Store(0)
		return fmt.Errorf("tcp: setsockopt SO_MAX_PACING_RATE: %w", err)
	}
	return nil
}

// setupTimestamping turns on SO_TIMESTAMPING for departure stamps, unless
// the configuration turns them off.
func (c *Conn) setupTimestamping(fd int) error {
	if c.cfg.NoTimestamps {
		return nil
	}
	flags := timestampingFlags | unix.SOF_TIMESTAMPING_OPT_ID_TCP
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); err != nil {
		// Kernels before 6.2 lack OPT_ID_TCP: keys then count from the
		// first unacknowledged byte, so note how many bytes are still
		// unacknowledged (SIOCOUTQ) as the base.
		c.cfg.Logger.Debug("tcp: SOF_TIMESTAMPING_OPT_ID_TCP refused; using OPT_ID", "err", err)
		flags = timestampingFlags
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); err != nil {
			return fmt.Errorf("tcp: setsockopt SO_TIMESTAMPING: %w", err)
		}
		outq, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
		if err != nil {
			return fmt.Errorf("tcp: ioctl SIOCOUTQ: %w", err)
		}
		c.opts.KeyBase = uint32(outq)
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING)
	if err != nil {
		return fmt.Errorf("tcp: getsockopt SO_TIMESTAMPING: %w", err)
	}
	if got&timestampingFlags != timestampingFlags {
		return fmt.Errorf("%w: SO_TIMESTAMPING reads %#x, set %#x", ErrOption, got, flags)
	}
	c.opts.Timestamping = got
	return nil
}

// setLowat sets TCP_NOTSENT_LOWAT; NoLowat travels as -1, the kernel's
// UINT32_MAX.
func setLowat(fd int, v uint32) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, int(int32(v))); err != nil {
		return fmt.Errorf("tcp: setsockopt TCP_NOTSENT_LOWAT %d: %w", v, err)
	}
	return nil
}

// getLowat reads TCP_NOTSENT_LOWAT back. Zero would mean the sysctl's value.
func getLowat(fd int) (uint32, error) {
	v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	if err != nil {
		return 0, fmt.Errorf("tcp: getsockopt TCP_NOTSENT_LOWAT: %w", err)
	}
	return uint32(int32(v)), nil
}

// setLowatLocked sets TCP_NOTSENT_LOWAT unless it already has value v.
// c.mu must be held.
func (c *Conn) setLowatLocked(fd int, v uint32) error {
	if c.lowat == v {
		return nil
	}
	if err := setLowat(fd, v); err != nil {
		return err
	}
	c.lowat = v
	c.stats.Lowat = v
	return nil
}

// notsentLowat reads the socket's TCP_NOTSENT_LOWAT now.
func (c *Conn) notsentLowat() (uint32, error) {
	var (
		v    uint32
		verr error
	)
	if err := c.raw.Control(func(fd uintptr) { v, verr = getLowat(int(fd)) }); err != nil {
		return 0, err
	}
	return v, verr
}

// wakeCause says why the wait callback is running.
type wakeCause int

const (
	causeFirst   wakeCause = iota // the first evaluation of the wait
	causeNetpoll                  // the netpoller woke the writer
	causeTimer                    // the first evaluation after the safety timer
)

// waitResult carries a wait's outcome out of the RawConn callback.
type waitResult struct {
	inv transport.Invitation
	err error
}

// Wait blocks until the Conn's policy invites a frame, ctx is done, or the
// connection fails, and returns the invitation. It never spins: while the
// rule does not invite, it arms TCP_NOTSENT_LOWAT so that the kernel's own
// write-space wake (on ACK or transmit) ends the wait, with the safety timer
// as a net. In replenish mode TCP_NOTSENT_LOWAT is back at no limit when
// Wait returns, so the following write is never gated.
//
// Invitation.Threshold is the largest unsent backlog the policy invites at:
// the rule's limit in replenish mode, (Lowat-1)/2 in lowat mode, and -1 in
// default mode, which waits for send-buffer space instead.
//
// Wait returns ctx's error when ctx is done, ErrPeerClosed when the
// connection can no longer carry data, or an error wrapping net.ErrClosed
// after Close.
func (c *Conn) Wait(ctx context.Context) (transport.Invitation, error) {
	if err := ctx.Err(); err != nil {
		return transport.Invitation{}, err
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.tc.SetWriteDeadline(aLongTimeAgo)
		close(cancelled)
	})
	defer func() {
		if !stop() {
			<-cancelled
		}
		// Clear the deadline before the frame is written.
		c.tc.SetWriteDeadline(time.Time{})
		// A wait that ended without an invitation may have left a small
		// lowat armed; never leave it for a write.
		if c.cfg.Mode.Policy == transport.Replenish {
			c.raw.Control(func(fd uintptr) {
				c.mu.Lock()
				defer c.mu.Unlock()
				if err := c.setLowatLocked(int(fd), NoLowat); err != nil {
					c.cfg.Logger.Debug("tcp: restoring TCP_NOTSENT_LOWAT", "err", err)
				}
			})
		}
		c.deliver()
	}()

	cause := causeFirst
	for {
		if err := c.tc.SetWriteDeadline(time.Now().Add(c.cfg.SafetyTimeout)); err != nil {
			return transport.Invitation{}, fmt.Errorf("tcp: arming safety timer: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return transport.Invitation{}, err
		}
		var res waitResult
		done := false
		err := c.raw.Write(func(fd uintptr) bool {
			done = c.step(int(fd), cause, &res)
			cause = causeNetpoll
			return done
		})
		switch {
		case done && res.err != nil:
			return transport.Invitation{}, res.err
		case done && err == nil:
			return res.inv, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if err := ctx.Err(); err != nil {
				return transport.Invitation{}, err
			}
			c.mu.Lock()
			c.stats.TimerWakes++
			c.mu.Unlock()
			cause = causeTimer
		case err != nil:
			return transport.Invitation{}, fmt.Errorf("tcp: waiting for invitation: %w", err)
		default:
			return transport.Invitation{}, fmt.Errorf("tcp: waiting for invitation: callback did not finish")
		}
	}
}

// step runs one evaluation inside RawConn.Write's callback and reports
// whether the wait is over (invited, or failed with res.err). Returning
// false parks the goroutine until the netpoller reports the socket writable
// (or its error queue readable), or the deadline passes.
//
// Go's netpoller is edge-triggered, and Linux signals write space only to a
// socket marked SOCK_NOSPACE, which tcp_poll sets when it finds the socket
// not writable. So before parking, step arms TCP_NOTSENT_LOWAT for the
// rule's limit and calls poll(2) with a zero timeout: that marks the socket,
// and if it already reports writable the rule is evaluated again instead.
func (c *Conn) step(fd int, cause wakeCause, res *waitResult) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake, err := c.noteWakeLocked(fd, cause)
	if err != nil {
		res.err = err
		return true
	}
	if c.opts.Timestamping != 0 {
		c.drainLocked(fd)
	}
	if !c.passive {
		if c.drainInLocked(fd); c.peerErr != nil {
			res.err = c.peerErr
			return true
		}
	}
	for i := 0; ; i++ {
		info, err := readInfo(fd, c.infoBuf[:])
		if err != nil {
			res.err = err
			return true
		}
		c.noteInfoLocked(info)
		in := inputFor(info, c.cfg, c.drainOut, c.ruleLead())
		d := Decide(in)
		invite := false
		if c.cfg.Mode.Policy == transport.Replenish {
			invite = d.Invite || i >= maxRechecks
			lowat := uint32(NoLowat)
			if !invite {
				lowat = lowatFor(d.Limit)
			}
			if err := c.setLowatLocked(fd, lowat); err != nil {
				res.err = err
				return true
			}
		}
		if !invite {
			rev, err := pollOut(fd)
			if err != nil {
				res.err = err
				return true
			}
			if rev&unix.POLLHUP != 0 {
				res.err = peerClosed(fd)
				return true
			}
			if rev&unix.POLLOUT != 0 {
				if c.cfg.Mode.Policy == transport.Replenish {
					c.stats.Rechecks++
					continue
				}
				invite = true
			}
		}
		if invite {
			res.inv = c.invitationLocked(info, in, d, wake)
			return true
		}
		if cause != causeFirst {
			c.stats.Rearms++
		}
		c.stats.Parks++
		return false
	}
}

// noteWakeLocked counts what woke a wait for cause, as poll(2) shows it
// after a netpoller wake, and returns the invitation's Wake for it. c.mu
// must be held.
func (c *Conn) noteWakeLocked(fd int, cause wakeCause) (transport.Wake, error) {
	switch cause {
	case causeNetpoll:
		rev, err := pollOut(fd)
		if err != nil {
			return 0, err
		}
		switch {
		case rev&unix.POLLOUT != 0:
			c.stats.KernelWakes++
		case rev&unix.POLLERR != 0:
			c.stats.ErrQueueWakes++
		default:
			c.stats.OtherWakes++
		}
		return transport.WakeKernel, nil
	case causeTimer:
		return transport.WakeTimer, nil
	}
	return transport.WakeImmediate, nil
}

// pollOut polls fd for POLLOUT without waiting and returns the revents.
func pollOut(fd int) (int16, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("tcp: poll: %w", err)
		}
		return fds[0].Revents, nil
	}
}

// peerClosed returns ErrPeerClosed, with the socket's pending error if any.
func peerClosed(fd int) error {
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && v != 0 {
		return fmt.Errorf("%w: %w", ErrPeerClosed, unix.Errno(v))
	}
	return ErrPeerClosed
}

// drainLocked reads the socket error queue without blocking, matches its
// SCM_TSTAMP_SND stamps to pending records, which move to c.done, and gives
// its SCM_TSTAMP_ACK stamps to c.heads. c.mu must be held.
func (c *Conn) drainLocked(fd int) {
	for range maxDrain {
		_, oobn, flags, _, err := unix.Recvmsg(fd, c.data[:], c.oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// EAGAIN: the queue is empty. Anything else surfaces on the
			// next read, write or wait.
			break
		}
		if flags&unix.MSG_CTRUNC != 0 {
			c.stats.ErrQueueErrors++
			continue
		}
		s, ok, err := parseStamp(c.oob[:oobn])
		switch {
		case err != nil:
			c.stats.ErrQueueErrors++
			continue
		case !ok:
			c.stats.StampsOther++
			continue
		}
		if h := c.testHookStamp; h != nil {
			h(s)
		}
		switch s.kind {
		case unix.SCM_TSTAMP_SND:
			c.stats.StampsSent++
			c.heads.Departed(s.key, s.at)
			n := len(c.done)
			c.done = c.pending.complete(s.key, s.at, c.done)
			if len(c.done) == n {
				c.stats.StampsUnmatched++
			}
			c.stats.RecordsStamped += uint64(len(c.done) - n)
		case unix.SCM_TSTAMP_ACK:
			c.stats.StampsAcked++
			c.heads.Acked(s.key, s.at)
		default:
			c.stats.StampsOther++
		}
	}
	c.stats.Pending = c.pending.Len()
}

// maxInBuffer bounds the peer's bytes a Conn holds that are not yet whole
// packets: one packet of the largest size plus a read's worth.
const maxInBuffer = 2 + framer.MaxPacketSize + inChunk

// inChunk is how much one read of the peer's stream asks for.
const inChunk = 16 << 10

// drainInLocked reads what the peer has sent without blocking, and moves
// each whole RFC 4571 packet to c.inbox. At the end of the peer's stream,
// on a read error or on a zero-length packet it sets c.peerErr. c.mu must
// be held.
func (c *Conn) drainInLocked(fd int) {
	for c.peerErr == nil && c.in.Buffered() < maxInBuffer {
		n, _, err := unix.Recvfrom(fd, c.in.Free(inChunk), unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		switch {
		case err != nil:
			c.peerErr = fmt.Errorf("%w: %w", ErrPeerClosed, err)
		case n == 0:
			c.peerErr = fmt.Errorf("%w: %w", ErrPeerClosed, io.EOF)
			if err := c.in.End(); err != nil {
				c.peerErr = fmt.Errorf("%w: %w", ErrPeerClosed, err) // cut off inside a packet
			}
		default:
			c.in.Commit(n)
		}
		if n < inChunk {
			break
		}
	}
	for {
		pkt, err := c.in.Next()
		if err != nil {
			c.peerErr = fmt.Errorf("%w: %w", ErrPeerClosed, err)
			c.in.Reset()
			return
		}
		if pkt == nil {
			return
		}
		c.inbox = append(c.inbox, slices.Clone(pkt))
		c.stats.PacketsIn++
	}
}

// write writes all of b. With TCP_NODELAY and timestamps on it sends with
// MSG_EOR, so that no later write joins the skb carrying b's last byte and
// its departure stamp stays b's; otherwise it is a plain write. It blocks
// while the send buffer is full (or, in lowat mode, while Linux gates the
// write) and returns the bytes written.
func (c *Conn) write(b []byte) (int, error) {
	if c.cfg.Mode.Nagle || c.opts.Timestamping == 0 {
		return c.tc.Write(b)
	}
	n := 0
	var serr error
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := unix.SendmsgN(int(fd), b[n:], nil, nil, unix.MSG_EOR|unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
			switch err {
			case nil:
				n += m
			case unix.EINTR:
			case unix.EAGAIN:
				return false // wait for write space
			default:
				serr = err
				return true
			}
		}
		return true
	})
	if serr != nil {
		return n, serr
	}
	return n, err
}
