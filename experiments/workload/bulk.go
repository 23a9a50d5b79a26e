package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	"replenish/experiments/emu"
	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/records"
)

// Ports and addresses inside a path's namespaces.
const (
	Port     = 9000 // on the receiver's address: the sink, the rr server, the viewer's media
	HTTPPort = 8080 // the viewer's page, API and WHIP endpoint
	// ViewerListenHTTP is where the viewer serves them: every address of
	// the receiver's namespace, so that a WebRTC sender reaches /whip
	// across the path.
	ViewerListenHTTP = "0.0.0.0:8080"
	// ViewerHTTP is how a client inside the receiver's namespace reaches
	// them.
	ViewerHTTP = "127.0.0.1:8080"
)

// Times a run gives its processes.
const (
	StopGrace = 5 * time.Second  // to end after SIGTERM, before they are killed
	ReadyWait = 20 * time.Second // to be ready to accept connections
)

// receiverAddr returns the workload's address on p's receiving side.
func receiverAddr(p *emu.Path) string { return fmt.Sprintf("%s:%d", p.ReceiverAddr(), Port) }

// Bulk is a bulk or request/response run's processes: the experiments
// program self re-executed as bulk-sink and bulk-send (or rr-server and
// rr-client) in the namespaces of a path, writing their records and logs
// into a run's raw directory. Its methods are safe for concurrent use, but
// StartReceiver, StartSender and Stop are called in that order, once.
type Bulk struct {
	spec scenario.Run
	p    *emu.Path
	dir  string
	self string

	recv, send *proc.Proc // set by the Start methods

	mu     sync.Mutex // guards status
	status Status     // the sender's latest
	seen   bool       // a status line came
}

// NewBulk returns the processes of spec (bulk or rr) on p, with their
// files in dir, running the program self. It starts nothing.
func NewBulk(spec scenario.Run, p *emu.Path, dir, self string) *Bulk {
	return &Bulk{spec: spec, p: p, dir: dir, self: self}
}

// roles returns the receiving and sending roles of the run.
func (b *Bulk) roles() (recv, send Role) {
	if b.spec.Workload.Kind == scenario.KindRR {
		return RRServer, RRClient
	}
	return BulkSink, BulkSend
}

// StartReceiver starts the receiving process and returns once it accepts
// connections.
func (b *Bulk) StartReceiver(ctx context.Context) error {
	role, _ := b.roles()
	spec := Spec{Role: role, Addr: receiverAddr(b.p)}
	if role == BulkSink {
		spec.Records = filepath.Join(b.dir, records.SinkFile)
	}
	var err error
	b.recv, err = startReady(ctx, b.p.ReceiverNS(), string(role), append([]string{b.self}, spec.Args()...), b.dir)
	return err
}

// startReady starts a receiving process named name in the namespace ns,
// logging to dir/name.log, and waits until it prints ReadyLine. It returns
// the process, if started, even when the wait fails, so that it can be
// stopped.
func startReady(ctx context.Context, ns, name string, argv []string, dir string) (*proc.Proc, error) {
	ready := make(chan struct{})
	var once sync.Once
	onLine := func(l string) {
		if l == ReadyLine {
			once.Do(func() { close(ready) })
		}
	}
	pr, err := proc.Start(ns, name, argv, filepath.Join(dir, name+".log"), onLine)
	if err != nil {
		return nil, err
	}
	return pr, pr.WaitReady(ctx, ready, ReadyWait)
}

// StartSender starts the sending process.
func (b *Bulk) StartSender(ctx context.Context) error {
	_, role := b.roles()
	spec := Spec{Role: role, Addr: receiverAddr(b.p), Mode: b.spec.Mode, Size: b.spec.Workload.Write,
		Records: filepath.Join(b.dir, records.SendFile)}
	onLine := func(l string) {
		var st Status
		if json.Unmarshal([]byte(l), &st) == nil {
			b.mu.Lock()
			b.status, b.seen = st, true
			b.mu.Unlock()
		}
	}
	var err error
	argv := append([]string{b.self}, spec.Args()...)
	b.send, err = proc.Start(b.p.SenderNS(), string(role), argv, filepath.Join(b.dir, string(role)+".log"), onLine)
	return err
}

// Procs returns the processes started so far.
func (b *Bulk) Procs() []*proc.Proc { return proc.Started(b.recv, b.send) }

// Quiesce tells the sending process to stop writing (StopSignal).
func (b *Bulk) Quiesce() {
	if b.send != nil {
		b.send.Signal(StopSignal)
	}
}

// Drained reports whether the sending process has stopped writing and
// everything it wrote has left the host.
func (b *Bulk) Drained(time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status.Stopped && b.status.Pending == 0
}

// Live returns the sender's latest source delay p50 in ms (NaN when
// unknown) and its count of writes, for a progress line.
func (b *Bulk) Live() (p50 float64, extra string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.seen {
		return math.NaN(), ""
	}
	p50 = b.status.P50Ms
	if p50 < 0 {
		p50 = math.NaN()
	}
	return p50, fmt.Sprintf("writes %d", b.status.Writes)
}

// Stop ends the sending process, then the receiving one, and returns how
// they exited.
func (b *Bulk) Stop() error {
	var errs []error
	for _, p := range proc.Started(b.send, b.recv) {
		errs = append(errs, p.Stop(StopGrace))
	}
	return errors.Join(errs...)
}
