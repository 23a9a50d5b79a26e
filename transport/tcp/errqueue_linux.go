package tcp

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Errors from parsing the socket error queue.
var (
	errNoTimestamping = errors.New("tcp: error-queue message without SCM_TIMESTAMPING")
	errNoExtendedErr  = errors.New("tcp: error-queue message without sock_extended_err")
	errBadCmsg        = errors.New("tcp: malformed error-queue control message")
)

// sizeofSockExtendedErr is sizeof(struct sock_extended_err).
const sizeofSockExtendedErr = 16

// parseStamp decodes the control messages of one MSG_ERRQUEUE message: an
// SCM_TIMESTAMPING (three timespecs, the first the software time) and an
// IP_RECVERR or IPV6_RECVERR sock_extended_err whose ee_origin is
// SO_EE_ORIGIN_TIMESTAMPING. It returns ok false with a nil error for a
// well-formed message that is not a timestamp (another origin), and an
// error for a malformed one. It is pure and never panics.
func parseStamp(oob []byte) (s stamp, ok bool, err error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return stamp{}, false, fmt.Errorf("%w: %v", errBadCmsg, err)
	}
	var haveTime, haveErr bool
	var ee []byte
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_SOCKET &&
			(m.Header.Type == unix.SO_TIMESTAMPING_OLD || m.Header.Type == unix.SO_TIMESTAMPING_NEW):
			t, err := parseScmTimestamping(m.Data)
			if err != nil {
				return stamp{}, false, err
			}
			s.at, haveTime = t, true
		case m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR,
			m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR:
			if len(m.Data) < sizeofSockExtendedErr {
				return stamp{}, false, fmt.Errorf("%w: sock_extended_err of %d bytes", errBadCmsg, len(m.Data))
			}
			ee, haveErr = m.Data, true
		}
	}
	if !haveErr {
		return stamp{}, false, errNoExtendedErr
	}
	errno := ne.Uint32(ee[0:])
	origin := ee[4]
	if origin != unix.SO_EE_ORIGIN_TIMESTAMPING || errno != uint32(unix.ENOMSG) {
		return stamp{}, false, nil
	}
	if !haveTime {
		return stamp{}, false, errNoTimestamping
	}
	s.kind = ne.Uint32(ee[8:])
	s.key = ne.Uint32(ee[12:])
	return s, true, nil
}

// parseScmTimestamping returns the software time, the first of the three
// timespecs of struct scm_timestamping. The timespec width is told by the
// payload size: 48 bytes for 64-bit fields, 24 for 32-bit ones.
func parseScmTimestamping(b []byte) (time.Time, error) {
	var sec, nsec int64
	switch len(b) {
	case 48:
		sec, nsec = int64(ne.Uint64(b[0:])), int64(ne.Uint64(b[8:]))
	case 24:
		sec, nsec = int64(int32(ne.Uint32(b[0:]))), int64(int32(ne.Uint32(b[4:])))
	default:
		return time.Time{}, fmt.Errorf("%w: scm_timestamping of %d bytes", errBadCmsg, len(b))
	}
	if sec <= 0 || nsec < 0 || nsec >= 1e9 {
		return time.Time{}, fmt.Errorf("%w: no software time (%d s, %d ns)", errBadCmsg, sec, nsec)
	}
	return time.Unix(sec, nsec), nil
}
