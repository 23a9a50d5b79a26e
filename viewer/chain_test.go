package viewer

import (
	"testing"

	"replenish/framer"
)

func TestChain(t *testing.T) {
	type step struct {
		lost bool   // the transport reports a lost frame
		seq  uint16 // else a frame: first sequence number,
		n    int    // packets,
		key  bool
		ssrc uint32 // 0 means 1
		want verdict
	}
	key := func(seq uint16, n int) step { return step{seq: seq, n: n, key: true} }
	delta := func(seq uint16, n int) step { return step{seq: seq, n: n} }
	with := func(s step, v verdict) step { s.want = v; return s }
	bad := verdict{undecodable: true}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order", []step{key(10, 3), delta(13, 2), delta(15, 1), key(16, 4), delta(20, 1)}},
		{"across the wrap", []step{key(65534, 3), delta(1, 2), delta(3, 1)}},
		{"gap", []step{key(10, 3), with(delta(16, 2), verdict{lost: 1, undecodable: true}), with(delta(18, 1), bad), key(19, 2), delta(21, 1)}},
		{"gap before a keyframe", []step{key(10, 3), with(key(20, 3), verdict{lost: 1}), delta(23, 1)}},
		{"reset, then the gap it left", []step{key(10, 3), {lost: true}, with(delta(16, 2), bad), with(delta(18, 1), bad), key(19, 1), delta(20, 1)}},
		{"reset of a frame that left no gap", []step{key(10, 3), {lost: true}, with(delta(13, 1), bad), key(14, 1)}},
		{"two resets, one gap", []step{key(10, 3), {lost: true}, {lost: true}, with(delta(19, 2), bad)}},
		{"a loss then a gap later counts both", []step{key(10, 3), {lost: true}, with(delta(16, 2), bad), with(delta(30, 1), verdict{lost: 1, undecodable: true})}},
		{"late frame", []step{key(10, 3), delta(13, 2), with(delta(11, 1), bad), delta(15, 1)}},
		{"first frame a delta", []step{with(delta(10, 1), bad), with(delta(11, 1), bad), key(12, 1), delta(13, 1)}},
		{"new SSRC starts over", []step{key(10, 3), {seq: 500, n: 1, key: true, ssrc: 2}, {seq: 501, n: 1, ssrc: 2}}},
		{"new SSRC without a keyframe", []step{key(10, 3), {seq: 500, n: 1, ssrc: 2, want: bad}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c chain
			for i, s := range tc.steps {
				if s.lost {
					c.lostFrame()
					continue
				}
				if s.ssrc == 0 {
					s.ssrc = 1
				}
				got := c.frame(&framer.Frame{SSRC: s.ssrc, FirstSeq: s.seq, Packets: s.n, Key: s.key})
				if got != s.want {
					t.Errorf("step %d (seq %d, key %v): %+v, want %+v", i, s.seq, s.key, got, s.want)
				}
			}
		})
	}
}
