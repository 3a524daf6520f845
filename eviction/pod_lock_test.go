package eviction_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// stallingCache stalls one Pod lookup, after it has read the cache, until released: the
// window in which another worker could act on newer state.
type stallingCache struct {
	*evictiontest.Cache
	mu      sync.Mutex
	armed   bool
	stalled chan struct{}
	release chan struct{}
}

func (c *stallingCache) Pod(namespace, name string) (*v1.Pod, error) {
	pod, err := c.Cache.Pod(namespace, name)
	c.mu.Lock()
	stall := c.armed
	c.armed = false
	c.mu.Unlock()
	if stall {
		close(c.stalled)
		<-c.release
	}
	return pod, err
}

// TestPodDecisionsDoNotInterleave: a pod deleted on one node and re-created under the same
// name on another is processed by two workers (one per node). The worker of the delete reads
// "gone" and stalls; meanwhile the re-created pod's update arrives on the other worker. The
// decision about the re-created pod must come last, so its eviction is not cancelled by the
// stale "gone".
func TestPodDecisionsDoNotInterleave(t *testing.T) {
	synctestEach(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(t0)
		cache := &stallingCache{Cache: &evictiontest.Cache{}, stalled: make(chan struct{}), release: make(chan struct{})}
		m, err := newManager(t, &evictiontest.Deleter{}, cache, eviction.Options{Clock: clk, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		n1, n2 := "n1", ""
		for i := 2; n2 == ""; i++ {
			if name := fmt.Sprint("n", i); eviction.ShardOf(name, 2) != eviction.ShardOf(n1, 2) {
				n2 = name
			}
		}
		seconds := int64(300)
		taint := v1.Taint{Key: "k", Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}
		for _, name := range []string{n1, n2} {
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: []v1.Taint{taint}}}
			cache.SetNode(node)
			m.NodeUpdated(nil, node)
		}
		newPod := func(uid, node string) *v1.Pod {
			return &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID(uid)},
				Spec: v1.PodSpec{NodeName: node, Tolerations: []v1.Toleration{{
					Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds,
				}}},
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- m.Run(ctx) }()

		old := newPod("uid-1", n1)
		cache.SetPod(old)
		m.PodUpdated(nil, old)
		synctest.Wait()

		cache.mu.Lock()
		cache.armed = true
		cache.mu.Unlock()
		cache.DeletePod("ns", "web")
		m.PodUpdated(old, nil)
		<-cache.stalled // n1's worker has read "gone" and holds on to it

		replacement := newPod("uid-2", n2)
		cache.SetPod(replacement)
		m.PodUpdated(nil, replacement)
		synctest.Wait() // n2's worker waits for the pod's lock
		close(cache.release)
		synctest.Wait()

		got := m.Pending()
		want := []eviction.Pending{{Target: eviction.PodRef{Namespace: "ns", Name: "web", UID: "uid-2", Holder: n2}, At: t0.Add(300 * time.Second)}}
		if len(got) != 1 || got[0].Target != want[0].Target || !got[0].At.Equal(want[0].At) {
			t.Errorf("pending: got %v, want %v", got, want)
		}
		cancel()
		<-done
	})
}
