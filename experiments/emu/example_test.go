package emu_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"replenish/experiments/emu"
	"replenish/rate"
)

// A command that hosts a path: the 2 Mb/s, 172 ms path of the experiments,
// a receiver started inside the receiver's namespace, and cleanup on
// SIGINT or SIGTERM.
func Example() {
	emu.PrioritizeProcess() // best effort: keeps the mover's helpers responsive on a loaded machine
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	link := emu.LinkConfig{Rate: 2 * rate.Mbps, Delay: 86 * time.Millisecond, QueueTime: 200 * time.Millisecond}
	p, err := emu.Start(ctx, emu.Config{Forward: link, Reverse: emu.LinkConfig{Delay: 86 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	// A process in a namespace, as a CLI would start the viewer.
	viewer := exec.CommandContext(ctx, "ip", "netns", "exec", p.ReceiverNS(), "sleep", "1")
	if err := viewer.Start(); err != nil {
		log.Fatal(err)
	}

	// A socket in a namespace, from this process.
	var ln net.Listener
	if err := p.Do(emu.Receiver, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(p.ReceiverAddr().String(), "9000"))
		return err
	}); err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	// A live change, as a presenter would make it.
	p.Set(emu.Forward, 100*rate.Kbps, 86*time.Millisecond)

	viewer.Wait()
	st := p.Stats().Forward
	fmt.Println(st.Rate, st.Total.Packets, st.Total.Drops, st.Window.Queue.P95)
}
