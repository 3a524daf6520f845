package timedqueue

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestAfterFuncQueue checks that the benchmarks' reference queue does what it models.
func TestAfterFuncQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		q := newAfterFuncQueue(func(k string, v int) { ran = append(ran, k) })
		now := time.Now()
		q.Schedule("a", 1, now.Add(time.Second))
		q.Schedule("b", 1, now.Add(time.Second))
		q.Schedule("b", 2, now.Add(3*time.Second)) // replaced
		q.Schedule("c", 1, now.Add(time.Second))
		if !q.Cancel("c") || q.Cancel("c") {
			t.Fatal("Cancel(c): want true, then false")
		}
		<-time.After(2 * time.Second) // moves the bubble's fake clock: no real wait
		synctest.Wait()
		if len(ran) != 1 || ran[0] != "a" || q.Len() != 1 {
			t.Fatalf("at +2s: got %v, Len %d, want [a], Len 1", ran, q.Len())
		}
		<-time.After(2 * time.Second)
		synctest.Wait()
		if len(ran) != 2 || ran[1] != "b" || q.Len() != 0 {
			t.Fatalf("at +4s: got %v, Len %d, want [a b], Len 0", ran, q.Len())
		}
		q.Schedule("d", 1, now.Add(time.Hour))
		q.stopAll()
		if q.Len() != 0 {
			t.Fatalf("after stopAll: Len %d, want 0", q.Len())
		}
	})
}
