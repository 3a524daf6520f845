package budget

import (
	"fmt"
	"hash/fnv"
	"maps"
)

// Damping is the engine's LoopDamping: a target re-created under the same workload, and
// due within its damping span, waits until the workload's latest eviction is delay(n) old,
// n counting the workload's re-created targets evicted in a row. The jitter of each wait is
// drawn from the workload and n, not at random, so that the same workload and count wait
// the same however often asked (and a what-if gives the controller's times). It counts
// what went (Went) and reserves nothing; a question costs O(1), and once a window O(the
// workloads kept), to forget those whose span has ended. Make it with NewDamping.
type Damping struct {
	window int64
	delay  func(n int, jitter float64) int64
	owners map[Key]*damped
	swept  int64 // when forget last looked at every workload
}

// damped is one workload's latest eviction, how many re-created targets of it were
// evicted in a row, and the wait of the next one: delay(streak+1).
type damped struct {
	last, next int64
	streak     int
}

// createdSlack is how long before an eviction a target created counts as created after it.
const createdSlack = int64(1e9)

// NewDamping returns the budget of window nanoseconds with delay, the wait (nanoseconds)
// of the n-th re-created target of a workload in a row with jitter in [0, 1) as its draw;
// nil when window is not positive.
func NewDamping(window int64, delay func(n int, jitter float64) int64) *Damping {
	if window <= 0 {
		return nil
	}
	return &Damping{window: window, delay: delay, owners: map[Key]*damped{}}
}

// recreated returns the workload's record, if r has one, and whether r is a re-created
// target of it, due within its span.
func (d *Damping) recreated(r *Request) (*damped, bool) {
	key, ok := OwnerKey(r)
	if !ok || r.Created == 0 {
		return nil, false
	}
	w := d.owners[key]
	return w, w != nil && r.Now < d.spanEnd(w) && r.Created >= w.last-createdSlack
}

// spanEnd is when the workload's damping span ends: window after its next backoff would.
func (d *Damping) spanEnd(w *damped) int64 { return w.last + w.next + d.window }

// jitterOf returns the draw in [0, 1) of the n-th wait of the workload key: FNV-1a of the
// key and n, each part ended by 0xff, the same in every process.
func jitterOf(key Key, n int) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\xff%s\xff%s\xff%d\xff", key.Namespace, key.Owner.Kind, key.Owner.Name, n)
	return float64(h.Sum64()>>11) / (1 << 53)
}

// Admit holds a re-created target until its workload's latest eviction is old enough. The
// state of a waiting eviction is when it may go.
func (d *Damping) Admit(r *Request, state any) (Verdict, any) {
	d.forget(r.Now)
	until, waits := state.(int64)
	if !waits {
		w, again := d.recreated(r)
		if !again {
			return Go, nil
		}
		until = w.last + w.next
	}
	if r.Now >= until {
		return Go, nil
	}
	return Verdict{Wait: true, Until: until, Reason: "Recreated"}, until
}

// Release does nothing: a wait reserves nothing.
func (d *Damping) Release(any, int64) {}

// Went records the eviction as its workload's latest.
func (d *Damping) Went(r *Request) {
	key, ok := OwnerKey(r)
	if !ok {
		return
	}
	w, again := d.recreated(r)
	streak := 0
	switch {
	case w == nil:
		w = &damped{}
		d.owners[key] = w
	case again:
		streak = w.streak + 1
	case r.Now < d.spanEnd(w):
		streak = w.streak // within the span, not re-created: the count stays
	}
	w.last, w.streak, w.next = r.Now, streak, d.delay(streak+1, jitterOf(key, streak+1))
}

// forget drops, once a window, the workloads whose damping span has ended.
func (d *Damping) forget(now int64) {
	if now-d.swept >= d.window {
		d.swept = now
		maps.DeleteFunc(d.owners, func(_ Key, w *damped) bool { return now >= d.spanEnd(w) })
	}
}
