package tcp

import (
	"slices"
	"testing"
	"time"

	"replenish/transport"
)

func TestPendingQueue(t *testing.T) {
	at := time.Unix(1700000000, 0)
	type push struct {
		id  uint64
		key uint32
	}
	type match struct {
		key  uint32
		want []uint64 // ids completed, in order
	}
	for _, tc := range []struct {
		name    string
		max     int
		pushes  []push
		evicted []uint64
		matches []match
		left    int
	}{
		{
			name:    "one stamp per frame",
			max:     8,
			pushes:  []push{{1, 99}, {2, 199}, {3, 299}},
			matches: []match{{99, []uint64{1}}, {199, []uint64{2}}, {299, []uint64{3}}},
		},
		{
			name:    "coalesced writes share the last stamp",
			max:     8,
			pushes:  []push{{1, 99}, {2, 199}, {3, 299}},
			matches: []match{{299, []uint64{1, 2, 3}}},
		},
		{
			name:    "partial-write stamp before the frame's end matches nothing",
			max:     8,
			pushes:  []push{{1, 99}, {2, 65000}},
			matches: []match{{40000, []uint64{1}}, {64999, nil}, {65000, []uint64{2}}},
		},
		{
			name:    "stale stamp after completion matches nothing",
			max:     8,
			pushes:  []push{{1, 99}, {2, 199}},
			matches: []match{{199, []uint64{1, 2}}, {99, nil}},
		},
		{
			name:    "keys wrap around 2^32",
			max:     8,
			pushes:  []push{{1, 0xFFFFFF00}, {2, 0xFFFFFFFF}, {3, 0x00000010}},
			matches: []match{{0xFFFFFFFF, []uint64{1, 2}}, {0x20, []uint64{3}}},
		},
		{
			name:    "bounded: oldest evicted",
			max:     2,
			pushes:  []push{{1, 10}, {2, 20}, {3, 30}, {4, 40}},
			evicted: []uint64{1, 2},
			matches: []match{{40, []uint64{3, 4}}},
		},
		{
			name:    "no stamps: stays bounded",
			max:     3,
			pushes:  []push{{1, 10}, {2, 20}, {3, 30}, {4, 40}, {5, 50}, {6, 60}, {7, 70}},
			evicted: []uint64{1, 2, 3, 4},
			left:    3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newPendingQueue(tc.max)
			var evicted []uint64
			for _, p := range tc.pushes {
				if r, ok := q.push(transport.SendRecord{ID: p.id}, p.key); ok {
					if !r.LeftHost.IsZero() {
						t.Errorf("evicted record %d has a departure time", r.ID)
					}
					evicted = append(evicted, r.ID)
				}
				if q.Len() > tc.max {
					t.Fatalf("Len %d exceeds max %d", q.Len(), tc.max)
				}
			}
			if !slices.Equal(evicted, tc.evicted) {
				t.Errorf("evicted %v, want %v", evicted, tc.evicted)
			}
			for _, m := range tc.matches {
				recs := q.complete(m.key, at, nil)
				var ids []uint64
				for _, r := range recs {
					if !r.LeftHost.Equal(at) {
						t.Errorf("record %d LeftHost = %v, want %v", r.ID, r.LeftHost, at)
					}
					ids = append(ids, r.ID)
				}
				if !slices.Equal(ids, m.want) {
					t.Errorf("complete(%d) = %v, want %v", m.key, ids, m.want)
				}
			}
			if q.Len() != tc.left {
				t.Errorf("%d left pending, want %d", q.Len(), tc.left)
			}
		})
	}
}

func TestPendingQueueLongRun(t *testing.T) {
	// Many pushes and completions keep the backing slice compact.
	q := newPendingQueue(16)
	key := uint32(0xFFFF0000)
	var out []transport.SendRecord
	for i := range 100000 {
		key += 1000
		q.push(transport.SendRecord{ID: uint64(i)}, key)
		if i%3 == 2 {
			out = q.complete(key, time.Unix(1, 0), out[:0])
			if len(out) != 3 {
				t.Fatalf("step %d: completed %d, want 3", i, len(out))
			}
		}
	}
	if cap(q.recs) > 64 {
		t.Errorf("backing slice grew to %d for a queue of at most 16", cap(q.recs))
	}
}
