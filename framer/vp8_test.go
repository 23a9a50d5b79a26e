package framer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseVP8Header(t *testing.T) {
	key := vp8Frame(true, 640, 360, 100, 0)
	scaled := vp8Frame(true, 1280, 720, 100, 0)
	scaled[7] |= 0xC0 // horizontal scale bits must not count as width
	scaled[9] |= 0x40
	badVersion := vp8Frame(false, 0, 0, 50, 0)
	badVersion[0] |= 4 << 1
	noStart := vp8Frame(true, 640, 360, 100, 0)
	noStart[5] = 0x2b
	zeroW := vp8Frame(true, 0, 360, 100, 0)
	zeroH := vp8Frame(true, 640, 0, 100, 0)
	for _, tc := range []struct {
		name    string
		frame   []byte
		key     bool
		w, h    int
		wantErr bool
	}{
		{"keyframe", key, true, 640, 360, false},
		{"keyframe with scaling bits", scaled, true, 1280, 720, false},
		{"largest size", vp8Frame(true, 16383, 16383, 10, 0), true, 16383, 16383, false},
		{"delta frame", vp8Frame(false, 0, 0, 50, 0), false, 0, 0, false},
		{"smallest delta frame", vp8Frame(false, 0, 0, 3, 0), false, 0, 0, false},
		{"version 3", func() []byte { f := vp8Frame(false, 0, 0, 9, 0); f[0] |= 3 << 1; return f }(), false, 0, 0, false},
		{"empty", nil, false, 0, 0, true},
		{"two bytes", []byte{0x11, 0x02}, false, 0, 0, true},
		{"keyframe shorter than header", key[:9], false, 0, 0, true},
		{"keyframe truncated body", key[:99], false, 0, 0, true},
		{"delta truncated body", vp8Frame(false, 0, 0, 50, 0)[:49], false, 0, 0, true},
		{"no start code", noStart, false, 0, 0, true},
		{"zero width", zeroW, false, 0, 0, true},
		{"zero height", zeroH, false, 0, 0, true},
		{"version 4", badVersion, false, 0, 0, true},
		{"zeros", make([]byte, 64), false, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, w, h, err := ParseVP8Header(tc.frame)
			if tc.wantErr {
				if !errors.Is(err, ErrNotVP8) {
					t.Fatalf("err = %v, want ErrNotVP8", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if key != tc.key || w != tc.w || h != tc.h {
				t.Errorf("got key=%v %dx%d, want key=%v %dx%d", key, w, h, tc.key, tc.w, tc.h)
			}
		})
	}
}

// readVP8 reads a frame that libvpx encoded (48x32, realtime settings).
func readVP8(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vp8", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLibvpxFrames(t *testing.T) {
	for _, tc := range []struct {
		file string
		key  bool
		w, h int
	}{
		{"key-48x32.vp8", true, 48, 32},
		{"delta-48x32.vp8", false, 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			frame := readVP8(t, tc.file)
			key, w, h, err := ParseVP8Header(frame)
			if err != nil || key != tc.key || w != tc.w || h != tc.h {
				t.Fatalf("ParseVP8Header = %v %dx%d, %v", key, w, h, err)
			}
			pkts, _, err := NewPacketizer(PacketizerConfig{MaxPacketSize: 200}).Packetize(frame, testEpoch)
			if err != nil {
				t.Fatal(err)
			}
			a := NewAssembler(0)
			var f *Frame
			for _, p := range pkts {
				if f, err = a.Push(p); err != nil {
					t.Fatal(err)
				}
			}
			if f == nil || !bytes.Equal(f.Data, frame) || f.Key != tc.key || f.Width != tc.w || f.Height != tc.h {
				t.Fatalf("reassembled %+v", f)
			}
		})
	}
}
