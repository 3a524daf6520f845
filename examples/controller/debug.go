package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
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

// budgetText names the budget an eviction waits at, as the command line set it: the same
// flags budget every controller that runs, each counting its own holders.
func (b budgetFlags) budgetText(reason engine.Reason) string {
	var parts []string
	add := func(on bool, format string, args ...any) {
		if on {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	name := string(reason)
	switch reason {
	case engine.ReasonRateLimited:
		name = "the rate limit"
		burst := b.burst
		if burst == 0 {
			burst = defaultBurst(b.rate)
		}
		add(b.rate > 0, "-eviction-rate %g/s (burst %d)", b.rate, burst)
		for _, key := range slices.Sorted(maps.Keys(b.taintRates)) {
			l := b.taintRates[key]
			add(true, "-taint-rate %s=%g/%d", key, l.PerSecond, l.Burst)
		}
		add(b.fullDisruption.Rate.PerSecond > 0, "-full-disruption %g/%d", b.fullDisruption.Rate.PerSecond, b.fullDisruption.Rate.Burst)
	case engine.ReasonPaused:
		name = "the brake"
		add(b.brake > 0, "-brake-fraction %g", b.brake)
		add(b.zoneBrake > 0, "-brake-zone-fraction %g", b.zoneBrake)
		add(b.brakeHolders > 0, "-brake-holders %d", b.brakeHolders)
		add(b.zoneHolders > 0, "-brake-zone-holders %d", b.zoneHolders)
		add(b.fullDisruption.Pause, "-full-disruption pause")
	case engine.ReasonInFlight:
		name = "evictions in flight"
		add(b.inFlight > 0, "-in-flight %d", b.inFlight)
		add(b.inFlightShare > 0, "-in-flight-fraction %g", b.inFlightShare)
	case engine.ReasonNamespaceLimit:
		name = "the namespace limit"
		add(true, "-namespace-limit %d/%s", b.namespaceLimit.Max, b.namespaceLimit.Per)
	case engine.ReasonOwnerLimit:
		name = "the workload limit"
		add(true, "-owner-limit %d/%s", b.ownerLimit.Max, b.ownerLimit.Per)
	case engine.ReasonRecreated:
		name = "loop damping"
		add(true, "-loop-window %s, -loop-backoff-base %s, -loop-backoff-cap %s", b.loopWindow, b.loopBase, b.loopCap)
	case engine.ReasonUnconfirmed:
		name = "a hold until confirmed with the annotation " + eviction.ConfirmAnnotation
		add(true, "-confirm-fraction %g", b.confirm)
		add(b.confirmMin > 0, "-confirm-min-pods %d", b.confirmMin)
	}
	if len(parts) == 0 {
		return name
	}
	return name + ": " + strings.Join(parts, ", ")
}
