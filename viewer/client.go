package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"replenish/framer"
	"replenish/metrics"
	"replenish/transport"
	"replenish/transport/tcp"
)

// Page connection limits.
const (
	maxPageMessage   = 256 << 10 // bytes in one message from a page
	maxReportFrames  = 1000      // frame entries in one report
	maxFrameDuration = 60_000.0  // ms: a longer decode or draw time is malformed
	pingInterval     = 15 * time.Second
	pageReadTimeout  = 45 * time.Second // without any message or pong
)

// ErrBadPageMessage is the reason logged when a page sends a message the
// viewer does not accept; the page is then disconnected.
var ErrBadPageMessage = errors.New("viewer: malformed message from page")

// outFrame is one frame on its way to pages and native players; msg and
// data are shared, read-only.
type outFrame struct {
	seq    uint64 // orders frames across streams
	stream uint32
	key    bool
	msg    []byte // the page's message: header and VP8 frame
	data   []byte // the VP8 frame, within msg
	ssrc   uint32 // the sender's
	ts     uint32 // the sender's RTP timestamp
	layer  framer.Layer
}

// client is one connected page. Its writer goroutine sends everything; the
// handler goroutine reads the page's messages.
type client struct {
	id     uint32
	remote string
	conn   *websocket.Conn
	// waiter invites the writer's frames (Config.PageMode); nil leaves
	// the connection unmanaged: frames go as fast as it takes them.
	waiter *tcp.Waiter
	// delayTarget is the queueing delay on the page's leg above which
	// upper-layer frames wait (gate.go); Config.PageDelayTarget.
	delayTarget time.Duration
	wake        chan struct{} // capacity 1: the writer has something to send
	done        chan struct{} // closed by close
	once        sync.Once
	cause       error // why the viewer closed the connection; set in once

	mu        sync.Mutex // guards following fields
	hello     bool       // the hello message is still to be sent
	listDirty bool       // the stream list is to be sent
	streams   map[uint32]*clientStream
}

// clientStream is one page's view of one stream: its relay queue (see
// relay.go) and the results the page reported, from its WebCodecs view and
// from its native player (WHEP).
type clientStream struct {
	relay
	joined      bool   // the relay started from the stream's keyCache
	keyRequests uint64 // keyframe requests that went to the sender for this page

	displayed, misreads         uint64
	displayedByLayer            [maxTID + 1]uint64
	g2g, decode, draw, delivery *metrics.Window // ms

	nativeDisplayed, nativeMisreads uint64
	nativeG2G                       *metrics.Window // ms
}

// frameQueue is a native player's bounded queue of one stream's frames. A
// consumer that has just joined gets frames from the next keyframe on. A
// keyframe replaces whatever is still queued (it does not depend on it).
// A delta frame that finds the queue full drops the queue and itself, and
// the queue skips deltas until the next keyframe; every such drop is
// counted. It is not safe for concurrent use.
type frameQueue struct {
	queue     []*outFrame
	started   bool // a keyframe has been queued since the consumer joined
	skipToKey bool // the queue overflowed: drop deltas until a keyframe

	sent, dropped uint64
}

// offer queues f, in a queue of at most depth frames, and reports whether
// it did and whether the stream's sender should be asked for a keyframe.
func (q *frameQueue) offer(f *outFrame, depth int) (queued, wantKey bool) {
	switch {
	case !q.started && !f.key:
		return false, true // nothing decodable yet; not a drop
	case q.skipToKey && !f.key:
		q.dropped++
		return false, true
	}
	q.started, q.skipToKey = true, false
	if f.key {
		q.dropped += uint64(len(q.queue))
		q.clear()
	} else if len(q.queue) >= depth {
		q.dropped += uint64(len(q.queue)) + 1
		q.clear()
		q.skipToKey = true
		return false, true
	}
	q.queue = append(q.queue, f)
	return true, false
}

func (q *frameQueue) clear() {
	clear(q.queue)
	q.queue = q.queue[:0]
}

// pop removes and returns the oldest frame, or nil.
func (q *frameQueue) pop() *outFrame {
	if len(q.queue) == 0 {
		return nil
	}
	f := q.queue[0]
	copy(q.queue, q.queue[1:])
	q.queue[len(q.queue)-1] = nil
	q.queue = q.queue[:len(q.queue)-1]
	q.sent++
	return f
}

func newClient(id uint32, remote string, conn *websocket.Conn) *client {
	c := &client{
		id:        id,
		remote:    remote,
		conn:      conn,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		hello:     true,
		listDirty: true,
		streams:   make(map[uint32]*clientStream),
	}
	c.signal() // the hello and the stream list are due
	return c
}

// closeWith ends the page's connection, recording why; only the first
// call has an effect.
func (c *client) closeWith(cause error) {
	c.once.Do(func() {
		c.cause = cause
		close(c.done)
		c.conn.Close()
	})
}

func (c *client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// streamLocked returns the page's state for stream id, creating it.
func (c *client) streamLocked(id uint32, cfg *Config) *clientStream {
	cs := c.streams[id]
	if cs == nil {
		w := func() *metrics.Window { return metrics.NewWindow(cfg.ReportWindow, cfg.ReportCap) }
		cs = &clientStream{g2g: w(), decode: w(), draw: w(), delivery: w(), nativeG2G: w()}
		c.streams[id] = cs
	}
	return cs
}

// offer queues f of stream st for the page (see relay.go) and reports
// whether st's sender should be asked for a keyframe. The first frame of a
// stream the page gets starts it from the stream's keyCache, which holds
// f already unless f did not decode there either. When the way from the
// cached keyframe to f holds more base-layer frames than ClientQueue, the
// page shows the keyframe at once and catches up, but a new keyframe,
// asked for now, may well come sooner over a slow link to the page (it
// replaces what is left of the catch-up). It takes c.mu, then st.mu.
func (c *client) offer(f *outFrame, st *stream, cfg *Config) (wantKey bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.streamLocked(f.stream, cfg)
	if !cs.joined && st != nil {
		cs.joined = true
		st.mu.Lock()
		cs.join(&st.keys, f)
		cached := st.keys.holds(f)
		st.mu.Unlock()
		wantKey = cs.baseQueued()+cs.catchUpBase() > cfg.ClientQueue
		if cached {
			c.signal()
			return wantKey
		}
	}
	wantKey = cs.offer(f, cfg.ClientQueue) || wantKey
	if cs.queued() > 0 {
		c.signal()
	}
	return wantKey
}

// keyRequested counts a keyframe request that went to stream id's sender
// for the page.
func (c *client) keyRequested(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs := c.streams[id]; cs != nil {
		cs.keyRequests++
	}
}

// queuedLocked reports whether any frame waits for the page.
func (c *client) queuedLocked() bool {
	for _, cs := range c.streams {
		if cs.queued() > 0 {
			return true
		}
	}
	return false
}

// nextFrameLocked removes and returns the frame to send now (relay.take,
// upper layers only if uppers) of the stream whose oldest queued frame is
// the oldest, and whether it is a catch-up frame; nil when nothing can go.
func (c *client) nextFrameLocked(uppers bool) (*outFrame, bool) {
	var held map[*clientStream]bool // streams whose head waits for the gate
	for {
		var best *clientStream
		for _, cs := range c.streams {
			if h := cs.head(); h != nil && !held[cs] && (best == nil || h.seq < best.head().seq) {
				best = cs
			}
		}
		if best == nil {
			return nil, false
		}
		if f, catchUp := best.take(uppers); f != nil {
			return f, catchUp
		}
		if best.queued() > 0 {
			if held == nil {
				held = make(map[*clientStream]bool)
			}
			held[best] = true
		}
	}
}

// clientList returns the connected pages.
func (s *Server) clientList() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		out = append(out, c)
	}
	return out
}

// streamsChanged tells every page to fetch the stream list again.
func (s *Server) streamsChanged() {
	for _, c := range s.clientList() {
		c.mu.Lock()
		c.listDirty = true
		c.mu.Unlock()
		c.signal()
	}
}

// forgetStream drops a removed stream from every page and ends its
// native players.
func (s *Server) forgetStream(id uint32) {
	for _, c := range s.clientList() {
		c.mu.Lock()
		delete(c.streams, id)
		c.mu.Unlock()
	}
	for _, sess := range s.whepFor(id) {
		sess.end(errStreamGone)
	}
}

// serveWS upgrades a page's request to a WebSocket and serves it until it
// ends. A page beyond MaxClients is upgraded and closed at once with a
// reason, which a browser's script can read (it cannot read an HTTP
// status of a refused handshake).
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Info("WebSocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return // the upgrader has replied
	}
	s.mu.Lock()
	if s.closing || len(s.clients) >= s.cfg.MaxClients {
		reason := fmt.Sprintf("viewer: too many pages open (%d)", len(s.clients))
		if s.closing {
			reason = "viewer: shutting down"
		}
		s.mu.Unlock()
		s.refused.log(s.log, "page", r.RemoteAddr, errors.New(reason), time.Now())
		conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseTryAgainLater, reason), time.Now().Add(time.Second))
		conn.Close()
		return
	}
	s.nextClientID++
	c := newClient(s.nextClientID, r.RemoteAddr, conn)
	log := s.log.With("page", c.id, "remote", c.remote)
	// Set before c is in s.clients, where Stats reads them.
	c.waiter = s.pageWaiter(conn, log)
	c.delayTarget = s.cfg.PageDelayTarget
	s.clients[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	defer s.conns.Done()

	log.Info("page connected", "mode", c.mode())
	var writer sync.WaitGroup
	writer.Go(func() {
		if err := s.writePage(c); err != nil {
			c.closeWith(fmt.Errorf("writing: %w", err))
		}
	})
	err = s.readPage(c)
	if errors.Is(err, ErrBadPageMessage) {
		c.closeWith(err)
	} else {
		c.closeWith(fmt.Errorf("reading: %w", err))
	}
	writer.Wait()

	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	if err := c.cause; errors.Is(err, errShutdown) || isNormalClose(err) {
		log.Info("page disconnected", "reason", err)
	} else {
		log.Warn("page dropped", "reason", err)
	}
}

// isNormalClose reports whether err is, or wraps, a WebSocket close that a
// page sends when it goes away on purpose.
func isNormalClose(err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived:
		return true
	}
	return false
}

// pageWaiter returns the Waiter that invites frames on a page's
// connection under Config.PageMode, or nil for an unmanaged one: in the
// default mode, and where the connection is not a Linux TCP socket (it
// logs why).
func (s *Server) pageWaiter(conn *websocket.Conn, log *slog.Logger) *tcp.Waiter {
	if s.cfg.PageMode.Policy == transport.Default {
		return nil
	}
	tc := tcpConnOf(conn.NetConn())
	if tc == nil {
		log.Info("page connection unmanaged: not a TCP connection")
		return nil
	}
	w, err := tcp.NewWaiter(tc, tcp.WaiterConfig{Mode: s.cfg.PageMode, Logger: log})
	if err != nil {
		log.Info("page connection unmanaged", "err", err)
		return nil
	}
	return w
}

// tcpConnOf returns the TCP connection under c, looking through wrappers
// that expose theirs (a TLS connection's NetConn), or nil.
func tcpConnOf(c net.Conn) *net.TCPConn {
	for range 8 {
		switch x := c.(type) {
		case *net.TCPConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// mode returns the page connection's buffer policy, for the log.
func (c *client) mode() string {
	if c.waiter == nil {
		return "default"
	}
	return c.waiter.Mode().String()
}

// writePage sends the page its messages until the connection ends: the
// hello, the stream list when it changes, frames, and pings. It returns
// nil when the connection was closed by closeWith.
func (s *Server) writePage(c *client) error {
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	sendPing := func() error {
		return c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WriteTimeout))
	}
	for {
		select {
		case <-c.done:
			return nil
		case <-ping.C:
			if err := sendPing(); err != nil {
				return err
			}
		case <-c.wake:
		}
		for {
			typ, data, ok, err := s.nextPageMessage(c)
			if err == nil && ok {
				if c.waiter != nil {
					c.waiter.BeforeWrite()
				}
				c.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
				err = c.conn.WriteMessage(typ, data)
			}
			if err != nil {
				select {
				case <-c.done:
					return nil
				default:
					return err
				}
			}
			if !ok {
				break
			}
			select {
			case <-ping.C: // a busy stream must not starve the pings
				if err := sendPing(); err != nil {
					return err
				}
			default:
			}
		}
	}
}

// nextPageMessage returns the next message for the page: the hello, then a
// stream list if one is due (small and rare, these go at once), then,
// once the page's connection invites a frame, the frame relay.take gives.
// It returns false when nothing is due, and the wait's error if the
// connection failed.
func (s *Server) nextPageMessage(c *client) (int, []byte, bool, error) {
	c.mu.Lock()
	hello, list := c.hello, c.listDirty
	c.hello = false
	if !hello {
		c.listDirty = false
	}
	frames := c.queuedLocked()
	c.mu.Unlock()
	switch {
	case hello:
		b, _ := json.Marshal(helloMessage{Type: "hello", Client: c.id, NowUS: s.now().UnixMicro()})
		return websocket.TextMessage, b, true, nil
	case list:
		b, _ := json.Marshal(streamsMessage{Type: "streams", Streams: s.streamList()})
		return websocket.TextMessage, b, true, nil
	case !frames:
		return 0, nil, false, nil
	}
	uppers := true
	if c.waiter != nil {
		inv, err := c.waiter.Wait(context.Background())
		if err != nil {
			return 0, nil, false, err
		}
		if info, err := c.waiter.Info(); err == nil {
			uppers = uppersAllowed(c.delayTarget, info, inv.DrainRate)
		}
	}
	c.mu.Lock()
	f, catchUp := c.nextFrameLocked(uppers)
	c.mu.Unlock()
	switch {
	case f == nil:
		return 0, nil, false, nil
	case catchUp:
		return websocket.BinaryMessage, withCatchUp(f.msg), true, nil
	}
	return websocket.BinaryMessage, f.msg, true, nil
}

// Text messages to the page.
type helloMessage struct {
	Type   string `json:"type"` // "hello"
	Client uint32 `json:"client"`
	NowUS  int64  `json:"now_us"`
}

type streamsMessage struct {
	Type    string       `json:"type"` // "streams"
	Streams []streamInfo `json:"streams"`
}

type streamInfo struct {
	ID        uint32 `json:"id"`
	Name      string `json:"name"`
	Remote    string `json:"remote"`
	Transport string `json:"transport"` // "tcp", "quic" or "webrtc"
	Mode      string `json:"mode"`      // the sender's, "" until it states it
	Connected bool   `json:"connected"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

func (s *Server) streamList() []streamInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]streamInfo, 0, len(s.streams))
	for _, st := range s.streams {
		st.mu.Lock()
		out = append(out, streamInfo{
			ID: st.id, Name: st.name, Remote: st.remote, Transport: st.transport, Mode: st.mode, Connected: st.conn != nil,
			Width: st.width, Height: st.height,
		})
		st.mu.Unlock()
	}
	return out
}

// pageMessage is a text message from the page:
//
//	{"type":"keyframe","stream":ID}
//	{"type":"report","frames":[{"stream":ID,"frame":N,"ok":true,
//	  "capture_ms":T,"arrived_ms":T,"display_ms":T,"decode_ms":D,"draw_ms":D,
//	  "tid":L}, ...]}
//	{"type":"native","frames":[{"stream":ID,"ok":true,"capture_ms":T,"display_ms":T}, ...]}
//
// Times T are ms since the Unix epoch: capture_ms in the sender's clock as
// read from the pixels (present when ok), arrived_ms (when the message
// arrived) and display_ms (when the frame was drawn) in the viewer's clock
// as the page estimates it. D are durations in ms: decode from submission
// to the decoder's output, draw from that output to the pixels being read
// back. L is the frame's temporal layer (0 to 3) from its header, for a
// stream with temporal layers only. A "native" report is of frames the page's native player (WHEP,
// a video element) presented, display_ms being when the browser handed
// the frame to its compositor; the page cannot tell which frames they
// were, so they carry no frame number.
type pageMessage struct {
	Type   string        `json:"type"`
	Stream uint32        `json:"stream"`
	Frames []frameReport `json:"frames"`
}

type frameReport struct {
	Stream  uint32   `json:"stream"`
	Frame   uint32   `json:"frame"`
	OK      bool     `json:"ok"`
	Capture *float64 `json:"capture_ms"`
	Arrived *float64 `json:"arrived_ms"`
	Display *float64 `json:"display_ms"`
	Decode  *float64 `json:"decode_ms"`
	Draw    *float64 `json:"draw_ms"`
	TID     *uint8   `json:"tid"` // the frame's temporal layer, for a stream with layers
}

// readPage reads the page's messages until the connection ends or the page
// sends something malformed (an error wrapping ErrBadPageMessage).
func (s *Server) readPage(c *client) error {
	c.conn.SetReadLimit(maxPageMessage)
	extend := func() { c.conn.SetReadDeadline(time.Now().Add(pageReadTimeout)) }
	extend()
	c.conn.SetPongHandler(func(string) error { extend(); return nil })
	for {
		typ, data, err := c.conn.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				return fmt.Errorf("%w: larger than %d bytes", ErrBadPageMessage, maxPageMessage)
			}
			return err
		}
		extend()
		if typ != websocket.TextMessage {
			return fmt.Errorf("%w: binary message", ErrBadPageMessage)
		}
		if err := s.onPageMessage(c, data, s.now()); err != nil {
			return err
		}
	}
}

// onPageMessage handles one text message from a page, received at now.
func (s *Server) onPageMessage(c *client, data []byte, now time.Time) error {
	var m pageMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPageMessage, err)
	}
	switch m.Type {
	case "keyframe":
		if m.Stream == 0 {
			return fmt.Errorf("%w: keyframe request without a stream", ErrBadPageMessage)
		}
		if st := s.streamByID(m.Stream); st != nil && s.requestKeyframe(st, now, "page") {
			c.keyRequested(st.id)
		}
		return nil
	case "report":
		return s.onReport(c, m.Frames, now)
	case "native":
		return s.onNativeReport(c, m.Frames, now)
	}
	return fmt.Errorf("%w: unknown type %q", ErrBadPageMessage, m.Type)
}

// onReport checks a page's frame reports and adds them to its windows.
func (s *Server) onReport(c *client, frames []frameReport, now time.Time) error {
	if len(frames) > maxReportFrames {
		return fmt.Errorf("%w: %d frames in one report, at most %d", ErrBadPageMessage, len(frames), maxReportFrames)
	}
	for i, f := range frames {
		if err := f.check(); err != nil {
			return fmt.Errorf("%w: frame %d: %w", ErrBadPageMessage, i, err)
		}
	}
	// What the viewer knows of each stream reported on: its clock offset
	// and when it received the frames.
	type known struct {
		offset   float64 // ms
		received map[uint32]time.Time
	}
	streams := make(map[uint32]*known)
	for _, f := range frames {
		if _, ok := streams[f.Stream]; ok {
			continue
		}
		st := s.streamByID(f.Stream)
		if st == nil {
			streams[f.Stream] = nil
			continue
		}
		k := &known{received: make(map[uint32]time.Time)}
		st.mu.Lock()
		k.offset = ms(st.clockOffset)
		for _, g := range frames {
			if g.Stream == f.Stream {
				if at, ok := st.receivedAtLocked(g.Frame); ok {
					k.received[g.Frame] = at
				}
			}
		}
		st.mu.Unlock()
		streams[f.Stream] = k
	}

	var recs []Record
	if s.cfg.OnRecord != nil {
		recs = make([]Record, 0, len(frames))
		defer func() {
			for _, r := range recs {
				s.cfg.OnRecord(r)
			}
		}()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range frames {
		k := streams[f.Stream]
		if k == nil {
			continue // a stream that is gone
		}
		cs := c.streamLocked(f.Stream, &s.cfg)
		g2g := cs.displayedFrame(f, k.offset, now)
		if recs != nil {
			recs = append(recs, displayedRecord(c.id, f, g2g))
		}
		if at, ok := k.received[f.Frame]; ok && f.Arrived != nil {
			cs.delivery.Add(now, *f.Arrived-float64(at.UnixMicro())/1000)
		}
	}
	return nil
}

// displayedFrame adds a checked report of a frame the page displayed, of
// a stream whose clock offset is offset ms, to the counters and windows,
// and returns its glass-to-glass time in ms (NaN on a misread).
func (cs *clientStream) displayedFrame(f frameReport, offset float64, now time.Time) float64 {
	cs.displayed++
	if f.TID != nil {
		cs.displayedByLayer[*f.TID]++
	} else {
		cs.displayedByLayer[0]++
	}
	g2g := math.NaN()
	if f.OK {
		g2g = *f.Display - (*f.Capture + offset)
		cs.g2g.Add(now, g2g)
	} else {
		cs.misreads++
	}
	if f.Decode != nil {
		cs.decode.Add(now, *f.Decode)
	}
	if f.Draw != nil {
		cs.draw.Add(now, *f.Draw)
	}
	return g2g
}

// onNativeReport checks a page's reports of frames its native players
// presented and adds them to its native windows.
func (s *Server) onNativeReport(c *client, frames []frameReport, now time.Time) error {
	if len(frames) > maxReportFrames {
		return fmt.Errorf("%w: %d frames in one report, at most %d", ErrBadPageMessage, len(frames), maxReportFrames)
	}
	offsets := make(map[uint32]float64) // ms, of the streams that exist
	for i, f := range frames {
		if err := f.check(); err != nil {
			return fmt.Errorf("%w: frame %d: %w", ErrBadPageMessage, i, err)
		}
		if _, ok := offsets[f.Stream]; !ok {
			if st := s.streamByID(f.Stream); st != nil {
				st.mu.Lock()
				offsets[f.Stream] = ms(st.clockOffset)
				st.mu.Unlock()
			}
		}
	}
	var recs []Record
	c.mu.Lock()
	for _, f := range frames {
		offset, ok := offsets[f.Stream]
		if !ok {
			continue // a stream that is gone
		}
		cs := c.streamLocked(f.Stream, &s.cfg)
		cs.nativeDisplayed++
		g2g := math.NaN()
		if f.OK {
			g2g = *f.Display - (*f.Capture + offset)
			cs.nativeG2G.Add(now, g2g)
		} else {
			cs.nativeMisreads++
		}
		if s.cfg.OnRecord != nil {
			r := displayedRecord(c.id, f, g2g)
			r.Frame, r.Native = 0, true
			recs = append(recs, r)
		}
	}
	c.mu.Unlock()
	for _, r := range recs {
		s.cfg.OnRecord(r)
	}
	return nil
}

// displayedRecord turns a checked frame report into a Record; g2g is in
// ms, NaN on a misread.
func displayedRecord(client uint32, f frameReport, g2g float64) Record {
	dur := func(v *float64) time.Duration {
		if v == nil {
			return -1
		}
		return time.Duration(*v * float64(time.Millisecond))
	}
	r := Record{
		Kind: RecordDisplayed, Stream: f.Stream, Frame: f.Frame, Client: client,
		G2G: -1, Misread: !f.OK, Decode: dur(f.Decode), Draw: dur(f.Draw),
	}
	if f.TID != nil {
		r.Layered, r.TID = true, *f.TID
	}
	if f.Display != nil {
		r.Displayed = time.UnixMicro(int64(*f.Display * 1000))
	}
	if f.OK {
		r.G2G = time.Duration(g2g * float64(time.Millisecond))
		r.Capture = time.UnixMicro(int64(*f.Capture * 1000))
	}
	return r
}

// check validates one frame report.
func (f *frameReport) check() error {
	if f.Stream == 0 {
		return errors.New("no stream")
	}
	for _, t := range []struct {
		name string
		v    *float64
	}{{"capture_ms", f.Capture}, {"arrived_ms", f.Arrived}, {"display_ms", f.Display}} {
		if t.v != nil && !(*t.v > 0 && *t.v < math.MaxInt64/1e6) {
			return fmt.Errorf("%s out of range", t.name)
		}
	}
	for _, d := range []struct {
		name string
		v    *float64
	}{{"decode_ms", f.Decode}, {"draw_ms", f.Draw}} {
		if d.v != nil && !(*d.v >= 0 && *d.v <= maxFrameDuration) {
			return fmt.Errorf("%s out of range", d.name)
		}
	}
	if f.Display == nil {
		return errors.New("no display_ms")
	}
	if f.TID != nil && *f.TID > maxTID {
		return fmt.Errorf("tid %d out of range (0 to %d)", *f.TID, maxTID)
	}
	if f.OK && f.Capture == nil {
		return errors.New("ok without capture_ms")
	}
	return nil
}

// stats returns the page's numbers over the windows ending at now.
func (c *client) stats(now time.Time) ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := ClientStats{ID: c.id, Remote: c.remote, Mode: c.mode(), Streams: []ClientStreamStats{}}
	var g2g, decode, draw, native []float64
	ids := make([]uint32, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st := c.streams[id]
		g, d, w, dl := st.g2g.Values(now), st.decode.Values(now), st.draw.Values(now), st.delivery.Values(now)
		ng := st.nativeG2G.Values(now)
		g2g = append(g2g, g...)
		decode = append(decode, d...)
		draw = append(draw, w...)
		native = append(native, ng...)
		pf := st.frames()
		pf.G2G, pf.Decode, pf.Draw = latencyOf(g), quantilesOf(d), quantilesOf(w)
		cs.Streams = append(cs.Streams, ClientStreamStats{
			Stream:     id,
			PageFrames: pf,
			Delivery:   quantilesOf(dl),
			Native: NativeStats{
				FramesDisplayed:   st.nativeDisplayed,
				TimestampMisreads: st.nativeMisreads,
				G2G:               latencyOf(ng),
			},
		})
		cs.add(pf)
	}
	cs.G2G = latencyOf(g2g)
	cs.NativeG2G = latencyOf(native)
	cs.Decode = quantilesOf(decode)
	cs.Draw = quantilesOf(draw)
	return cs
}

// frames returns the stream's counters as the page's stats give them.
func (st *clientStream) frames() PageFrames {
	pf := PageFrames{
		FramesDisplayed:        st.displayed,
		TimestampMisreads:      st.misreads,
		FramesSentByLayer:      st.counts.sent,
		FramesDroppedByLayer:   st.counts.dropped,
		FramesDisplayedByLayer: st.displayedByLayer,
		CatchUpFrames:          st.counts.catchUp,
		KeyframesRequested:     st.keyRequests,
	}
	for i := range st.counts.sent {
		pf.FramesSent += st.counts.sent[i]
		pf.FramesDropped += st.counts.dropped[i]
	}
	return pf
}

// add adds a stream's counters to the page's totals.
func (pf *PageFrames) add(o PageFrames) {
	pf.FramesSent += o.FramesSent
	pf.FramesDropped += o.FramesDropped
	pf.FramesDisplayed += o.FramesDisplayed
	pf.TimestampMisreads += o.TimestampMisreads
	for i := range pf.FramesSentByLayer {
		pf.FramesSentByLayer[i] += o.FramesSentByLayer[i]
		pf.FramesDroppedByLayer[i] += o.FramesDroppedByLayer[i]
		pf.FramesDisplayedByLayer[i] += o.FramesDisplayedByLayer[i]
	}
	pf.CatchUpFrames += o.CatchUpFrames
	pf.KeyframesRequested += o.KeyframesRequested
}
