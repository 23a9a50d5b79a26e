package sender

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/rtcp"

	"replenish/framer"
	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/transport"
)

// fakeConn invites at once, keeps what is written and fails when told to.
type fakeConn struct {
	h      transport.Handler
	fail   chan error // Wait returns what is sent here
	mu     sync.Mutex // guards following fields
	frames []*framer.Frame
	asm    *framer.Assembler
	closed bool
}

func (c *fakeConn) Wait(ctx context.Context) (transport.Invitation, error) {
	select {
	case err := <-c.fail:
		return transport.Invitation{}, err
	case <-ctx.Done():
		return transport.Invitation{}, ctx.Err()
	default:
		return transport.Invitation{At: time.Now()}, nil
	}
}

func (c *fakeConn) WriteFrame(id uint64, pkts [][]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pkts {
		if framer.IsRTCP(p) {
			continue
		}
		f, err := c.asm.Push(p)
		if err != nil {
			return err
		}
		if f != nil {
			c.frames = append(c.frames, f)
		}
	}
	if c.h.Sent != nil {
		c.h.Sent(transport.SendRecord{ID: id, WriteStart: time.Now(), WriteEnd: time.Now(), LeftHost: time.Now()})
	}
	return nil
}

func (c *fakeConn) Poll() error                  { return nil }
func (c *fakeConn) SetLead(time.Duration) error  { return nil }
func (c *fakeConn) Counters() transport.Counters { return transport.Counters{} }
func (c *fakeConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// keys returns whether each frame written so far was a keyframe.
func (c *fakeConn) keys() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var k []bool
	for _, f := range c.frames {
		k = append(k, f.Key)
	}
	return k
}

// fakeDialer hands out fakeConns, failing the dials the test asks it to.
type fakeDialer struct {
	mu       sync.Mutex // guards following fields
	conns    []*fakeConn
	dials    []time.Time
	failNext int // dials to refuse before the next success
}

func (d *fakeDialer) dial(ctx context.Context, h transport.Handler) (transport.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, time.Now())
	if d.failNext > 0 {
		d.failNext--
		return nil, errors.New("refused")
	}
	c := &fakeConn{h: h, fail: make(chan error, 1), asm: framer.NewAssembler(0)}
	d.conns = append(d.conns, c)
	return c, nil
}

func (d *fakeDialer) conn(i int) *fakeConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.conns) {
		return nil
	}
	return d.conns[i]
}

// connectBubble runs a source and Connect over a fakeDialer in a synctest
// bubble, calls test, then stops both.
func connectBubble(t *testing.T, d *fakeDialer, test func(s *Sender)) {
	synctest.Test(t, func(t *testing.T) {
		src := media.NewSource(media.SourceConfig{Name: "test"})
		s, err := New(Config{Source: src, MaxSize: media.Size{W: 160, H: 90}, NewEncoder: NewEncoderOf(fakecodec.NewEncoder)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { src.Run(ctx) })
		var connErr error
		wg.Go(func() { connErr = s.Connect(ctx, ConnectConfig{Dial: d.dial}) })
		test(s)
		cancel()
		wg.Wait()
		if !errors.Is(connErr, context.Canceled) {
			t.Errorf("Connect returned %v, want context.Canceled", connErr)
		}
	})
}

// Every connection starts with a keyframe, a failed connection is redialled
// after the backoff, and the old connection is closed.
func TestConnectReconnectsWithKeyframe(t *testing.T) {
	d := &fakeDialer{}
	connectBubble(t, d, func(s *Sender) {
		time.Sleep(time.Second)
		first := d.conn(0)
		first.fail <- errors.New("peer went away")
		time.Sleep(time.Second)
		second := d.conn(1)
		if second == nil {
			t.Fatal("no second connection after the first failed")
		}
		first.mu.Lock()
		closed := first.closed
		first.mu.Unlock()
		if !closed {
			t.Error("the failed connection was not closed")
		}
		for i, c := range []*fakeConn{first, second} {
			k := c.keys()
			if len(k) < 10 || !k[0] || k[1] || k[len(k)-1] {
				t.Errorf("connection %d: keyframes %v; want a keyframe first, then deltas", i, k)
			}
		}
		if gap := d.dials[1].Sub(d.dials[0]); gap < minBackoff {
			t.Errorf("redialled after %v, want at least the backoff %v", gap, minBackoff)
		}
	})
}

// Dials that fail are retried with a backoff that doubles up to its cap.
func TestConnectBackoff(t *testing.T) {
	d := &fakeDialer{failNext: 8}
	connectBubble(t, d, func(s *Sender) {
		time.Sleep(30 * time.Second)
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.dials) < 9 || len(d.conns) != 1 {
			t.Fatalf("%d dials, %d connections; want 9 dials and a connection", len(d.dials), len(d.conns))
		}
		want := minBackoff
		for i := 1; i < 9; i++ {
			if gap := d.dials[i].Sub(d.dials[i-1]); gap != want {
				t.Errorf("gap before dial %d = %v, want %v", i, gap, want)
			}
			want = min(2*want, maxBackoff)
		}
		// A viewer back from a restart is tried within a second.
		if gap := d.dials[8].Sub(d.dials[7]); gap > time.Second {
			t.Errorf("gap before dial 8 = %v, want at most 1s", gap)
		}
	})
}

// A keyframe request from the viewer makes a keyframe; a packet that is
// not RTCP ends the connection.
func TestConnectFeedback(t *testing.T) {
	d := &fakeDialer{}
	connectBubble(t, d, func(s *Sender) {
		time.Sleep(time.Second)
		c := d.conn(0)
		pli, err := rtcp.Marshal([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: s.SSRC()}})
		if err != nil {
			t.Fatal(err)
		}
		n := len(c.keys())
		c.h.Packet(pli)
		time.Sleep(time.Second)
		if k := c.keys(); !containsTrue(k[n:]) {
			t.Errorf("no keyframe after a PLI: %v", k[n:])
		}
		c.h.Packet([]byte{0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}) // RTP, not feedback
		time.Sleep(time.Second)
		if d.conn(1) == nil {
			t.Error("a connection whose viewer sent media as feedback was kept")
		}
	})
}

func containsTrue(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}

func TestConnectNeedsDial(t *testing.T) {
	s, err := New(Config{Source: media.NewSource(media.SourceConfig{}), NewEncoder: NewEncoderOf(fakecodec.NewEncoder)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(t.Context(), ConnectConfig{}); err == nil {
		t.Fatal("Connect without Dial succeeded")
	}
}

// The viewer's challenge reaches the feedback only when the transport had
// no token to answer it with: a viewer that requires one ends the
// connection with ErrTokenRequired; one that does not is ignored.
func TestFeedbackChallenge(t *testing.T) {
	s, err := New(Config{Source: media.NewSource(media.SourceConfig{}), NewEncoder: NewEncoderOf(fakecodec.NewEncoder)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.feedback(framer.MarshalAuthChallenge(9, framer.AuthChallenge{Required: true})); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("a challenge requiring a token: %v, want ErrTokenRequired", err)
	}
	if err := s.feedback(framer.MarshalAuthChallenge(9, framer.AuthChallenge{})); err != nil {
		t.Errorf("a challenge from a viewer without a token: %v, want nil", err)
	}
	if err := s.feedback(framer.MarshalBye(9, "viewer: wrong token")); !errors.Is(err, ErrViewerBye) || !strings.Contains(err.Error(), "wrong token") {
		t.Errorf("a BYE: %v, want ErrViewerBye with the reason", err)
	}
}
