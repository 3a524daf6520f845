package budget

import "slices"

// Key names what a budget counts apart: a namespace, or a workload within one.
type Key struct {
	Namespace string
	Owner     Owner
}

// Window is the budget of at most max evictions of one key let go within any span of per
// nanoseconds: of one namespace, or of one workload (keyOf says which, and which
// evictions it counts at all). An eviction that finds its key's window full waits until
// the window opens; those that wait for one key are woken one window's room at a time, in
// the order they came, so that an opening wakes as many as it lets go.
//
// It counts what went (Went), and asks nothing to be given back: it is asked again at every
// question, so it must come before the budgets that reserve (the rate limits), whose wait
// would otherwise let an eviction go later than the window counted it. Each question costs
// O(log of the key's evictions in the window); keys whose window is empty are forgotten.
// Make it with NewWindow.
type Window struct {
	max    int
	per    int64
	reason string
	keyOf  func(r *Request) (Key, bool)
	keys   map[Key]*windowLog
	expiry expiries // keys with the time their latest eviction leaves the window
}

// windowLog is one key's evictions that went within the window, and its waiting ones,
// each with a ticket: served counts those that left the line, so that a ticket less served
// is about how many wait before it (fewer, when some after it left first: it then comes
// back early, and waits again).
type windowLog struct {
	went    []int64 // when each went, sorted
	waiting int     // evictions waiting for the window to open
	tickets uint64  // the next ticket
	served  uint64  // tickets that left the line
	queued  bool    // in the window's expiries
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
	if waits && (!ok || ws.key != key) {
		// The target's key changed while it waited (its owner was changed, or released):
		// it leaves its old key's line, and is asked as a new one.
		w.Release(ws, r.Now)
		ws, waits = nil, false
	}
	if !ok {
		return Go, nil
	}
	w.forget(r.Now)
	log := w.keys[key]
	if log != nil {
		log.prune(r.Now - w.per)
	}
	if log == nil || len(log.went) < w.max {
		if waits && log != nil {
			w.leave(key, log)
		}
		return Go, nil
	}
	if !waits {
		ws = &windowWait{key: key, ticket: log.tickets}
		log.tickets++
		log.waiting++
	}
	pos := int(min(ws.ticket-min(log.served, ws.ticket), uint64(log.waiting-1)))
	// The window opens as the evictions in it age out, one at a time; a wait further down
	// the line waits for the openings of those that go before it, a window later.
	n := len(log.went)
	at := log.went[n-w.max+pos%w.max] + w.per*int64(1+pos/w.max)
	return Verdict{Wait: true, Until: max(at, r.Now+1), Reason: w.reason}, ws
}

// leave takes a waiting eviction out of key's line, and forgets the key when nothing is
// left of it: no eviction in its window, none waiting, and no expiry to look at it later.
func (w *Window) leave(key Key, log *windowLog) {
	log.waiting--
	log.served++
	if log.waiting == 0 && len(log.went) == 0 && !log.queued {
		delete(w.keys, key)
	}
}

// Release forgets a waiting eviction.
func (w *Window) Release(state any, _ int64) {
	ws := state.(*windowWait)
	if log := w.keys[ws.key]; log != nil {
		w.leave(ws.key, log)
	}
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
	if !log.queued {
		log.queued = true
		w.expiry.push(key, r.Now+w.per)
	}
}

// prune drops the evictions that went at or before since.
func (l *windowLog) prune(since int64) {
	i, found := slices.BinarySearch(l.went, since)
	if found {
		for i < len(l.went) && l.went[i] == since {
			i++
		}
	}
	if i > 0 {
		l.went = append(l.went[:0], l.went[i:]...)
	}
}

// forget drops the keys whose window is empty, with no eviction waiting, and looks again
// later at the others; O(1) amortized: a key is in the expiries once at most.
func (w *Window) forget(now int64) {
	w.expiry.due(now, func(key Key) {
		log := w.keys[key]
		if log == nil {
			return
		}
		log.prune(now - w.per)
		switch {
		case len(log.went) > 0:
			w.expiry.push(key, log.went[len(log.went)-1]+w.per)
		case log.waiting == 0:
			delete(w.keys, key)
		default:
			log.queued = false // its next eviction queues it again
		}
	})
}

// expiries are keys, each with a time after which it may be forgotten, in the order they
// were pushed (their times nearly in order: a key whose time is not due yet holds back
// those after it, which are looked at a little later). A key is pushed again, rather than
// once per eviction, when it is looked at and kept.
type expiries struct {
	list []keyExpiry
	head int
}

type keyExpiry struct {
	key Key
	at  int64
}

func (e *expiries) push(key Key, at int64) { e.list = append(e.list, keyExpiry{key: key, at: at}) }

// due calls f with each key whose time is at or before now, from the oldest, and forgets it;
// f may push keys again.
func (e *expiries) due(now int64, f func(Key)) {
	for e.head < len(e.list) && e.list[e.head].at <= now {
		key := e.list[e.head].key
		e.list[e.head] = keyExpiry{}
		e.head++
		f(key) // which may push the key again, with a later time
	}
	if e.head > 0 && e.head*2 >= len(e.list) {
		e.list, e.head = append(e.list[:0], e.list[e.head:]...), 0
	}
}
