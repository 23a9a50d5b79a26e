package framer

import (
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
