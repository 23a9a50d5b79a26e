package tcp

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := unix.Cmsghdr{Level: level, Type: typ}
	h.SetLen(unix.CmsgLen(len(data)))
	*(*unix.Cmsghdr)(unsafe.Pointer(&b[0])) = h
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// scmTimestamping builds a struct scm_timestamping with software time t.
func scmTimestamping(t time.Time) []byte {
	b := make([]byte, 48)
	ne.PutUint64(b[0:], uint64(t.Unix()))
	ne.PutUint64(b[8:], uint64(t.Nanosecond()))
	return b
}

// extendedErr builds a struct sock_extended_err followed by an offender
// address (zeroed, as for timestamps).
func extendedErr(errno uint32, origin uint8, info, data uint32) []byte {
	b := make([]byte, sizeofSockExtendedErr+16)
	ne.PutUint32(b[0:], errno)
	b[4] = origin
	ne.PutUint32(b[8:], info)
	ne.PutUint32(b[12:], data)
	return b
}

func TestParseStamp(t *testing.T) {
	at := time.Unix(1761768000, 123456789)
	ts := cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, scmTimestamping(at))
	snd := func(key uint32) []byte {
		return cmsg(unix.SOL_IP, unix.IP_RECVERR, extendedErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_SND, key))
	}
	ts32 := make([]byte, 24)
	ne.PutUint32(ts32[0:], uint32(at.Unix()))
	ne.PutUint32(ts32[4:], uint32(at.Nanosecond()))
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		oob     []byte
		ok      bool
		err     error
		kind    uint32
		key     uint32
		wantErr bool
	}{
		{name: "IPv4 SND", oob: cat(ts, snd(4095)), ok: true, kind: unix.SCM_TSTAMP_SND, key: 4095},
		{name: "IPv6 SCHED", oob: cat(ts, cmsg(unix.SOL_IPV6, unix.IPV6_RECVERR,
			extendedErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_SCHED, 7))),
			ok: true, kind: unix.SCM_TSTAMP_SCHED, key: 7},
		{name: "new timestamping type", oob: cat(cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW, scmTimestamping(at)), snd(1)),
			ok: true, kind: unix.SCM_TSTAMP_SND, key: 1},
		{name: "32-bit timespecs", oob: cat(cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, ts32), snd(2)),
			ok: true, kind: unix.SCM_TSTAMP_SND, key: 2},
		{name: "error first, then time", oob: cat(snd(9), ts), ok: true, kind: unix.SCM_TSTAMP_SND, key: 9},
		{name: "other origin", oob: cat(cmsg(unix.SOL_IP, unix.IP_RECVERR, extendedErr(uint32(unix.EHOSTUNREACH), unix.SO_EE_ORIGIN_ICMP, 0, 0)))},
		{name: "no extended error", oob: ts, err: errNoExtendedErr},
		{name: "no time", oob: snd(1), err: errNoTimestamping},
		{name: "short extended error", oob: cat(ts, cmsg(unix.SOL_IP, unix.IP_RECVERR, make([]byte, 8))), err: errBadCmsg},
		{name: "odd timestamp size", oob: cat(cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, make([]byte, 40)), snd(1)), err: errBadCmsg},
		{name: "zero software time", oob: cat(cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, make([]byte, 48)), snd(1)), err: errBadCmsg},
		{name: "truncated header", oob: ts[:10], err: errNoExtendedErr},
		{name: "length past end", oob: ts[:40], err: errBadCmsg},
		{name: "empty", oob: nil, err: errNoExtendedErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok, err := parseStamp(tc.oob)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok {
				t.Fatalf("parseStamp = %+v, %v, %v; want ok %v", s, ok, err, tc.ok)
			}
			if !ok {
				return
			}
			if s.kind != tc.kind || s.key != tc.key || !s.at.Equal(at) {
				t.Errorf("parseStamp = %+v, want kind %d key %d at %v", s, tc.kind, tc.key, at)
			}
		})
	}
}

func FuzzParseStamp(f *testing.F) {
	at := time.Unix(1761768000, 5)
	ts := cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, scmTimestamping(at))
	ee := cmsg(unix.SOL_IP, unix.IP_RECVERR, extendedErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, 0, 42))
	f.Add(append(append([]byte{}, ts...), ee...))
	f.Add(ts)
	f.Add(ee)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		s, ok, err := parseStamp(oob)
		if ok && (err != nil || s.at.IsZero()) {
			t.Fatalf("ok stamp %+v with err %v", s, err)
		}
	})
}

func BenchmarkParseStamp(b *testing.B) {
	ts := cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPING_OLD, scmTimestamping(time.Unix(1761768000, 5)))
	ee := cmsg(unix.SOL_IP, unix.IP_RECVERR, extendedErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, 0, 42))
	oob := append(ts, ee...)
	for b.Loop() {
		if _, ok, err := parseStamp(oob); !ok || err != nil {
			b.Fatal(err)
		}
	}
}
