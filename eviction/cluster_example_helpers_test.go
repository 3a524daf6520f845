package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// cluster is the in-memory cluster of the examples, on a fake clock that starts at 12:00.
// Its handlers update the cache first and then tell the Manager, as informers' event
// handlers do; its Delete removes the pod and reports the removal, as the API server and
// the pod informer would. It lives apart from the examples so that each example shows only
// its own steps.
type cluster struct {
	clock *testclock.FakeClock
	cache *evictiontest.Cache
	m     *eviction.Manager
	stop  func() error

	mu      sync.Mutex
	deleted []string // since the last wait
}

// newCluster returns a cluster whose Manager has opts, on the cluster's clock, and runs
// until stop.
func newCluster(opts eviction.Options) *cluster {
	c := &cluster{clock: testclock.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)), cache: &evictiontest.Cache{}}
	opts.Clock = c.clock
	m, err := eviction.New(c, c.cache, opts)
	if err != nil {
		panic(err)
	}
	c.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	c.stop = func() error { cancel(); return <-done }
	return c
}

// Delete is the Manager's Deleter.
func (c *cluster) Delete(_ context.Context, pod eviction.PodRef) error {
	c.mu.Lock()
	c.deleted = append(c.deleted, pod.Name)
	c.mu.Unlock()
	if old := c.cache.DeletePod(pod.Namespace, pod.Name); old != nil {
		c.m.PodUpdated(old, nil)
	}
	return nil
}

// setNode sets the node's taints.
func (c *cluster) setNode(name string, taints ...v1.Taint) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
	old, _ := c.cache.Node(name)
	c.cache.SetNode(n)
	c.m.NodeUpdated(old, n)
}

// addPod adds the pod default/name on node.
func (c *cluster) addPod(name, node string, tolerations ...v1.Toleration) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tolerations},
	}
	c.cache.SetPod(p)
	c.m.PodUpdated(nil, p)
}

// wait waits until the Manager has done what is due, then prints the pods deleted since
// the last wait, in name order.
func (c *cluster) wait() { c.waitAnd(func(d []string) string { return strings.Join(d, " ") }) }

// waitCount is wait, printing how many: pods due at one time go in no particular order, so
// which of them a budget lets go first is not known.
func (c *cluster) waitCount() { c.waitAnd(func(d []string) string { return fmt.Sprint(len(d)) }) }

func (c *cluster) waitAnd(show func(deleted []string) string) {
	if err := c.m.WaitIdle(context.Background()); err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.deleted) > 0 {
		slices.Sort(c.deleted)
		c.say("deleted %s", show(c.deleted))
		c.deleted = nil
	}
}

// say prints a line stamped with the cluster's time.
func (c *cluster) say(format string, args ...any) {
	fmt.Printf("%s  %s\n", c.clock.Now().Format("15:04:05.0"), fmt.Sprintf(format, args...))
}

// pending prints the pending evictions, in name order.
func (c *cluster) pending() {
	var out []string
	for _, p := range c.m.Pending() {
		s := p.Target.Name + " at " + p.At.Format(time.TimeOnly)
		if p.Delayed != "" {
			s += " (" + string(p.Delayed) + ")"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	c.say("pending: [%s]", strings.Join(out, ", "))
}

// taint returns a NoExecute taint with key, added now.
func (c *cluster) taint(key string) v1.Taint {
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: c.clock.Now()}}
}

// tolerate returns a toleration of the taints with key: for seconds, or forever if none.
func tolerate(key string, seconds ...int64) v1.Toleration {
	t := v1.Toleration{Key: key, Operator: v1.TolerationOpExists}
	if len(seconds) > 0 {
		t.TolerationSeconds = &seconds[0]
	}
	return t
}
