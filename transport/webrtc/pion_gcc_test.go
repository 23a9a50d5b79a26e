package webrtc

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
)

// The premise of the horizon: pion's GCC acts on a TWCC feedback only while
// the packets it reports on are among the last pionFeedbackHistory it
// sent. Rounds of 100 packets are reported on once lag more have left: a
// lag of 100 moves the estimate, a lag of 300 leaves it where it started.
// If pion keeps a longer history one day, this fails, and horizonPackets
// may grow.
func TestPionGCCFeedbackHistory(t *testing.T) {
	for _, c := range []struct {
		lag   int
		moves bool
	}{{100, true}, {pionFeedbackHistory + 50, false}} {
		synctest.Test(t, func(t *testing.T) {
			initial := 10_000_000
			stats := gccAfterLaggingFeedback(t, initial, c.lag)
			moved := stats["delayTargetBitrate"] != 0
			if moved != c.moves {
				t.Errorf("feedback %d packets behind: estimate moved %v, want %v (stats %v)", c.lag, moved, c.moves, stats)
			}
		})
	}
}

// gccAfterLaggingFeedback runs pion's GCC through 20 rounds of 100 packets
// reported on (received 20 ms after they left) once lag more packets have
// left, and returns its stats. It runs in a synctest bubble.
func gccAfterLaggingFeedback(t *testing.T, initial, lag int) map[string]any {
	bwe, err := gcc.NewSendSideBWE(gcc.SendSideBWEInitialBitrate(initial))
	if err != nil {
		t.Fatal(err)
	}
	defer bwe.Close()
	start := time.Now()
	var mu sync.Mutex // guards left, which the pacer's goroutine writes
	left := map[uint16]time.Duration{}
	info := &interceptor.StreamInfo{SSRC: 1, RTPHeaderExtensions: []interceptor.RTPHeaderExtension{{URI: sdp.TransportCCURI, ID: 1}}}
	w := bwe.AddStream(info, interceptor.RTPWriterFunc(func(h *rtp.Header, p []byte, _ interceptor.Attributes) (int, error) {
		mu.Lock()
		left[h.SequenceNumber] = time.Since(start)
		mu.Unlock()
		return len(p), nil
	}))
	var seq uint16
	send := func(n int) {
		for range n {
			h := rtp.Header{Version: 2, SSRC: 1, SequenceNumber: seq}
			ext, _ := (&rtp.TransportCCExtension{TransportSequence: seq}).Marshal()
			h.SetExtension(1, ext)
			seq++
			w.Write(&h, make([]byte, 1100), interceptor.Attributes{})
			time.Sleep(time.Millisecond) // 9 Mb/s, which the pacer lets through as it comes
		}
		time.Sleep(20 * time.Millisecond)
	}
	for round := range 20 {
		base := seq
		send(100)
		send(lag)
		fb := &rtcp.TransportLayerCC{SenderSSRC: 2, MediaSSRC: 1, BaseSequenceNumber: base, PacketStatusCount: 100, FbPktCount: uint8(round),
			PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 100}}}
		mu.Lock()
		arrival := left[base] + 20*time.Millisecond
		fb.ReferenceTime = uint32(arrival / (64 * time.Millisecond))
		prev := time.Duration(fb.ReferenceTime) * 64 * time.Millisecond
		for i := range uint16(100) {
			d := (left[base+i] + 20*time.Millisecond - prev) / 250 / time.Microsecond * 250 * time.Microsecond
			prev += d
			fb.RecvDeltas = append(fb.RecvDeltas, &rtcp.RecvDelta{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: d.Microseconds()})
		}
		mu.Unlock()
		if err := bwe.WriteRTCP([]rtcp.Packet{fb}, nil); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait()
	return bwe.GetStats()
}
