package compat

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// The objects of kube's taint_eviction_test.go: taint i is testTaint<i>=test<i>:NoExecute,
// and toleration (i, s) tolerates it for s seconds, or for ever when s < 0.

func taint(i int) v1.Taint {
	return v1.Taint{Key: fmt.Sprintf("testTaint%d", i), Value: fmt.Sprintf("test%d", i), Effect: v1.TaintEffectNoExecute}
}

func tol(i int, secs int64) v1.Toleration {
	t := v1.Toleration{Key: fmt.Sprintf("testTaint%d", i), Value: fmt.Sprintf("test%d", i), Effect: v1.TaintEffectNoExecute}
	if secs >= 0 {
		t.TolerationSeconds = &secs
	}
	return t
}

func pod(name, node string, tols ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tols},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		}},
	}
}

// node returns a node with the given taints (by index); their TimeAdded is set when the
// node is written (see stamp).
func node(name string, taints ...int) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	for _, i := range taints {
		n.Spec.Taints = append(n.Spec.Taints, taint(i))
	}
	return n
}

// stamp sets the TimeAdded of every NoExecute taint of n, as the node lifecycle controller
// does: a taint the stored node has keeps its time, a new one gets now.
func stamp(n *v1.Node, stored *v1.Node, now time.Time) *v1.Node {
	n = n.DeepCopy()
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		added := metav1.NewTime(now)
		t.TimeAdded = &added
		if stored == nil {
			continue
		}
		for _, old := range stored.Spec.Taints {
			if old.Key == t.Key && old.Effect == t.Effect && old.TimeAdded != nil {
				t.TimeAdded = old.TimeAdded.DeepCopy()
			}
		}
	}
	return n
}

var (
	podsGVR  = v1.SchemeGroupVersion.WithResource("pods")
	nodesGVR = v1.SchemeGroupVersion.WithResource("nodes")
)

// A step changes the cluster at a time after the start, as the API server would: through
// the fake clientset's tracker, so that the change is not one of the controller's requests.
type step struct {
	at    time.Duration
	apply func(tr clienttesting.ObjectTracker, now time.Time) error
	// restart, when set, stops the controller and starts a new one instead.
	restart bool
}

func addPod(at time.Duration, p *v1.Pod) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, _ time.Time) error { return tr.Add(p.DeepCopy()) }}
}

func updatePod(at time.Duration, p *v1.Pod) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, _ time.Time) error {
		return tr.Update(podsGVR, p.DeepCopy(), p.Namespace)
	}}
}

func deletePod(at time.Duration, name string) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, _ time.Time) error {
		return tr.Delete(podsGVR, "default", name)
	}}
}

func addNode(at time.Duration, n *v1.Node) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, now time.Time) error {
		return tr.Add(stamp(n, nil, now))
	}}
}

func updateNode(at time.Duration, n *v1.Node) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, now time.Time) error {
		stored, err := tr.Get(nodesGVR, "", n.Name)
		if err != nil {
			return err
		}
		return tr.Update(nodesGVR, stamp(n, stored.(*v1.Node), now), "")
	}}
}

func deleteNode(at time.Duration, name string) step {
	return step{at: at, apply: func(tr clienttesting.ObjectTracker, _ time.Time) error {
		return tr.Delete(nodesGVR, "", name)
	}}
}

func restart(at time.Duration) step { return step{at: at, restart: true} }

// initial returns the objects a scenario starts with, nodes stamped with now.
func initial(now time.Time, objs ...runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		if n, ok := o.(*v1.Node); ok {
			o = stamp(n, nil, now)
		}
		out[i] = o
	}
	return out
}
