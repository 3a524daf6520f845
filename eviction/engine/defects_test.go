package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// blockingSource is an evictiontest.Source whose lookups of one target block until the
// test lets them go: a decision about that target then holds its lock.
type blockingSource struct {
	*evictiontest.Source
	mu      sync.Mutex
	block   string // the target name whose lookups block
	entered chan struct{}
	release chan struct{}
}

func (s *blockingSource) Target(key types.NamespacedName) (engine.Target, bool, error) {
	s.mu.Lock()
	blocking := key.Name == s.block
	s.block = ""
	s.mu.Unlock()
	if blocking {
		close(s.entered)
		<-s.release
	}
	return s.Source.Target(key)
}

// TestNonBlockingMethodsTakeNoTargetLock: while a decision about a target holds its lock
// (its Source lookup stalls), Synced, Recounted, RetryUnreachable, HolderUpdated and
// HolderDeleted with a brake, and the update methods return at once, though the first five
// may wake that very target's eviction. Before they took each woken target's lock, and
// waited.
func TestNonBlockingMethodsTakeNoTargetLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &blockingSource{Source: &evictiontest.Source{}, entered: make(chan struct{}), release: make(chan struct{})}
		e, err := engine.New(engine.ActuatorFunc(func(context.Context, engine.Ref) error { return nil }), engine.Source[engine.Target](src), engine.Options{
			Brake:       engine.Brake{Fraction: 0.9},
			Unreachable: func(error) bool { return true },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.Run(ctx) //nolint:errcheck // stopped by cancel
		e.Synced()
		h := engine.Holder{Name: "n", Taints: []v1.Taint{taint("down", time.Now())}}
		src.SetHolder(h)
		e.HolderUpdated(h)
		web := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: "web"}, UID: "u", Bindings: []engine.Binding{{Holder: "n"}}}
		src.SetTarget(web)
		e.TargetUpdated(web)
		synctest.Wait()
		if p := e.Pending(); len(p) != 1 || p[0].Delayed != engine.ReasonPaused {
			t.Fatalf("got Pending %v, want web paused", p)
		}

		src.mu.Lock()
		src.block = "web"
		src.mu.Unlock()
		e.TargetUpdated(web)
		<-src.entered // the decision holds web's lock
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			e.Synced()
			e.Recounted("down")
			e.RetryUnreachable()
			e.HolderUpdated(engine.Holder{Name: "m"})
			e.HolderDeleted("m")
			e.TargetUpdated(web)
			e.TargetDeleted(web)
		}()
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Errorf("the non-blocking methods wait for the lock of a decision in progress")
		}
		close(src.release)
		synctest.Wait()
		cancel()
	})
}

// TestSourceErrorsAreLogged: a lookup of the Source that keeps failing is logged as an
// error at once, then once a minute while it keeps failing (each failure also at V(2)),
// and counted in Stats; it is retried with backoff until it succeeds.
func TestSourceErrorsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var errorLines []time.Duration
		start := time.Now()
		logger := funcr.New(func(prefix, args string) {
			if strings.Contains(args, `"error"`) {
				mu.Lock()
				errorLines = append(errorLines, time.Since(start).Truncate(time.Second))
				mu.Unlock()
			}
		}, funcr.Options{Verbosity: 2})
		src := &evictiontest.Source{}
		e, err := engine.New(engine.ActuatorFunc(func(context.Context, engine.Ref) error { return nil }), engine.Source[engine.Target](src), engine.Options{
			Backoff: engine.Backoff{Base: time.Second, Cap: 10 * time.Second, Jitter: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logger))
		defer cancel()
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		src.SetError(errors.New("informer gone"))
		e.TargetUpdated(engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: "web"}})
		time.Sleep(150 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := append([]time.Duration(nil), errorLines...)
		mu.Unlock()
		// Failures at 0, 1, 3, 7, 15, 25, 35 s...: logged at 0, then at the first failure a
		// minute or more after the last logged: 65 s, then 125 s.
		want := []time.Duration{0, 65 * time.Second, 125 * time.Second}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("got errors logged at %v, want at %v", got, want)
		}
		if n := e.Stats().SourceErrors; n < 15 {
			t.Errorf("Stats().SourceErrors = %d, want one per failed lookup (at least 15)", n)
		}
		cancel()
		<-done
	})
}

// TestUnreachableMarkGoesWithTheEviction: an eviction whose call failed for want of an
// answer, then closed by an update, leaves nothing for RetryUnreachable to find.
func TestUnreachableMarkGoesWithTheEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newOutageFleet(t, isRefused)
		f.down.Store(true)
		f.target("web")
		synctest.Wait()
		if n := f.e.UnreachableIndexLen(); n != 1 {
			t.Fatalf("after a refused call: %d evictions marked unreachable, want 1", n)
		}
		key := types.NamespacedName{Namespace: "ns", Name: "web"}
		old, _ := f.src.DeleteTarget(key)
		f.e.TargetDeleted(old)
		synctest.Wait()
		if n := f.e.UnreachableIndexLen(); n != 0 {
			t.Errorf("after the eviction was cancelled: %d evictions marked unreachable, want 0", n)
		}
	})
}

// TestHoldersReadFromTheSource: an Engine started after its holders were tainted, and
// told only of its targets, reads their holders from the Source and acts on time; with no
// taint known, a target it was told of would otherwise never be evicted.
func TestHoldersReadFromTheSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{})
		f.src.SetHolder(engine.Holder{Name: "n", Taints: []v1.Taint{taint("down", t0)}})
		f.target("now", engine.Binding{Holder: "n"})
		f.target("later", engine.Binding{Holder: "n", Tolerations: []v1.Toleration{tolFor("down", 60)}})
		synctest.Wait()
		if got := f.actedOn("now"); len(got) != 1 || !got[0].Equal(t0) {
			t.Errorf("now: acted on at %v, want once at once", got)
		}
		f.step(time.Minute)
		if got := f.actedOn("later"); len(got) != 1 || !got[0].Equal(t0.Add(time.Minute)) {
			t.Errorf("later: acted on at %v, want once at +1m", got)
		}
	})
}

// TestPendingOf: PendingOf finds one target's waiting eviction as Pending lists it, and
// nothing for a target with none, or whose call runs.
func TestPendingOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, engine.Options{})
		f.holder("n", taint("down", t0))
		f.target("later", engine.Binding{Holder: "n", Tolerations: []v1.Toleration{tolFor("down", 60)}})
		f.target("forever", engine.Binding{Holder: "n", Tolerations: []v1.Toleration{tolForever("down")}})
		synctest.Wait()
		all := f.e.Pending()
		if len(all) != 1 {
			t.Fatalf("Pending: %v, want later's alone", all)
		}
		if got, ok := f.e.PendingOf(types.NamespacedName{Namespace: "ns", Name: "later"}); !ok || got != all[0] {
			t.Errorf("PendingOf(later) = %v, %v; want %v, true", got, ok, all[0])
		}
		for _, name := range []string{"forever", "unknown"} {
			if got, ok := f.e.PendingOf(types.NamespacedName{Namespace: "ns", Name: name}); ok {
				t.Errorf("PendingOf(%s) = %v, true; want false", name, got)
			}
		}
	})
}
