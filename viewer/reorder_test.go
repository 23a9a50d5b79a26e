package viewer

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestReorder drives the reorder buffer with virtual time: each step
// pushes packets at a time, or pops at a time and checks what comes out.
func TestReorder(t *testing.T) {
	const wait = 100 * time.Millisecond
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		push []uint16 // sequence numbers pushed at ms
		ssrc uint32   // of the pushed packets; 0 means 1
		ms   int
		want []uint16 // popped at ms (after any push)
	}
	type counts struct{ late, duplicates, skipped uint64 }
	tests := []struct {
		name  string
		size  int
		steps []step
		want  counts
		due   int // ms of due() at the end; -1: nothing held
	}{
		{"in order", 8, []step{{push: []uint16{1, 2, 3}, want: []uint16{1, 2, 3}}}, counts{}, -1},
		{"swapped", 8, []step{
			{push: []uint16{1, 3}, want: []uint16{1}},
			{push: []uint16{2}, ms: 5, want: []uint16{2, 3}},
		}, counts{}, -1},
		{"a loss waits, then goes on", 8, []step{
			{push: []uint16{1}, want: []uint16{1}},
			{push: []uint16{3}, ms: 10, want: nil},
			{push: []uint16{4}, ms: 20, want: nil},
			{ms: 109, want: nil},
			{ms: 110, want: []uint16{3, 4}},
			{push: []uint16{2}, ms: 120, want: nil}, // the retransmission, too late
		}, counts{late: 1, skipped: 1}, -1},
		{"a retransmission in time", 8, []step{
			{push: []uint16{10, 12, 13}, want: []uint16{10}},
			{push: []uint16{11}, ms: 60, want: []uint16{11, 12, 13}},
		}, counts{}, -1},
		{"duplicate", 8, []step{
			{push: []uint16{1, 3, 3}, want: []uint16{1}},
			{push: []uint16{2, 2}, want: []uint16{2, 3}},
		}, counts{duplicates: 1, late: 1}, -1},
		{"wraparound", 8, []step{
			{push: []uint16{65534, 0, 65535, 1}, want: []uint16{65534, 65535, 0, 1}},
		}, counts{}, -1},
		{"too far ahead", 4, []step{
			{push: []uint16{1, 3}, want: []uint16{1}},
			{push: []uint16{10}, ms: 30, want: []uint16{3}},
			{push: []uint16{8}, ms: 40, want: nil},
			{push: []uint16{7}, ms: 50, want: []uint16{7, 8}},
		}, counts{skipped: 4}, 30},
		{"the wait counts from the oldest packet still held", 8, []step{
			{push: []uint16{1}, want: []uint16{1}},
			{push: []uint16{3}, ms: 10},
			{push: []uint16{5}, ms: 50},
			{push: []uint16{2}, ms: 60, want: []uint16{2, 3}},
			{ms: 149, want: nil},
			{ms: 150, want: []uint16{5}},
		}, counts{skipped: 1}, -1},
		{"a new SSRC releases what is held", 8, []step{
			{push: []uint16{1, 3}, want: []uint16{1}},
			{push: []uint16{500, 501}, ssrc: 2, ms: 5, want: []uint16{3, 500, 501}},
		}, counts{skipped: 1}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReorder(tt.size, wait)
			for i, s := range tt.steps {
				ssrc := s.ssrc
				if ssrc == 0 {
					ssrc = 1
				}
				for _, seq := range s.push {
					r.push(&rtp.Packet{Header: rtp.Header{SSRC: ssrc, SequenceNumber: seq}}, at(s.ms))
				}
				var got []uint16
				for {
					p, ok := r.pop(at(s.ms))
					if !ok {
						break
					}
					got = append(got, p.SequenceNumber)
				}
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d at %d ms: popped %v, want %v", i, s.ms, got, s.want)
				}
			}
			if got := (counts{r.late, r.duplicates, r.skipped}); got != tt.want {
				t.Errorf("late, duplicates, skipped = %+v, want %+v", got, tt.want)
			}
			due, ok := r.due()
			if tt.due < 0 && ok {
				t.Errorf("due %v with nothing expected held", due)
			} else if tt.due >= 0 && (!ok || !due.Equal(at(tt.due).Add(wait))) {
				t.Errorf("due %v, %v; want %v", due, ok, at(tt.due).Add(wait))
			}
		})
	}
}
