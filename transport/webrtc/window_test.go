package webrtc

import (
	"testing"
	"time"
)

// The window lets limit packets leave without feedback, across the
// sequence number wrap; a feedback that reports on something new makes
// room, one about packets never sent or already reported on does not;
// without progress a full window opens after the timeout, counting what
// it waited for as gone.
func TestWindowRoom(t *testing.T) {
	w := newWindow(3, time.Second)
	if !w.room(at(0)) {
		t.Fatal("no room before any departure")
	}
	for i := range uint16(3) {
		w.sent(65534+i, at(0)) // 65534, 65535, 0
	}
	if w.room(at(100)) {
		t.Fatal("room with 3 packets out of 3 in flight")
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
		if ok := w.room(at(200)); ok != s.room {
			t.Errorf("%s: room %v, want %v", s.name, ok, s.room)
		}
	}
	w.sent(1, at(300))
	if w.room(at(300)) {
		t.Error("room with 3 in flight again")
	}
	if w.room(at(1199)) || w.opened != 0 {
		t.Error("opened before a second without progress")
	}
	if !w.room(at(1200)) || w.opened != 1 || w.inFlightLocked() != 0 {
		t.Errorf("a second after the last progress: opened %d times, %d in flight; want once, none", w.opened, w.inFlightLocked())
	}
	w.sent(2, at(1300))
	w.feedback(65535, 4, at(1400)) // 65535 to 2: nothing in flight
	if n := w.inFlightLocked(); n != 0 {
		t.Errorf("%d in flight after everything was reported on", n)
	}
}
