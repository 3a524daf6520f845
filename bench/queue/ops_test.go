package queue

import (
	"runtime"
	"testing"
	"time"
)

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fill adds keys [0, n) and returns a function that reports the heap bytes the queue retains
// per pending key (the live heap after less the live heap before, both after a GC), to be
// called after the benchmark loop, which drops metrics reported before it.
func fill(b *testing.B, q benchQueue, n int) (report func()) {
	before := heapAlloc()
	for i := range n {
		q.add(i, times[i])
	}
	perItem := float64(int64(heapAlloc()-before)) / float64(n)
	return func() { b.ReportMetric(perItem, "B/item") }
}

// run runs body as a sub-benchmark per size and implementation, over a queue holding n
// pending keys.
func run(b *testing.B, body func(b *testing.B, q benchQueue, n int)) {
	makeKeys()
	for _, s := range pendingSizes() {
		for _, impl := range impls {
			b.Run("pending="+s.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				q := impl.make(b, noWork, false)
				defer q.stop()
				report := fill(b, q, s.n)
				defer report()
				body(b, q, s.n)
			})
		}
	}
}

// BenchmarkAdd adds new keys to a queue holding n pending ones. Every n/10 adds the timer
// stops and the added keys are cancelled, so the queue stays between n and 1.1n.
func BenchmarkAdd(b *testing.B) {
	run(b, func(b *testing.B, q benchQueue, n int) {
		batch, i := n/10, 0
		for b.Loop() {
			if i == batch {
				b.StopTimer()
				for j := range batch {
					q.cancel(n + j)
				}
				i = 0
				b.StartTimer()
			}
			q.add(n+i, times[n+i])
			i++
		}
	})
}

// BenchmarkReplace moves pending keys to new times in a queue holding n.
func BenchmarkReplace(b *testing.B) {
	run(b, func(b *testing.B, q benchQueue, n int) {
		i, round := 0, time.Duration(1)
		for b.Loop() {
			if i == n {
				i, round = 0, round+1
			}
			// Another key's time, nudged by the round: never the time the key has.
			q.replace(i, times[(i+n/2)%n].Add(round))
			i++
		}
	})
}

// BenchmarkCancel cancels pending keys of a queue holding n. Every n/10 cancels the timer
// stops and the cancelled keys are added again, so the queue stays between 0.9n and n.
func BenchmarkCancel(b *testing.B) {
	run(b, func(b *testing.B, q benchQueue, n int) {
		batch, i, start := n/10, 0, 0
		for b.Loop() {
			if i == batch {
				b.StopTimer()
				for j := start; j < start+batch; j++ {
					q.add(j, times[j])
				}
				i, start = 0, (start+batch)%n
				b.StartTimer()
			}
			if !q.cancel(start + i) {
				b.Fatalf("cancel(%s): got false, want true", strKeys[start+i])
			}
			i++
		}
	})
}
