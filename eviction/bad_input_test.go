package eviction_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/tolerations"
)

// TestBadInput feeds the Manager what it should survive without doing anything wrong.
func TestBadInput(t *testing.T) {
	synctestRun(t, "nil updates do nothing", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		h.setPod(newPod("web", "n1", withTolerations(tolFor("a", 300))))
		h.wait()
		h.obs.Reset()
		h.m.NodeUpdated(nil, nil)
		h.m.PodUpdated(nil, nil)
		if got := h.m.Backlog(); got != 0 {
			t.Errorf("got Backlog %d after nil updates, want 0", got)
		}
		h.wait()
		h.expectPending("web@+5m0s")
		if got := h.obs.Events(); len(got) != 0 {
			t.Errorf("got events %v, want none", got)
		}
	})

	synctestRun(t, "pod with no node is not scheduled", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("", noExecute("a", t0))) // not even a node named ""
		h.setPod(newPod("web", ""))
		h.m.PodUpdated(nil, newPod("api", ""))
		h.wait()
		h.expectPending()
		h.step(time.Hour)
		h.expectDeleted()
	})

	synctestRun(t, "update that renames a pod is a delete and an add", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", noExecute("a", t0)))
		old := newPod("web", "n1", withTolerations(tolFor("a", 60)))
		h.setPod(old)
		h.wait()
		renamed := newPod("api", "n1", withTolerations(tolFor("a", 120)))
		h.cache.DeletePod(ns, "web")
		h.cache.SetPod(renamed)
		h.m.PodUpdated(old, renamed)
		h.wait()
		h.expectPending("api@+2m0s")
		h.expectEvents("web", "Scheduled default/web at +1m0s", "Cancelled default/web: TargetDeleted")
	})

	synctestRunManager(t, "update with no change does nothing", func(t *testing.T) {
		h := run(t, eviction.Options{})
		n1 := newNode("n1", noExecute("a", t0))
		web := newPod("web", "n1", withTolerations(tolFor("a", 300)))
		h.setNode(n1)
		h.setPod(web)
		h.wait()
		h.obs.Reset()
		// Status and label changes are not queued, as in kube.
		relabelled := n1.DeepCopy()
		relabelled.Labels = map[string]string{"zone": "b"}
		relabelled.Spec.Taints = append(relabelled.Spec.Taints, noSchedule("other"))
		h.m.NodeUpdated(n1, relabelled)
		ready := web.DeepCopy()
		ready.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		h.m.PodUpdated(web, ready)
		if got := h.m.Backlog(); got != 0 {
			t.Errorf("got Backlog %d, want 0: nothing relevant changed", got)
		}
	})

	for _, tc := range []struct {
		name string
		tol  v1.Toleration
	}{
		{"unknown operator", v1.Toleration{Key: "a", Operator: "Sometimes", Effect: v1.TaintEffectNoExecute}},
		{"Lt without ComparisonOperators", v1.Toleration{Key: "a", Operator: v1.TolerationOpLt, Value: "5", Effect: v1.TaintEffectNoExecute}},
		{"wrong effect", v1.Toleration{Key: "a", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
		{"wrong value", v1.Toleration{Key: "a", Operator: v1.TolerationOpEqual, Value: "false", Effect: v1.TaintEffectNoExecute}},
		{"negative tolerationSeconds", tolFor("a", -10)},
		{"zero tolerationSeconds", tolFor("a", 0)},
	} {
		synctestRun(t, tc.name+" evicts now", func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("n1", noExecute("a", t0)))
			h.setPod(newPod("web", "n1", withTolerations(tc.tol)))
			h.wait()
			h.expectDeleted("web@+0s")
		})
	}

	synctestRun(t, "Gt with ComparisonOperators tolerates", func(t *testing.T) {
		h := run(t, eviction.Options{Tolerations: tolerations.Options{ComparisonOperators: true}})
		taint := v1.Taint{Key: "level", Value: "7", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}
		h.setNode(newNode("n1", taint))
		h.setPod(newPod("web", "n1", withTolerations(v1.Toleration{Key: "level", Operator: v1.TolerationOpGt, Value: "5", Effect: v1.TaintEffectNoExecute})))
		h.setPod(newPod("api", "n1", withTolerations(v1.Toleration{Key: "level", Operator: v1.TolerationOpGt, Value: "9", Effect: v1.TaintEffectNoExecute})))
		h.wait()
		h.step(time.Hour)
		h.expectDeleted("api@+0s")
	})

	synctestRun(t, "NoExecute taint with an empty key", func(t *testing.T) {
		// Kube rejects it; it must still match only tolerations that match every key.
		h := run(t, eviction.Options{})
		h.setNode(newNode("n1", v1.Taint{Effect: v1.TaintEffectNoExecute}))
		h.setPod(newPod("web", "n1"))
		h.setPod(newPod("api", "n1", withTolerations(v1.Toleration{Operator: v1.TolerationOpExists})))
		h.wait()
		h.step(time.Hour)
		h.expectDeleted("web@+0s")
	})
}

// TestEventualConsistency is kube's test of the same name: pod and node updates arrive in
// either order; a pod on a node the Manager has not seen is not scheduled until the node's
// add arrives.
func TestEventualConsistency(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodeFirst   bool
		tolerations []v1.Toleration
		want        []string
	}{
		{"pod before node", false, nil, []string{"web@+1m0s"}},
		{"node before pod", true, nil, []string{"web@+1m0s"}},
		{"pod before node, tolerated for 10m", false, []v1.Toleration{tolFor("a", 600)}, []string{"web@+10m0s"}},
		{"node before pod, tolerated for 10m", true, []v1.Toleration{tolFor("a", 600)}, []string{"web@+10m0s"}},
		{"pod before node, tolerated forever", false, []v1.Toleration{tolForever("a")}, nil},
		{"node before pod, tolerated forever", true, []v1.Toleration{tolForever("a")}, nil},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			pod := newPod("web", "n1", withTolerations(tc.tolerations...))
			node := newNode("n1", noExecute("a", t0))
			if tc.nodeFirst {
				h.setNode(node)
			} else {
				h.setPod(pod)
			}
			h.wait()
			if tc.nodeFirst {
				h.expectPending()
			} else {
				// The pod's node is not known yet: nothing is scheduled, nothing deleted.
				h.expectPending()
				h.expectDeleted()
			}
			h.step(time.Minute)
			if tc.nodeFirst {
				h.setPod(pod)
			} else {
				h.setNode(node)
			}
			h.wait()
			if len(tc.want) == 1 && tc.want[0] == "web@+10m0s" {
				h.stepTo(10*time.Minute - time.Nanosecond)
				h.expectDeleted()
				h.stepTo(10 * time.Minute)
			}
			h.stepTo(time.Hour)
			h.expectDeleted(tc.want...)
		})
	}
}

// TestNewRejects checks that New refuses what cannot work, with an error and no Manager.
func TestNewRejects(t *testing.T) {
	del, cache := &evictiontest.Deleter{}, &evictiontest.Cache{}
	for _, tc := range []struct {
		name    string
		deleter eviction.Deleter
		cache   eviction.Cache
		opts    eviction.Options
	}{
		{"nil Cache", del, nil, eviction.Options{}},
		{"nil Deleter without DryRun", nil, cache, eviction.Options{}},
		{"negative Backoff.Base", del, cache, eviction.Options{Backoff: eviction.Backoff{Base: -time.Second}}},
		{"negative Backoff.Cap", del, cache, eviction.Options{Backoff: eviction.Backoff{Cap: -time.Second}}},
		{"Jitter over 1", del, cache, eviction.Options{Backoff: eviction.Backoff{Jitter: 1.5}}},
		{"negative Workers", del, cache, eviction.Options{Workers: -1}},
		{"negative DeleteWorkers", del, cache, eviction.Options{ActWorkers: -1}},
		{"unknown DeadlineSource", del, cache, eviction.Options{DeadlineSource: eviction.FromObservation + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := eviction.New(tc.deleter, tc.cache, tc.opts)
			if err == nil || m != nil {
				t.Fatalf("New: got (%v, %v), want nil and an error", m, err)
			}
			if !strings.HasPrefix(err.Error(), "eviction: ") {
				t.Errorf("got error %q, want the prefix \"eviction: \"", err)
			}
		})
	}

	t.Run("nil Deleter with DryRun", func(t *testing.T) {
		if _, err := eviction.New(nil, cache, eviction.Options{DryRun: true}); err != nil {
			t.Errorf("New: got %v, want no error", err)
		}
	})
}

// TestRunTwice checks that a Manager runs once.
func TestRunTwice(t *testing.T) {
	synctestRun(t, "while running and after", func(t *testing.T) {
		h := run(t, eviction.Options{})
		if err := h.m.Run(context.Background()); !errors.Is(err, eviction.ErrRunTwice) {
			t.Errorf("second Run while running: got %v, want ErrRunTwice", err)
		}
		h.stop()
		if err := h.m.Run(context.Background()); !errors.Is(err, eviction.ErrRunTwice) {
			t.Errorf("Run after stopping: got %v, want ErrRunTwice", err)
		}
	})

	synctestRun(t, "Run with a cancelled context returns at once", func(t *testing.T) {
		m, err := newManager(t, &evictiontest.Deleter{}, &evictiontest.Cache{}, eviction.Options{Clock: newFakeClock()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := m.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		synctest.Wait()
	})
}

// oddCache wraps a Cache: PodsOnNode also returns nil entries, pods of other nodes and, for
// stale pods, an older copy of the pod; Node can be made to fail.
type oddCache struct {
	*evictiontest.Cache
	stale   map[string]*v1.Pod // returned by PodsOnNode instead of the current pod
	nodeErr error
}

func (c *oddCache) PodsOnNode(node string) ([]*v1.Pod, error) {
	pods, err := c.Cache.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	for i, p := range pods {
		if s := c.stale[p.Name]; s != nil {
			pods[i] = s
		}
	}
	return append(pods, nil, newPod("elsewhere", "n9")), nil
}

func (c *oddCache) Node(name string) (*v1.Node, error) {
	if c.nodeErr != nil {
		return nil, c.nodeErr
	}
	return c.Cache.Node(name)
}

// TestOddCache feeds the Manager a Cache that does what it should not.
func TestOddCache(t *testing.T) {
	type odd struct {
		cache *oddCache
		del   *evictiontest.Deleter
		obs   *evictiontest.Observer
		clk   *testclock.FakeClock
		m     manager
	}
	newOdd := func(t *testing.T) odd {
		o := odd{
			cache: &oddCache{Cache: &evictiontest.Cache{}, stale: map[string]*v1.Pod{}},
			del:   &evictiontest.Deleter{},
			obs:   &evictiontest.Observer{},
			clk:   newFakeClock(),
		}
		m, err := newManager(t, o.del, o.cache, eviction.Options{Clock: o.clk, Observer: o.obs, Backoff: exactBackoff})
		if err != nil {
			t.Fatal(err)
		}
		o.m = m
		return o
	}

	synctestRun(t, "nil pods and pods of other nodes in a listing are ignored", func(t *testing.T) {
		o := newOdd(t)
		cache, del, m := o.cache, o.del, o.m
		defer startManager(t, m)()
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetPod(newPod("web", "n1", withTolerations(tolFor("a", 60))))
		cache.SetNode(n1)
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		if p := m.Pending(); len(p) != 1 || p[0].Target.Name != "web" {
			t.Errorf("got Pending %v, want web only", p)
		}
		if del.Count() != 0 {
			t.Errorf("got Deleter calls %v, want none", del.Calls())
		}
	})

	synctestRun(t, "a stale copy in a listing does not override the current pod", func(t *testing.T) {
		o := newOdd(t)
		cache, del, m := o.cache, o.del, o.m
		defer startManager(t, m)()
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetNode(n1)
		m.NodeUpdated(nil, n1)
		web := newPod("web", "n1", withUID("web-2"), withTolerations(tolFor("a", 60), tolForever("b")))
		cache.SetPod(web)
		m.PodUpdated(nil, web)
		synctest.Wait()
		// The listing still has the pod's previous incarnation, which tolerates nothing.
		cache.stale["web"] = newPod("web", "n1", withUID("web-1"))
		n1b := newNode("n1", noExecute("a", t0), noExecute("b", time.Time{}))
		cache.SetNode(n1b)
		m.NodeUpdated(n1, n1b)
		synctest.Wait()
		if del.Count() != 0 {
			t.Errorf("got Deleter calls %v, want none: web-1 is gone", del.Calls())
		}
		if p := m.Pending(); len(p) != 1 || p[0].Target.UID != "web-2" || !p[0].At.Equal(t0.Add(time.Minute)) {
			t.Errorf("got Pending %v, want web-2 still scheduled at +1m", p)
		}
	})

	synctestRun(t, "node lookup failing at the recheck is retried", func(t *testing.T) {
		o := newOdd(t)
		cache, del, obs, m := o.cache, o.del, o.obs, o.m
		defer startManager(t, m)()
		n1 := newNode("n1", noExecute("a", t0))
		cache.SetNode(n1)
		cache.SetPod(newPod("web", "n1"))
		cache.nodeErr = errors.New("node lister broken")
		m.NodeUpdated(nil, n1)
		synctest.Wait()
		failed := obs.Of(evictiontest.Failed)
		if len(failed) != 1 || !strings.HasPrefix(failed[0].Err.Error(), "engine: recheck holder n1: ") {
			t.Fatalf("got Failed %v, want the node recheck failing", failed)
		}
		if del.Count() != 0 {
			t.Fatalf("got Deleter calls %v before the recheck succeeded", del.Calls())
		}
		cache.nodeErr = nil
		o.clk.Step(exactBackoff.Base)
		synctest.Wait()
		if c := del.Calls(); len(c) != 1 || c[0].UID != "web-1" {
			t.Errorf("got Deleter calls %v, want web-1 once the recheck works", c)
		}
	})
}
