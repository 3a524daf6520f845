package eviction

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// attemptState is where the eviction of one pod stands once it has started.
type attemptState uint8

const (
	attemptRunning attemptState = iota + 1 // an attempt runs now
	attemptFailed                          // the last attempt failed; a retry waits
	attemptClosed                          // cancelled and reported; a claimed retry may still call
)

// attempt is the state of the eviction of one pod from its first attempt to its end.
type attempt struct {
	p       pending
	n       int // attempts made, counted from 1
	state   attemptState
	stopped Reason // set when the eviction is cancelled while an attempt runs
}

// attemptBook holds the evictions that have started, so that every eviction that starts is
// closed by exactly one report: Succeeded, Cancelled, or a Failed followed by another
// attempt. A cancellation while an attempt runs is recorded, and the attempt's end reports
// it. Its methods are called under the pod's lock. The zero value is empty and ready.
type attemptBook struct {
	mu sync.Mutex
	m  map[types.NamespacedName]attempt
}

// start counts an attempt of the eviction p of key and returns its number, or false when
// the call is a retry claimed before its eviction was cancelled (and reported): then it must
// do nothing.
func (b *attemptBook) start(key types.NamespacedName, p pending) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[types.NamespacedName]attempt)
	}
	a := b.m[key]
	if a.state == attemptClosed {
		delete(b.m, key)
		return 0, false
	}
	if a.p.uid != p.uid {
		a = attempt{}
	}
	a.p, a.n, a.state, a.stopped = p, a.n+1, attemptRunning, ""
	b.m[key] = a
	return a.n, true
}

// evicting reports whether an eviction of the pod key with uid has started and is not
// cancelled: an attempt runs, or the last one failed and waits to retry.
func (b *attemptBook) evicting(key types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[key]
	return ok && a.p.uid == uid && a.state != attemptClosed && a.stopped == ""
}

// running reports whether an attempt of the eviction of the pod key with uid runs now and
// is not cancelled.
func (b *attemptBook) running(key types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[key]
	return ok && a.p.uid == uid && a.state == attemptRunning && a.stopped == ""
}

// resume is told that key is scheduled again: a cancellation while its attempt runs is
// undone (a failure of that attempt is then followed by another attempt), and a closed
// eviction is forgotten.
func (b *attemptBook) resume(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch a, ok := b.m[key]; {
	case !ok:
	case a.state == attemptClosed:
		delete(b.m, key)
	case a.stopped != "":
		a.stopped = ""
		b.m[key] = a
	}
}

// end forgets key: its eviction succeeded, was skipped, or its pod is gone.
func (b *attemptBook) end(key types.NamespacedName) {
	b.mu.Lock()
	delete(b.m, key)
	b.mu.Unlock()
}

// failed records that the running attempt of key failed. When the eviction was cancelled
// while it ran, it forgets key and returns the reason: the caller then reports Cancelled,
// not Failed, since no attempt follows.
func (b *attemptBook) failed(key types.NamespacedName) (Reason, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[key]
	if ok && a.stopped != "" {
		delete(b.m, key)
		return a.stopped, true
	}
	if ok {
		a.state = attemptFailed
		b.m[key] = a
	}
	return "", false
}

// cancel records that the eviction of key is cancelled for reason and returns its state
// before, false when none has started. A running attempt is marked (its end reports); a
// failed one is forgotten (the caller reports); a closed one stays until its pod is deleted.
func (b *attemptBook) cancel(key types.NamespacedName, reason Reason) (attempt, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.m[key]
	switch {
	case !ok:
	case a.state == attemptRunning:
		b.m[key] = attempt{p: a.p, n: a.n, state: a.state, stopped: reason}
	case a.state == attemptFailed, reason == ReasonPodDeleted:
		// A closed one goes with its pod: a call still to come finds the pod gone.
		delete(b.m, key)
	}
	return a, ok
}

// close marks the cancelled eviction a of key closed: its retry was claimed by a delete
// worker before the cancellation could remove it, and that call must do nothing.
func (b *attemptBook) close(key types.NamespacedName, a attempt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[types.NamespacedName]attempt)
	}
	a.state = attemptClosed
	b.m[key] = a
}
