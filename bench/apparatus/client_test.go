package apparatus

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestClientAnswersAndCounts(t *testing.T) {
	c := NewCluster(60, 30)
	client := NewClient(fake.NewClientset(), c)
	var deleted []int
	client.OnDelete = func(i int) { deleted = append(deleted, i) }
	ctx := context.Background()
	p := c.Pods[3]
	pods := client.CoreV1().Pods(p.Namespace)

	got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil || got.UID != p.UID || got == p {
		t.Fatalf("Get: got %v, %v; want a copy of the pod with UID %s", got, err, p.UID)
	}
	if _, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("Patch: %v", err)
	}
	wrong := types.UID("another")
	err = pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	if !apierrors.IsConflict(err) {
		t.Errorf("Delete with another UID: got %v, want a Conflict", err)
	}
	uid := p.UID
	if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := pods.Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete: got %v, want NotFound", err)
	}
	if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Delete again: got %v, want NotFound", err)
	}
	if !client.Deleted(3) || client.Deleted(4) || len(deleted) != 1 || deleted[0] != 3 {
		t.Errorf("deleted: got %v (Deleted(3) %v, Deleted(4) %v), want [3]", deleted, client.Deleted(3), client.Deleted(4))
	}
	want := Counts{Get: 2, Patch: 1, Delete: 3}
	if got := client.Counts(); got != want {
		t.Errorf("Counts: got %+v, want %+v", got, want)
	}
	if got := client.Counts().PodRequests(); got != 6 {
		t.Errorf("PodRequests: got %d, want 6", got)
	}
}

func TestCluster(t *testing.T) {
	c := NewCluster(70, 30)
	if len(c.Nodes) != 3 || len(c.Pods) != 70 || c.Untolerating() != 35 {
		t.Fatalf("got %d nodes, %d pods, %d untolerating; want 3, 70, 35", len(c.Nodes), len(c.Pods), c.Untolerating())
	}
	if got := c.Pods[69].Spec.NodeName; got != "node-2" {
		t.Errorf("pod 69's node: got %s, want node-2", got)
	}
	if len(c.Pods[0].Spec.Tolerations) != 2 || len(c.Pods[1].Spec.Tolerations) != 0 {
		t.Errorf("tolerations: got %d and %d, want 2 and 0", len(c.Pods[0].Spec.Tolerations), len(c.Pods[1].Spec.Tolerations))
	}
	at := time.Unix(1000, 0)
	n := Unreachable(c.Nodes[0], at)
	if len(n.Spec.Taints) != 1 || !n.Spec.Taints[0].TimeAdded.Time.Equal(at) || len(c.Nodes[0].Spec.Taints) != 0 {
		t.Errorf("Unreachable: got taints %v, and the original has %v", n.Spec.Taints, c.Nodes[0].Spec.Taints)
	}
	old, tainted := c.Taint(1, at)
	if len(old.Spec.Taints) != 0 || len(tainted.Spec.Taints) != 1 || c.Nodes[1] != tainted || tainted.Name != "node-1" {
		t.Errorf("Taint: got old %v, tainted %v, the cluster holds %v; want the tainted node held", old.Spec.Taints, tainted.Spec.Taints, c.Nodes[1].Spec.Taints)
	}
	if i, ok := c.Index("ns-5", "pod-15"); !ok || i != 15 {
		t.Errorf("Index(ns-5, pod-15): got %d, %v, want 15, true", i, ok)
	}
}
