// Package rig runs a viewer and a sender in one process on the loopback
// interface, for end-to-end tests and the loopback measurement.
package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"replenish/internal/certs"
	"replenish/media"
	"replenish/sender"
	"replenish/transport"
	"replenish/transport/quic"
	"replenish/transport/tcp"
	"replenish/transport/webrtc"
	"replenish/viewer"
)

// Config configures a Rig. Zero values mean the stated defaults.
type Config struct {
	// NewEncoder makes the sender's encoder; required. Whatever a browser
	// is to decode needs a real one: sender.NewEncoderOf(vpx.NewEncoder).
	NewEncoder sender.NewEncoderFunc
	Name       string         // stream name; "" means "loopback"
	Transport  string         // "tcp" (the zero value), "quic" or "webrtc"
	Mode       transport.Mode // the zero value is replenish with the default replenish time; WebRTC ignores it
	MaxSize    media.Size     // zero means 640x360
	FPS        int            // zero means 30
	OnRecord   func(viewer.Record)
	Logger     *slog.Logger
}

// Rig is a running viewer with one sender streaming to it.
type Rig struct {
	Viewer  *viewer.Server
	Sender  *sender.Sender
	PageURL string // http://127.0.0.1:PORT/

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards errs
	errs   []error
}

// Start starts the viewer on free loopback ports, then the source and the
// sender, and returns once the viewer listens. The sender connects in the
// background.
func Start(ctx context.Context, cfg Config) (*Rig, error) {
	if cfg.Name == "" {
		cfg.Name = "loopback"
	}
	if cfg.MaxSize == (media.Size{}) {
		cfg.MaxSize = media.Size{W: 640, H: 360}
	}
	if cfg.FPS == 0 {
		cfg.FPS = 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v, err := viewer.New(viewer.Config{
		Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0",
		OnRecord: cfg.OnRecord, Logger: cfg.Logger.With("part", "viewer"),
	})
	if err != nil {
		return nil, err
	}
	src := media.NewSource(media.SourceConfig{FPS: cfg.FPS, Name: cfg.Name})
	modeText := cfg.Mode.String()
	if cfg.Transport == "webrtc" {
		modeText = "gcc"
	}
	s, err := sender.New(sender.Config{Source: src, Name: cfg.Name, Mode: modeText, MaxSize: cfg.MaxSize, FPS: cfg.FPS,
		Logger: cfg.Logger.With("part", "sender"), NewEncoder: cfg.NewEncoder})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Rig{Viewer: v, Sender: s, cancel: cancel}
	r.goRun("viewer", func() error { return v.Run(ctx) })
	select {
	case <-v.Ready():
	case <-ctx.Done():
		r.Close()
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		r.Close()
		return nil, errors.New("rig: the viewer did not start listening")
	}
	mediaAddr, httpAddr := v.Addrs()
	r.PageURL = fmt.Sprintf("http://%s/", httpAddr)
	r.goRun("source", func() error { return src.Run(ctx) })
	dial, err := cfg.dialer(v, mediaAddr.String(), httpAddr.String())
	if err != nil {
		r.Close()
		return nil, err
	}
	r.goRun("sender", func() error {
		defer s.Close()
		return s.Connect(ctx, sender.ConnectConfig{Dial: dial, ProbeAddr: mediaAddr.String()})
	})
	return r, nil
}

// dialer returns the sender's dial function for the configured transport:
// TCP or QUIC (pinned to the viewer's certificate) to the media address,
// or WHIP to the viewer's HTTP address.
func (cfg Config) dialer(v *viewer.Server, media, http string) (transport.Dialer, error) {
	switch cfg.Transport {
	case "", "tcp":
		return tcp.Dialer(media, tcp.Config{Mode: cfg.Mode}), nil
	case "quic":
		tlsConf, err := certs.ClientTLS(v.Fingerprint(), nil, "", quic.ALPN)
		if err != nil {
			return nil, err
		}
		return quic.Dialer(media, quic.Config{Mode: cfg.Mode, TLS: tlsConf}), nil
	case "webrtc":
		return webrtc.Dialer("http://"+http+"/whip", webrtc.Config{Name: cfg.Name}), nil
	}
	return nil, fmt.Errorf("rig: unknown transport %q (want tcp, quic or webrtc)", cfg.Transport)
}

func (r *Rig) goRun(what string, f func() error) {
	r.wg.Go(func() {
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("%s: %w", what, err))
			r.mu.Unlock()
		}
	})
}

// Close stops the sender, the source and the viewer, waits for them, and
// returns what went wrong while they ran.
func (r *Rig) Close() error {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
