package viewer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"replenish/framer"
)

// framesOf builds a stream's frames from tokens, their seq 1, 2, ... in
// order: "K" a keyframe with layers, "0" a TL0 frame, "1s" and "2s" sync
// frames of TL1 and TL2, "1" and "2" non-sync ones, "0!" a TL0 frame after
// a missing one (TL0PICIDX skips one), "2?" a TL2 frame of a TL0 frame
// that never came; "k" and "d" a keyframe and a delta frame of a stream
// without layers. TL0PICIDX counts as a sender sets it.
func framesOf(t *testing.T, tokens string) []*outFrame {
	t.Helper()
	var out []*outFrame
	var idx uint8
	for i, tok := range strings.Fields(tokens) {
		f := &outFrame{seq: uint64(i + 1), stream: 1, msg: make([]byte, 100)}
		switch tok {
		case "k":
			f.key = true
		case "d":
		case "K", "0", "0!":
			idx++
			if tok == "0!" {
				idx++
			}
			f.key = tok == "K"
			f.layer = framer.Layer{Present: true, TL0PicIdx: idx}
		case "1", "1s", "2", "2s", "2?":
			f.layer = framer.Layer{Present: true, TID: tok[0] - '0', Sync: strings.HasSuffix(tok, "s"), TL0PicIdx: idx}
			if tok == "2?" {
				f.layer.TL0PicIdx = idx + 1
			}
		default:
			t.Fatalf("unknown frame token %q", tok)
		}
		out = append(out, f)
	}
	return out
}

// runRelay plays ops on a relay with queue depth depth, offering frames in
// order: "o" offers the next frame, which must not ask for a keyframe, "O"
// offers one that must; "t" takes a frame, "b" takes one with the upper
// layers held (gate.go). It returns the seq of each
// take (0 for none), with a "c" after the seq of a catch-up frame.
func runRelay(t *testing.T, r *relay, frames []*outFrame, ops string, depth int) []string {
	t.Helper()
	var took []string
	next := 0
	for i, op := range ops {
		switch op {
		case 'o', 'O':
			if next >= len(frames) {
				t.Fatalf("op %d: no frame left to offer", i)
			}
			if got := r.offer(frames[next], depth); got != (op == 'O') {
				t.Fatalf("op %d: offering frame %d asked for a keyframe: %v", i, next+1, got)
			}
			next++
		case 't', 'b':
			f, catchUp := r.take(op == 't')
			s := "0"
			if f != nil {
				s = fmt.Sprint(f.seq)
			}
			if catchUp {
				s += "c"
			}
			took = append(took, s)
		case ' ':
		default:
			t.Fatalf("unknown op %q", op)
		}
	}
	return took
}

// TestRelaySelection checks what a page gets of a stream, with and
// without temporal layers, as it keeps up or falls behind.
func TestRelaySelection(t *testing.T) {
	for _, tc := range []struct {
		name        string
		frames, ops string
		want        string    // the takes, seq or 0
		dropped     [4]uint64 // by layer
	}{
		{"keeping up, every layer goes",
			"K 2s 1s 2 0 2s 1s 2", "ot ot ot ot ot ot ot ot t", "1 2 3 4 5 6 7 8 0", [4]uint64{}},
		{"a base-layer frame makes the upper ones queued before it stale",
			"K 2s 1s 2 0 2s", "ot oooo t o t", "1 5 6", [4]uint64{0, 1, 2}},
		{"on an invitation the freshest upper frame that decodes goes",
			"K 2s 1s 2", "ot ooo t t", "1 3 0", [4]uint64{0, 0, 2}},
		{"a TL2 frame that needs the dropped TL2 one waits for a sync frame",
			"K 2s 1s 2 0 2s 1s 2", "ot oo t o ot ot ot ot", "1 3 5 6 7 8", [4]uint64{0, 0, 2}},
		{"non-sync TL2 cannot skip the TL1 frame it depends on",
			"K 2s 1s 2", "ot ot oo t t t", "1 2 3 4 0", [4]uint64{}},
		{"a dropped TL1 frame stops TL2 until sync frames of TL1 and then TL2",
			"K 2s 1s 2 0 2s 1s 2 0 2s 1s 2",
			"ot ooo ot ot ot ot ot ot ot ot", "1 5 6 7 0 9 10 11 12", [4]uint64{0, 1, 2 + 1}},
		{"a gap in TL0PICIDX drops to the next keyframe",
			"K 2s 0! 2s 1s K 2s", "ot o O O O t o t ot", "1 2 6 7", [4]uint64{1, 1, 1}},
		{"an upper frame of a missing TL0 frame drops to the next keyframe",
			"K 2? 2s 0 K", "ot O O O ot", "1 5", [4]uint64{1, 0, 2}},
		{"too many base-layer frames drop the queue and ask for a keyframe",
			"K 0 0 0 0 0 2s K", "ot ooo O O O ot", "1 8", [4]uint64{5, 0, 1}},
		{"a keyframe replaces what is queued",
			"K 2s 1s 0 K", "ooooo t t", "5 0", [4]uint64{2, 1, 1}},
		{"no keyframe yet: frames are skipped uncounted",
			"0 2s K 2s", "OO ot ot", "3 4", [4]uint64{}},
		{"a closed gate holds upper frames; the next base-layer frame drops them",
			"K 2s 1s 0 2s", "ot oo b o b o t", "1 0 4 5", [4]uint64{0, 1, 1}},
		{"held upper frames go, the freshest first, once the gate opens",
			"K 2s 1s", "ot oo b t t", "1 0 3 0", [4]uint64{0, 0, 1}},
		{"a closed gate lets base-layer frames through",
			"K 0 0", "oo b o b b b", "1 2 3 0", [4]uint64{}},
		{"without layers: fills to depth",
			"k d d", "ooo ttt t", "1 2 3 0", [4]uint64{}},
		{"without layers: overflow drops the queue and skips to a keyframe",
			"k d d d d d k d", "ooo O O O oo tt", "7 8", [4]uint64{6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r relay
			got := runRelay(t, &r, framesOf(t, tc.frames), tc.ops, 3)
			if want := strings.Fields(tc.want); !slices.Equal(got, want) {
				t.Errorf("took %v, want %v", got, want)
			}
			if r.counts.dropped != tc.dropped {
				t.Errorf("dropped by layer %v, want %v", r.counts.dropped, tc.dropped)
			}
			var sent uint64
			for _, n := range r.counts.sent {
				sent += n
			}
			if taken := len(slices.DeleteFunc(got, func(s string) bool { return s == "0" })); sent != uint64(taken) {
				t.Errorf("%d frames counted sent, %d taken", sent, taken)
			}
		})
	}
}

// TestRelayDecodes checks the relay's promise on a long layered stream
// taken at every rate: each frame it sends decodes, in the RTP sense of
// the L1T3 references, from the frames sent before it, and frames go out
// oldest first.
func TestRelayDecodes(t *testing.T) {
	pattern := []string{"0", "2s", "1s", "2"}
	var toks []string
	for i := range 200 {
		tok := pattern[i%4]
		if i%80 == 0 {
			tok = "K"
		}
		toks = append(toks, tok)
	}
	frames := framesOf(t, strings.Join(toks, " "))
	for every := 1; every <= 6; every++ {
		t.Run(fmt.Sprintf("one take per %d offers", every), func(t *testing.T) {
			var r relay
			have := map[uint64]bool{}
			var last uint64
			for i, f := range frames {
				r.offer(f, 4)
				if (i+1)%every != 0 {
					continue
				}
				g, _ := r.take(true)
				if g == nil {
					continue
				}
				if g.seq <= last {
					t.Fatalf("frame %d sent after frame %d", g.seq, last)
				}
				last = g.seq
				if ref := l1t3Refs(frames, g); !refsHeld(have, ref) {
					t.Fatalf("frame %d (%s) sent without one of %v", g.seq, toks[g.seq-1], ref)
				}
				have[g.seq] = true
			}
			if r.counts.sent[0] == 0 {
				t.Fatal("nothing of the base layer was sent")
			}
			t.Logf("sent %v, dropped %v", r.counts.sent, r.counts.dropped)
		})
	}
}

// l1t3Refs returns the frames f references in the L1T3 pattern the
// sender encodes (README): a TL0 frame the TL0 frame before it, TL1 and
// the first TL2 frame of a period that period's TL0 frame, the second TL2
// frame that TL0 frame and the TL1 frame before it.
func l1t3Refs(frames []*outFrame, f *outFrame) []uint64 {
	if f.key {
		return nil
	}
	var refs []uint64
	for i := int(f.seq) - 2; i >= 0; i-- {
		g := frames[i]
		if g.base() {
			return append(refs, g.seq)
		}
		if f.layer.TID == 2 && !f.layer.Sync && g.layer.TID == 1 {
			refs = append(refs, g.seq)
		}
	}
	return refs
}

func refsHeld(have map[uint64]bool, refs []uint64) bool {
	for _, r := range refs {
		if !have[r] {
			return false
		}
	}
	return true
}

// TestKeyCacheJoin checks that a page joining a stream starts from the
// stream's latest keyframe and the frames the newest needs, marked as
// catch-up frames, and then takes the live frames; and that past its caps
// the cache keeps nothing until the next keyframe.
func TestKeyCacheJoin(t *testing.T) {
	frames := framesOf(t, "K 2s 1s 2 0 2s 1s 2 0 2s 1s 0 2s")
	var c keyCache
	for _, f := range frames[:11] {
		c.add(f, 8, 1<<20)
	}
	// K, the two TL0 frames, and the upper frames after the last.
	if c.frames() != 5 {
		t.Fatalf("cache holds %d frames, want 5", c.frames())
	}
	var r relay
	r.join(&c, nil)
	// The live TL0 frame 12 makes the cached upper frames stale.
	got := runRelay(t, &r, frames[11:], "ttt o ttttt", 4)
	if want := strings.Fields("1c 5c 9c 12 0 0 0 0"); !slices.Equal(got, want) {
		t.Errorf("took %v, want %v", got, want)
	}
	if r.counts.catchUp != 3 {
		t.Errorf("%d catch-up frames counted, want 3", r.counts.catchUp)
	}

	// Past the frame cap the cache is empty until the next keyframe: a
	// joining page then waits for one and asks for it.
	var small keyCache
	for _, f := range frames[:11] {
		small.add(f, 2, 1<<20)
	}
	if small.frames() != 0 {
		t.Fatalf("a cache past its cap holds %d frames", small.frames())
	}
	var late relay
	late.join(&small, nil)
	if !late.offer(frames[11], 4) {
		t.Error("a page joining an empty cache did not ask for a keyframe")
	}
	small.add(framesOf(t, "K")[0], 2, 1<<20)
	if small.frames() != 1 {
		t.Errorf("after a keyframe the cache holds %d frames, want 1", small.frames())
	}
	var byBytes keyCache
	for _, f := range frames[:6] {
		byBytes.add(f, 100, 250) // 100 bytes a frame: two fit
	}
	if byBytes.frames() != 0 {
		t.Errorf("a cache past its byte cap holds %d frames", byBytes.frames())
	}
}

// TestNextFrameGated checks that a page whose gate is closed gets another
// stream's base-layer frame past a stream whose head is an upper-layer
// frame, and nothing, without looping, when only upper frames wait.
func TestNextFrameGated(t *testing.T) {
	cfg := Config{ClientQueue: 4, ReportWindow: time.Second, ReportCap: 4}
	c := newClient(1, "x", nil)
	a := framesOf(t, "K 2s")
	b := framesOf(t, "K 0")
	for _, f := range b {
		f.stream = 2
	}
	// Orders frames across the streams: a's K, b's K, a's 2s, b's 0.
	for i, f := range []*outFrame{a[0], b[0], a[1], b[1]} {
		f.seq = uint64(i + 1)
	}
	for _, f := range []*outFrame{a[0], b[0]} {
		c.offer(f, nil, &cfg)
		if g, _ := c.nextFrameLocked(false); g != f {
			t.Fatalf("got %+v, want the keyframe of stream %d", g, f.stream)
		}
	}
	c.offer(a[1], nil, &cfg)
	if g, _ := c.nextFrameLocked(false); g != nil {
		t.Fatalf("only an upper frame waits and the gate is closed: got %+v", g)
	}
	c.offer(b[1], nil, &cfg)
	if g, _ := c.nextFrameLocked(false); g != b[1] {
		t.Fatalf("got %+v, want stream 2's TL0 frame past stream 1's held TL2 frame", g)
	}
	if g, _ := c.nextFrameLocked(true); g != a[1] {
		t.Fatalf("gate open: got %+v, want stream 1's TL2 frame", g)
	}
}
