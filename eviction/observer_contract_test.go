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
// steps, and a Deleter that succeeds, fails or blocks, that the Observer's reports close
// every eviction: whenever the Manager is idle, the evictions the reports leave open are
// exactly those pending or in a Deleter call, and each Started is followed by exactly one
// of Succeeded, Failed or Cancelled. Each seed is reproducible: go test -run
// 'TestObserverContract/seed_N$'.
func TestObserverContract(t *testing.T) {
	for seed := range 150 {
		synctestRun(t, fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			newContractRun(t, uint64(seed)).run(60)
		})
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

func newContractRun(t *testing.T, seed uint64) *contractRun {
	c := &contractRun{
		harness: run(t, eviction.Options{Backoff: exactBackoff}),
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
	switch c.rng.IntN(9) {
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
		pending[p.Pod.Name] = true
	}
	c.mu.Lock()
	blocked := maps(c.blocked)
	c.mu.Unlock()
	for _, name := range c.pods {
		events := c.eventsOfKind(name)
		if open, want := isOpen(events), pending[name] || blocked[name]; open != want {
			c.t.Fatalf("after %q: %s: the reports leave the eviction open=%v, want %v (pending %v, in a Deleter call %v); reports %v",
				trace[len(trace)-1], name, open, want, pending[name], blocked[name], events)
		}
		if err := attemptsClosed(events, blocked[name]); err != nil {
			c.t.Fatalf("after %q: %s: %v; reports %v", trace[len(trace)-1], name, err, events)
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

func (c *contractRun) eventsOfKind(name string) []evictiontest.Kind {
	var out []evictiontest.Kind
	for _, e := range c.obs.Events() {
		if e.Pod.Name == name {
			out = append(out, e.Kind)
		}
	}
	return out
}

// isOpen replays the reports of one pod: Scheduled, Started and Failed leave its eviction
// open; Succeeded, Cancelled and Skipped close it.
func isOpen(events []evictiontest.Kind) bool {
	open := false
	for _, k := range events {
		switch k {
		case evictiontest.Scheduled, evictiontest.Started, evictiontest.Failed:
			open = true
		default:
			open = false
		}
	}
	return open
}

// attemptsClosed checks that each Started is followed by exactly one of Succeeded, Failed or
// Cancelled before the next Started; the last may still run when running is true.
func attemptsClosed(events []evictiontest.Kind, running bool) error {
	started := -1
	for i, k := range events {
		switch k {
		case evictiontest.Started:
			if started >= 0 {
				return fmt.Errorf("Started at %d follows the Started at %d with no outcome", i, started)
			}
			started = i
		case evictiontest.Succeeded, evictiontest.Failed, evictiontest.Cancelled:
			started = -1
		}
	}
	if started >= 0 && !running {
		return fmt.Errorf("the Started at %d has no outcome", started)
	}
	return nil
}

// TestCancelWhileRetryClaimed: a failed eviction's retry is claimed by a delete worker while
// an update that cancels the eviction is being decided (it holds the pod's lock). The
// cancellation reports Cancelled, and the claimed retry then does nothing: no Started, no
// second report.
func TestCancelWhileRetryClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		cache := &stallingCache{Cache: &evictiontest.Cache{}, stalled: make(chan struct{}), release: make(chan struct{})}
		obs, del := &evictiontest.Observer{}, &evictiontest.Deleter{}
		calls := 0
		del.Func = func(context.Context, eviction.PodRef) error { calls++; return errAPI }
		m, err := eviction.New(del, cache, eviction.Options{Clock: clk, Observer: obs, Backoff: exactBackoff})
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
