package clientgo

import (
	"context"
	"testing"
)

// The helpers of the internal tests, for the tests of package clientgo_test: those import
// clientgo/lease and clientgo/metrics, which import clientgo, so that they cannot be
// internal tests.
var (
	StartController = startController
	NewWaiter       = newWaiter
	NewAlongside    = newAlongside
	TaintedNode     = taintedNode
	PodOn           = podOn
	Tolerating      = tolerating
	Scrape          = scrape
	ErrTest         = errTest
	PodsResource    = podsResource
	FailAfter       = failAfter
	Failing         = failing
	ErrBoom         = errBoom
)

// Waiter and Alongside are the internal tests' waiter and alongside.
type (
	Waiter    = waiter
	Alongside = alongside
)

// Until is waiter.until.
func (w *waiter) Until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	w.until(t, what, cond)
}

// Run is alongside.run, for Options.Alongside.
func (a *alongside) Run(ctx context.Context) error { return a.run(ctx) }

// Started is closed each time Run starts (a buffered channel).
func (a *alongside) Started() <-chan struct{} { return a.started }

// Running reports whether Run runs; Runs, how often it started.
func (a *alongside) Running() bool { return a.running.Load() }
func (a *alongside) Runs() int32   { return a.runs.Load() }
