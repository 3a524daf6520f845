package main

import (
	"context"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// wakeHandler pokes wake at every change of an informer's cache: the demo's Event informer,
// whose Events the broadcaster writes from its own goroutine, where no WaitIdle reaches.
func wakeHandler(wake chan struct{}) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke(wake) },
		UpdateFunc: func(any, any) { poke(wake) },
		DeleteFunc: func(any) { poke(wake) },
	}
}

func poke(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// until returns once cond is true, checking it at every wake-up, or errInterrupted when
// ctx is done first.
func until(ctx context.Context, wake <-chan struct{}, cond func() bool) error {
	for !cond() {
		select {
		case <-wake:
		case <-ctx.Done():
			return errInterrupted
		}
	}
	return nil
}

// sleepUntil waits on the real clock until t, or returns errInterrupted when ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return errInterrupted
	}
}

// syncWriter serialises the writes to w; each write is a whole line or block.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
