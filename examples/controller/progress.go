package main

import (
	"context"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"
)

// progress is how the demo waits without sleeping: it is an Observer, and an informer
// event handler, and wakes the waiting script at every decision and every change of the
// caches; the script then checks again whether what it waits for is there.
type progress struct {
	eviction.NopObserver
	wake chan struct{}

	mu   sync.Mutex
	seen map[string]bool // "kind ns/name", kind one of scheduled, evicted, cancelled
}

func newProgress() *progress {
	return &progress{wake: make(chan struct{}, 1), seen: map[string]bool{}}
}

func (p *progress) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *progress) mark(kind string, pod eviction.PodRef) {
	p.mu.Lock()
	p.seen[kind+" "+pod.String()] = true
	p.mu.Unlock()
	p.poke()
}

func (p *progress) has(kind, pod string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[kind+" "+pod]
}

// Scheduled, Succeeded and Cancelled are the decisions the script waits for.
func (p *progress) Scheduled(pod eviction.PodRef, _ time.Time) { p.mark("scheduled", pod) }
func (p *progress) Succeeded(pod eviction.PodRef, _ int, _ bool) {
	p.mark("evicted", pod)
}
func (p *progress) Cancelled(pod eviction.PodRef, _ eviction.Reason) { p.mark("cancelled", pod) }

func (p *progress) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
}

// until returns once cond is true, checking it at every wake-up, or errInterrupted when
// ctx is done first.
func (p *progress) until(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-p.wake:
		case <-ctx.Done():
			return errInterrupted
		}
	}
	return nil
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
