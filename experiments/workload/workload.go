// Package workload holds the experiments' workloads: the programs that run
// inside an emulated path's network namespaces, and how a run starts,
// watches and stops them.
//
// The bulk and request/response workloads are the experiments program
// re-executed under a hidden command, its Role: bulk-send, a saturating
// sender of fixed-size writes, with bulk-sink; rr-client, requests of a
// header and a body written separately, with rr-server, which answers each.
// So the runner survives a crash of either to clean up, and neither shares
// a process, a scheduler or a garbage collector with the emulator's mover.
// The sending side writes through transport/tcp and records every write
// (records.Write), prints a Status line to stdout every half second, stops
// writing on StopSignal and ends on SIGTERM; the receiving side prints
// ReadyLine once it listens. Spec is their command line, read and written
// here only. Bulk runs them for a run.
//
// The video workload is cmd/viewer in the receiver's namespace and
// cmd/sender in the sender's (Video), optionally with headless Chromium on
// this host showing the viewer's page through a proxy into the namespace.
// The sender speaks the run's transport: TCP or QUIC to the viewer's media
// port (QUIC pinned to the fingerprint the viewer writes to a file, and to
// nothing else), or WebRTC to the viewer's WHIP endpoint, which listens
// beyond loopback and so has a per-run token (in the processes'
// environment; the harness's own clients add it to their requests).
package workload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"replenish/experiments/proc"
	"replenish/experiments/scenario"
	"replenish/transport"
)

// Runnable is one run's processes as the runner drives them (Bulk, Video,
// Crossed): a receiving side started first, a sending side started at the
// run's time zero, both stopped at its end.
type Runnable interface {
	// StartReceiver starts the receiving side and returns once it accepts
	// connections.
	StartReceiver(ctx context.Context) error
	// StartSender starts the sending side.
	StartSender(ctx context.Context) error
	// Procs returns the processes started so far.
	Procs() []*proc.Proc
	// Quiesce tells the sending side, at the end of the window, to stop
	// writing new data where it can.
	Quiesce()
	// Drained reports whether what was written in the window has left the
	// host, sinceEnd after the window ended.
	Drained(sinceEnd time.Duration) bool
	// Live returns the latest source delay p50 in ms (NaN when unknown)
	// and more of the run's figures, for the progress line.
	Live() (srcP50 float64, extra string)
	// Stop ends the sending side, then the receiving side, and returns
	// what went wrong.
	Stop() error
}

// Role is the hidden command a workload process runs as.
type Role string

// The roles of the bulk and request/response workloads.
const (
	BulkSend Role = "bulk-send"
	BulkSink Role = "bulk-sink"
	RRClient Role = "rr-client"
	RRServer Role = "rr-server"
)

// Roles are the hidden commands, for the program's command table.
var Roles = []Role{BulkSend, BulkSink, RRClient, RRServer}

// ReadyLine is what a receiving process prints once it accepts
// connections.
const ReadyLine = "ready"

// StopSignal tells a sending process to stop writing and only collect the
// departures of what it wrote, until SIGTERM.
const StopSignal = syscall.SIGUSR1

// Status is the line, JSON, a sending process prints to stdout every
// statusEvery.
type Status struct {
	Writes  int     `json:"writes"`
	P50Ms   float64 `json:"p50_ms"`  // source delay over the last statusSpan; -1 when none
	Pending int     `json:"pending"` // writes awaiting their departure
	Stopped bool    `json:"stopped"` // no longer writing (after StopSignal)
}

// Spec is a workload process's command line.
type Spec struct {
	Role    Role
	Addr    string         // sending: where to connect (-to); receiving: where to listen (-listen)
	Mode    transport.Mode // sending: the send-buffer mode
	Size    int            // bulk-send: bytes per write
	For     time.Duration  // bulk-send: stop writing after this long (0: until stopped), then idle until stopped
	Records string         // the records file; rr-server has none
}

// Args returns the hidden command and its flags, which ParseSpec reads.
func (s Spec) Args() []string {
	args := []string{string(s.Role)}
	switch s.Role {
	case BulkSend, RRClient:
		args = append(args, "-to", s.Addr, "-mode", s.Mode.String())
		if s.Role == BulkSend {
			args = append(args, "-size", strconv.Itoa(s.Size))
			if s.For > 0 {
				args = append(args, "-for", s.For.String())
			}
		}
	default:
		args = append(args, "-listen", s.Addr)
	}
	if s.Role != RRServer {
		args = append(args, "-records", s.Records)
	}
	return args
}

// ParseSpec reads the flags of role's command line (Args without the
// role); flag errors and help go to out.
func ParseSpec(role Role, args []string, out io.Writer) (Spec, error) {
	s := Spec{Role: role, Mode: transport.Mode{Policy: transport.Default}, Size: scenario.DefaultBulkWrite}
	fs := flag.NewFlagSet(string(role), flag.ContinueOnError)
	fs.SetOutput(out)
	var need string
	switch role {
	case BulkSend, RRClient:
		fs.StringVar(&s.Addr, "to", "", "receiver `host:port`")
		fs.TextVar(&s.Mode, "mode", s.Mode, "send-buffer `mode`")
		need = "need -to and -records"
		if role == BulkSend {
			fs.IntVar(&s.Size, "size", s.Size, "`bytes` per write")
			fs.DurationVar(&s.For, "for", 0, "stop writing after this `time`, then idle until stopped (0: write until stopped)")
			need = "need -to, -records, -size from 1 B to 64 MiB and -for not negative"
		}
	case BulkSink, RRServer:
		fs.StringVar(&s.Addr, "listen", "", "`host:port` to listen on")
		need = "need -listen and -records"
		if role == RRServer {
			need = "need -listen"
		}
	default:
		return s, fmt.Errorf("workload: unknown role %q", role)
	}
	if role != RRServer {
		fs.StringVar(&s.Records, "records", "", "records `file`")
	}
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if s.Addr == "" || (role != RRServer && s.Records == "") || s.Size < 1 || s.Size > scenario.MaxBulkWrite || s.For < 0 {
		return s, errors.New(need)
	}
	return s, nil
}

// Run runs s's role until ctx is done (SIGTERM, in the process), writing
// status lines or ReadyLine to stdout. It returns an error when it cannot
// start, or when its records could not be written.
func Run(ctx context.Context, s Spec, stdout io.Writer) error {
	switch s.Role {
	case BulkSend:
		return bulkSend(ctx, s, stdout)
	case BulkSink:
		return bulkSink(ctx, s, stdout)
	case RRClient:
		return rrClient(ctx, s, stdout)
	case RRServer:
		return rrServer(ctx, s, stdout)
	}
	return fmt.Errorf("workload: unknown role %q", s.Role)
}

// Main is the hidden command role: it parses args, runs, and returns the
// exit code, 2 for bad flags and 1 for a failure, which it reports on
// stderr.
func Main(ctx context.Context, role Role, args []string, stdout, stderr io.Writer) int {
	s, err := ParseSpec(role, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", role, err)
		return 2
	}
	if err := Run(ctx, s, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}

// Timing of the sending and receiving processes.
const (
	statusEvery = 500 * time.Millisecond // a sending process's status lines
	statusSpan  = 2 * time.Second        // the source delays a status line summarizes
	sinkEvery   = 10 * time.Millisecond  // the least time between two points the sink records
)
