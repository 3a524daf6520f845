package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/taintevict/taintevict/timedqueue"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/tainteviction"
)

// fullScale reports whether BENCH_SCALE=full asks for the sizes BENCHMARKS.md quotes; the
// default sizes are small, for CI.
func fullScale() bool { return os.Getenv("BENCH_SCALE") == "full" }

type size struct {
	name string
	n    int
}

// pendingSizes are the queue sizes at which add, replace and cancel are measured.
func pendingSizes() []size {
	if fullScale() {
		return []size{{"100k", 100_000}, {"1M", 1_000_000}}
	}
	return []size{{"1k", 1_000}, {"10k", 10_000}}
}

// burstSize is how many keys fall due at once in BenchmarkBurst.
func burstSize() size {
	if fullScale() {
		return size{"1M", 1_000_000}
	}
	return size{"10k", 10_000}
}

// Keys and times shared by every benchmark, made once before any timing: pod names
// "ns/pod-N" as kube's controller and the Manager key them (a NamespacedName), kube's string
// form of the same key (its CancelWork takes a string), and times a day ahead, spread over an
// hour in random order, so that nothing fires. created is the creation time given to kube's
// AddWork, which arms its timer for fireAt - createdAt.
var (
	names   []types.NamespacedName
	strKeys []string
	times   []time.Time
	created time.Time
)

var makeKeys = sync.OnceFunc(func() {
	n := 12_000
	if fullScale() {
		n = 1_200_000
	}
	names = make([]types.NamespacedName, n)
	strKeys = make([]string, n)
	times = make([]time.Time, n)
	created = time.Now()
	base := created.Add(24 * time.Hour)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		names[i] = types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i)}
		strKeys[i] = names[i].String()
		times[i] = base.Add(time.Duration(r.Int64N(int64(time.Hour))))
	}
})

// benchQueue is one implementation under test, addressed by key index.
type benchQueue interface {
	add(i int, at time.Time)     // schedules a key that is not pending
	replace(i int, at time.Time) // moves a pending key to another time
	cancel(i int) bool           // removes a pending key
	stop()                       // stops the queue and waits for what it started
}

// kubeQueue is kube's TimedWorkerQueue, called as kube's controller calls it: a new
// *WorkArgs for every AddWork (the queue keeps it), UpdateWork to move a key. Its timers are
// armed for fireAt - createdAt: createdAt is the shared creation time, taken once, for the
// times a day ahead; with live set (for the burst) it is the time of the call.
type kubeQueue struct {
	q    *tainteviction.TimedWorkerQueue
	live bool
}

func (k *kubeQueue) createdAt() time.Time {
	if k.live {
		return time.Now()
	}
	return created
}

func newKube(work func(), live bool) *kubeQueue {
	return &kubeQueue{live: live, q: tainteviction.CreateWorkerQueue(
		func(context.Context, time.Time, *tainteviction.WorkArgs) error { work(); return nil })}
}

func kubeArgs(i int) *tainteviction.WorkArgs {
	return &tainteviction.WorkArgs{Object: tainteviction.NamespacedObject{NamespacedName: names[i]}}
}

func (k *kubeQueue) add(i int, at time.Time) {
	k.q.AddWork(context.Background(), kubeArgs(i), k.createdAt(), at)
}

func (k *kubeQueue) replace(i int, at time.Time) {
	k.q.UpdateWork(context.Background(), kubeArgs(i), k.createdAt(), at)
}

func (k *kubeQueue) cancel(i int) bool { return k.q.CancelWork(klog.Background(), strKeys[i]) }
func (k *kubeQueue) stop()             { k.q.CancelAndWait() }

// tqQueue is a running timedqueue.Queue with its default 8 workers, keyed as the eviction
// Manager keys it; the value is the pod's UID (empty here, as in kube's WorkArgs).
type tqQueue struct {
	q       *timedqueue.Queue[types.NamespacedName, types.UID]
	cancelF context.CancelFunc
	stopped chan struct{}
}

func newTQ(b *testing.B, work func()) *tqQueue {
	q, err := timedqueue.New(func(context.Context, types.NamespacedName, types.UID) {
		work()
	}, timedqueue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tqQueue{q: q, cancelF: cancel, stopped: make(chan struct{})}
	go func() { _ = q.Run(ctx); close(t.stopped) }()
	return t
}

func (t *tqQueue) add(i int, at time.Time)     { t.q.Schedule(names[i], "", at) }
func (t *tqQueue) replace(i int, at time.Time) { t.q.Schedule(names[i], "", at) }
func (t *tqQueue) cancel(i int) bool           { return t.q.Cancel(names[i]) }
func (t *tqQueue) stop()                       { t.cancelF(); <-t.stopped }

// impls lists the implementations; each benchmark runs them one after the other, in this
// order, under the same load.
var impls = []struct {
	name string
	make func(b *testing.B, work func(), live bool) benchQueue
}{
	{"kube", func(_ *testing.B, work func(), live bool) benchQueue { return newKube(work, live) }},
	{"taintevict", func(b *testing.B, work func(), _ bool) benchQueue { return newTQ(b, work) }},
}

func noWork() {}
