package outage

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/bench/apparatus"
)

// newTestFloor returns the floor over a cluster of two nodes of 30 pods, with the
// informers' stores filled (not started: nothing but the test changes them).
func newTestFloor(t *testing.T) (*floor, *Side, *apparatus.Cluster, *apparatus.Client) {
	t.Helper()
	cluster := apparatus.NewCluster(60, 30)
	client := apparatus.NewClient(fake.NewClientset(), cluster)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx := klog.NewContext(context.Background(), logr.Discard())
	side, err := newFloor(ctx, client, factory)
	if err != nil {
		t.Fatal(err)
	}
	pods := factory.Core().V1().Pods().Informer().GetIndexer()
	nodes := factory.Core().V1().Nodes().Informer().GetIndexer()
	if err := cluster.Fill(pods, nodes); err != nil {
		t.Fatal(err)
	}
	return side.Updates.(*floor), side, cluster, client
}

// queuedNames returns the names of the pods the floor has queued, sorted: the index gives a
// node's pods in no particular order.
func queuedNames(f *floor) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, w := range f.queue[f.head:] {
		names = append(names, w.ref.Name)
	}
	slices.Sort(names)
	return names
}

// TestFloorQueuesWhenTheTaintArrives checks that the floor queues the untolerating pods of
// a node when, and only when, the node gains the unreachable NoExecute taint: not for an
// untainted node, not again for a node tainted already, and not for pod updates.
func TestFloorQueuesWhenTheTaintArrives(t *testing.T) {
	f, _, cluster, _ := newTestFloor(t)

	var want []string
	for i := 1; i < 30; i += 2 { // node-0's pods; the odd ones tolerate nothing
		want = append(want, cluster.Pods[i].Name)
	}
	untainted := cluster.Nodes[0]
	old, tainted := cluster.Taint(0, time.Now())
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"an untainted node", func() { f.NodeUpdated(nil, untainted) }, nil},
		{"the taint arrives", func() { f.NodeUpdated(old, tainted) }, want},
		{"a tainted node's update", func() { f.NodeUpdated(tainted, tainted) }, want},
		{"a tainted node added", func() { f.NodeUpdated(nil, tainted) }, slices.Concat(want, want)},
		{"a pod update", func() { f.PodUpdated(nil, cluster.Pods[31]) }, slices.Concat(want, want)},
		{"a node deleted", func() { f.NodeUpdated(tainted, nil) }, slices.Concat(want, want)},
	}
	for _, s := range steps {
		s.do()
		s.want = slices.Sorted(slices.Values(s.want))
		if got := queuedNames(f); !slices.Equal(got, s.want) {
			t.Errorf("after %s: queued %v, want %v", s.name, got, s.want)
		}
		if got, want := f.backlog.Load(), int64(len(s.want)); got != want {
			t.Errorf("after %s: backlog %d, want %d", s.name, got, want)
		}
	}
	if f.idle() {
		t.Error("idle before Run: got true, want false")
	}
}

// TestFloorEvicts runs the floor: every untolerating pod of the tainted nodes is marked and
// deleted, none other, and each gets its Event.
func TestFloorEvicts(t *testing.T) {
	f, side, cluster, client := newTestFloor(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- side.Run(ctx) }()
	if err := waitFor(ctx, time.Minute, side.Idle); err != nil {
		t.Fatal(err)
	}
	for i := range cluster.Nodes {
		f.NodeUpdated(cluster.Taint(i, time.Now()))
	}
	if err := waitFor(ctx, time.Minute, side.Idle); err != nil {
		t.Fatal(err)
	}
	want := int64(cluster.Untolerating())
	// The broadcaster writes the Events from a goroutine of its own, after the deletes.
	if err := waitFor(ctx, time.Minute, func() bool { return client.Counts().Events >= want }); err != nil {
		t.Errorf("events: got %d, want %d", client.Counts().Events, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	for i := range cluster.Pods {
		if got, want := client.Deleted(i), !apparatus.Tolerates(i); got != want {
			t.Errorf("pod %d deleted: got %v, want %v", i, got, want)
		}
	}
	got := client.Counts()
	if got.Patch != want || got.Delete != want || got.Get != 0 || got.Events != want {
		t.Errorf("requests: got %+v, want %d status PATCHes, DELETEs and Events, and no GET", got, want)
	}
}
