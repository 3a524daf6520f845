package timedqueue

import (
	"sync"
	"time"
)

// afterFuncQueue is the lean model of kube's timed worker queue that the benchmarks compare
// with: a mutex, a map from key to timer, and one time.AfterFunc per key, whose callback runs
// the work on a goroutine of its own. Schedule replaces (Stop, then a new AfterFunc); Cancel
// stops. It has no retries, no bounded pool and no ordering: only what a timer per key gives.
type afterFuncQueue[K comparable, V any] struct {
	work   func(K, V)
	mu     sync.Mutex
	timers map[K]*time.Timer
}

func newAfterFuncQueue[K comparable, V any](work func(K, V)) *afterFuncQueue[K, V] {
	return &afterFuncQueue[K, V]{work: work, timers: make(map[K]*time.Timer)}
}

func (q *afterFuncQueue[K, V]) Schedule(key K, value V, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t, ok := q.timers[key]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(at), func() {
		q.mu.Lock()
		if q.timers[key] == t {
			delete(q.timers, key)
		}
		q.mu.Unlock()
		q.work(key, value)
	})
	q.timers[key] = t
}

func (q *afterFuncQueue[K, V]) Cancel(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.timers[key]
	if !ok {
		return false
	}
	delete(q.timers, key)
	return t.Stop()
}

func (q *afterFuncQueue[K, V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.timers)
}

// stopAll stops every timer, so that a benchmark leaves none in the runtime's timer heaps.
func (q *afterFuncQueue[K, V]) stopAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, t := range q.timers {
		t.Stop()
		delete(q.timers, k)
	}
}
