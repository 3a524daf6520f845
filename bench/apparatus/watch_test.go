package apparatus

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestPodWatch checks that each deletion reaches the store and then the handler, in the
// order of the DELETEs, and that Idle tells when all have.
func TestPodWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCluster(60, 30)
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		for _, p := range c.Pods {
			if err := store.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		w := NewPodWatch(c, store, func(old *v1.Pod) {
			if _, exists, _ := store.Get(old); exists {
				t.Errorf("%s handled while the store still has it", old.Name)
			}
			got = append(got, old.Name)
		})
		if !w.Idle() {
			t.Error("Idle before any deletion: got false, want true")
		}
		for _, i := range []int{7, 3, 41} {
			w.Deleted(i)
		}
		if w.Idle() {
			t.Error("Idle with 3 deletions queued and Run not started: got true, want false")
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); w.Run(ctx) }()
		synctest.Wait()
		if !w.Idle() {
			t.Error("Idle once Run waits for more: got false, want true")
		}
		cancel()
		<-done
		if want := []string{"pod-7", "pod-3", "pod-41"}; !slices.Equal(got, want) {
			t.Errorf("handled %v, want %v", got, want)
		}
		if n := len(store.List()); n != 57 {
			t.Errorf("store holds %d pods, want 57", n)
		}
		if err := w.Err(); err != nil {
			t.Errorf("Err: got %v, want nil", err)
		}
	})
}
