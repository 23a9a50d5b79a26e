package tcp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readInfo reads TCP_INFO of fd into buf and decodes it.
func readInfo(fd int, buf []byte) (Info, error) {
	n, err := getsockoptBytes(fd, unix.IPPROTO_TCP, unix.TCP_INFO, buf)
	if err != nil {
		return Info{}, fmt.Errorf("tcp: getsockopt TCP_INFO: %w", err)
	}
	return ParseInfo(buf[:n])
}

// getsockoptBytes calls getsockopt with buf as the option buffer and returns
// how many bytes the kernel filled. x/sys's typed getters fix the length
// (and its TCPInfo drops the bit-fields), so TCP_INFO is read raw.
func getsockoptBytes(fd, level, opt int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, unix.EINVAL
	}
	n := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, e
	}
	return int(min(n, uint32(len(buf)))), nil
}
