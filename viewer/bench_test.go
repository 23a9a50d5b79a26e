package viewer

import (
	"fmt"
	"testing"
	"time"

	"replenish/framer"
)

// BenchmarkOnFrame measures handing one complete frame to every page:
// counters, the join map, the header and the per-page queues, with each
// page taking its frame as a writer would.
func BenchmarkOnFrame(b *testing.B) {
	for _, pages := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			s, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			st := newStream(1, "s", "x", &s.cfg)
			s.streams = []*stream{st}
			var clients []*client
			for i := range pages {
				c := newClient(uint32(i+1), "x", nil)
				s.clients[c] = struct{}{}
				clients = append(clients, c)
			}
			f := &framer.Frame{SSRC: 1, Key: true, Width: 640, Height: 360, Data: fakeVP8(true, 640, 360, 8000)}
			now := time.Unix(1_700_000_000, 0)
			b.SetBytes(int64(len(f.Data)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				f.Timestamp = uint32(i * 3000)
				f.Key = i%60 == 0
				s.onFrame(st, f, false, now.Add(time.Duration(i)*33*time.Millisecond))
				for _, c := range clients {
					c.mu.Lock()
					c.nextFrameLocked(true)
					c.mu.Unlock()
				}
			}
		})
	}
}

func BenchmarkStats(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	s.now = func() time.Time { return now }
	for id := range uint32(2) {
		st := newStream(id+1, "s", "x", &s.cfg)
		for i := range 300 {
			st.addPartsLocked(now, frameParts{wait: time.Duration(i), hasWait: true, encode: 1, hasEncode: true})
		}
		s.streams = append(s.streams, st)
	}
	c := newClient(1, "x", nil)
	s.clients[c] = struct{}{}
	for id := range uint32(2) {
		cs := c.streamLocked(id+1, &s.cfg)
		for i := range 300 {
			cs.g2g.Add(now, float64(i))
			cs.decode.Add(now, 1)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Stats()
	}
}
