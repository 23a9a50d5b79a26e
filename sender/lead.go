package sender

import (
	"slices"
	"time"
)

// LeadMeter turns recent encode times into the lead the sender declares to
// its transport: the 90th percentile of the last leadSamples encodes plus
// leadMargin, so that an invitation leaves time for nearly every encode
// (draft-cheshire-sbm 7.2: the replenish time must cover capture and
// compression). The encoder's time varies with the frame's content and
// size, and a keyframe takes several times a delta frame's; the percentile
// follows that without jumping on one slow frame.
type LeadMeter struct {
	ring [leadSamples]time.Duration
	n    int // encodes seen
	buf  [leadSamples]time.Duration
}

const (
	leadSamples = 32
	leadMargin  = time.Millisecond
)

// Add records one encode's duration and returns the lead to declare.
func (m *LeadMeter) Add(d time.Duration) time.Duration {
	m.ring[m.n%leadSamples] = max(d, 0)
	m.n++
	k := min(m.n, leadSamples)
	s := m.buf[:k]
	copy(s, m.ring[:k])
	slices.Sort(s)
	return s[(k*9)/10] + leadMargin
}
