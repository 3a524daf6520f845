package budget

import (
	"maps"
	"slices"
)

// Key names what a budget counts apart: a namespace, or a workload within one.
type Key struct {
	Namespace string
	Owner     Owner
}

// Window is the engine's NamespaceLimit or OwnerLimit: at most max evictions of one key
// (keyOf says which, and which evictions it counts) let go within any span of per
// nanoseconds. Those that wait for one key come back in the order they came, as many at
// each opening as it lets go. It counts what went (Went) and reserves nothing, so it comes
// before the rate limits, whose wait would let an eviction go later than it counted it. A
// question costs O(log of the key's evictions in the window), and once a window O(the
// keys kept), to forget the idle ones. Make it with NewWindow.
type Window struct {
	max    int
	per    int64
	reason string
	keyOf  func(r *Request) (Key, bool)
	keys   map[Key]*windowLog
	swept  int64 // when forget last looked at every key
}

// windowLog is one key's evictions that went within the window, and its line of waiting
// ones, each with a ticket: a ticket less served is about how many wait before it (fewer,
// when some after it left first: it then comes back early, and waits again).
type windowLog struct {
	went    []int64 // when each went, sorted
	waiting int     // evictions in line
	tickets uint64  // the next ticket
	served  uint64  // tickets that left the line
}

// windowWait is a waiting eviction's place: the state the gate keeps for it.
type windowWait struct {
	key    Key
	ticket uint64
}

// NewWindow returns the budget of at most max evictions of each key within per
// nanoseconds, reporting reason when one waits; nil when max or per is not positive.
func NewWindow(max int, per int64, reason string, keyOf func(r *Request) (Key, bool)) *Window {
	if max <= 0 || per <= 0 {
		return nil
	}
	return &Window{max: max, per: per, reason: reason, keyOf: keyOf, keys: map[Key]*windowLog{}}
}

// NamespaceKey counts the evictions of each namespace.
func NamespaceKey(r *Request) (Key, bool) { return Key{Namespace: r.Key.Namespace}, true }

// OwnerKey counts the evictions of each workload; targets without an owner are not counted.
func OwnerKey(r *Request) (Key, bool) {
	return Key{Namespace: r.Key.Namespace, Owner: r.Owner}, r.Owner != Owner{}
}

// Admit lets the eviction go while its key's window has room; otherwise it waits until the
// window opens for it.
func (w *Window) Admit(r *Request, state any) (Verdict, any) {
	key, ok := w.keyOf(r)
	ws, waits := state.(*windowWait)
	if waits && (!ok || ws.key != key) { // its owner changed, or went: asked as a new one
		w.Release(ws, r.Now)
		ws, waits = nil, false
	}
	if !ok {
		return Go, nil
	}
	w.forget(r.Now)
	log := w.keys[key]
	if log == nil || log.prune(r.Now-w.per) < w.max {
		if waits {
			w.Release(ws, r.Now)
		}
		return Go, nil
	}
	if !waits {
		ws = &windowWait{key: key, ticket: log.tickets}
		log.tickets++
		log.waiting++
	}
	// The window opens as its evictions age out, one at a time; the one max places further
	// down the line waits for the same opening, a window later.
	pos := int(min(ws.ticket-min(log.served, ws.ticket), uint64(log.waiting-1)))
	at := log.went[len(log.went)-w.max+pos%w.max] + w.per*int64(1+pos/w.max)
	return Verdict{Wait: true, Until: max(at, r.Now+1), Reason: w.reason}, ws
}

// Release takes a waiting eviction out of its key's line, and forgets the key when nothing
// is left of it: no eviction in its window, and none waiting.
func (w *Window) Release(state any, now int64) {
	ws := state.(*windowWait)
	if log := w.keys[ws.key]; log != nil {
		log.waiting--
		log.served++
		if w.idle(log, now) {
			delete(w.keys, ws.key)
		}
	}
}

// idle reports whether nothing is left of log at now: no eviction in its window, and none
// waiting.
func (w *Window) idle(log *windowLog, now int64) bool {
	return log.waiting == 0 && log.prune(now-w.per) == 0
}

// Went counts the eviction in its key's window.
func (w *Window) Went(r *Request) {
	key, ok := w.keyOf(r)
	if !ok {
		return
	}
	log := w.keys[key]
	if log == nil {
		log = &windowLog{}
		w.keys[key] = log
	}
	i, _ := slices.BinarySearch(log.went, r.Now)
	log.went = slices.Insert(log.went, i, r.Now)
}

// prune drops the evictions that went at or before since, and returns how many are left.
func (l *windowLog) prune(since int64) int {
	i, _ := slices.BinarySearch(l.went, since+1)
	l.went = l.went[i:]
	return len(l.went)
}

// forget drops, once a window, the idle keys.
func (w *Window) forget(now int64) {
	if now-w.swept >= w.per {
		w.swept = now
		maps.DeleteFunc(w.keys, func(_ Key, log *windowLog) bool { return w.idle(log, now) })
	}
}
