package budget

import "strconv"

// Damping is the budget against eviction loops (kubernetes#89068: a controller that
// re-creates what was evicted turns eviction into a loop): a target re-created under the
// same workload, and due again within its damping span, waits until the workload's latest
// eviction is delay(n) old, n counting the re-created targets of the workload evicted in a
// row (1 for the first). The span runs from that eviction until window after its backoff
// would end (delay(n) + window): a backoff longer than window still counts the next target
// in a row, so the backoff keeps doubling up to its cap. An eviction of the workload after
// its span starts the count again. A target counts as re-created when it was created
// at most a second before the workload's latest eviction went, or after it: the API server
// keeps creation times to the second. Targets without an owner or a creation time are not
// damped.
//
// The jitter of each wait is drawn from the workload and n, not at random: the same
// workload and count wait the same, whenever and however often it is asked (and a what-if
// gives the controller's times).
//
// It counts what went (Went) and reserves nothing; each question costs O(1); workloads
// with no eviction within window are forgotten. Make it with NewDamping.
type Damping struct {
	window int64
	delay  func(n int, jitter float64) int64
	owners map[Key]*damped
	expiry expiries
}

// damped is one workload's latest eviction, how many re-created targets of it were
// evicted in a row, and the wait of the next one.
type damped struct {
	last   int64
	streak int
	next   int64 // the wait of the next re-created target: delay(streak+1)
	queued bool  // in the expiries
}

// dampedWait is a waiting eviction's state: when it may go.
type dampedWait struct{ until int64 }

// createdSlack is how long before an eviction a target created counts as created after it:
// the API server's creation times are whole seconds.
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

// recreated returns the workload's record when r is a re-created target of it, due within
// window of its latest eviction.
func (d *Damping) recreated(r *Request) (*damped, bool) {
	key, ok := OwnerKey(r)
	if !ok || r.Created == 0 {
		return nil, false
	}
	w := d.owners[key]
	if w == nil || r.Now >= d.spanEnd(w) || r.Created < w.last-createdSlack {
		return w, false
	}
	return w, true
}

// spanEnd is when the workload's damping span ends: window after its next backoff would.
func (d *Damping) spanEnd(w *damped) int64 { return w.last + w.next + d.window }

// setStreak sets the workload's count, and the wait of its next re-created target.
func (d *Damping) setStreak(key Key, w *damped, streak int) {
	w.streak = streak
	w.next = d.delay(streak+1, jitterOf(key, streak+1))
}

// jitterOf returns the draw in [0, 1) of the n-th wait of the workload key: FNV-1a of the
// key and n, the same in every process.
func jitterOf(key Key, n int) float64 {
	h := uint64(14695981039346656037)
	for _, s := range []string{key.Namespace, key.Owner.Kind, key.Owner.Name, strconv.Itoa(n)} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		h = (h ^ 0xff) * 1099511628211 // a separator: ("ab","c") and ("a","bc") differ
	}
	return float64(h>>11) / (1 << 53)
}

// Admit holds a re-created target until its workload's latest eviction is old enough.
func (d *Damping) Admit(r *Request, state any) (Verdict, any) {
	d.forget(r.Now)
	if s, ok := state.(*dampedWait); ok {
		if r.Now >= s.until {
			return Go, nil
		}
		return Verdict{Wait: true, Until: s.until, Reason: "Recreated"}, s
	}
	w, again := d.recreated(r)
	if !again {
		return Go, nil
	}
	until := w.last + w.next
	if r.Now >= until {
		return Go, nil
	}
	return Verdict{Wait: true, Until: until, Reason: "Recreated"}, &dampedWait{until: until}
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
	switch {
	case w == nil:
		w = &damped{}
		d.owners[key] = w
		d.setStreak(key, w, 0)
	case again:
		d.setStreak(key, w, w.streak+1)
	case r.Now >= d.spanEnd(w):
		d.setStreak(key, w, 0)
	}
	w.last = r.Now
	if !w.queued {
		w.queued = true
		d.expiry.push(key, d.spanEnd(w))
	}
}

// forget drops the workloads whose damping span has ended.
func (d *Damping) forget(now int64) {
	d.expiry.due(now, func(key Key) {
		switch w := d.owners[key]; {
		case w == nil:
		case now >= d.spanEnd(w):
			delete(d.owners, key)
		default:
			d.expiry.push(key, d.spanEnd(w))
		}
	})
}
