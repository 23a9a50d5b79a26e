package emu

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// CloseOnSignal closes p when the process receives one of sigs (SIGINT and
// SIGTERM when none are given). While it is in effect those signals no
// longer end the process: the caller should exit once p.Done() is closed.
// The returned function stops the handling and waits for a Close it started;
// it is safe to call more than once.
func CloseOnSignal(p *Path, sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-c:
			p.Close()
		case <-quit:
		case <-p.Done():
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(c)
			close(quit)
			wg.Wait()
		})
	}
}
