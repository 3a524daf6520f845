package eviction

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/timedqueue"
)

// never is where a paused eviction waits in the schedule: later than any deadline, so that
// it is not due, and listed by Pending with the time it fell due instead.
var never = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

// gate is what an eviction that is due passes before its first attempt: the brake, then the
// rate limits (Options.RateLimit, TaintRateLimits, Brake). An eviction that may not go yet
// stays in the schedule, held: until its slot when it is rate limited, at never when it is
// paused, until the brake releases it. The gate remembers each held eviction: when it fell
// due, why it waits (reported only when that changes), the slot it holds, and which brake
// scope paused it.
//
// It is safe for concurrent use. Its methods are called under the pod's lock, except
// nodeUpdated; whatever changes a held eviction's place in the schedule calls drop before
// it touches the schedule, so that a release (made under the gate's lock) never puts back
// an eviction that was cancelled or moved. A nil *gate is the gate of a Manager without
// budgets: use it only after checking for nil.
type gate struct {
	mu     sync.Mutex
	queue  *timedqueue.Queue[types.NamespacedName, pending] // to put released evictions back
	rate   *bucket                                          // nil: no overall limit
	byKey  map[string]*bucket                               // per taint key
	brake  *brake                                           // nil: no brake
	holds  map[types.NamespacedName]*hold
	paused map[brakeScope]map[types.NamespacedName]struct{}
	// nheld is len(holds), read without the lock: while nothing waits, the common case,
	// drop and holding take no lock. A hold is made for a key only under that pod's lock,
	// which their callers hold, so a zero read under it means none for that key.
	nheld atomic.Int32
}

// hold is an eviction that is due and waits.
type hold struct {
	p      pending
	due    time.Time  // when the gate first found it due
	reason Reason     // what Delayed last reported
	slot   int64      // the slot it holds, unix nanoseconds; 0 for none
	from   []*bucket  // the buckets slot was taken from
	scope  brakeScope // what paused it, with reason ReasonPaused; zero once released
}

// admission is the gate's answer: go, or wait until a time, with the reason to report
// when it changed.
type admission struct {
	wait   bool
	until  time.Time
	report Reason
}

// newGate returns the gate for opts, or nil when opts set no budget.
func newGate(opts Options, queue *timedqueue.Queue[types.NamespacedName, pending]) *gate {
	if !opts.RateLimit.limits() && len(opts.TaintRateLimits) == 0 && !opts.Brake.brakes() {
		return nil
	}
	g := &gate{
		queue:  queue,
		byKey:  make(map[string]*bucket),
		holds:  make(map[types.NamespacedName]*hold),
		paused: make(map[brakeScope]map[types.NamespacedName]struct{}),
	}
	if opts.RateLimit.limits() {
		g.rate = newBucket(opts.RateLimit)
	}
	for k, l := range opts.TaintRateLimits {
		if l.limits() {
			g.byKey[k] = newBucket(l)
		}
	}
	if opts.Brake.brakes() {
		g.brake = newBrake(opts.Brake)
	}
	return g
}

// needsCauses reports whether admit needs the taint keys that make a pod due.
func (g *gate) needsCauses() bool { return g.brake != nil || len(g.byKey) > 0 }

// admit decides whether the eviction p of key, due now because of the taint keys keys on a
// node in zone, may go now. When it must wait, admit has put it back in the schedule until
// the time it returns: the caller, the queue's work for key, then returns nil.
func (g *gate) admit(key types.NamespacedName, p pending, keys []string, zone string, now time.Time) admission {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holds[key]
	if h != nil && h.p != p {
		g.dropLocked(key, h, now) // another pod, or the same on another node
		h = nil
	}
	if g.brake != nil {
		if scope, paused := g.brake.paused(zone, keys); paused {
			if h == nil {
				h = &hold{p: p, due: now}
			}
			return g.pauseLocked(key, h, scope, now)
		}
	}
	n := now.UnixNano()
	if h != nil {
		g.unpauseLocked(key, h)
		if h.slot > n {
			return g.waitLocked(key, h, ReasonRateLimited, time.Unix(0, h.slot))
		}
		if h.slot != 0 { // its slot has come
			g.forgetLocked(key)
			return admission{}
		}
	}
	var buf [4]*bucket // the common case allocates nothing: most evictions go at once
	bs := g.bucketsFor(buf[:0], keys)
	slot := reserve(bs, n)
	if slot <= n {
		g.forgetLocked(key)
		return admission{}
	}
	if h == nil {
		h = &hold{p: p, due: now}
	}
	h.slot, h.from = slot, slices.Clone(bs)
	return g.waitLocked(key, h, ReasonRateLimited, time.Unix(0, slot))
}

// bucketsFor appends to bs the buckets an eviction due because of keys takes a slot from.
func (g *gate) bucketsFor(bs []*bucket, keys []string) []*bucket {
	if g.rate != nil {
		bs = append(bs, g.rate)
	}
	for _, k := range keys {
		if b := g.byKey[k]; b != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

// pauseLocked holds h, paused by scope, giving back any slot it holds.
func (g *gate) pauseLocked(key types.NamespacedName, h *hold, scope brakeScope, now time.Time) admission {
	g.giveBackLocked(h, now)
	g.unpauseLocked(key, h)
	h.scope = scope
	set := g.paused[scope]
	if set == nil {
		set = make(map[types.NamespacedName]struct{})
		g.paused[scope] = set
	}
	set[key] = struct{}{}
	return g.waitLocked(key, h, ReasonPaused, never)
}

// waitLocked keeps h held, and in the schedule until until, and returns the reason to
// report, if it changed. It schedules under the gate's lock, so that a release made
// meanwhile cannot be undone by it.
func (g *gate) waitLocked(key types.NamespacedName, h *hold, reason Reason, until time.Time) admission {
	g.holds[key] = h
	g.nheld.Store(int32(len(g.holds)))
	g.queue.Schedule(key, h.p, until)
	a := admission{wait: true, until: until}
	if h.reason != reason {
		h.reason, a.report = reason, reason
	}
	return a
}

// drop forgets the held eviction of key, if any, and gives back its slot: it was cancelled,
// skipped, or is scheduled anew. It returns the eviction it forgot.
func (g *gate) drop(key types.NamespacedName, now time.Time) (pending, bool) {
	if g.nheld.Load() == 0 {
		return pending{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holds[key]
	if h == nil {
		return pending{}, false
	}
	g.dropLocked(key, h, now)
	return h.p, true
}

func (g *gate) dropLocked(key types.NamespacedName, h *hold, now time.Time) {
	g.giveBackLocked(h, now)
	g.unpauseLocked(key, h)
	g.forgetLocked(key)
}

func (g *gate) forgetLocked(key types.NamespacedName) {
	delete(g.holds, key)
	g.nheld.Store(int32(len(g.holds)))
}

func (g *gate) giveBackLocked(h *hold, now time.Time) {
	if h.slot == 0 {
		return
	}
	for _, b := range h.from {
		b.giveBack(h.slot, now.UnixNano())
	}
	h.slot, h.from = 0, nil
}

func (g *gate) unpauseLocked(key types.NamespacedName, h *hold) {
	if set := g.paused[h.scope]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(g.paused, h.scope)
		}
	}
	h.scope = brakeScope{}
}

// holding reports whether the eviction p of key is held.
func (g *gate) holding(key types.NamespacedName, p pending) bool {
	if g.nheld.Load() == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holds[key]
	return h != nil && h.p == p
}

// held returns, for an eviction of the pod key with uid that is held, when it fell due and
// why it waits.
func (g *gate) held(key types.NamespacedName, uid types.UID) (due time.Time, reason Reason, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holds[key]
	if h == nil || h.p.uid != uid {
		return time.Time{}, "", false
	}
	return h.due, h.reason, true
}

// nodeUpdated counts a node update for the brake (old nil for an added node, new nil for a
// deleted one), and puts the evictions held by scopes that resumed back in the schedule, at
// the times they fell due, so that they go in deadline order, under the rate limits.
func (g *gate) nodeUpdated(old, new *v1.Node) {
	if g.brake == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var resumed []brakeScope
	if old != nil && (new == nil || old.Name != new.Name) {
		resumed = g.brake.remove(old.Name, resumed)
	}
	if new != nil {
		resumed = g.brake.set(new, resumed)
	}
	for _, scope := range resumed {
		for key := range g.paused[scope] {
			if h := g.holds[key]; h != nil {
				h.scope = brakeScope{} // stays held, with reason Paused, until it passes again
				g.queue.Schedule(key, h.p, h.due)
			}
		}
		delete(g.paused, scope)
	}
}
