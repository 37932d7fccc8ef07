package config

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
)

// benchLinks serves links and services under one supervisor, waits until
// every link runs, calls started (nil: nothing), then times b.N ticks of
// the first link and stops the supervisor.
func benchLinks(b *testing.B, links []*Built, services []bridge.Part, started func()) {
	b.Helper()
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Logger: slog.New(slog.DiscardHandler)})
	for _, x := range links {
		if err := sup.AddLink(x.Link, nil, x.Deps...); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range services {
		if err := sup.Add(s.Name, s.Service); err != nil {
			b.Fatal(err)
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	for _, x := range links {
		for x.Link.State() != bridge.Running {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if started != nil {
		started()
	}
	b.ResetTimer()
	start := links[0].Link.Ticks()
	for links[0].Link.Ticks()-start < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
}
