package eviction_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestObserverContract checks, over random interleavings of node and pod updates, clock
// steps, and a Deleter that succeeds, fails or blocks, that the Observer's reports keep the
// contract exactly: an eviction opens with its first Scheduled and closes with exactly one
// Succeeded, Cancelled or Skipped; nothing else comes while none is open, and its UID stays
// the same while it is open; each Started is followed by exactly one outcome before the
// next; and whenever the Manager is idle, the evictions the reports leave open are exactly
// those pending or in a Deleter call. Each seed is reproducible: go test -run
// 'TestObserverContract/seed_N$'.
func TestObserverContract(t *testing.T) {
	for seed := range 150 {
		synctestRun(t, fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			newContractRun(t, uint64(seed), eviction.Options{Backoff: exactBackoff}).run(60)
		})
	}
}

// TestObserverContractWithBudgets is TestObserverContract with a rate limit and a brake
// (both nodes tainted trips it), so that evictions also wait for tokens and for the brake
// to release them, and are cancelled while they wait.
func TestObserverContractWithBudgets(t *testing.T) {
	opts := eviction.Options{
		Backoff:   exactBackoff,
		RateLimit: eviction.Limit{PerSecond: 0.5, Burst: 1},
		Brake:     eviction.Brake{Fraction: 0.5},
	}
	delayed := map[eviction.Reason]int{}
	for seed := range 100 {
		synctestRun(t, fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			c := newContractRun(t, uint64(seed), opts)
			c.run(60)
			for _, e := range c.obs.Of(evictiontest.Delayed) {
				delayed[e.Reason]++
			}
		})
	}
	if delayed[eviction.ReasonRateLimited] == 0 || delayed[eviction.ReasonPaused] == 0 {
		t.Errorf("the runs reported Delayed %v: they did not wait for both a token and the brake", delayed)
	}
}

// deleterMode is what the contract run's Deleter does with its next calls.
type deleterMode int

const (
	deleteSucceeds deleterMode = iota // removes the pod, as the API server and informer would
	deleteFails
	deleteBlocks // until released
)

type contractRun struct {
	*harness
	rng     *rand.Rand
	pods    []string
	nodes   []string
	mu      sync.Mutex
	mode    deleterMode
	release chan struct{}
	blocked map[string]bool
}

func newContractRun(t *testing.T, seed uint64, opts eviction.Options) *contractRun {
	c := &contractRun{
		harness: run(t, opts),
		rng:     rand.New(rand.NewPCG(seed, 7)),
		pods:    []string{"p0", "p1", "p2", "p3"},
		nodes:   []string{"n1", "n2"},
		release: make(chan struct{}),
		blocked: map[string]bool{},
	}
	c.onDelete(c.delete)
	return c
}

func (c *contractRun) delete(ctx context.Context, ref eviction.PodRef) error {
	c.mu.Lock()
	mode, release := c.mode, c.release
	if mode == deleteBlocks {
		c.blocked[ref.Name] = true
	}
	c.mu.Unlock()
	switch mode {
	case deleteFails:
		return errAPI
	case deleteBlocks:
		select {
		case <-release:
		case <-ctx.Done():
		}
		c.mu.Lock()
		delete(c.blocked, ref.Name)
		c.mu.Unlock()
		return errAPI
	}
	if cur, _ := c.cache.Pod(ref.Namespace, ref.Name); cur == nil || cur.UID != ref.UID {
		return eviction.ErrPodGone
	}
	c.removePod(ref.Name)
	return nil
}

func (c *contractRun) pick(s []string) string { return s[c.rng.IntN(len(s))] }

// change makes one random change and waits until the Manager is idle.
func (c *contractRun) change() string {
	switch c.rng.IntN(12) {
	case 9:
		// The pod finishes, or starts terminating, as the kubelet or a user would.
		name := c.pick(c.pods)
		cur, _ := c.cache.Pod(ns, name)
		if cur == nil {
			return "no pod " + name
		}
		leaving := cur.DeepCopy()
		if c.rng.IntN(2) == 0 {
			leaving.Status.Phase = v1.PodSucceeded
		} else {
			terminating()(leaving)
		}
		c.setPod(leaving)
		return "pod " + name + " leaving"
	case 10, 11:
		// A change the informer's store has and its handler has not delivered yet: only the
		// recheck right before deleting sees it (and the next update of the same object).
		if c.rng.IntN(2) == 0 {
			node := c.pick(c.nodes)
			c.cache.SetNode(newNode(node, noExecute(c.pick([]string{"a", "b"}), t0)))
			return "node " + node + " changed unseen"
		}
		name := c.pick(c.pods)
		cur, _ := c.cache.Pod(ns, name)
		if cur == nil {
			return "no pod " + name
		}
		changed := cur.DeepCopy()
		changed.Spec.Tolerations = []v1.Toleration{tolFor("a", int64(c.rng.IntN(20)))}
		c.cache.SetPod(changed)
		return "pod " + name + " changed unseen"
	case 0, 1:
		node, key := c.pick(c.nodes), c.pick([]string{"a", "b"})
		added := t0
		if c.rng.IntN(2) == 0 {
			added = time.Time{}
		}
		c.setNode(newNode(node, noExecute(key, added)))
		return "taint " + node + " " + key
	case 2:
		node := c.pick(c.nodes)
		c.setNode(newNode(node))
		return "untaint " + node
	case 3:
		node := c.pick(c.nodes)
		c.removeNode(node)
		return "delete node " + node
	case 4, 5:
		name, node := c.pick(c.pods), c.pick(c.nodes)
		var tols []v1.Toleration
		switch c.rng.IntN(3) {
		case 0:
			tols = append(tols, tolFor("a", int64(c.rng.IntN(20))))
		case 1:
			tols = append(tols, tolForever("b"))
		}
		c.setPod(newPod(name, node, withUID(fmt.Sprintf("%s-%d", name, c.rng.IntN(3))), withTolerations(tols...)))
		return "pod " + name + " on " + node
	case 6:
		name := c.pick(c.pods)
		c.removePod(name)
		return "delete pod " + name
	case 7:
		c.mu.Lock()
		c.mode = deleterMode(c.rng.IntN(3))
		mode := c.mode
		c.mu.Unlock()
		return fmt.Sprintf("deleter mode %d", mode)
	}
	d := time.Duration(c.rng.IntN(6000)) * time.Millisecond
	c.clk.Step(d)
	if c.rng.IntN(3) == 0 {
		c.releaseBlocked()
	}
	return "step " + d.String()
}

func (c *contractRun) releaseBlocked() {
	c.mu.Lock()
	close(c.release)
	c.release = make(chan struct{})
	c.mu.Unlock()
}

func (c *contractRun) run(steps int) {
	var trace []string
	for range steps {
		trace = append(trace, c.change())
		c.wait()
		c.check(trace)
	}
	// Let everything end: deletes succeed, blocked calls return, retries come due.
	c.mu.Lock()
	c.mode = deleteSucceeds
	c.mu.Unlock()
	c.releaseBlocked()
	for range 3 {
		c.step(time.Minute)
	}
	c.check(append(trace, "end"))
	if c.t.Failed() {
		c.t.Logf("steps: %q", trace)
	}
}

// check compares the reports with the Manager's state, which must be idle.
func (c *contractRun) check(trace []string) {
	c.t.Helper()
	pending := map[string]bool{}
	for _, p := range c.m.Pending() {
		pending[p.Target.Name] = true
	}
	c.mu.Lock()
	blocked := maps(c.blocked)
	c.mu.Unlock()
	for _, name := range c.pods {
		events := c.eventsOfPod(name)
		open, err := evictiontest.CheckContract(events, blocked[name])
		if err != nil {
			c.t.Fatalf("after %q: %s: %v; reports %v", trace[len(trace)-1], name, err, events)
		}
		if want := pending[name] || blocked[name]; open != want {
			c.t.Fatalf("after %q: %s: the reports leave the eviction open=%v, want %v (pending %v, in a Deleter call %v); reports %v; steps %q",
				trace[len(trace)-1], name, open, want, pending[name], blocked[name], events, trace)
		}
	}
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *contractRun) eventsOfPod(name string) []evictiontest.Event {
	var out []evictiontest.Event
	for _, e := range c.obs.Events() {
		if e.Pod.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestCancelWhileRetryClaimed: a failed eviction's retry is claimed by a delete worker while
// an update that cancels the eviction is being decided (it holds the pod's lock). The
// cancellation reports Cancelled, and the claimed retry then does nothing: no Started, no
// second report.
func TestCancelWhileRetryClaimed(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		clk := newFakeClock()
		cache := &stallingCache{Cache: &evictiontest.Cache{}, stalled: make(chan struct{}), release: make(chan struct{})}
		obs, del := &evictiontest.Observer{}, &evictiontest.Deleter{}
		calls := 0
		del.Func = func(context.Context, eviction.PodRef) error { calls++; return errAPI }
		m, err := newManager(t, del, cache, eviction.Options{Clock: clk, Observer: obs, Backoff: exactBackoff})
		if err != nil {
			t.Fatal(err)
		}
		stop := startManager(t, m)
		defer stop()
		n1, web := newNode("n1", noExecute("a", t0)), newPod("web", "n1")
		cache.SetNode(n1)
		cache.SetPod(web)
		m.NodeUpdated(nil, n1)
		synctest.Wait() // attempt 1 failed; its retry is due at +1s

		cache.mu.Lock()
		cache.armed = true
		cache.mu.Unlock()
		tolerant := newPod("web", "n1", withTolerations(tolForever("a")))
		cache.SetPod(tolerant)
		m.PodUpdated(web, tolerant)
		<-cache.stalled // the update's worker holds the pod's lock
		clk.Step(exactBackoff.Delay(1))
		synctest.Wait() // the retry is claimed and waits for the pod's lock
		close(cache.release)
		synctest.Wait()

		var got []string
		for _, e := range obs.Events() {
			got = append(got, eventString(e))
		}
		want := []string{
			"Scheduled default/web at +0s",
			"Started default/web (attempt 1)",
			"Failed default/web (attempt 1): eviction: delete pod default/web: apiserver unavailable",
			"Cancelled default/web: Tolerated",
		}
		if !slices.Equal(got, want) {
			t.Errorf("got events\n\t%q\nwant\n\t%q", got, want)
		}
		if calls != 1 || len(m.Pending()) != 0 {
			t.Errorf("got %d Deleter calls and Pending %v, want 1 and none", calls, m.Pending())
		}
	})
}
