package eviction_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestBurstOfNodeUpdates feeds several updates of one node at once: the outcome is the last
// update's, whether the updates coalesce (fed before Run) or are processed one by one.
func TestBurstOfNodeUpdates(t *testing.T) {
	// The pod tolerates a for 300 s, c for ever, and not b.
	tols := withTolerations(tolFor("a", 300), tolForever("c"))
	for _, tc := range []struct {
		name   string
		burst  [][]v1.Taint
		live   bool // fed while running; else before Run
		wantAt string
		want   []string // deletions after an hour
	}{
		{
			name:  "added, removed, added untolerated",
			burst: [][]v1.Taint{{noExecute("a", t0)}, nil, {noExecute("b", t0)}},
			want:  []string{"web@+0s"},
		},
		{
			name:  "added, removed, added tolerated forever",
			burst: [][]v1.Taint{{noExecute("a", t0)}, nil, {noExecute("c", t0)}},
		},
		{
			name:  "untolerated, removed, tolerated forever",
			burst: [][]v1.Taint{{noExecute("b", t0)}, nil, {noExecute("c", t0)}},
		},
		{
			name:   "untolerated, removed, tolerated for a while",
			burst:  [][]v1.Taint{{noExecute("b", t0)}, nil, {noExecute("a", t0)}},
			wantAt: "web@+5m0s",
			want:   []string{"web@+5m0s"},
		},
		{
			// Fed live, every step of these is either not due or the last one.
			name:  "live: added, removed, added untolerated",
			live:  true,
			burst: [][]v1.Taint{{noExecute("a", t0)}, nil, {noExecute("b", t0)}},
			want:  []string{"web@+0s"},
		},
		{
			name:  "live: added, removed, added tolerated forever",
			live:  true,
			burst: [][]v1.Taint{{noExecute("a", t0)}, nil, {noExecute("c", t0)}},
		},
		{
			name:   "live: tolerated forever, added for a while, removed, added again",
			live:   true,
			burst:  [][]v1.Taint{{noExecute("c", t0)}, {noExecute("c", t0), noExecute("a", t0)}, nil, {noExecute("a", t0)}},
			wantAt: "web@+5m0s",
			want:   []string{"web@+5m0s"},
		},
	} {
		for _, workers := range []int{1, 4} {
			synctestRun(t, fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				h := newHarness(t, eviction.Options{Workers: workers})
				h.setPod(newPod("web", "n1", tols))
				h.setNode(newNode("n1"))
				if tc.live {
					h.start()
				}
				for _, taints := range tc.burst {
					h.setNode(newNode("n1", taints...))
				}
				if !tc.live {
					h.start()
				}
				h.wait()
				if tc.wantAt != "" {
					h.expectPending(tc.wantAt)
				} else {
					h.expectPending()
				}
				for _, d := range []time.Duration{5 * time.Minute, time.Hour} {
					h.stepTo(d)
				}
				h.expectDeleted(tc.want...)
				if h.m.Backlog() != 0 {
					t.Errorf("got Backlog %d, want 0", h.m.Backlog())
				}
			})
		}
	}
}

// recordingCache is a Cache that records the lookups it serves, and can hold the listing of
// one node until released.
type recordingCache struct {
	*evictiontest.Cache

	mu      sync.Mutex
	lookups []string
	hold    string        // PodsOnNode(hold) blocks until release is closed
	release chan struct{} // made in the bubble
}

func (c *recordingCache) record(s string) {
	c.mu.Lock()
	c.lookups = append(c.lookups, s)
	c.mu.Unlock()
}

func (c *recordingCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	c.record("PodsOnNode " + node)
	c.mu.Lock()
	hold, release := c.hold, c.release
	c.mu.Unlock()
	if node == hold {
		<-release
	}
	return c.Cache.PodsOnNode(node)
}

func (c *recordingCache) Pod(namespace, name string) (*v1.Pod, error) {
	c.record("Pod " + namespace + "/" + name)
	return c.Cache.Pod(namespace, name)
}

func (c *recordingCache) recorded() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lookups)
}

// TestNodeUpdatesGoFirst checks that a node's update is processed before updates of its
// pods that were queued with it, or even before it.
func TestNodeUpdatesGoFirst(t *testing.T) {
	for _, workers := range []int{1, 4} {
		synctestRun(t, fmt.Sprintf("queued before Run/workers=%d", workers), func(t *testing.T) {
			cache := &recordingCache{Cache: &evictiontest.Cache{}}
			del := &evictiontest.Deleter{}
			obs := &evictiontest.Observer{}
			m, err := newManager(t, del, cache, eviction.Options{Workers: workers, Observer: obs, Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			web := newPod("web", "n1")
			api := newPod("api", "n1", withTolerations(tolFor("a", 300)))
			n1 := newNode("n1", noExecute("a", t0))
			cache.SetPod(web)
			cache.SetPod(api)
			cache.SetNode(n1)
			// The pods' adds come before the node's.
			m.PodUpdated(nil, web)
			m.PodUpdated(nil, api)
			m.NodeUpdated(nil, n1)
			if got := m.Backlog(); got != 3 {
				t.Errorf("got Backlog %d before Run, want 3", got)
			}
			stop := startManager(t, m)
			defer stop()
			lookups := cache.recorded()
			if len(lookups) == 0 || lookups[0] != "PodsOnNode n1" {
				t.Errorf("got lookups %q, want the node's listing first", lookups)
			}
			if got := del.Calls(); len(got) != 1 || got[0].Name != "web" {
				t.Errorf("got Deleter calls %v, want web only", got)
			}
			if p := m.Pending(); len(p) != 1 || p[0].Target.Name != "api" || !p[0].At.Equal(t0.Add(5*time.Minute)) {
				t.Errorf("got Pending %v, want api at +5m", p)
			}
			// One schedule for api, however many updates carried it. (web's add may be
			// processed after its eviction: then it is scheduled again, and skipped.)
			var apiScheduled int
			for _, e := range obs.Of(evictiontest.Scheduled) {
				if e.Pod.Name == "api" {
					apiScheduled++
				}
			}
			if apiScheduled != 1 {
				t.Errorf("got %d Scheduled events for api, want 1", apiScheduled)
			}
		})
	}

	synctestRun(t, "queued while the worker is busy", func(t *testing.T) {
		// One worker, held while it lists the pods of another node. Meanwhile the pod
		// comes to tolerate the taint for ever, and then the taint is removed. Processing
		// the node first cancels with NotTainted; the pod first, with Tolerated.
		cache := &recordingCache{Cache: &evictiontest.Cache{}, hold: "busy", release: make(chan struct{})}
		obs := &evictiontest.Observer{}
		m, err := newManager(t, &evictiontest.Deleter{}, cache, eviction.Options{Workers: 1, Observer: obs, Clock: newFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		stop := startManager(t, m)
		defer stop()
		web := newPod("web", "n1", withTolerations(tolFor("a", 300)))
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetPod(web)
		m.PodUpdated(nil, web)
		cache.SetNode(n1)
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		if got := m.Pending(); len(got) != 1 {
			t.Fatalf("got Pending %v, want web", got)
		}

		busy := newNode("busy", noExecute("a", t0))
		cache.SetNode(busy)
		m.NodeUpdated(nil, busy)
		synctest.Wait() // the worker is held in PodsOnNode("busy")

		web2 := newPod("web", "n1", withTolerations(tolForever("a")))
		cache.SetPod(web2)
		m.PodUpdated(web, web2)
		n1Clean := newNode("n1")
		cache.SetNode(n1Clean)
		m.NodeUpdated(n1, n1Clean)
		synctest.Wait()
		if got := m.Backlog(); got != 2 {
			t.Errorf("got Backlog %d while the worker is held, want 2", got)
		}
		close(cache.release)
		synctest.Wait()
		cancelled := obs.Of(evictiontest.Cancelled)
		if len(cancelled) != 1 || cancelled[0].Reason != eviction.ReasonNotTainted {
			t.Errorf("got Cancelled %v, want one with NotTainted (the node's update first)", cancelled)
		}
	})
}

// TestWorkersOption checks the Workers and DeleteWorkers options.
func TestWorkersOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts eviction.Options
	}{
		{"negative Workers", eviction.Options{Workers: -1}},
		{"negative DeleteWorkers", eviction.Options{ActWorkers: -2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := eviction.New(&evictiontest.Deleter{}, &evictiontest.Cache{}, tc.opts)
			if err == nil || m != nil || !strings.HasPrefix(err.Error(), "eviction: ") {
				t.Errorf("New: got (%v, %v), want nil and an error prefixed \"eviction: \"", m, err)
			}
		})
	}

	for _, workers := range []int{1, 2, 3, 8, 16} {
		synctestRun(t, fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			h := run(t, eviction.Options{Workers: workers, ActWorkers: workers})
			h.removeOnDelete()
			var want []string
			for i := range 20 {
				node := fmt.Sprintf("n%d", i)
				h.setPod(newPod("p"+node, node))
				h.setPod(newPod("q"+node, node, withTolerations(tolFor("a", int64(i+1)))))
				h.setNode(newNode(node, noExecute("a", t0)))
				want = append(want, "p"+node+"@+0s", "q"+node+"@"+rel(t0.Add(time.Duration(i+1)*time.Second)))
			}
			h.wait()
			for i := range 20 {
				h.stepTo(time.Duration(i+1) * time.Second)
			}
			h.expectDeleted(want...)
		})
	}
}

// TestUpdatesCoalesce checks that queued updates of one object cost one piece of work, done
// with the newest state.
func TestUpdatesCoalesce(t *testing.T) {
	synctestRun(t, "before Run", func(t *testing.T) {
		h := newHarness(t, eviction.Options{Workers: 2})
		h.setNode(newNode("n1"))
		h.setPod(newPod("web", "n1"))
		for i := range 50 {
			h.setNode(newNode("n1", noExecute(fmt.Sprintf("t%d", i), t0)))
			h.setPod(newPod("web", "n1", withTolerations(tolFor(fmt.Sprintf("t%d", i), int64(60+i)))))
		}
		if got := h.m.Backlog(); got != 2 {
			t.Errorf("got Backlog %d, want 2: one node and one pod", got)
		}
		h.start()
		if got := h.m.Backlog(); got != 0 {
			t.Errorf("got Backlog %d after Run, want 0", got)
		}
		// The last state: taint t49, tolerated for 109 s.
		h.expectPending("web@+1m49s")
		if got := h.obs.Of(evictiontest.Scheduled); len(got) != 1 {
			t.Errorf("got Scheduled %v, want one", got)
		}
	})
}

// TestResyncKeepsQueuedUpdate checks that the retry of a failed listing does not replace an
// update of the same node queued meanwhile: the update carries taints the retry does not.
func TestResyncKeepsQueuedUpdate(t *testing.T) {
	synctestRun(t, "one worker", func(t *testing.T) {
		cache := &recordingCache{Cache: &evictiontest.Cache{}, hold: "busy", release: make(chan struct{})}
		clk := newFakeClock()
		m, err := newManager(t, &evictiontest.Deleter{}, cache, eviction.Options{Workers: 1, Clock: clk, Backoff: exactBackoff})
		if err != nil {
			t.Fatal(err)
		}
		defer startManager(t, m)()
		web := newPod("web", "n1", withTolerations(tolFor("a", 60), tolFor("b", 30)))
		cache.SetPod(web)
		m.PodUpdated(nil, web)
		// The first listing of n1 fails: a resync is due in 1 s.
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetNode(n1)
		cache.SetError(errAPI)
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		cache.SetError(nil)
		// Hold the worker, queue an update of n1 that adds taint b, then let the resync come.
		busy := newNode("busy", noExecute("a", t0))
		cache.SetNode(busy)
		m.NodeUpdated(nil, busy)
		synctest.Wait()
		n1b := newNode("n1", noExecute("a", t0), noExecute("b", t0))
		cache.SetNode(n1b)
		m.NodeUpdated(n1, n1b)
		clk.Step(exactBackoff.Base)
		synctest.Wait()
		close(cache.release)
		synctest.Wait()
		if p := m.Pending(); len(p) != 1 || !p[0].At.Equal(t0.Add(30*time.Second)) {
			t.Errorf("got Pending %v, want web at +30s (taint b's toleration)", p)
		}
	})
}

// TestManyUpdates queues more updates than the shards' queues keep memory for, twice.
func TestManyUpdates(t *testing.T) {
	synctestRun(t, "1500 pods, twice", func(t *testing.T) {
		h := newHarness(t, eviction.Options{Workers: 1})
		h.setNode(newNode("n1", noExecute("a", t0)))
		for round := range 2 {
			for i := range 1500 {
				h.setPod(newPod(fmt.Sprintf("p%04d", i), "n1", withTolerations(tolFor("a", int64(60*(round+1))))))
			}
			if round == 0 {
				h.start()
			}
			h.wait()
			p := h.m.Pending()
			if len(p) != 1500 || !p[0].At.Equal(t0.Add(time.Duration(round+1)*time.Minute)) {
				t.Fatalf("round %d: got %d pending, first at %v; want 1500 at +%dm", round, len(p), p[0].At, round+1)
			}
		}
	})
}
