package webrtc

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"

	"replenish/rate"
)

// The defect the window fixes, in virtual time: a sender whose media
// does not follow the estimate down (as the encoder overshoots a falling
// target, and as retransmissions come on top) sends 8 Mb/s through pion's
// GCC and our pacer into a 10 Mb/s path with a drop-tail queue of 250 kB,
// whose rate halves at 2 s; the receiver is pion's TWCC recorder,
// reporting every 50 ms. With the window every feedback falls within
// GCC's history, and GCC brings its target below the new rate. Without it
// (a window that never fills) feedback falls more than 250 packets behind
// the newest packet, out of GCC's sight (TestPionGCCFeedbackHistory): at
// 172 ms GCC's target then stays near 10 Mb/s, above the old rate.
func TestWindowKeepsGCCInSight(t *testing.T) {
	for _, c := range []struct {
		name  string
		rtt   time.Duration
		limit int
	}{
		{"40ms", 40 * time.Millisecond, windowPackets},
		{"172ms", 172 * time.Millisecond, windowPackets},
		{"40ms without window", 40 * time.Millisecond, 1 << 15},
		{"172ms without window", 172 * time.Millisecond, 1 << 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := runHalving(t, c.rtt/2, c.limit)
				t.Logf("target before %v, after %v; worst feedback %d packets behind; dropped %d", r.before, r.after, r.worst, r.dropped)
				inView := r.worst < pionFeedbackHistory
				switch {
				case c.limit == windowPackets && !inView:
					t.Errorf("a feedback came %d packets behind the newest (GCC keeps %d)", r.worst, pionFeedbackHistory)
				case c.limit == windowPackets && r.after >= 5*rate.Mbps:
					t.Errorf("GCC's target %v 4 s after the rate halved to 5 Mb/s (%v before)", r.after, r.before)
				case c.limit != windowPackets && inView:
					t.Errorf("without the window the worst feedback came %d packets behind: the test no longer shows the defect", r.worst)
				}
			})
		})
	}
}

// halvingResult is what runHalving saw.
type halvingResult struct {
	before, after rate.Bitrate // GCC's target just before the halving, 4 s after
	worst         int          // packets sent after a feedback's base, at its arrival
	dropped       int          // by the bottleneck
}

// Parameters of runHalving.
const (
	halvingAt       = 2 * time.Second
	halvingQueueMax = 250_000 // bytes
	halvingSSRC     = 1
	halvingExtID    = 1
)

// runHalving runs the sender and the path of TestWindowKeepsGCCInSight
// for 6 s with oneWay delay each way and a window of limit packets. It
// runs in a synctest bubble.
func runHalving(t *testing.T, oneWay time.Duration, limit int) halvingResult {
	win := newWindow(limit, windowTimeout)
	bwe, err := gcc.NewSendSideBWE(gcc.SendSideBWEInitialBitrate(8_000_000),
		gcc.SendSideBWEPacer(newPacer(8*rate.Mbps, win, slog.New(slog.DiscardHandler))))
	if err != nil {
		t.Fatal(err)
	}
	p := &halvingPath{t: t, win: win, start: time.Now(), oneWay: oneWay}
	info := &interceptor.StreamInfo{SSRC: halvingSSRC, RTPHeaderExtensions: []interceptor.RTPHeaderExtension{{URI: sdp.TransportCCURI, ID: halvingExtID}}}
	w := bwe.AddStream(info, interceptor.RTPWriterFunc(p.write))
	end := p.start.Add(6 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() { sendFrames(t, w, end) })
	wg.Go(func() { p.receive(bwe, end) })
	time.Sleep(end.Sub(p.start))
	after := rate.Bitrate(bwe.GetTargetBitrate())
	wg.Wait()
	time.Sleep(time.Second) // the last feedbacks
	if err := bwe.Close(); err != nil {
		t.Error(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return halvingResult{before: p.before, after: after, worst: p.worst, dropped: p.dropped}
}

// sendFrames writes 30 frames a second of 28 packets (8 Mb/s) to w until
// end, whatever GCC says, numbering the packets as pion's TWCC header
// extension interceptor does.
func sendFrames(t *testing.T, w interceptor.RTPWriter, end time.Time) {
	var seq uint16
	for time.Now().Before(end) {
		for range 28 {
			h := rtp.Header{Version: 2, SSRC: halvingSSRC, SequenceNumber: seq}
			ext, _ := (&rtp.TransportCCExtension{TransportSequence: seq}).Marshal()
			if err := h.SetExtension(halvingExtID, ext); err != nil {
				t.Error(err)
			}
			seq++
			if _, err := w.Write(&h, make([]byte, 1200), nil); err != nil {
				t.Error(err)
				return
			}
		}
		time.Sleep(time.Second / 30)
	}
}

// halvingPath is the path of TestWindowKeepsGCCInSight: a bottleneck of
// 10 Mb/s, 5 Mb/s from halvingAt, with a drop-tail queue of
// halvingQueueMax bytes and oneWay delay each way, and a receiver that
// sends pion's TWCC feedback every 50 ms.
type halvingPath struct {
	t      *testing.T
	win    *window
	start  time.Time
	oneWay time.Duration

	mu       sync.Mutex // guards following fields
	linkFree time.Time  // when the link has sent what it holds
	newest   uint16     // the newest packet sent
	arrivals []arrival  // at the receiver, not yet reported
	before   rate.Bitrate
	worst    int
	dropped  int
}

type arrival struct {
	seq uint16
	at  time.Time
}

// write takes a packet from the pacer, as the network would, and tells
// the window as the departures interceptor does.
func (p *halvingPath) write(h *rtp.Header, payload []byte, _ interceptor.Attributes) (int, error) {
	var tcc rtp.TransportCCExtension
	if err := tcc.Unmarshal(h.GetExtension(halvingExtID)); err != nil {
		p.t.Errorf("packet without a transport-wide sequence number: %v", err)
		return 0, err
	}
	now := time.Now()
	p.win.sent(tcc.TransportSequence, now)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.newest = tcc.TransportSequence
	wire := h.MarshalSize() + len(payload)
	r := 10 * rate.Mbps
	if now.Sub(p.start) >= halvingAt {
		r = 5 * rate.Mbps
	}
	begin := p.linkFree
	if begin.Before(now) {
		begin = now
	}
	if r.Bytes(begin.Sub(now)) > halvingQueueMax {
		p.dropped++
		return wire, nil
	}
	p.linkFree = begin.Add(r.Duration(wire))
	p.arrivals = append(p.arrivals, arrival{tcc.TransportSequence, p.linkFree.Add(p.oneWay)})
	return wire, nil
}

// receive reports what arrived every 50 ms until end; each feedback
// reaches GCC and the window oneWay later.
func (p *halvingPath) receive(bwe *gcc.SendSideBWE, end time.Time) {
	rec := twcc.NewRecorder(2)
	for now := time.Now(); now.Before(end); now = time.Now() {
		p.mu.Lock()
		n := 0
		for _, a := range p.arrivals {
			if a.at.After(now) {
				break
			}
			rec.Record(halvingSSRC, a.seq, a.at.Sub(p.start).Microseconds())
			n++
		}
		p.arrivals = p.arrivals[n:]
		if d := now.Sub(p.start); d < halvingAt && d+50*time.Millisecond >= halvingAt {
			p.before = rate.Bitrate(bwe.GetTargetBitrate())
		}
		p.mu.Unlock()
		pkts := rec.BuildFeedbackPacket()
		time.AfterFunc(p.oneWay, func() { p.deliver(bwe, pkts) })
		time.Sleep(50 * time.Millisecond)
	}
}

// deliver hands TWCC feedback to GCC and the window, as the Conn does,
// and keeps the worst distance from a feedback's base to the newest
// packet sent.
func (p *halvingPath) deliver(bwe *gcc.SendSideBWE, pkts []rtcp.Packet) {
	for _, pkt := range pkts {
		fb, ok := pkt.(*rtcp.TransportLayerCC)
		if !ok {
			continue
		}
		p.mu.Lock()
		p.worst = max(p.worst, int(p.newest-fb.BaseSequenceNumber))
		p.mu.Unlock()
		p.win.feedback(fb.BaseSequenceNumber, fb.PacketStatusCount, time.Now())
	}
	if len(pkts) > 0 {
		if err := bwe.WriteRTCP(pkts, nil); err != nil {
			p.t.Error(err)
		}
	}
}

// The pacer sends as pion's leaky bucket does: at each 5 ms tick while
// the tick's budget (the time since the last tick that sent, at 1.5 times
// the target) is not spent: at 8 Mb/s 7500 bytes a tick, 8 packets of
// 1012 bytes; at 800 kb/s one packet a tick, after a burst of what the
// idle time saved (90 ms, 14 packets). It holds packets while the window
// is full, refuses packets beyond maxPacerPackets, and after Close
// refuses every packet.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		win := newWindow(windowPackets, windowTimeout)
		p := newPacer(8*rate.Mbps, win, slog.New(slog.DiscardHandler))
		start := time.Now()
		var mu sync.Mutex // guards left
		var left []time.Duration
		p.AddStream(1, interceptor.RTPWriterFunc(func(h *rtp.Header, b []byte, _ interceptor.Attributes) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			left = append(left, time.Since(start))
			return h.MarshalSize() + len(b), nil
		}))
		h := rtp.Header{Version: 2, SSRC: 1}
		write := func(n int) {
			for range n {
				if _, err := p.Write(&h, make([]byte, 1000), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		write(20)
		time.Sleep(102 * time.Millisecond) // between ticks
		p.SetTargetBitrate(800_000)
		start = time.Now()
		write(20)
		time.Sleep(time.Second)
		mu.Lock()
		want := map[int]time.Duration{0: 5 * time.Millisecond, 7: 5 * time.Millisecond, 8: 10 * time.Millisecond, 16: 15 * time.Millisecond,
			19: 15 * time.Millisecond, 20: 3 * time.Millisecond, 33: 3 * time.Millisecond, 34: 8 * time.Millisecond, 39: 33 * time.Millisecond}
		if len(left) != 40 {
			t.Fatalf("%d packets left, want 40", len(left))
		}
		for i, d := range want {
			if left[i] != d {
				t.Errorf("packet %d left at %v, want %v (all: %v)", i, left[i], d, left)
			}
		}
		mu.Unlock()

		for i := range uint16(windowPackets) { // a full window
			win.sent(i, time.Now())
		}
		var err error
		for i := 0; i <= maxPacerPackets && err == nil; i++ {
			_, err = p.Write(&h, make([]byte, 100), nil)
		}
		if err != errPacerFull {
			t.Errorf("error %v beyond %d packets held, want errPacerFull", err, maxPacerPackets)
		}
		time.Sleep(windowTimeout / 2)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(left) != 40 {
			t.Errorf("%d packets left past a full window", len(left)-40)
		}
		mu.Unlock()
		if _, err := p.Write(&h, nil, nil); err != errPacerClosed {
			t.Errorf("write after Close: %v, want errPacerClosed", err)
		}
	})
}
