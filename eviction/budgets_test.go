package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// The budgets of issue 30 on both instantiations (Confirm, whose census is the Manager's,
// on the Manager): in flight, per namespace, per owner, loop damping, the brake's floors
// and full disruption, and the hold until an operator confirms.

// inNamespace puts the pod in namespace.
func inNamespace(namespace string) podOption { return func(p *v1.Pod) { p.Namespace = namespace } }

// ownedBy makes the pod's controller the kind and name given; a ReplicaSet with hash is
// one of a Deployment's, its pod labelled with the pod-template-hash.
func ownedBy(kind, name, hash string) podOption {
	return func(p *v1.Pod) {
		api := "apps/v1"
		if kind == "Job" {
			api = "batch/v1"
		}
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, UID: types.UID("owner-" + name), Controller: &yes}}
		if hash != "" {
			p.Labels = map[string]string{"pod-template-hash": hash}
		}
	}
}

// created gives the pod its creation time.
func created(at time.Time) podOption {
	return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
}

// terminateOnDelete makes the Deleter mark the pod Terminating, as the API server does for
// a pod with a grace period (its deletionTimestamp the end of the grace period, 30 s by
// default), and tell the Manager; gone finishes it, as the kubelet would.
func (h *harness) terminateOnDelete() {
	h.onDelete(func(_ context.Context, ref eviction.PodRef) error {
		cur, _ := h.cache.Pod(ref.Namespace, ref.Name)
		if cur == nil || cur.UID != ref.UID {
			return eviction.ErrPodGone
		}
		if cur.DeletionTimestamp == nil {
			p := cur.DeepCopy()
			grace := int64(30)
			if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = *g
			}
			end := metav1.NewTime(h.clk.Now().Add(time.Duration(grace) * time.Second))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &end, &grace
			h.setPod(p)
		}
		return nil
	})
}

// removeAnyOnDelete makes the Deleter remove the pod, of whatever namespace, and tell the
// Manager.
func (h *harness) removeAnyOnDelete() {
	h.onDelete(func(_ context.Context, ref eviction.PodRef) error {
		if cur, _ := h.cache.Pod(ref.Namespace, ref.Name); cur == nil || cur.UID != ref.UID {
			return eviction.ErrPodGone
		}
		h.gone(ref.Namespace, ref.Name)
		return nil
	})
}

// gone removes the pod namespace/name from the cache and tells the Manager.
func (h *harness) gone(namespace, name string) {
	if old := h.cache.DeletePod(namespace, name); old != nil {
		h.m.PodUpdated(old, nil)
	}
}

// until steps the clock a second at a time to t0+d, waiting at each step.
func (h *harness) until(d time.Duration) {
	for h.clk.Now().Before(t0.Add(d)) {
		h.step(time.Second)
	}
}

// delayed returns the pending evictions as "name@+offset reason", earliest first.
func (h *harness) delayed() []string {
	var out []string
	for _, p := range pendingUTC(h.m) {
		out = append(out, fmt.Sprintf("%s@%s %s", p.Target.Name, rel(p.At), p.Delayed))
	}
	return out
}

func (h *harness) expectDelayed(want ...string) {
	h.t.Helper()
	if got := h.delayed(); !slices.Equal(got, want) {
		h.t.Errorf("at %s: got pending %q, want %q", rel(h.clk.Now()), got, want)
	}
}

// TestInFlight: at most Max evictions in flight; a pod that is Terminating counts until it
// is gone, and each that goes lets the next due go, in deadline order.
func TestInFlight(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{InFlight: eviction.InFlight{Max: 2}})
		h.terminateOnDelete()
		h.setNode(newNode("n"))
		for i := range 5 {
			h.setPod(newPod(fmt.Sprint("p", i), "n", withTolerations(tolFor(unreachable, int64(i)))))
		}
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		h.wait()
		h.until(10 * time.Second)
		h.expectDeleted("p0@+0s", "p1@+1s")
		h.expectDelayed("p2@+2s InFlight", "p3@+3s InFlight", "p4@+4s InFlight")
		if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonInFlight); got != 3 {
			t.Errorf("Delayed InFlight reported %d times, want 3", got)
		}
		if got := h.m.Stats().Delayed[eviction.ReasonInFlight]; got != 3 {
			t.Errorf("Stats().Delayed[InFlight] = %d, want 3", got)
		}
		h.gone(ns, "p1") // the kubelet is done with p1: p2 goes
		h.wait()
		h.expectDeleted("p0@+0s", "p1@+1s", "p2@+10s")
		h.step(time.Second)
		h.gone(ns, "p0")
		h.gone(ns, "p2")
		h.wait()
		h.expectDeleted("p0@+0s", "p1@+1s", "p2@+10s", "p3@+11s", "p4@+11s")
		h.expectDelayed()
	})
}

// TestNamespaceLimit: at most 2 evictions of a namespace a minute; the others go as the
// window opens, earliest due first; another namespace is not held.
func TestNamespaceLimit(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{NamespaceLimit: eviction.Window{Max: 2, Per: time.Minute}})
		h.removeAnyOnDelete()
		h.setNode(newNode("n"))
		for i := range 5 {
			h.setPod(newPod(fmt.Sprint("a", i), "n", inNamespace("a"), withTolerations(tolFor(unreachable, int64(i)))))
		}
		h.setPod(newPod("b0", "n", inNamespace("b"), withTolerations(tolFor(unreachable, 2))))
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		h.wait()
		h.until(10 * time.Second)
		h.expectDeleted("a0@+0s", "a1@+1s", "b0@+2s")
		h.expectDelayed("a2@+2s NamespaceLimit", "a3@+3s NamespaceLimit", "a4@+4s NamespaceLimit")
		h.until(3 * time.Minute)
		h.expectDeleted("a0@+0s", "a1@+1s", "b0@+2s", "a2@+1m0s", "a3@+1m1s", "a4@+2m0s")
	})
}

// TestOwnerLimit: at most one eviction of a workload each 30 s: the pods of a Deployment
// (through its ReplicaSets, of two revisions) count as one owner; a StatefulSet's pods and
// a pod without an owner are not held by it.
func TestOwnerLimit(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{OwnerLimit: eviction.Window{Max: 1, Per: 30 * time.Second}})
		h.removeAnyOnDelete()
		h.setNode(newNode("n"))
		h.setPod(newPod("web-aaa-1", "n", ownedBy("ReplicaSet", "web-aaa", "aaa")))
		h.setPod(newPod("web-bbb-1", "n", ownedBy("ReplicaSet", "web-bbb", "bbb"), withTolerations(tolFor(unreachable, 1))))
		h.setPod(newPod("web-bbb-2", "n", ownedBy("ReplicaSet", "web-bbb", "bbb"), withTolerations(tolFor(unreachable, 2))))
		h.setPod(newPod("db-0", "n", ownedBy("StatefulSet", "db", ""), withTolerations(tolFor(unreachable, 1))))
		h.setPod(newPod("db-1", "n", ownedBy("StatefulSet", "db", ""), withTolerations(tolFor(unreachable, 2))))
		h.setPod(newPod("lone", "n"))
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		h.wait()
		h.until(5 * time.Second)
		h.expectDeleted("web-aaa-1@+0s", "db-0@+1s", "lone@+0s")
		h.expectDelayed("web-bbb-1@+1s OwnerLimit", "db-1@+2s OwnerLimit", "web-bbb-2@+2s OwnerLimit")
		h.until(90 * time.Second)
		h.expectDeleted("web-aaa-1@+0s", "db-0@+1s", "lone@+0s", "web-bbb-1@+30s", "db-1@+31s", "web-bbb-2@+1m0s")
	})
}

// TestLoopDamping: a controller re-creates its evicted pod on the tainted node again and
// again; each re-created pod waits its backoff after the last eviction, twice as long each
// time; the workload's pods created before the first eviction go at once.
func TestLoopDamping(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{LoopDamping: eviction.LoopDamping{Window: 10 * time.Minute,
			Backoff: eviction.Backoff{Base: 10 * time.Second, Cap: time.Minute, Jitter: -1}}})
		h.removeAnyOnDelete()
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		ds := ownedBy("DaemonSet", "agent", "")
		h.setPod(newPod("agent-1", "n", ds, created(t0.Add(-time.Hour))))
		h.setPod(newPod("agent-2", "n", ds, created(t0.Add(-time.Hour))))
		h.wait()
		h.expectDeleted("agent-1@+0s", "agent-2@+0s")
		recreate := func(name string) {
			h.step(time.Second)
			h.setPod(newPod(name, "n", ds, created(h.clk.Now())))
			h.wait()
		}
		recreate("agent-3")
		h.expectDelayed("agent-3@+1s Recreated")
		h.until(10 * time.Second)
		recreate("agent-4")
		h.until(30 * time.Second)
		recreate("agent-5")
		h.until(time.Minute + 10*time.Second)
		h.expectDeleted("agent-1@+0s", "agent-2@+0s", "agent-3@+10s", "agent-4@+30s", "agent-5@+1m10s")
		if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonRecreated); got != 3 {
			t.Errorf("Delayed Recreated reported %d times, want 3", got)
		}
	})
}

// TestBrakeFloor: a zone's evictions pause once 2 of its nodes carry the key, whatever
// the fraction; a zone of 3 that loses 1 is not paused.
func TestBrakeFloor(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{Brake: eviction.Brake{ZoneFraction: 0.9, ZoneHolders: 2}})
		h.removeOnDelete()
		h.cluster("a", 10, 0)
		h.taint("a", 0, 1, unreachable)
		h.expectDeleted("pod-a-0@+0s")
		h.step(time.Second)
		h.taint("a", 1, 3, unreachable)
		h.expectDeleted("pod-a-0@+0s")
		h.expectDelayed("pod-a-1@+1s Paused", "pod-a-2@+1s Paused")
		h.taint("a", 2, 3) // 2 of the zone still carry it: paused
		h.expectDeleted("pod-a-0@+0s")
		h.taint("a", 0, 1) // 1: resumed
		h.expectDeleted("pod-a-0@+0s", "pod-a-1@+1s")
	})
}

// TestFullDisruption: a zone all of whose nodes carry the key goes at its own rate, the
// zone's fraction no longer holding it (kube's full disruption); with Pause, it pauses.
func TestFullDisruption(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		synctestEach(t, func(t *testing.T) {
			// One act worker: the two evictions due in the same step ask for a token in
			// deadline order (with more, in whichever order the workers reach the gate).
			h := run(t, eviction.Options{ActWorkers: 1, Brake: eviction.Brake{ZoneFraction: 0.5,
				FullDisruption: eviction.FullDisruption{Rate: eviction.Limit{PerSecond: 0.5, Burst: 1}}}})
			h.removeOnDelete()
			h.cluster("a", 3, 0)
			h.taint("a", 0, 1, unreachable)
			h.step(time.Second)
			h.taint("a", 1, 2, unreachable)
			h.expectDelayed("pod-a-1@+1s Paused")
			h.step(time.Second)
			h.taint("a", 2, 3, unreachable)
			h.until(10 * time.Second)
			h.expectDeleted("pod-a-0@+0s", "pod-a-1@+2s", "pod-a-2@+4s")
		})
	})
	t.Run("pause", func(t *testing.T) {
		synctestEach(t, func(t *testing.T) {
			h := run(t, eviction.Options{Brake: eviction.Brake{FullDisruption: eviction.FullDisruption{Pause: true}}})
			h.removeOnDelete()
			h.cluster("a", 2, 0)
			// Zone b's pods tolerate the taint for a second: both its nodes are counted
			// before anything there falls due.
			h.cluster("b", 2, 1)
			h.taint("a", 0, 1, unreachable)
			h.taint("b", 0, 2, unreachable)
			h.step(time.Second)
			h.expectDeleted("pod-a-0@+0s")
			h.expectDelayed("pod-b-0@+1s Paused", "pod-b-1@+1s Paused")
			h.taint("b", 1, 2)
			h.expectDeleted("pod-a-0@+0s", "pod-b-0@+1s")
		})
	})
}

// TestConfirm: a taint on every node that would evict half the pods is held, each of its
// evictions reported Unconfirmed, until an operator confirms it on a node (that node's pods
// go) or it would evict few enough (the rest go); a pod that tolerates it forever does not
// count, nor a pod that comes to a tainted node before its own update arrives, twice.
func TestConfirm(t *testing.T) {
	synctestRunManager(t, "held until confirmed", func(t *testing.T) {
		h := run(t, eviction.Options{Confirm: eviction.Confirm{Fraction: 0.4}})
		h.removeOnDelete()
		for i := range 10 {
			node := fmt.Sprint("n", i)
			h.setNode(newNode(node))
			h.setPod(newPod("stays-"+node, node, withTolerations(tolForever("bad"))))
			// A second's toleration: every node is counted before anything falls due.
			h.setPod(newPod("goes-"+node, node, withTolerations(tolFor("bad", 1))))
		}
		h.wait()
		h.taintAll(10, "bad")
		h.step(time.Second)
		if got := len(h.delayed()); got != 10 {
			t.Fatalf("got %d pending, want 10 held", got)
		}
		for _, p := range h.m.Pending() {
			if p.Delayed != eviction.ReasonUnconfirmed {
				t.Errorf("got %+v, want it held Unconfirmed", p)
			}
		}
		h.expectDeleted()
		h.annotate("n0", "other") // another key: confirms nothing
		h.expectDeleted()
		h.annotate("n0", "bad")
		h.expectDeleted("goes-n0@+1s")
		// A pod that comes to a tainted node, stored before its node's update is counted:
		// counted once.
		late := newPod("late", "n1")
		h.cache.SetPod(late)
		n1 := newNode("n1", noExecute("bad", t0))
		n1.Spec.Taints[0].Value = "again" // a change of the taint: the node's pods are counted again
		h.setNode(n1)
		h.m.PodUpdated(nil, late)
		h.wait()
		h.expectDeleted("goes-n0@+1s")
		h.expectDelayed("goes-n1@+1s Unconfirmed", "goes-n2@+1s Unconfirmed", "goes-n3@+1s Unconfirmed", "goes-n4@+1s Unconfirmed",
			"goes-n5@+1s Unconfirmed", "goes-n6@+1s Unconfirmed", "goes-n7@+1s Unconfirmed", "goes-n8@+1s Unconfirmed", "goes-n9@+1s Unconfirmed",
			"late@+1s Unconfirmed")
		h.step(time.Second)
		h.retaint(4, 10) // untainted: 4 of 20 pods left to evict, under 0.4
		h.expectDeleted("goes-n0@+1s", "goes-n1@+2s", "goes-n2@+2s", "goes-n3@+2s", "late@+2s")
		if got := countOf(h.obs, evictiontest.Delayed, eviction.ReasonUnconfirmed); got != 11 {
			t.Errorf("Delayed Unconfirmed reported %d times, want 11", got)
		}
	})
}

// TestConfirmEitherCause: a pod due because of two taint keys, both held, goes once an
// operator confirms either of them on its node: an eviction that another taint makes due
// goes, whichever key is confirmed.
func TestConfirmEitherCause(t *testing.T) {
	for _, confirmed := range []string{"a", "b"} {
		synctestRunManager(t, "confirmed "+confirmed, func(t *testing.T) {
			h := run(t, eviction.Options{Confirm: eviction.Confirm{Fraction: 0.4}})
			h.removeOnDelete()
			for i := range 4 {
				node := fmt.Sprint("n", i)
				h.setNode(newNode(node))
				h.setPod(newPod("goes-"+node, node, withTolerations(tolFor("a", 1), tolFor("b", 1))))
			}
			h.wait()
			h.retaint(0, 4, noExecute("a", t0), noExecute("b", t0))
			h.step(2 * time.Second)
			h.expectDeleted()
			h.annotate("n0", confirmed)
			h.step(time.Second)
			h.expectDeleted("goes-n0@+2s")
		})
	}
}

// TestOwnerLimitOwnerChanges: a pod waiting at its owner's limit that another controller
// adopts is asked again at once, under its new owner, whose window is empty: it goes then,
// and leaves its old owner's line.
func TestOwnerLimitOwnerChanges(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		h := run(t, eviction.Options{OwnerLimit: eviction.Window{Max: 1, Per: 30 * time.Second}})
		h.removeAnyOnDelete()
		h.setNode(newNode("n"))
		h.setPod(newPod("x-1", "n", ownedBy("StatefulSet", "x", "")))
		h.setPod(newPod("x-2", "n", ownedBy("StatefulSet", "x", ""), withTolerations(tolFor(unreachable, 1))))
		h.setNode(newNode("n", noExecute(unreachable, t0)))
		h.wait()
		h.until(2 * time.Second)
		h.expectDeleted("x-1@+0s")
		h.expectDelayed("x-2@+1s OwnerLimit")
		p, _ := h.cache.Pod(ns, "x-2")
		p = p.DeepCopy()
		ownedBy("StatefulSet", "y", "")(p)
		h.setPod(p)
		h.wait()
		h.until(40 * time.Second)
		h.expectDeleted("x-1@+0s", "x-2@+2s") // asked again as y's: y's window has room
	})
}

// taintAll taints nodes n0..n(n-1) with key, added at t0.
func (h *harness) taintAll(n int, key string) {
	h.retaint(0, n, noExecute(key, t0))
}

// retaint gives nodes n<from>..n<to-1> the taints, each stored before the Manager hears of
// any, so that an eviction released by the first update finds the others in the cache.
func (h *harness) retaint(from, to int, taints ...v1.Taint) {
	var olds, news []*v1.Node
	for i := from; i < to; i++ {
		old, _ := h.cache.Node(fmt.Sprint("n", i))
		nn := old.DeepCopy()
		nn.Spec.Taints = taints
		h.cache.SetNode(nn)
		olds, news = append(olds, old), append(news, nn)
	}
	for i := range olds {
		h.m.NodeUpdated(olds[i], news[i])
	}
	h.wait()
}

// annotate sets the node's ConfirmAnnotation to value.
func (h *harness) annotate(node, value string) {
	old, _ := h.cache.Node(node)
	n := old.DeepCopy()
	n.Annotations = map[string]string{eviction.ConfirmAnnotation: value}
	h.setNode(n)
	h.wait()
}
