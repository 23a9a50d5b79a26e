package quic

import (
	"testing"
	"time"
)

func TestAckLog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type ev struct {
		kind   byte // 's' sent, 'l' lost, 'a' acked
		pn     int64
		packed int64      // 's'
		ranges []ackRange // 'a'
	}
	cases := []struct {
		name string
		evs  []ev
		want []int64 // upTo reported, in order
	}{
		{"in order", []ev{{'s', 1, 100, nil}, {'s', 2, 200, nil}, {'a', 0, 0, []ackRange{{1, 1}}}, {'a', 0, 0, []ackRange{{1, 2}}}}, []int64{100, 200}},
		{"one acknowledgement for two", []ev{{'s', 1, 100, nil}, {'s', 2, 200, nil}, {'a', 0, 0, []ackRange{{1, 2}}}}, []int64{200}},
		// A packet that carried no new bytes (an ACK, a retransmission)
		// is not noted.
		{"no new bytes", []ev{{'s', 1, 100, nil}, {'s', 2, 100, nil}, {'a', 0, 0, []ackRange{{2, 2}}}}, nil},
		{"a hole holds it", []ev{{'s', 1, 100, nil}, {'s', 2, 200, nil}, {'s', 3, 300, nil}, {'a', 0, 0, []ackRange{{3, 3}, {1, 1}}}, {'a', 0, 0, []ackRange{{1, 3}}}}, []int64{100, 300}},
		// A range the receiver no longer repeats still counts once the
		// hole before it is declared lost.
		{"a range not repeated", []ev{{'s', 1, 100, nil}, {'s', 2, 200, nil}, {'s', 3, 300, nil}, {'a', 0, 0, []ackRange{{2, 3}}}, {'l', 1, 0, nil}}, []int64{300}},
		{"a loss is skipped", []ev{{'s', 1, 100, nil}, {'s', 2, 200, nil}, {'s', 3, 300, nil}, {'l', 2, 0, nil}, {'a', 0, 0, []ackRange{{3, 3}, {1, 1}}}}, []int64{300}},
		{"nothing noted", []ev{{'a', 0, 0, []ackRange{{1, 5}}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l ackLog
			var got []int64
			l.setOnAcked(func(upTo int64, at time.Time) {
				if !at.Equal(t0) {
					t.Errorf("acknowledged at %v, want %v", at, t0)
				}
				got = append(got, upTo)
			})
			for _, e := range tc.evs {
				switch e.kind {
				case 's':
					l.sent(e.pn, e.packed)
				case 'l':
					l.lost(e.pn)
				case 'a':
					l.acked(e.ranges, t0)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("reported %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("reported %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestAckLogBounded: packets never acknowledged do not grow the log.
func TestAckLogBounded(t *testing.T) {
	var l ackLog
	for i := range int64(10 * maxNoted) {
		l.sent(i, i+1)
		if n := len(l.pkts) - l.head; n > maxNoted {
			t.Fatalf("after %d packets: %d held, want at most %d", i+1, n, maxNoted)
		}
	}
	if cap(l.pkts) > 4*maxNoted {
		t.Errorf("backing array of %d, want at most %d", cap(l.pkts), 4*maxNoted)
	}
}
