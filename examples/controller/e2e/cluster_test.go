package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
)

// The NoExecute taint of the scenarios. Not node.kubernetes.io/outage: the API
// server's DefaultTolerationSeconds admission gives every pod a 300 s toleration of that
// one, as in any cluster.
const outage = "e2e.taintevict.io/outage"

// Kube's condition and Event, as the controller must reproduce them.
const (
	kubeReason      = "DeletionByTaintManager"
	kubeMessage     = "Taint manager: deleting due to NoExecute taint"
	kubeEventReason = "TaintManagerEviction"
)

// failAfter bounds every wait on the server.
const failAfter = time.Minute

var nameSeq atomic.Int64

// scene is one scenario's part of the shared cluster: a namespace of its own and nodes whose
// names start with its prefix. Its cleanup removes both pods (at once: no kubelet will) and
// nodes, so that the next scenario's controller finds nothing of it.
type scene struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	prefix string
	nodes  []string
}

func newScene(t *testing.T) *scene {
	t.Helper()
	base := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(base) > 40 {
		base = base[:40]
	}
	base = fmt.Sprintf("%s-%d", strings.Trim(base, "-"), nameSeq.Add(1))
	s := &scene{t: t, ctx: t.Context(), ns: base, prefix: base}
	_, err := admin.CoreV1().Namespaces().Create(s.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", s.ns, err)
	}
	t.Cleanup(s.cleanup)
	return s
}

func (s *scene) cleanup() {
	ctx := context.Background()
	err := admin.CoreV1().Pods(s.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	if err != nil {
		s.t.Errorf("cleanup: deleting the pods of %s: %v", s.ns, err)
	}
	for _, n := range s.nodes {
		if err := admin.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.t.Errorf("cleanup: deleting node %s: %v", n, err)
		}
	}
}

// node creates a node of the scene, untainted, and returns its name.
func (s *scene) node(suffix string) string {
	s.t.Helper()
	name := s.prefix + "-" + suffix
	_, err := admin.CoreV1().Nodes().Create(s.ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating node %s: %v", name, err)
	}
	s.nodes = append(s.nodes, name)
	return name
}

// pod creates a pod bound to node (no scheduler runs) with the given tolerations.
func (s *scene) pod(name, node string, tols ...v1.Toleration) *v1.Pod {
	s.t.Helper()
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, newPod(s.ns, name, node, tols...), metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating pod %s/%s: %v", s.ns, name, err)
	}
	return pod
}

func newPod(ns, name, node string, tols ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "e2e"}},
		Spec: v1.PodSpec{
			NodeName:    node,
			Containers:  []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: tols,
		},
	}
}

// tolerate returns a toleration of the outage taint for seconds, or forever if nil.
func tolerate(seconds *int64) v1.Toleration {
	return v1.Toleration{Key: outage, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

// taint puts the outage NoExecute taint on node with TimeAdded now, rounded down to the
// second (the API keeps seconds only), and returns that time.
func (s *scene) taint(node string) time.Time {
	s.t.Helper()
	added := time.Now().Truncate(time.Second)
	s.updateNode(node, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}})
	})
	return added
}

// untaint removes the outage taint from node.
func (s *scene) untaint(node string) {
	s.t.Helper()
	s.updateNode(node, func(n *v1.Node) {
		var keep []v1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != outage {
				keep = append(keep, t)
			}
		}
		n.Spec.Taints = keep
	})
}

func (s *scene) updateNode(name string, change func(*v1.Node)) {
	s.t.Helper()
	n, err := admin.CoreV1().Nodes().Get(s.ctx, name, metav1.GetOptions{})
	if err == nil {
		change(n)
		_, err = admin.CoreV1().Nodes().Update(s.ctx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		s.t.Fatalf("updating node %s: %v", name, err)
	}
}

// getPod reads a pod from the server.
func (s *scene) getPod(name string) *v1.Pod {
	s.t.Helper()
	pod, err := admin.CoreV1().Pods(s.ns).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("reading pod %s/%s: %v", s.ns, name, err)
	}
	return pod
}

// waitPod watches the pod until cond holds and returns it with the time the test first saw
// it hold. It fails the test after failAfter.
func (s *scene) waitPod(name string, what string, cond func(*v1.Pod) bool) (*v1.Pod, time.Time) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, failAfter)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return admin.CoreV1().Pods(s.ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return admin.CoreV1().Pods(s.ns).Watch(ctx, o)
		},
	}
	var seen time.Time
	ev, err := watchtools.UntilWithSync(ctx, lw, &v1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		pod, ok := ev.Object.(*v1.Pod)
		if ok && ev.Type != watch.Deleted && cond(pod) {
			seen = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		s.t.Fatalf("pod %s/%s: waiting until %s: %v", s.ns, name, what, err)
	}
	return ev.Object.(*v1.Pod), seen
}

// waitDeleted waits until the pod has a deletionTimestamp and returns it with the time the
// test first saw it.
func (s *scene) waitDeleted(name string) (*v1.Pod, time.Time) {
	s.t.Helper()
	return s.waitPod(name, "deleted", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
}

// waitEvent polls the pod's Events until one with kube's reason has a message containing
// msg, and returns it.
func (s *scene) waitEvent(pod *v1.Pod, msg string) v1.Event {
	s.t.Helper()
	var found v1.Event
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID), "reason": kubeEventReason}.String()
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		list, err := admin.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if strings.Contains(e.Message, msg) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		s.t.Fatalf("no %s Event %q on pod %s/%s: %v", kubeEventReason, msg, pod.Namespace, pod.Name, err)
	}
	return found
}

// condition returns the pod's condition of type ct, or nil.
func condition(pod *v1.Pod, ct v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
