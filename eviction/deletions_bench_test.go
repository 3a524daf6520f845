package eviction_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// BenchmarkDeletionBurst is the end of a zone outage: the informer reports 75,000 evicted
// pods gone (30 on each of 2,500 tainted nodes), all at once, and the Manager processes each
// removal: it looks the pod up, finds it gone, and forgets that it deleted it. One op is one
// burst, from the first PodUpdated(pod, nil) until WaitIdle returns. Before each op
// (untimed), the pods are put back in the Cache and evicted again through a Deleter that
// only counts, so that the Manager remembers each as deleted, as after an outage.
//
// "nil" reads a Cache that returns a nil pod for one it does not have; "NotFound" one that
// returns the NotFound error client-go's listers return, whose allocations count too.
func BenchmarkDeletionBurst(b *testing.B) {
	b.Run("nil", func(b *testing.B) { benchDeletionBurst(b, false) })
	b.Run("NotFound", func(b *testing.B) { benchDeletionBurst(b, true) })
}

func benchDeletionBurst(b *testing.B, notFound bool) {
	const nodes, podsPerNode = 2500, 30
	cache := &evictiontest.Cache{}
	var pods []*v1.Pod
	var nodeObjs []*v1.Node
	for i := range nodes {
		node := benchNode(fmt.Sprintf("node-%05d", i), benchTaint(time.Now()))
		cache.SetNode(node)
		nodeObjs = append(nodeObjs, node)
		for j := range podsPerNode {
			pods = append(pods, benchPod(fmt.Sprintf("ns-%03d", i%100), fmt.Sprintf("pod-%05d-%02d", i, j), node.Name, benchIntolerant))
		}
	}
	var c eviction.Cache = cache
	if notFound {
		c = benchNotFoundCache{cache}
	}
	bm := startBenchManager(b, c, eviction.Options{})
	defer bm.stop()
	for _, n := range nodeObjs {
		bm.m.NodeUpdated(nil, n)
	}
	ctx := context.Background()

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		deleted := newBenchCounter(int64(len(pods)))
		bm.deleted.Store(deleted)
		for _, p := range pods {
			cache.SetPod(p)
			bm.m.PodUpdated(nil, p)
		}
		benchWait(b, deleted, "deletes")
		if err := bm.m.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
		for _, p := range pods {
			cache.DeletePod(p.Namespace, p.Name)
		}
		b.StartTimer()

		for _, p := range pods {
			bm.m.PodUpdated(p, nil)
		}
		if err := bm.m.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := len(bm.m.Pending()); n != 0 {
		b.Fatalf("len(Pending()) = %d after the removals, want 0", n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pods)), "ns/deletion")
}

// benchNotFoundCache returns NotFound for a missing pod, as client-go's listers do.
type benchNotFoundCache struct{ *evictiontest.Cache }

func (c benchNotFoundCache) Pod(namespace, name string) (*v1.Pod, error) {
	pod, err := c.Cache.Pod(namespace, name)
	if err == nil && pod == nil {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return pod, err
}
