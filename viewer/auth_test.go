package viewer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"replenish/framer"
	"replenish/internal/certs"
	"replenish/media"
	"replenish/media/fakecodec"
	"replenish/sender"
	"replenish/transport"
	roq "replenish/transport/quic"
	"replenish/transport/tcp"
)

const authToken = "media-token-0123456789"

// withToken configures a viewer with authToken and a short deadline for
// proving it; the stall timeout is long, so that only the deadline can
// close a connection that proves nothing.
func withToken(c *Config) {
	c.Token = authToken
	c.AuthTimeout = 300 * time.Millisecond
	c.StallTimeout = time.Minute
}

// acceptsStream checks that the viewer accepts a stream from fs: fs names
// it and sends a keyframe, and the stream must show it.
func acceptsStream(t *testing.T, ts *testServer, fs *fakeSender, name string) {
	t.Helper()
	fs.sendSDES(name)
	if _, err := fs.sendFrame(fakeVP8(true, 320, 180, 200), time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stream "+name, func() bool {
		s, ok := authStats(t, ts, authToken).stream(name)
		return ok && s.Connected && s.FramesReceived == 1
	})
}

// refused checks that the viewer closed fs's connection and that no
// stream is connected.
func refused(t *testing.T, ts *testServer, fs *fakeSender) {
	t.Helper()
	if p, err := framer.MarshalSDES(fs.ssrc, "x", "intruder", ""); err == nil && fs.media != nil {
		fs.write(p) // may fail: the connection is closing
	}
	fs.closedByViewer(t)
	for _, s := range authStats(t, ts, authToken).Streams {
		if s.Connected || s.Name == "intruder" {
			t.Fatalf("stream %+v after a refused connection", s)
		}
	}
}

// closedByPeer reports that err is the viewer's closing of the QUIC
// connection.
func closedByPeer(err error) bool {
	var aerr *quic.ApplicationError
	return errors.As(err, &aerr) && aerr.Remote
}

// allDisconnected waits until no stream of ts is connected.
func allDisconnected(t *testing.T, ts *testServer) {
	t.Helper()
	eventually(t, "the streams disconnected", func() bool {
		for _, s := range authStats(t, ts, authToken).Streams {
			if s.Connected {
				return false
			}
		}
		return true
	})
}

// TestAuthTCP: a sender over TCP proves the token before any stream; a
// wrong token, a sender that sends media first, one that answers nothing,
// and an answer recorded on another connection are refused.
func TestAuthTCP(t *testing.T) {
	ts := startServer(t, withToken)
	fs := dialSender(t, ts, "")
	acceptsStream(t, ts, fs, "tcp")
	fs.conn.Close()

	// Record an answer that worked, to replay it.
	rec := dialTCP(t, ts.media)
	c := rec.challenge()
	proof := framer.NewAuthProof(authToken, framer.TCPAuthBinding(c.Nonce))
	rec.answer(proof)
	rec.startFeedback()
	acceptsStream(t, ts, rec, "recorded")
	rec.conn.Close()
	allDisconnected(t, ts)

	for _, tc := range []struct {
		name string
		send func(fs *fakeSender, c framer.AuthChallenge)
	}{
		{"wrong token", func(fs *fakeSender, c framer.AuthChallenge) {
			fs.answer(framer.NewAuthProof(authToken+"x", framer.TCPAuthBinding(c.Nonce)))
		}},
		{"media first", func(fs *fakeSender, c framer.AuthChallenge) {}},
		{"no answer", nil},
		{"replayed answer", func(fs *fakeSender, c framer.AuthChallenge) { fs.answer(proof) }},
		{"proof for another transport", func(fs *fakeSender, c framer.AuthChallenge) {
			fs.answer(framer.NewAuthProof(authToken, framer.QUICAuthBinding(c.Nonce[:])))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := dialTCP(t, ts.media)
			c := fs.challenge()
			fs.startFeedback()
			if !c.Required {
				t.Fatal("the challenge does not say a token is required")
			}
			if tc.send == nil {
				fs.closedByViewer(t) // at the deadline
				return
			}
			tc.send(fs, c)
			refused(t, ts, fs)
		})
	}
}

// TestAuthTCPLateAnswer: an answer after the deadline finds the
// connection closed.
func TestAuthTCPLateAnswer(t *testing.T) {
	ts := startServer(t, withToken)
	fs := dialTCP(t, ts.media)
	c := fs.challenge()
	fs.startFeedback()
	fs.closedByViewer(t)
	fs.answer(framer.NewAuthProof(authToken, framer.TCPAuthBinding(c.Nonce)))
	fs.sendFrame(fakeVP8(true, 320, 180, 200), time.Now())
	if st := authStats(t, ts, authToken); len(st.Streams) != 0 {
		t.Fatalf("streams %+v after a late answer, want none", st.Streams)
	}
}

// TestAuthQUIC: over QUIC the proof is bound to the TLS session: the
// right one is accepted; a wrong token, media first, no proof, and a proof
// made on another connection are refused.
func TestAuthQUIC(t *testing.T) {
	ts := startServer(t, withToken)
	fs := dialQUICSender(t, ts, "")
	acceptsStream(t, ts, fs, "quic")
	replay := quicProof(t, fs.qc, authToken)
	fs.qc.CloseWithError(0, "")
	allDisconnected(t, ts)

	for _, tc := range []struct {
		name  string
		proof func(fs *fakeSender) *framer.AuthProof // nil: send none
	}{
		{"wrong token", func(fs *fakeSender) *framer.AuthProof {
			p := quicProof(t, fs.qc, authToken+"x")
			return &p
		}},
		{"replayed proof", func(*fakeSender) *framer.AuthProof { return &replay }},
		{"media first", func(*fakeSender) *framer.AuthProof { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := dialQUICConn(t, ts)
			if p := tc.proof(fs); p != nil {
				fs.quicAnswer(*p)
			}
			// The viewer may have refused the proof and closed the
			// connection already.
			if err := fs.tryOpenMedia(); err != nil && !closedByPeer(err) {
				t.Fatal(err)
			}
			refused(t, ts, fs)
		})
	}
	t.Run("no proof", func(t *testing.T) {
		fs := dialQUICConn(t, ts)
		fs.closedByViewer(t) // at the deadline
	})
}

// A sender that proves the token to a viewer without one is accepted: the
// answer is ignored.
func TestAuthAnswerToViewerWithoutToken(t *testing.T) {
	ts := startServer(t, nil)
	fs := dialTCP(t, ts.media)
	if c := fs.challenge(); c.Required {
		t.Fatal("a viewer without a token requires one")
	}
	fs.startFeedback()
	fs.answer(framer.NewAuthProof("whatever", nil))
	fs.sendSDES("cam")
	if _, err := fs.sendFrame(fakeVP8(true, 320, 180, 200), time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stream", func() bool { s, _ := ts.stats(t).stream("cam"); return s.FramesReceived == 1 })
}

// senderTransports are the fake sender's dials over each transport.
var senderTransports = []struct {
	name string
	dial func(t *testing.T, ts *testServer, name string) *fakeSender
}{{"tcp", dialSender}, {"quic", dialQUICSender}}

// ownedStream starts a viewer with a token, a page on it, and a sender
// (over dial) whose stream "cam" the page has had a frame of: the frame's
// header.
func ownedStream(t *testing.T, dial func(*testing.T, *testServer, string) *fakeSender) (*testServer, *page, *fakeSender, FrameHeader) {
	t.Helper()
	ts := startServer(t, withToken)
	page := mustDialPage(t, ts)
	page.hello(t)
	owner := dial(t, ts, "cam")
	acceptsStream(t, ts, owner, "cam")
	h, _ := page.nextFrame(t)
	return ts, page, owner, h
}

// TestTakeoverRefused: a stream's name belongs to the connection that has
// it: another connection claiming it is refused, the owner streams on
// undisturbed, and once the owner has gone the name can be taken back.
func TestTakeoverRefused(t *testing.T) {
	for _, tr := range senderTransports {
		t.Run(tr.name, func(t *testing.T) {
			ts, page, owner, h1 := ownedStream(t, tr.dial)
			claimant := tr.dial(t, ts, "cam")
			claimant.closedByViewer(t)
			if _, err := owner.sendFrame(fakeVP8(false, 0, 0, 100), time.Now()); err != nil {
				t.Fatalf("the owner's connection after the claim: %v", err)
			}
			h2, _ := page.nextFrame(t)
			st := authStats(t, ts, authToken)
			if len(st.Streams) != 1 || !st.Streams[0].Connected || h2.Stream != h1.Stream || st.Streams[0].FramesReceived != 2 {
				t.Fatalf("after the claim: streams %+v, frame of stream %d; want the owner's one stream %d with 2 frames",
					st.Streams, h2.Stream, h1.Stream)
			}

			owner.close()
			allDisconnected(t, ts)
			back := tr.dial(t, ts, "cam")
			if _, err := back.sendFrame(fakeVP8(true, 320, 180, 100), time.Now()); err != nil {
				t.Fatal(err)
			}
			h3, _ := page.nextFrame(t)
			if h3.Stream != h1.Stream {
				t.Fatalf("the name taken back: stream %d, want %d", h3.Stream, h1.Stream)
			}
		})
	}
}

// TestReconnectTakesOver: a sender that reconnects (same name, same SSRC)
// while the viewer still holds its old connection, as after an outage the
// sender noticed first, takes its stream over at once: the old connection
// is closed and the stream and its id stay.
func TestReconnectTakesOver(t *testing.T) {
	for _, tr := range senderTransports {
		t.Run(tr.name, func(t *testing.T) {
			ts, page, old, h1 := ownedStream(t, tr.dial)
			again := tr.dial(t, ts, "")
			again.useSSRC(old.ssrc)
			again.sendSDES("cam")
			if _, err := again.sendFrame(fakeVP8(true, 320, 180, 100), time.Now()); err != nil {
				t.Fatal(err)
			}
			h2, _ := page.nextFrame(t)
			old.closedByViewer(t)
			st := authStats(t, ts, authToken)
			if h2.Stream != h1.Stream || len(st.Streams) != 1 || !st.Streams[0].Connected || st.Streams[0].FramesReceived != 2 {
				t.Fatalf("after the reconnection: frame of stream %d, streams %+v; want stream %d, connected, with 2 frames",
					h2.Stream, st.Streams, h1.Stream)
			}
		})
	}
}

// TestSenderProvesToken runs the real sender's connection loop over each
// transport's dialer: with the viewer's token its frames flow; with a
// wrong token, or none, the viewer refuses every connection and the
// sender says why.
func TestSenderProvesToken(t *testing.T) {
	ts := startServer(t, withToken)
	tc, err := certs.ClientTLS(ts.Fingerprint(), nil, "", framer.RoQALPN)
	if err != nil {
		t.Fatal(err)
	}
	dialers := map[string]func(token string) transport.Dialer{
		"tcp":  func(token string) transport.Dialer { return tcp.Dialer(ts.media, tcp.Config{Token: token}) },
		"quic": func(token string) transport.Dialer { return roq.Dialer(ts.media, roq.Config{TLS: tc, Token: token}) },
	}
	for _, tr := range []string{"tcp", "quic"} {
		for _, c := range []struct {
			token string
			ok    bool
			why   string // in the sender's error
		}{
			{authToken, true, ""},
			{"wrong", false, "authentication failed"},
			{"", false, "requires a token"},
		} {
			t.Run(tr+"/"+map[bool]string{true: "right", false: "refused"}[c.ok]+"/"+c.token, func(t *testing.T) {
				name := tr + "-" + c.token
				ends := connectSender(t, name, dialers[tr](c.token))
				if c.ok {
					eventually(t, "frames", func() bool {
						s, _ := authStats(t, ts, authToken).stream(name)
						return s.FramesReceived >= 10
					})
					return
				}
				for range 2 {
					select {
					case err := <-ends:
						if tr == "quic" && c.token == "" {
							break // the viewer's reason comes in the QUIC close
						}
						if err == nil || !strings.Contains(err.Error(), c.why) {
							t.Errorf("the sender's connection ended with %v, want %q in it", err, c.why)
						}
					case <-time.After(waitLimit):
						t.Fatal("the sender's connection was not ended")
					}
				}
				for _, s := range authStats(t, ts, authToken).Streams {
					if s.Name == name || s.Connected && s.Name != tr+"-"+authToken {
						t.Fatalf("stream %+v from a sender without the token", s)
					}
				}
			})
		}
	}
}

// connectSender runs a sender named name over dial until the test ends and
// returns why each of its connections ended.
func connectSender(t *testing.T, name string, dial transport.Dialer) <-chan error {
	src := media.NewSource(media.SourceConfig{FPS: 30, Name: name})
	s, err := sender.New(sender.Config{Source: src, Name: name, MaxSize: media.Size{W: 160, H: 90},
		NewEncoder: sender.NewEncoderOf(fakecodec.NewEncoder), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ends := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { src.Run(ctx) })
	wg.Go(func() {
		defer s.Close()
		s.Connect(ctx, sender.ConnectConfig{Dial: func(ctx context.Context, h transport.Handler) (transport.Conn, error) {
			c, err := dial(ctx, h)
			if err != nil {
				select {
				case ends <- err:
				default:
				}
			}
			return c, err
		}, OnDisconnect: func(_ transport.Counters, err error) {
			select {
			case ends <- err:
			default:
			}
		}})
	})
	return ends
}

// TestAuthQUICBudget: until a QUIC sender has proved the token the viewer
// holds little of what it sends (quicAuthBudget). Past that on the first
// stream, the proof's, it closes the connection at once rather than at the
// deadline; a later stream waits unread until the proof, and then a frame
// larger than the budget on it flows.
func TestAuthQUICBudget(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		withToken(c)
		c.AuthTimeout = time.Minute // only the budget can close a connection early
	})
	big := make([]byte, 60000) // an RTP packet without the marker bit: part of a frame
	big[0], big[1] = 0x80, 96
	t.Run("first stream", func(t *testing.T) {
		fs := dialQUICConn(t, ts)
		s, err := fs.qc.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		b := roqHeader()
		for range 1 + quicAuthBudget/len(big) {
			b, _ = framer.AppendRoQPacket(b, big)
		}
		s.Write(b) // may fail: the viewer closes the connection
		select {
		case err := <-fs.readErr:
			var aerr *quic.ApplicationError
			if !errors.As(err, &aerr) || !strings.Contains(aerr.ErrorMessage, "before proving the token") {
				t.Errorf("connection ended with %v, want the viewer's close for the bytes before the proof", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("the viewer holds what an unproved sender sent past its budget")
		}
	})
	t.Run("later stream", func(t *testing.T) {
		fs := dialQUICConn(t, ts)
		proof, err := fs.qc.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := proof.Write(roqHeader()); err != nil {
			t.Fatal(err)
		}
		fs.openMedia()
		fs.sendSDES("late")
		if _, err := fs.sendFrame(fakeVP8(true, 320, 180, 2*quicAuthBudget), time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // for the viewer to read the media stream, were it to
		b, _ := framer.AppendRoQPacket(nil, framer.MarshalAuthAnswer(fs.ssrc, quicProof(t, fs.qc, authToken)))
		if _, err := proof.Write(b); err != nil {
			t.Fatalf("writing the proof: %v", err)
		}
		proof.Close()
		eventually(t, "the frame behind the proof", func() bool {
			s, ok := authStats(t, ts, authToken).stream("late")
			return ok && s.Connected && s.FramesReceived == 1
		})
	})
}
