package media

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// startSource runs src in the bubble until the returned stop is called.
func startSource(t *testing.T, src *Source) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	synctest.Wait()
	return func() error {
		cancel()
		return <-done
	}
}

// TestSourceFreshest lets the source render several frames unseen and
// checks that Take returns the newest, counts the others as skipped, and
// that capture times follow the source's clock.
func TestSourceFreshest(t *testing.T) {
	tests := []struct {
		name     string
		fps      int
		wait     time.Duration
		wantSeq  uint64 // frames rendered by then: one at start, one per tick
		interval time.Duration
	}{
		{"30 fps, 100 ms", 30, 100 * time.Millisecond, 4, time.Second / 30},
		{"default fps, 1 s", 0, time.Second, 31, time.Second / 30},
		{"10 fps, 250 ms", 10, 250 * time.Millisecond, 3, 100 * time.Millisecond},
		{"at once", 30, 0, 1, time.Second / 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				src := NewSource(SourceConfig{FPS: tt.fps, Name: "cam", Size: Size{160, 90}})
				stop := startSource(t, src)
				time.Sleep(tt.wait)
				synctest.Wait()
				f, skipped, ok := src.Take()
				if !ok {
					t.Fatal("no frame")
				}
				if f.Seq != tt.wantSeq || skipped != int(tt.wantSeq-1) {
					t.Fatalf("took frame %d with %d skipped, want %d and %d", f.Seq, skipped, tt.wantSeq, tt.wantSeq-1)
				}
				if want := start.Add(time.Duration(tt.wantSeq-1) * tt.interval); !f.Capture.Equal(want) {
					t.Fatalf("capture %v, want %v", f.Capture, want)
				}
				if bad := checkStamp(f, f.Capture); bad != "" {
					t.Fatal(bad)
				}
				if _, _, ok := src.Take(); ok {
					t.Fatal("second Take returned a frame before the next tick")
				}
				st := src.Stats()
				if st.Rendered != tt.wantSeq || st.Taken != 1 || st.Discarded != tt.wantSeq-1 {
					t.Fatalf("stats %+v", st)
				}
				if err := stop(); !errors.Is(err, context.Canceled) {
					t.Fatalf("Run returned %v", err)
				}
			})
		})
	}
}

// TestSourceConsumer takes frames as a slow consumer would and checks that
// every rendered frame is either taken or counted as skipped, exactly once.
func TestSourceConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := NewSource(SourceConfig{Size: Size{160, 90}})
		stop := startSource(t, src)
		var taken, skippedSum int
		last := uint64(0)
		for i := range 20 {
			// Wait for a frame, then "encode" for a varying while.
			select {
			case <-src.Ready():
			case <-time.After(time.Second):
				t.Fatal("no Ready signal within a second")
			}
			f, skipped, ok := src.Take()
			if !ok {
				continue // Ready was stale: the frame went to an earlier Take
			}
			if f.Seq != last+uint64(skipped)+1 {
				t.Fatalf("frame %d after %d with %d skipped", f.Seq, last, skipped)
			}
			last = f.Seq
			taken++
			skippedSum += skipped
			time.Sleep(time.Duration(i%4) * 25 * time.Millisecond)
			src.Release(f)
		}
		stop()
		st := src.Stats()
		if st.Taken != uint64(taken) || uint64(taken+skippedSum) != last {
			t.Fatalf("stats %+v; took %d, skipped %d, last frame %d", st, taken, skippedSum, last)
		}
		if skippedSum == 0 {
			t.Fatal("a slow consumer skipped nothing")
		}
		// The pool bounds allocation: the mailbox, the frame being rendered
		// and the one held by the consumer, plus at most the pool.
		if st.Allocated > 3+sourcePool {
			t.Fatalf("%d frames allocated", st.Allocated)
		}
	})
}

// TestSourceUntaken runs a source nobody takes from: every frame but the
// newest is discarded, and buffers are reused rather than allocated.
func TestSourceUntaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := NewSource(SourceConfig{Size: Size{160, 90}})
		stop := startSource(t, src)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		stop()
		st := src.Stats()
		if st.Rendered != 301 || st.Discarded != 300 || st.Taken != 0 {
			t.Fatalf("stats %+v", st)
		}
		if st.Allocated > 2 {
			t.Fatalf("%d frames allocated for an untaken source", st.Allocated)
		}
		f, skipped, ok := src.Take()
		if !ok || f.Seq != 301 || skipped != 300 {
			t.Fatalf("Take = %d, %d, %v", f.Seq, skipped, ok)
		}
	})
}

func TestSourceSetSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := NewSource(SourceConfig{})
		if src.Size() != DefaultSize {
			t.Fatalf("default size %v", src.Size())
		}
		stop := startSource(t, src)
		defer stop()
		f, _, _ := src.Take()
		if f.Size != DefaultSize || len(f.Y) != DefaultSize.Pixels() {
			t.Fatalf("first frame %v with %d luma bytes", f.Size, len(f.Y))
		}
		src.Release(f)
		for _, sz := range []Size{{320, 180}, {1280, 720}, {160, 90}} {
			if err := src.SetSize(sz); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second / 30)
			synctest.Wait()
			f, _, ok := src.Take()
			if !ok || f.Size != sz || len(f.Y) != sz.Pixels() || len(f.U) != sz.Pixels()/4 {
				t.Fatalf("after SetSize(%v): frame %v", sz, f.Size)
			}
			if bad := checkStamp(f, f.Capture); bad != "" {
				t.Fatal(bad)
			}
			src.Release(f)
		}
		if err := src.SetSize(Size{161, 90}); !errors.Is(err, ErrSize) {
			t.Fatalf("SetSize(161x90) = %v", err)
		}
		if src.Size() != (Size{160, 90}) {
			t.Fatalf("a rejected size changed the source to %v", src.Size())
		}
	})
}

func TestSourceRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := NewSource(SourceConfig{Size: Size{160, 90}})
		stop := startSource(t, src)
		if err := src.Run(t.Context()); !errors.Is(err, ErrRunning) {
			t.Fatalf("second Run = %v", err)
		}
		stop()
		// A stopped source can run again and continues its frame count.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := src.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run with a done context = %v", err)
		}
		stop = startSource(t, src)
		f, _, _ := src.Take()
		stop()
		if f.Seq != 2 {
			t.Fatalf("frame %d after restart, want 2", f.Seq)
		}
	})
}

func TestSourceRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := NewSource(SourceConfig{Size: Size{160, 90}})
		stop := startSource(t, src)
		defer stop()
		src.Release(nil)
		for range 50 {
			f, _, ok := src.Take()
			if !ok {
				t.Fatal("no frame")
			}
			src.Release(f)
			src.Release(f) // a double release must not put f in the pool twice
			src.mu.Lock()
			n := len(src.pool)
			src.mu.Unlock()
			if n != 1 {
				t.Fatalf("pool holds %d frames after releasing one twice", n)
			}
			time.Sleep(time.Second / 30)
			synctest.Wait()
		}
		if st := src.Stats(); st.Allocated > 2 {
			t.Fatalf("%d frames allocated with prompt releases", st.Allocated)
		}
	})
}
