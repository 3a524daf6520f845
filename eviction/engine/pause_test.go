package engine_test

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction/engine"
)

// scopePauser pauses the evictions caused by the keys it is told to pause, under the scope
// named after the key, and records what it was asked.
type scopePauser struct {
	mu     sync.Mutex
	paused map[string]bool
	asked  []string // "target: holder/key/group ..." per question
}

func (p *scopePauser) set(key string, paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = map[string]bool{}
	}
	p.paused[key] = paused
}

func (p *scopePauser) Paused(target engine.Ref, causes []engine.Cause) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := target.Name + ":"
	for _, c := range causes {
		q += " " + c.Holder + "/" + c.Key + "/" + c.Group
	}
	p.asked = append(p.asked, q)
	for _, c := range causes {
		if p.paused[c.Key] {
			return "key " + c.Key, true
		}
	}
	return "", false
}

func (p *scopePauser) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.asked)
}

// TestPauserHoldsUntilResume: an eviction the Pauser holds waits, reported Delayed Paused
// and listed so by Pending, through any number of clock steps, and goes when the caller
// resumes its scope; the Pauser is told every cause with its holder and group; an eviction
// due later is asked about when it falls due; and a Resume while the Pauser still pauses
// holds it again, with no second Delayed report.
func TestPauserHoldsUntilResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &scopePauser{}
		p.set("rule", true)
		f := newFleet(t, engine.Options{Pauser: p})
		h := engine.Holder{Name: "gpu-0", Group: "pool-a", Taints: []v1.Taint{taint("rule", t0), taint("ecc", t0)}}
		f.src.SetHolder(h)
		f.e.HolderUpdated(h)
		f.target("now", engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{tolForever("ecc")}})
		f.target("later", engine.Binding{Holder: "gpu-0", Tolerations: []v1.Toleration{tolFor("rule", 60), tolForever("ecc")}})
		synctest.Wait()

		if got, want := p.questions(), []string{"now: gpu-0/rule/pool-a"}; !slices.Equal(got, want) {
			t.Errorf("asked %q, want %q", got, want)
		}
		if p := f.e.Pending(); len(p) != 2 || p[0].Target.Name != "now" || p[0].Delayed != engine.ReasonPaused || !p[0].At.Equal(t0) ||
			p[1].Target.Name != "later" || p[1].Delayed != "" || !p[1].At.Equal(t0.Add(time.Minute)) {
			t.Fatalf("got Pending %v, want now paused since +0s, later due at +60s", p)
		}
		f.step(time.Minute)
		f.step(time.Minute)
		if got := f.actedOn("now"); len(got) != 0 {
			t.Errorf("now: acted on at %v while paused, want never", got)
		}
		if got := f.actedOn("later"); len(got) != 0 {
			t.Errorf("later: acted on at %v while paused, want never", got)
		}
		if p := f.e.Pending(); len(p) != 2 || p[1].Delayed != engine.ReasonPaused || !p[1].At.Equal(t0.Add(time.Minute)) {
			t.Fatalf("after its deadline: got Pending %v, want later paused since +60s", p)
		}

		f.e.Resume("key rule") // still paused: held again
		synctest.Wait()
		if got := f.actedOn("now"); len(got) != 0 {
			t.Errorf("now: acted on at %v after a Resume while still paused, want never", got)
		}
		p.set("rule", false)
		f.e.Resume("key rule")
		synctest.Wait()
		at := t0.Add(2 * time.Minute)
		for _, name := range []string{"now", "later"} {
			if got := f.actedOn(name); !slices.Equal(got, []time.Time{at}) {
				t.Errorf("%s: acted on at %v, want once, at the Resume (+2m)", name, got)
			}
		}
		delayed := 0
		for _, e := range f.obs.Events() {
			if e.Kind == "Delayed" {
				delayed++
				if e.Reason != engine.ReasonPaused {
					t.Errorf("got %s, want Delayed Paused", e)
				}
			}
		}
		if delayed != 2 {
			t.Errorf("got %d Delayed reports, want 2 (one per eviction; a second hold is not reported again)", delayed)
		}
	})
}

// TestPauserReleasedByCancel: a held eviction that is cancelled (its holder untainted) lets
// go of its hold: a later Resume finds nothing, and a new taint decides anew.
func TestPauserReleasedByCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &scopePauser{}
		p.set("rule", true)
		f := newFleet(t, engine.Options{Pauser: p})
		f.holder("gpu-0", taint("rule", t0))
		f.target("x", engine.Binding{Holder: "gpu-0"})
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 1 || p[0].Delayed != engine.ReasonPaused {
			t.Fatalf("got Pending %v, want x paused", p)
		}
		f.holder("gpu-0")
		synctest.Wait()
		if p := f.e.Pending(); len(p) != 0 {
			t.Fatalf("after the untaint: got Pending %v, want none", p)
		}
		p.set("rule", false)
		f.e.Resume("key rule")
		synctest.Wait()
		if got := f.actedOn("x"); len(got) != 0 {
			t.Errorf("x: acted on at %v, want never: its eviction was cancelled", got)
		}
		f.step(time.Second)
		f.holder("gpu-0", taint("rule", t0.Add(time.Second)))
		synctest.Wait()
		if got := f.actedOn("x"); !slices.Equal(got, []time.Time{t0.Add(time.Second)}) {
			t.Errorf("x: acted on at %v, want once at +1s, when tainted again and no longer paused", got)
		}
	})
}

// TestResumeWithoutPauser: Resume on an Engine without a Pauser, or of a scope that holds
// nothing, does nothing; evictions go as usual.
func TestResumeWithoutPauser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{})
		f.e.Resume("anything")
		f.holder("gpu-0", taint("rule", t0))
		f.target("x", engine.Binding{Holder: "gpu-0"})
		synctest.Wait()
		f.e.Resume("anything")
		if got := f.actedOn("x"); !slices.Equal(got, []time.Time{t0}) {
			t.Errorf("x: acted on at %v, want once at +0s", got)
		}
	})
}
