package device

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction/engine"
)

// The engine's budgets (issue 30) on pods on devices: each pod uses a claim of its own,
// allocated one device of pool p1 (or p2), and a DeviceTaintRule or the pool's slice
// taints the devices. Confirm is TestConfirm's.

// onDevice returns a pod ns/name and its claim, allocated the device id ("pool/device")
// with a toleration of key for secs seconds (none when negative).
func onDevice(ns, name, id, key string, secs int64, opts ...func(*v1.Pod)) []runtime.Object {
	var tols []resourcev1.DeviceToleration
	if secs >= 0 {
		tols = append(tols, tolerate(key, secs))
	}
	c := claim("c-"+name, []dev{{id: id, tols: tols}}, name)
	p := pod(name, "c-"+name)
	c.Namespace, p.Namespace = ns, ns
	for _, o := range opts {
		o(p)
	}
	return []runtime.Object{c, p}
}

// controlledBy makes kind/name the pod's controller; a ReplicaSet with hash is a
// Deployment's.
func controlledBy(kind, name, hash string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("owner-" + name), Controller: &yes}}
		if hash != "" {
			p.Labels = map[string]string{"pod-template-hash": hash}
		}
	}
}

// graceful makes the clientset's DELETE of a pod mark it Terminating, as an API server
// does for a pod with a grace period and a kubelet to finish it; (*rig).finish is that
// kubelet.
func graceful(c *fake.Clientset) {
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		gvr := v1.SchemeGroupVersion.WithResource("pods")
		obj, err := c.Tracker().Get(gvr, d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		if p.DeletionTimestamp == nil {
			grace := int64(30) // as the API server sets it: the end of the grace period
			end := metav1.NewTime(metav1.Now().Add(time.Duration(grace) * time.Second))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &end, &grace
			if err := c.Tracker().Update(gvr, p, p.Namespace); err != nil {
				return true, nil, err
			}
		}
		return true, p, nil
	})
}

// finish removes the Terminating pod ns/name, as its kubelet would.
func (r *rig) finish(ns, name string) {
	r.t.Helper()
	if err := r.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), ns, name); err != nil {
		r.t.Fatal(err)
	}
	synctest.Wait()
}

// deletedAt returns the pods deleted so far as "name@+offset", sorted, the offsets since
// the rule came at start.
func (r *rig) deletedAt(start time.Duration) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, d := range r.deletes {
		out = append(out, fmt.Sprintf("%s@+%v", name, (d-start).Round(time.Second)))
	}
	slices.Sort(out)
	return out
}

func (r *rig) expectDeleted(start time.Duration, want ...string) {
	r.t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := r.deletedAt(start); !slices.Equal(got, want) {
		r.t.Errorf("got deletions %q, want %q", got, want)
	}
}

// pendingReasons returns the engine's pending evictions as "name reason", sorted.
func (r *rig) pendingReasons() []string {
	var out []string
	for _, p := range r.c.Engine().Pending() {
		out = append(out, p.Target.Name+" "+string(p.Delayed))
	}
	slices.Sort(out)
	return out
}

// taintPool creates a rule that taints every device of pool with key, and returns when.
func (r *rig) taintPool(name, pool, key string) time.Duration {
	r.create(rule(name, &resourcev1.DeviceTaintSelector{Pool: ptrTo(pool)}, noExecute(key, at(time.Since(r.start)))))
	return time.Since(r.start)
}

func TestDeviceInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var objs []runtime.Object
		for i := range 5 {
			objs = append(objs, onDevice("ns", fmt.Sprint("p", i), fmt.Sprint("p1/d", i), "bad", int64(i))...)
		}
		r := newRigWith(t, graceful, Options{Engine: engine.Options{InFlight: engine.InFlight{Max: 2}}}, objs...)
		start := r.taintPool("bad", "p1", "bad")
		r.sleep(10 * time.Second)
		r.expectDeleted(start, "p0@+0s", "p1@+1s")
		if got, want := r.pendingReasons(), []string{"p2 InFlight", "p3 InFlight", "p4 InFlight"}; !slices.Equal(got, want) {
			t.Errorf("got pending %q, want %q", got, want)
		}
		r.finish("ns", "p0")
		r.expectDeleted(start, "p0@+0s", "p1@+1s", "p2@+10s")
		r.sleep(time.Second)
		r.finish("ns", "p1")
		r.finish("ns", "p2")
		r.expectDeleted(start, "p0@+0s", "p1@+1s", "p2@+10s", "p3@+11s", "p4@+11s")
	})
}

func TestDeviceNamespaceLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var objs []runtime.Object
		for i := range 3 {
			objs = append(objs, onDevice("a", fmt.Sprint("a", i), fmt.Sprint("p1/d", i), "bad", int64(i))...)
		}
		objs = append(objs, onDevice("b", "b0", "p1/d9", "bad", 1)...)
		r := newRig(t, Options{Engine: engine.Options{NamespaceLimit: engine.Window{Max: 1, Per: time.Minute}}}, objs...)
		start := r.taintPool("bad", "p1", "bad")
		r.sleep(10 * time.Second)
		r.expectDeleted(start, "a0@+0s", "b0@+1s")
		if got, want := r.pendingReasons(), []string{"a1 NamespaceLimit", "a2 NamespaceLimit"}; !slices.Equal(got, want) {
			t.Errorf("got pending %q, want %q", got, want)
		}
		r.sleep(3 * time.Minute)
		r.expectDeleted(start, "a0@+0s", "b0@+1s", "a1@+1m0s", "a2@+2m0s")
	})
}

func TestDeviceOwnerLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web := controlledBy("ReplicaSet", "web-5c8d", "5c8d")
		var objs []runtime.Object
		for i := range 3 {
			objs = append(objs, onDevice("ns", fmt.Sprint("web-5c8d-", i), fmt.Sprint("p1/d", i), "bad", int64(i), web)...)
		}
		objs = append(objs, onDevice("ns", "db-0", "p1/d5", "bad", 1, controlledBy("StatefulSet", "db", ""))...)
		r := newRig(t, Options{Engine: engine.Options{OwnerLimit: engine.Window{Max: 1, Per: 30 * time.Second}}}, objs...)
		start := r.taintPool("bad", "p1", "bad")
		r.sleep(time.Minute + 10*time.Second)
		r.expectDeleted(start, "web-5c8d-0@+0s", "db-0@+1s", "web-5c8d-1@+30s", "web-5c8d-2@+1m0s")
	})
}

func TestDeviceLoopDamping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := controlledBy("DaemonSet", "agent", "")
		r := newRig(t, Options{Engine: engine.Options{LoopDamping: engine.LoopDamping{Window: 10 * time.Minute,
			Backoff: engine.Backoff{Base: 10 * time.Second, Jitter: -1}}}}, onDevice("ns", "agent-1", "p1/d0", "bad", -1, ds)...)
		start := r.taintPool("bad", "p1", "bad")
		r.expectDeleted(start, "agent-1@+0s")
		for _, name := range []string{"agent-2", "agent-3"} { // the DaemonSet puts it back on the same device
			r.sleep(time.Second)
			for _, o := range onDevice("ns", name, "p1/d0", "bad", -1, ds, func(p *v1.Pod) { p.CreationTimestamp = metav1.Now() }) {
				r.create(o)
			}
			if got, want := r.pendingReasons(), []string{name + " Recreated"}; !slices.Equal(got, want) {
				t.Errorf("got pending %q, want %q", got, want)
			}
			r.sleep(25 * time.Second)
		}
		r.expectDeleted(start, "agent-1@+0s", "agent-2@+10s", "agent-3@+30s")
	})
}

func TestDeviceBrake(t *testing.T) {
	three := func() []runtime.Object {
		var objs []runtime.Object
		for i := range 3 {
			objs = append(objs, onDevice("ns", fmt.Sprint("p", i), fmt.Sprint("p1/d", i), "bad", -1)...)
		}
		return objs
	}
	taint := func(devices ...string) *resourcev1.ResourceSlice {
		m := map[string][]resourcev1.DeviceTaint{"d0": nil, "d1": nil, "d2": nil}
		for _, d := range devices {
			m[d] = []resourcev1.DeviceTaint{noExecute("bad", at(0))}
		}
		return slice("p1", m)
	}
	t.Run("a floor of the pool", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, Options{Engine: engine.Options{Brake: engine.Brake{ZoneHolders: 2}}}, append(three(), taint())...)
			r.update(taint("d0"))
			r.update(taint("d0", "d1"))
			r.sleep(time.Minute)
			r.expectDeleted(0, "p0@+0s")
			if got, want := r.pendingReasons(), []string{"p1 Paused"}; !slices.Equal(got, want) {
				t.Errorf("got pending %q, want %q", got, want)
			}
		})
	})
	t.Run("a pool fully disrupted goes at its own rate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, Options{Engine: engine.Options{Brake: engine.Brake{ZoneFraction: 0.5,
				FullDisruption: engine.FullDisruption{Rate: engine.Limit{PerSecond: 0.1, Burst: 1}}}}}, append(three(), taint())...)
			r.update(taint("d0", "d1", "d2"))
			start := time.Since(r.start)
			r.sleep(time.Minute)
			var at []time.Duration // which pod goes first among those due together is not said
			for _, name := range []string{"p0", "p1", "p2"} {
				d, ok := r.deleted(name)
				if !ok {
					t.Fatalf("%s not deleted", name)
				}
				at = append(at, (d - start).Round(time.Second))
			}
			slices.Sort(at)
			if want := []time.Duration{0, 10 * time.Second, 20 * time.Second}; !slices.Equal(at, want) {
				t.Errorf("got deletions at %v, want %v: 0.1 a second, in bursts of 1", at, want)
			}
		})
	})
}
