package queue

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// sampler keeps the peaks of the goroutine count and of two memory figures while a burst
// drains: the memory the process holds from the OS (every runtime memory class, less the
// heap released back to the OS) and the heap objects and stacks within it.
type sampler struct {
	samples []metrics.Sample
	peakG   atomic.Int64
	peakOS  atomic.Uint64
	peakHS  atomic.Uint64
	stopC   chan struct{}
	done    chan struct{}
}

func (s *sampler) read() (fromOS, heapStacks uint64) {
	metrics.Read(s.samples)
	total, released := s.samples[0].Value.Uint64(), s.samples[1].Value.Uint64()
	return total - released, s.samples[2].Value.Uint64() + s.samples[3].Value.Uint64()
}

func (s *sampler) observe() {
	storeMax(&s.peakG, int64(runtime.NumGoroutine()))
	os, hs := s.read()
	storeMaxU(&s.peakOS, os)
	storeMaxU(&s.peakHS, hs)
}

// startSampler samples every 2 ms until finish; observeGoroutines may be called from the
// work as well, to catch short peaks.
func startSampler() *sampler {
	s := &sampler{
		samples: []metrics.Sample{
			{Name: "/memory/classes/total:bytes"},
			{Name: "/memory/classes/heap/released:bytes"},
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/stacks:bytes"},
		},
		stopC: make(chan struct{}),
		done:  make(chan struct{}),
	}
	s.observe()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stopC:
				return
			case <-tick.C:
				s.observe()
			}
		}
	}()
	return s
}

func (s *sampler) finish() {
	close(s.stopC)
	<-s.done
	s.observe()
}

func storeMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

func storeMaxU(a *atomic.Uint64, v uint64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// BenchmarkBurst adds n keys for one deadline, far enough ahead that adding them all is done
// before it, and reports as ns/op the time from the deadline until the last (no-op) work
// has run. It also reports the most goroutines alive at once (counted from inside the work
// and by a sampler), and the peak growth, above what the process had before the keys were
// added, of the memory taken from the OS and of the heap objects and stacks. Kube's queue
// arms one timer per key and starts a goroutine per fired key. Run it with -benchtime 1x,
// and each implementation in a process of its own (-bench 'Burst/.*/impl=kube$'), since
// the memory a process has taken from the OS stays with it after a run.
func BenchmarkBurst(b *testing.B) {
	makeKeys()
	s := burstSize()
	// Adding must be done before the deadline: once it passes, kube's timers fire while keys
	// are still added, and the goroutines they start slow the adding down further. 20 µs a
	// key is several times what kube's AddWork takes on a busy machine.
	lead := time.Second + time.Duration(s.n)*20*time.Microsecond
	for _, impl := range impls {
		b.Run("n="+s.name+"/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			var drain time.Duration
			var smp *sampler
			var baseOS, baseHS uint64
			for b.Loop() {
				var count atomic.Int64
				allDone := make(chan time.Time, 1)
				runtime.GC()
				smp = startSampler()
				baseOS, baseHS = smp.read()
				q := impl.make(b, func() {
					storeMax(&smp.peakG, int64(runtime.NumGoroutine()))
					if count.Add(1) == int64(s.n) {
						allDone <- time.Now()
					}
				}, true)
				deadline := time.Now().Add(lead)
				for i := range s.n {
					q.add(i, deadline)
				}
				if late := time.Since(deadline); late > 0 {
					b.Fatalf("adding %d keys took %v longer than the %v lead", s.n, late, lead)
				}
				select {
				case end := <-allDone:
					drain = end.Sub(deadline)
				case <-time.After(5 * time.Minute):
					b.Fatalf("after 5 minutes, %d of %d had run", count.Load(), s.n)
				}
				smp.finish()
				q.stop()
			}
			b.ReportMetric(float64(drain.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(smp.peakG.Load()), "goroutines-peak")
			b.ReportMetric(float64(smp.peakOS.Load()-baseOS)/(1<<20), "MB-from-OS")
			b.ReportMetric(float64(smp.peakHS.Load()-baseHS)/(1<<20), "MB-heap+stacks")
		})
	}
}
