package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// The sides of the controller whose evictions /debug/pending reports.
const (
	sideNode   = "node"
	sideDevice = "device"
)

// attempts keeps, for each open eviction that has had an attempt, how many calls were made
// and the last error: what /debug/pending answers beside the engine's Pending. It is an
// engine.Observer: Started and Failed make or update an entry, and the closing reports
// (Succeeded, Cancelled, Skipped) drop it, so it holds only open evictions, and of those
// only the ones tried at least once. It is safe for concurrent use.
type attempts struct {
	engine.NopObserver
	side string
	now  func() time.Time

	mu   sync.Mutex
	open map[types.NamespacedName]*attempt
}

// attempt is what attempts knows of one open eviction.
type attempt struct {
	holder     string
	calls      int
	running    bool
	lastError  string
	lastFailed time.Time
}

var _ engine.Observer = (*attempts)(nil)

func newAttempts(side string, now func() time.Time) *attempts {
	return &attempts{side: side, now: now, open: map[types.NamespacedName]*attempt{}}
}

// Started records the call, which is under way.
func (a *attempts) Started(ref engine.Ref, at engine.Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entry(ref)
	e.calls, e.running = at.Call, true
}

// Failed records the error; a.Call 0 is a recheck that failed before any call.
func (a *attempts) Failed(ref engine.Ref, at engine.Attempt, err error) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entry(ref)
	e.calls = max(e.calls, at.Call)
	e.running, e.lastError, e.lastFailed = false, err.Error(), now
}

// Succeeded, Cancelled and Skipped close the eviction.
func (a *attempts) Succeeded(ref engine.Ref, _ engine.Attempt, _ bool) { a.close(ref) }
func (a *attempts) Cancelled(ref engine.Ref, _ engine.Reason)          { a.close(ref) }
func (a *attempts) Skipped(ref engine.Ref, _ engine.Reason)            { a.close(ref) }

func (a *attempts) close(ref engine.Ref) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.open, ref.Key())
}

// entry returns ref's entry, made on first use. a.mu must be held.
func (a *attempts) entry(ref engine.Ref) *attempt {
	e := a.open[ref.Key()]
	if e == nil {
		e = &attempt{}
		a.open[ref.Key()] = e
	}
	e.holder = ref.Holder
	return e
}

// of returns a copy of key's entry, if any.
func (a *attempts) of(key types.NamespacedName) (attempt, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.open[key]
	if !ok {
		return attempt{}, false
	}
	return *e, true
}

// pendingEviction is one open eviction of a pod, as /debug/pending answers it.
type pendingEviction struct {
	// Controller is the side that holds it: node or device.
	Controller string `json:"controller"`
	// Holder is the node (or device) whose taint makes the pod due.
	Holder string    `json:"holder"`
	UID    types.UID `json:"uid,omitempty"`
	// At is when it is due; for one that waits at a budget, when it fell due.
	At *time.Time `json:"at,omitempty"`
	// Delayed is the budget it waits at (RateLimited, Paused), and Budget that budget as
	// the command line set it.
	Delayed engine.Reason `json:"delayed,omitempty"`
	Budget  string        `json:"budget,omitempty"`
	// Running says that an attempt is under way.
	Running bool `json:"running,omitempty"`
	// Attempts is the number of Deleter calls made; LastError the last failure (of a call,
	// or of the recheck before one), at LastFailed.
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"lastError,omitempty"`
	LastFailed *time.Time `json:"lastFailed,omitempty"`
}

// pendingAnswer is the body of /debug/pending.
type pendingAnswer struct {
	Pod       string            `json:"pod"`
	Evictions []pendingEviction `json:"evictions"`
}

// pendingSide is one side's evictions, for /debug/pending: its engine's PendingOf, the
// attempts its observer keeps, and how to name the budget of a delayed eviction.
type pendingSide struct {
	name      string
	pendingOf func(types.NamespacedName) (engine.Pending, bool)
	attempts  *attempts
	budget    func(engine.Reason) string
}

// debugHandler serves GET /debug/pending?pod=NAMESPACE/NAME: the open evictions the
// controller holds for that pod, on each side, with the attempts made and the last error,
// as JSON; an empty list when it holds none. It looks at that pod alone (each engine's
// PendingOf). A request without a valid pod gets 400.
func debugHandler(sides []pendingSide) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "Method Not Allowed: GET only", http.StatusMethodNotAllowed)
			return
		}
		ns, name, ok := strings.Cut(r.URL.Query().Get("pod"), "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			http.Error(w, "Bad Request: want /debug/pending?pod=NAMESPACE/NAME", http.StatusBadRequest)
			return
		}
		key := types.NamespacedName{Namespace: ns, Name: name}
		answer := pendingAnswer{Pod: key.String(), Evictions: []pendingEviction{}}
		for _, s := range sides {
			answer.Evictions = append(answer.Evictions, s.of(key)...)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// withDebug serves /debug/pending with the handler of sides, and everything else with h.
func withDebug(h http.Handler, sides []pendingSide) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/debug/pending", debugHandler(sides))
	mux.Handle("/", h)
	return mux
}

// of returns the side's open evictions of key: the pending one, or the one under way.
func (s pendingSide) of(key types.NamespacedName) []pendingEviction {
	tried, hasTried := s.attempts.of(key)
	var out []pendingEviction
	if p, ok := s.pendingOf(key); ok {
		at := p.At
		e := pendingEviction{Controller: s.name, Holder: p.Target.Holder, UID: p.Target.UID, At: &at, Delayed: p.Delayed}
		if p.Delayed != "" {
			e.Budget = s.budget(p.Delayed)
		}
		if hasTried {
			e.Attempts, e.LastError = tried.calls, tried.lastError
			if !tried.lastFailed.IsZero() {
				lf := tried.lastFailed
				e.LastFailed = &lf
			}
		}
		out = append(out, e)
	}
	if len(out) == 0 && hasTried && tried.running {
		// Not pending: its call runs now.
		out = append(out, pendingEviction{Controller: s.name, Holder: tried.holder, Running: true, Attempts: tried.calls, LastError: tried.lastError})
	}
	return out
}
