package eviction_test

// Kube's own scenarios (pkg/controller/tainteviction/taint_eviction_test.go), in the
// Manager's terms. Where this library means to differ from kube the test says so.

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
)

// kubeTaint is kube's test taint number i: testTaint<i>=test<i>:NoExecute.
func kubeTaint(i int) v1.Taint {
	return v1.Taint{Key: fmt.Sprintf("testTaint%d", i), Value: fmt.Sprintf("test%d", i), Effect: v1.TaintEffectNoExecute}
}

// kubeToleration tolerates kube's test taint number i for secs seconds, or forever when
// secs is negative (kube's addToleration).
func kubeToleration(i int, secs int64) v1.Toleration {
	tol := v1.Toleration{Key: fmt.Sprintf("testTaint%d", i), Value: fmt.Sprintf("test%d", i), Effect: v1.TaintEffectNoExecute}
	if secs >= 0 {
		tol.TolerationSeconds = &secs
	}
	return tol
}

// TestCreatePod: a pod is created on a node the Manager knows.
func TestCreatePod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		taints []v1.Taint
		want   []string // deletions within an hour
	}{
		{"not scheduled", newPod("pod1", ""), []v1.Taint{kubeTaint(1)}, nil},
		{"untainted node", newPod("pod1", "node1"), nil, nil},
		{"tainted node", newPod("pod1", "node1"), []v1.Taint{kubeTaint(1)}, []string{"pod1@+0s"}},
		{"finite toleration", newPod("pod1", "node1", withTolerations(kubeToleration(1, 100))), []v1.Taint{kubeTaint(1)}, []string{"pod1@+1m40s"}},
		{"infinite toleration", newPod("pod1", "node1", withTolerations(kubeToleration(1, -1))), []v1.Taint{kubeTaint(1)}, nil},
		{"toleration of another taint", newPod("pod1", "node1", withTolerations(kubeToleration(2, -1))), []v1.Taint{kubeTaint(1)}, []string{"pod1@+0s"}},
		{"zero-second toleration", newPod("pod1", "node1", withTolerations(kubeToleration(1, 0))), []v1.Taint{kubeTaint(1)}, []string{"pod1@+0s"}},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("node1", tc.taints...))
			h.wait()
			h.setPod(tc.pod)
			h.wait()
			for _, d := range []time.Duration{100 * time.Second, time.Hour} {
				h.stepTo(d)
			}
			h.expectDeleted(tc.want...)
		})
	}
}

// TestUpdatePod: a pod's update changes its node or tolerations.
func TestUpdatePod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prev     *v1.Pod
		next     *v1.Pod
		taints   []v1.Taint
		updateAt time.Duration
		want     []string
	}{
		{
			name:   "scheduling onto a tainted node",
			prev:   newPod("pod1", ""),
			next:   newPod("pod1", "node1"),
			taints: []v1.Taint{kubeTaint(1)},
			want:   []string{"pod1@+0s"},
		},
		{
			name:   "scheduling onto a tainted node with toleration",
			prev:   newPod("pod1", "", withTolerations(kubeToleration(1, -1))),
			next:   newPod("pod1", "node1", withTolerations(kubeToleration(1, -1))),
			taints: []v1.Taint{kubeTaint(1)},
		},
		{
			name:     "removing toleration",
			prev:     newPod("pod1", "node1", withTolerations(kubeToleration(1, 100))),
			next:     newPod("pod1", "node1"),
			taints:   []v1.Taint{kubeTaint(1)},
			updateAt: 10 * time.Second,
			want:     []string{"pod1@+10s"},
		},
		{
			// kube: "lengthening toleration shouldn't work" (kept at 1 s). Here: 100 s.
			name:     "lengthening toleration",
			prev:     newPod("pod1", "node1", withTolerations(kubeToleration(1, 1))),
			next:     newPod("pod1", "node1", withTolerations(kubeToleration(1, 100))),
			taints:   []v1.Taint{kubeTaint(1)},
			updateAt: 500 * time.Millisecond,
			want:     []string{"pod1@+1m40s"},
		},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("node1", tc.taints...))
			h.setPod(tc.prev)
			h.wait()
			h.stepTo(tc.updateAt)
			h.setPod(tc.next)
			h.wait()
			for _, d := range []time.Duration{time.Second, 100 * time.Second, time.Hour} {
				if d > tc.updateAt {
					h.stepTo(d)
				}
			}
			h.expectDeleted(tc.want...)
		})
	}
}

// TestCreateNode: a node is created under pods already bound to it.
func TestCreateNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		taints []v1.Taint
		want   []string
	}{
		{"node matching an assigned pod", newPod("pod1", "node1"), nil, nil},
		{"tainted node", newPod("pod1", "node1"), []v1.Taint{kubeTaint(1)}, []string{"pod1@+0s"}},
		{"tolerating pod", newPod("pod1", "node1", withTolerations(kubeToleration(1, -1))), []v1.Taint{kubeTaint(1)}, nil},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setPod(tc.pod)
			h.wait()
			h.setNode(newNode("node1", tc.taints...))
			h.wait()
			h.stepTo(time.Hour)
			h.expectDeleted(tc.want...)
		})
	}
}

// TestDeleteNode: deleting a tainted node cancels its pods' evictions. Kube leaves them
// pending (and then deletes).
func TestDeleteNode(t *testing.T) {
	synctestRun(t, "pending eviction cancelled", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("pod1", "node1", withTolerations(kubeToleration(1, 1))))
		h.setNode(newNode("node1", kubeTaint(1)))
		h.wait()
		h.expectPending("pod1@+1s")
		h.removeNode("node1")
		h.wait()
		h.stepTo(time.Hour)
		h.expectDeleted()
	})
}

// TestUpdateNode: a node's taints change under one pod.
func TestUpdateNode(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		prev, next  []v1.Taint
		check       time.Duration // no deletion before
		wantDeleted []string      // within an hour
	}{
		{
			name:        "added taint",
			pod:         newPod("pod1", "node1"),
			next:        []v1.Taint{kubeTaint(1)},
			wantDeleted: []string{"pod1@+0s"},
		},
		{
			name: "added tolerated taint",
			pod:  newPod("pod1", "node1", withTolerations(kubeToleration(1, -1))),
			next: []v1.Taint{kubeTaint(1)},
		},
		{
			name:        "only one added taint tolerated",
			pod:         newPod("pod1", "node1", withTolerations(kubeToleration(1, -1))),
			next:        []v1.Taint{kubeTaint(1), kubeTaint(2)},
			wantDeleted: []string{"pod1@+0s"},
		},
		{
			name:  "taint removed",
			pod:   newPod("pod1", "node1", withTolerations(kubeToleration(1, 1))),
			prev:  []v1.Taint{kubeTaint(1)},
			next:  nil,
			check: 1500 * time.Millisecond,
		},
		{
			// Both tolerations match the taint; the first one in the list is used.
			name:        "pod with multiple tolerations evicted when the first runs out",
			pod:         newPod("pod1", "node1", withTolerations(kubeToleration(1, 1), kubeToleration(1, 100))),
			next:        []v1.Taint{kubeTaint(1)},
			check:       time.Second - time.Nanosecond,
			wantDeleted: []string{"pod1@+1s"},
		},
		{
			name:        "pod with tolerations of two taints evicted when the shorter runs out",
			pod:         newPod("pod1", "node1", withTolerations(kubeToleration(1, 100), kubeToleration(2, 2))),
			next:        []v1.Taint{kubeTaint(1), kubeTaint(2)},
			check:       2*time.Second - time.Nanosecond,
			wantDeleted: []string{"pod1@+2s"},
		},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("node1", tc.prev...))
			h.setPod(tc.pod)
			h.wait()
			h.setNode(newNode("node1", tc.next...))
			h.wait()
			if tc.check > 0 {
				h.stepTo(tc.check)
				if len(tc.wantDeleted) > 0 {
					h.expectDeleted()
				}
			}
			for _, d := range []time.Duration{time.Second, 2 * time.Second, time.Hour} {
				if d > tc.check {
					h.stepTo(d)
				}
			}
			h.expectDeleted(tc.wantDeleted...)
		})
	}
}

// TestUpdateNodeWithMultipleTaints: none -> forever -> +finite (queued) -> forever
// (dequeued); the pod is never deleted.
func TestUpdateNodeWithMultipleTaints(t *testing.T) {
	synctestRun(t, "kube's sequence", func(t *testing.T) {
		h := run(t, eviction.Options{})
		h.setPod(newPod("pod1", "node1", withTolerations(kubeToleration(1, -1), kubeToleration(2, 60))))
		h.setNode(newNode("node1"))
		h.wait()

		h.setNode(newNode("node1", kubeTaint(1)))
		h.wait()
		h.expectPending() // infinitely tolerated

		h.step(time.Second)
		h.setNode(newNode("node1", kubeTaint(1), kubeTaint(2)))
		h.wait()
		h.expectPending("pod1@+1m1s") // queued after the temporarily tolerated taint

		h.step(time.Second)
		h.setNode(newNode("node1", kubeTaint(1)))
		h.wait()
		h.expectPending() // dequeued

		h.stepTo(time.Hour)
		h.expectDeleted()
		h.expectEvents("pod1", "Scheduled default/pod1 at +1m1s", "Cancelled default/pod1: Tolerated")
	})
}

// TestUpdateNodeWithMultiplePods: one taint added under pods that tolerate it 0 s... never.
func TestUpdateNodeWithMultiplePods(t *testing.T) {
	for _, tc := range []struct {
		name   string
		taints []v1.Taint
		want   []string
	}{
		{
			name:   "different tolerations",
			taints: []v1.Taint{kubeTaint(1)},
			want:   []string{"pod1@+0s", "pod2@+1s"},
		},
		{
			name:   "evict all pods not matching all taints instantly",
			taints: []v1.Taint{kubeTaint(1), kubeTaint(2)},
			want:   []string{"pod1@+0s", "pod2@+0s", "pod3@+0s"},
		},
	} {
		synctestRun(t, tc.name, func(t *testing.T) {
			h := run(t, eviction.Options{})
			h.setNode(newNode("node1"))
			h.setPod(newPod("pod1", "node1"))
			h.setPod(newPod("pod2", "node1", withTolerations(kubeToleration(1, 1))))
			h.setPod(newPod("pod3", "node1", withTolerations(kubeToleration(1, -1))))
			h.wait()
			h.setNode(newNode("node1", tc.taints...))
			h.wait()
			h.stepTo(time.Second)
			h.stepTo(time.Hour)
			h.expectDeleted(tc.want...)
		})
	}
}
