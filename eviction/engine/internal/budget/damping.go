package budget

// Damping is the budget against eviction loops (kubernetes#89068): a target re-created
// under the same workload, within window of an eviction of that workload, and due again,
// waits until that eviction is delay(n) old, n counting the re-created targets of the
// workload evicted in a row (1 for the first); an eviction of the workload after window
// without one starts the count again. A target counts as re-created when it was created
// at most a second before the workload's latest eviction went, or after it: the API server
// keeps creation times to the second. Targets without an owner or a creation time are not
// damped.
//
// It counts what went (Went) and reserves nothing; each question costs O(1); workloads
// with no eviction within window are forgotten. Make it with NewDamping.
type Damping struct {
	window int64
	delay  func(n int) int64
	owners map[Key]*damped
	expiry expiries
}

// damped is one workload's latest eviction, and how many re-created targets of it were
// evicted in a row.
type damped struct {
	last   int64
	streak int
	queued bool // in the expiries
}

// dampedWait is a waiting eviction's state: when it may go.
type dampedWait struct{ until int64 }

// createdSlack is how long before an eviction a target created counts as created after it:
// the API server's creation times are whole seconds.
const createdSlack = int64(1e9)

// NewDamping returns the budget of window nanoseconds with delay, the wait (nanoseconds)
// of the n-th re-created target of a workload in a row; nil when window is not positive.
func NewDamping(window int64, delay func(n int) int64) *Damping {
	if window <= 0 {
		return nil
	}
	return &Damping{window: window, delay: delay, owners: map[Key]*damped{}}
}

// NeedsCauses reports false.
func (d *Damping) NeedsCauses() bool { return false }

// recreated returns the workload's record when r is a re-created target of it, due within
// window of its latest eviction.
func (d *Damping) recreated(r *Request) (*damped, bool) {
	key, ok := OwnerKey(r)
	if !ok || r.Created == 0 {
		return nil, false
	}
	w := d.owners[key]
	if w == nil || r.Now-w.last >= d.window || r.Created < w.last-createdSlack {
		return w, false
	}
	return w, true
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
	until := w.last + d.delay(w.streak+1)
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
	case again:
		w.streak++
	case r.Now-w.last >= d.window:
		w.streak = 0
	}
	w.last = r.Now
	if !w.queued {
		w.queued = true
		d.expiry.push(key, r.Now+d.window)
	}
}

// forget drops the workloads with no eviction within window.
func (d *Damping) forget(now int64) {
	d.expiry.due(now, func(key Key) {
		switch w := d.owners[key]; {
		case w == nil:
		case now-w.last >= d.window:
			delete(d.owners, key)
		default:
			d.expiry.push(key, w.last+d.window)
		}
	})
}
