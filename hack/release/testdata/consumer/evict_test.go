// This test is not built in the repository: hack/release-check.sh copies it into a fresh
// module outside it, beside the README's evict.go, and runs it there, against the modules as
// the release would publish them.
package mycontroller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// failAfter bounds the waits on the real clock: a failure timeout, not a wait.
const failAfter = 30 * time.Second

func pod(name string, tolerations ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: "node-1", Tolerations: tolerations},
	}
}

// TestRunTaintEviction runs the README's RunTaintEviction on a fake clientset, taints the
// node through the clientset, and sees the pod that does not tolerate the taint deleted,
// with kube's Event, while the pod that tolerates it stays.
func TestRunTaintEviction(t *testing.T) {
	client := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		pod("web-1"),
		pod("agent-1", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}),
	)
	deleted := make(chan string, 10)
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deleted <- a.(k8stesting.DeleteAction).GetName()
		return false, nil, nil // the fake's tracker deletes it
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- RunTaintEviction(ctx, client, factory, recorder) }()

	added := metav1.Now()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: v1.NodeSpec{Taints: []v1.Taint{
		{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &added}}}}
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("tainting node-1: %v", err)
	}

	select {
	case name := <-deleted:
		if name != "web-1" {
			t.Errorf("deleted: got %s, want web-1", name)
		}
	case <-time.After(failAfter):
		t.Fatalf("web-1 not deleted after %s", failAfter)
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("RunTaintEviction: got %v, want context.Canceled once ctx is done", err)
	}
	factory.Shutdown()

	select {
	case name := <-deleted:
		t.Errorf("deleted: got %s too, want web-1 only", name)
	default:
	}
	if _, err := client.CoreV1().Pods("shop").Get(t.Context(), "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-1 after its eviction: got %v, want NotFound", err)
	}
	if _, err := client.CoreV1().Pods("shop").Get(t.Context(), "agent-1", metav1.GetOptions{}); err != nil {
		t.Errorf("agent-1, which tolerates the taint: got %v, want it still there", err)
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	if want := "Normal TaintManagerEviction Marking for deletion Pod shop/web-1"; !strings.Contains(strings.Join(events, "\n"), want) {
		t.Errorf("Events: got %q, want one that contains %q", events, want)
	}
}
