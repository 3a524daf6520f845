package clientgo

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
)

// instantClient answers pod PATCHes and DELETEs at once, without a lock and without an
// allocation of its own, so that a benchmark measures the Deleter that calls it rather than
// the fake clientset, whose reactors take one global lock and record every action.
type instantClient struct {
	kubernetes.Interface
	core instantCore
}

func newInstantClient() *instantClient {
	c := &instantClient{Interface: fake.NewClientset()}
	c.core = instantCore{CoreV1Interface: c.Interface.CoreV1(), pods: &instantPods{answer: &v1.Pod{}}}
	return c
}

func (c *instantClient) CoreV1() corev1.CoreV1Interface { return &c.core }

type instantCore struct {
	corev1.CoreV1Interface
	pods *instantPods
}

func (c *instantCore) Pods(string) corev1.PodInterface { return c.pods }

type instantPods struct {
	corev1.PodInterface
	answer *v1.Pod
}

func (p *instantPods) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*v1.Pod, error) {
	return p.answer, nil
}

func (p *instantPods) Delete(context.Context, string, metav1.DeleteOptions) error { return nil }

// BenchmarkPodDeleter is one eviction through the PodDeleter of the drop-in controller: the
// cached pod read for its generation and conditions, the status patch built and sent, the
// delete sent, over a client that answers at once.
func BenchmarkPodDeleter(b *testing.B) {
	pod := testPod("2f6c8a4e-5d7b-4c1e-9a3f-8b0d6e2c4a17", 1,
		v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue},
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	ref := eviction.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Holder: "node-1"}
	d := NewPodDeleter(newInstantClient(), PodDeleterOptions{
		Pods:  podCache{"shop/web-1": pod},
		Clock: clocktesting.NewFakePassiveClock(testNow),
	})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Delete(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}
