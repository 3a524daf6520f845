package eviction

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"k8s.io/utils/clock"
)

// errDeleteTimeout is the cause of a Deleter context cancelled by Options.DeleteTimeout.
var errDeleteTimeout = errors.New("eviction: Deleter call timed out")

// PanicError is the error a failed attempt reports (to [Observer.Failed]) when the
// [Deleter] panicked. The Manager recovers the panic, so that one bad Deleter cannot take
// the process down, and retries the eviction like any other failure.
type PanicError struct {
	// Value is what the Deleter passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error returns "eviction: Deleter panicked: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("eviction: Deleter panicked: %v", e.Value) }

// callDeleter calls the Deleter with a context bounded by Options.DeleteTimeout and reports
// whether that timeout fired. A panic of the Deleter is returned as a *PanicError, so that
// it is reported and retried like any other failure, and the timeout is released either
// way.
func (m *Manager) callDeleter(ctx context.Context, ref PodRef) (timedOut bool, err error) {
	dctx, stop := m.withDeleteTimeout(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		timedOut = stop()
	}()
	return false, m.deleter.Delete(dctx, ref)
}

// withDeleteTimeout returns a context for one Deleter call, cancelled after
// Options.DeleteTimeout on the Manager's clock, and a stop function that releases it and
// reports whether the timeout fired. No goroutine of it outlives stop.
func (m *Manager) withDeleteTimeout(ctx context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	if m.opts.DeleteTimeout < 0 {
		return ctx, func() bool { cancel(nil); return false }
	}
	fired := func() bool { return errors.Is(context.Cause(ctx), errDeleteTimeout) }
	if c, ok := m.clock.(clock.WithDelayedExecution); ok {
		t := c.AfterFunc(m.opts.DeleteTimeout, func() { cancel(errDeleteTimeout) })
		return ctx, func() bool { t.Stop(); f := fired(); cancel(nil); return f }
	}
	t := m.clock.NewTimer(m.opts.DeleteTimeout)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-t.C():
			cancel(errDeleteTimeout)
		case <-ctx.Done():
		}
	}()
	return ctx, func() bool {
		t.Stop()
		f := fired()
		cancel(nil)
		<-exited
		return f
	}
}
