package framer

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

const benchFrameSize = 8 << 10

func BenchmarkPacketize(b *testing.B) {
	p := NewPacketizer(PacketizerConfig{SSRC: 1})
	frame := vp8Frame(false, 0, 0, benchFrameSize, 0)
	capture := testEpoch
	b.SetBytes(benchFrameSize)
	b.ReportAllocs()
	for b.Loop() {
		capture = capture.Add(33 * time.Millisecond)
		if _, _, err := p.Packetize(frame, capture); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssemble(b *testing.B) {
	// One op is one 8 KB frame of several packets. The frames cycle; the
	// Assembler is idle between frames, so the jump in sequence numbers at
	// the end of a cycle drops nothing.
	const frames = 64
	p := NewPacketizer(PacketizerConfig{SSRC: 1})
	var cycle [][][]byte
	for i := range frames {
		fp, _, err := p.Packetize(vp8Frame(i == 0, 640, 360, benchFrameSize, byte(i)), testEpoch.Add(time.Duration(i)*33*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		cycle = append(cycle, fp)
	}
	a := NewAssembler(0)
	b.SetBytes(benchFrameSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var f *Frame
		for _, pkt := range cycle[i%frames] {
			var err error
			if f, err = a.Push(pkt); err != nil {
				b.Fatal(err)
			}
		}
		if f == nil {
			b.Fatal("no frame")
		}
		i++
	}
}

// loopReader delivers b over and over, counting its reads.
type loopReader struct {
	b     []byte
	off   int
	reads int
}

func (l *loopReader) Read(p []byte) (int, error) {
	l.reads++
	n := copy(p, l.b[l.off:])
	l.off = (l.off + n) % len(l.b)
	return n, nil
}

// benchStream is a stream of f's framing that starts and ends on a packet
// boundary after its header, so that a de-framer can be fed it in a loop.
func benchStream(b *testing.B, f format, size int) []byte {
	sizes := make([]int, 256)
	for i := range sizes {
		sizes[i] = size
	}
	s, _, _ := buildStream(b, f, sizes...)
	return s[len(f.header):]
}

// BenchmarkDeframers measures the push de-framers fed as transport/tcp feeds
// them: 16 KiB reads (a copy from a loop of packets) with Free and Commit,
// or with Feed, then Next until no packet. One op is one packet.
func BenchmarkDeframers(b *testing.B) {
	for _, f := range formats {
		for _, size := range []int{100, 1200} {
			for _, useFree := range []bool{true, false} {
				name := fmt.Sprintf("%s/%dB/Feed", f.name, size)
				if useFree {
					name = fmt.Sprintf("%s/%dB/Free", f.name, size)
				}
				b.Run(name, func(b *testing.B) {
					src := &loopReader{b: benchStream(b, f, size)}
					d := f.push()
					d.Feed(f.header)
					chunk := make([]byte, readSize)
					b.SetBytes(int64(size))
					b.ReportAllocs()
					for b.Loop() {
						for {
							pkt, err := d.Next()
							if err != nil {
								b.Fatal(err)
							}
							if pkt != nil {
								break
							}
							if useFree {
								d.Commit(copy(d.Free(readSize), src.b[src.off:]))
								src.off = (src.off + min(readSize, len(src.b)-src.off)) % len(src.b)
							} else {
								n, _ := src.Read(chunk)
								d.Feed(chunk[:n])
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkReaders measures the blocking readers over an in-memory stream
// of 1200-byte packets, and reports the reads of the underlying reader per
// packet. One op is one packet.
func BenchmarkReaders(b *testing.B) {
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			src := &loopReader{b: benchStream(b, f, 1200)}
			read := f.reader(io.MultiReader(bytes.NewReader(f.header), src))
			b.SetBytes(1200)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := read(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(src.reads)/float64(b.N), "reads/op")
		})
	}
}
