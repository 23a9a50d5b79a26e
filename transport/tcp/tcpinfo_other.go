//go:build !linux

package tcp

// readInfo returns ErrUnsupported: TCP_INFO is read on Linux only.
func readInfo(fd int, buf []byte) (Info, error) {
	return Info{}, ErrUnsupported
}
