package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The budgets of issue 30 on the real API server, tallied from its audit log.

// TestZoneOutageCaps: a zone outage under a cap per namespace (2 within any 10 s) and a cap
// of evictions in flight (3), with pods that take 3 s to terminate (the test plays their
// kubelet: it deletes a Terminating pod for good 3 s after it saw it Terminating). The
// controller evicts each namespace's pods in deadline order, never more than 2 of a
// namespace within 10 s nor more than 3 whose pods are not gone yet, and at the pace those
// allow: namespace shop's 8 pods take three windows. Nothing is lost, doubled or wrong.
func TestZoneOutageCaps(t *testing.T) {
	shop, batch := newScene(t), newScene(t)
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, shop.node(fmt.Sprint("n", i)))
	}
	// Pod i tolerates the outage for i seconds: their deadlines are one second apart.
	var shopPods, batchPods []string
	for i := range 8 {
		name := fmt.Sprint("web-", i)
		shop.pod(name, nodes[i%4], tolerate(ptr.To(int64(i))))
		shopPods = append(shopPods, name)
	}
	for i := range 4 {
		name := fmt.Sprint("job-", i)
		batch.pod(name, nodes[i%4], tolerate(ptr.To(int64(i))))
		batchPods = append(batchPods, name)
	}
	const (
		window   = 10 * time.Second
		inFlight = 3
		grace    = 3 * time.Second
	)
	c := startController(t, "controller", "-namespace-limit=2/10s", "-in-flight=3")
	k := startKubelet(t, grace, shop.ns, batch.ns)

	var added time.Time
	for _, n := range nodes {
		added = shop.taint(n) // one second at most apart: the deadlines count from each
	}
	for _, sc := range []struct {
		s    *scene
		pods []string
	}{{shop, shopPods}, {batch, batchPods}} {
		for _, p := range sc.pods {
			sc.s.waitPodGone(p, 2*failAfter)
		}
	}
	c.waitOutput(t, "NamespaceLimit", failAfter)
	c.waitOutput(t, "InFlight", failAfter)

	deletes := map[string][]time.Time{} // namespace -> the controller's successful DELETEs, in order
	var all []deleteAt
	for _, sc := range []struct {
		s    *scene
		pods []string
	}{{shop, shopPods}, {batch, batchPods}} {
		tl := auditTally(t, sc.s.ns, []identity{c.id}, sc.pods, nil)
		tl.log(t, "namespace "+sc.s.ns)
		tl.check(t)
		events, err := auditEvents(c.id, func(e auditEvent) bool { return inNamespace(sc.s.ns)(e) && removes(e) && e.code() < 300 })
		require.NoError(t, err)
		var order []string
		for _, e := range events {
			order = append(order, e.ObjectRef.Name)
			deletes[sc.s.ns] = append(deletes[sc.s.ns], e.Received)
			all = append(all, deleteAt{key: sc.s.ns + "/" + e.ObjectRef.Name, at: e.Received})
		}
		assert.Equal(t, sc.pods, order, "namespace %s: the evictions in deadline order", sc.s.ns)
		// At most 2 of the namespace within any window (less the jitter of two requests).
		for i := 2; i < len(deletes[sc.s.ns]); i++ {
			d := deletes[sc.s.ns]
			assert.GreaterOrEqual(t, d[i].Sub(d[i-2]), window-500*time.Millisecond, "namespace %s: deletes %d and %d %s apart", sc.s.ns, i-1, i+1, d[i].Sub(d[i-2]))
		}
	}
	// At most 3 in flight: at each DELETE, the pods deleted before it whose kubelet had not
	// started to remove them yet, and itself.
	finished := k.finishedAt()
	most := 0
	for _, d := range all {
		n := 0
		for _, e := range all {
			if !e.at.After(d.at) && (finished[e.key].IsZero() || finished[e.key].After(d.at)) {
				n++
			}
		}
		most = max(most, n)
	}
	t.Logf("at most %d pods in flight at a DELETE (the cap: %d)", most, inFlight)
	assert.LessOrEqual(t, most, inFlight, "pods in flight")
	assert.Equal(t, inFlight, most, "the cap reached: the outage had more to evict than it allows at once")
	// The pace: shop's 8 pods, 2 per 10 s: the last goes three windows after the first.
	d := deletes[shop.ns]
	span := d[len(d)-1].Sub(d[0])
	t.Logf("namespace %s: %d evictions over %s (first %s after the taint); namespace %s: %d over %s",
		shop.ns, len(d), span.Round(10*time.Millisecond), d[0].Sub(added).Round(10*time.Millisecond), batch.ns, len(deletes[batch.ns]),
		deletes[batch.ns][len(deletes[batch.ns])-1].Sub(deletes[batch.ns][0]).Round(10*time.Millisecond))
	assert.GreaterOrEqual(t, span, 3*window-time.Second, "shop's evictions: three windows at least")
	assert.LessOrEqual(t, span, 3*window+10*time.Second, "shop's evictions: at the pace the caps allow, not slower")
}

// deleteAt is a successful DELETE of a pod ("namespace/name") and when the server got it.
type deleteAt struct {
	key string
	at  time.Time
}

// kubelet finishes Terminating pods as a kubelet would, grace after it saw them
// Terminating, and records when it started to remove each.
type kubelet struct {
	mu       sync.Mutex
	finished map[string]time.Time // "namespace/name" -> when its removal was sent
}

// startKubelet runs a kubelet for the pods of namespaces until the test ends.
func startKubelet(t *testing.T, grace time.Duration, namespaces ...string) *kubelet {
	k := &kubelet{finished: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	seen := map[string]time.Time{}
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for _, ns := range namespaces {
				list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for _, p := range list.Items {
					key := ns + "/" + p.Name
					if p.DeletionTimestamp == nil {
						continue
					}
					if _, ok := seen[key]; !ok {
						seen[key] = time.Now()
					}
					if time.Since(seen[key]) < grace {
						continue
					}
					k.mu.Lock()
					if _, ok := k.finished[key]; !ok {
						k.finished[key] = time.Now()
					}
					k.mu.Unlock()
					err := admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
					if err != nil && !apierrors.IsNotFound(err) {
						t.Logf("kubelet: removing %s: %v", key, err)
					}
				}
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

func (k *kubelet) finishedAt() map[string]time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]time.Time, len(k.finished))
	for key, at := range k.finished {
		out[key] = at
	}
	return out
}

// waitPodGone waits until the pod is gone from the server, and fails the test after
// timeout.
func (s *scene) waitPodGone(name string, timeout time.Duration) {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(s.t, err, "pod %s/%s not gone within %s", s.ns, name, timeout)
}

// TestDeviceConfirm: the hold of kubernetes#141422. A DeviceTaintRule that selects every
// device would evict every pod that uses one; with -confirm-fraction the controller holds
// it instead: the rule's status says why and names the annotation that confirms it, each
// pod gets an Event that names it too, and nothing is written to a pod while it is held.
// Once an operator sets the annotation on the rule, every pod goes, each once (the audit
// log).
func TestDeviceConfirm(t *testing.T) {
	s := newDeviceScene(t, "gpu-0", "gpu-1", "gpu-2", "gpu-3")
	var due []string
	for i, d := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"} {
		name := fmt.Sprint("p", i)
		s.podOnDevices(name, alloc{device: d})
		due = append(due, name)
	}
	c := startController(t, "controller", "-controllers=device", "-confirm-fraction=0.5")

	// Every device of the cluster: those of the scenes that ran before are gone with them.
	s.rule("all", "ecc", resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{})
	cond := s.ruleCondition("all", func(c metav1.Condition) bool { return c.Reason == "EvictionPaused" })
	assert.Equal(t, "4 pods need to be evicted in 1 namespace. Eviction paused: it would evict 4 of the 4 pods that use devices, more than 50%. "+
		"Annotate the DeviceTaintRule with taintevict.io/confirm-eviction=ecc to confirm it.", cond.Message)
	for _, p := range due {
		s.waitDeviceEvent(s.getPod(p), "Pausing deletion: the device taint would evict too many pods at once; annotate its DeviceTaintRule (or ResourceSlice) with taintevict.io/confirm-eviction")
	}
	c.waitOutput(t, "delayed    "+s.ns+"/p0", failAfter)
	assert.Contains(t, c.out.String(), "Unconfirmed (the taint would evict too many pods at once: confirm it with the annotation taintevict.io/confirm-eviction=KEY")
	c.quiet(t)
	for _, p := range due {
		s.assertNotEvicted(p)
	}

	confirmed := time.Now()
	r, err := admin.ResourceV1().DeviceTaintRules().Get(s.ctx, s.prefix+"-all", metav1.GetOptions{})
	require.NoError(t, err)
	r.Annotations = map[string]string{"taintevict.io/confirm-eviction": "ecc"}
	_, err = admin.ResourceV1().DeviceTaintRules().Update(s.ctx, r, metav1.UpdateOptions{})
	require.NoError(t, err)
	var last time.Time
	for _, p := range due {
		pod, seen := s.waitDeleted(p)
		s.assertDeviceEvicted(pod)
		if seen.After(last) {
			last = seen
		}
	}
	t.Logf("held quietly; the last of %d pods seen deleted %s after the rule was confirmed", len(due), last.Sub(confirmed).Round(time.Millisecond))
	writes, err := auditEvents(c.id, func(e auditEvent) bool {
		return inNamespace(s.ns)(e) && e.ObjectRef.Resource == "pods" && e.Verb != "get" && e.Verb != "list" && e.Verb != "watch"
	})
	require.NoError(t, err)
	for _, e := range writes {
		assert.False(t, e.Received.Before(confirmed), "%s %s/%s at %s, before the rule was confirmed", e.what(), s.ns, e.ObjectRef.Name, e.Received.Format(time.TimeOnly))
	}
	tl := auditTally(t, s.ns, []identity{c.id}, due, nil)
	tl.log(t, "the rule confirmed")
	tl.check(t)
	c.assertRequests(t, s.ns, due...)
	for _, p := range due {
		assert.Contains(t, c.out.String(), "evicted    "+s.ns+"/"+p+" from ", "the output says what was evicted")
	}
}
