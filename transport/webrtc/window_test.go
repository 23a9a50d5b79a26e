package webrtc

import (
	"testing"
	"testing/synctest"
	"time"
)

// The window lets limit packets leave without feedback, across the
// sequence number wrap; a feedback that reports on something new makes
// room, one about packets never sent or already reported on does not.
func TestWindowRoom(t *testing.T) {
	w := newWindow(3, time.Second)
	if ok, _ := w.room(at(0)); !ok {
		t.Fatal("no room before any departure")
	}
	for i := range uint16(3) {
		w.sent(65534+i, at(0)) // 65534, 65535, 0
	}
	if ok, left := w.room(at(100)); ok || left != 900*time.Millisecond {
		t.Fatalf("room %v, opens in %v with 3 packets out of 3 in flight, want none, 900ms", ok, left)
	}
	steps := []struct {
		name        string
		base, count uint16
		room        bool
	}{
		{"never sent", 1, 5, false},
		{"empty", 65534, 0, false},
		{"first reported", 65534, 1, true},
		{"old news", 65534, 1, true},
	}
	for _, s := range steps {
		w.feedback(s.base, s.count, at(200))
		if ok, _ := w.room(at(200)); ok != s.room {
			t.Errorf("%s: room %v, want %v", s.name, ok, s.room)
		}
	}
	w.sent(1, at(300))
	if ok, _ := w.room(at(300)); ok {
		t.Error("room with 3 in flight again")
	}
	w.feedback(65535, 3, at(400)) // 65535, 0, 1: nothing in flight
	if n := w.inFlightLocked(); n != 0 {
		t.Errorf("%d in flight after everything was reported on", n)
	}
}

// A full window holds the pacer until a feedback makes room; without any
// feedback it opens after the timeout, counting what it waited for as
// gone; and it lets go when the pacer closes.
func TestWindowWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWindow(2, 500*time.Millisecond)
		start := time.Now()
		w.sent(10, start)
		w.sent(11, start)
		done := make(chan struct{})
		got := make(chan time.Duration)
		waitOnce := func() {
			go func() {
				if !w.wait(done) {
					got <- -1
					return
				}
				got <- time.Since(start)
			}()
		}

		waitOnce()
		time.Sleep(100 * time.Millisecond)
		w.feedback(10, 1, time.Now())
		if d := <-got; d != 100*time.Millisecond {
			t.Errorf("released after %v, want at the feedback (100ms)", d)
		}

		w.sent(12, time.Now())
		waitOnce()
		if d := <-got; d != 600*time.Millisecond {
			t.Errorf("opened after %v, want 500ms after the last progress (600ms)", d)
		}
		if w.opened != 1 || w.inFlightLocked() != 0 {
			t.Errorf("opened %d times with %d in flight, want once with none", w.opened, w.inFlightLocked())
		}

		w.sent(13, time.Now())
		w.sent(14, time.Now())
		waitOnce()
		synctest.Wait()
		close(done)
		if d := <-got; d != -1 {
			t.Errorf("wait returned true after %v with done closed", d)
		}
	})
}
