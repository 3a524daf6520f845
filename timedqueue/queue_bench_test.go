package timedqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The benchmarks compare Queue with afterFuncQueue, the lean model of kube's queue, on the
// same keys, values and times. Keys are strings such as "ns/pod-17", generated once before
// any timing so that neither their cost nor their bytes are counted.
//
//	go test -run '^$' -bench 'Add|Replace|Cancel' -count 5 ./timedqueue/
//	go test -run '^$' -bench Burst -benchtime 1x -count 5 ./timedqueue/
//	go test -run '^$' -bench FireLag -benchtime 1x -count 5 ./timedqueue/

// benchValue is the small value each key carries (a pod UID and a node number, say).
type benchValue struct {
	uid  uint64
	node uint32
}

// benchQueue is what the add, replace and cancel benchmarks need of an implementation.
type benchQueue interface {
	Schedule(key string, v benchValue, at time.Time)
	Cancel(key string) bool
	stop()
}

type tqBench struct {
	q       *Queue[string, benchValue]
	cancel  context.CancelFunc
	stopped chan struct{}
}

func (t *tqBench) Schedule(key string, v benchValue, at time.Time) { t.q.Schedule(key, v, at) }
func (t *tqBench) Cancel(key string) bool                          { return t.q.Cancel(key) }
func (t *tqBench) stop()                                           { t.cancel(); <-t.stopped }

// newTQBench returns a running Queue whose work does nothing.
func newTQBench(b *testing.B) *tqBench {
	q, err := New(func(context.Context, string, benchValue) {}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tqBench{q: q, cancel: cancel, stopped: make(chan struct{})}
	go func() { q.Run(ctx); close(t.stopped) }()
	return t
}

type afBench struct {
	*afterFuncQueue[string, benchValue]
}

func (a afBench) stop() { a.stopAll() }

func newAFBench(*testing.B) benchQueue {
	return afBench{newAfterFuncQueue(func(string, benchValue) {})}
}

var impls = []struct {
	name string
	make func(*testing.B) benchQueue
}{
	{"timedqueue", func(b *testing.B) benchQueue { return newTQBench(b) }},
	{"afterfunc", newAFBench},
}

var pendings = []struct {
	name string
	n    int
}{{"100k", 100_000}, {"1M", 1_000_000}}

// benchKeys and benchTimes are shared by every benchmark: 1.2M keys and far-future times
// (a day ahead, spread over an hour, in random order), so that nothing fires. They are made
// on first use, so that the tests do not pay for them.
var (
	benchKeys  []string
	benchTimes []time.Time
)

var makeBenchKeys = sync.OnceFunc(func() { benchKeys, benchTimes = genBenchKeys() })

func genBenchKeys() ([]string, []time.Time) {
	const n = 1_200_000
	keys := make([]string, n)
	times := make([]time.Time, n)
	base := time.Now().Add(24 * time.Hour)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/pod-%d", i)
		times[i] = base.Add(time.Duration(r.Int64N(int64(time.Hour))))
	}
	return keys, times
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fill schedules keys [0, n) and returns a function that reports the heap bytes retained
// per pending key, to be called after the benchmark loop (b.Loop drops earlier metrics).
func fill(b *testing.B, q benchQueue, n int) (report func()) {
	before := heapAlloc()
	for i := range n {
		q.Schedule(benchKeys[i], benchValue{uid: uint64(i)}, benchTimes[i])
	}
	perItem := float64(int64(heapAlloc()-before)) / float64(n)
	return func() { b.ReportMetric(perItem, "B/item") }
}

// cpuMeter measures the CPU time of the process over a benchmark loop, less the untimed
// parts, and reports it per op as cpu-ns/op: on a shared machine the wall time also counts
// the time the benchmark waited for a core.
type cpuMeter struct {
	start, paused, excluded time.Duration
	n                       int
}

func startCPU() *cpuMeter { return &cpuMeter{start: processCPU()} }

func (c *cpuMeter) pause()  { c.paused = processCPU() }
func (c *cpuMeter) resume() { c.excluded += processCPU() - c.paused }

// report must be deferred before the loop: b.N is final when it runs.
func (c *cpuMeter) report(b *testing.B) {
	used := processCPU() - c.start - c.excluded
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkAdd schedules new keys into a queue holding n pending ones. Every n/10 adds the
// timer stops and the added keys are cancelled, so the queue stays between n and 1.1n.
func BenchmarkAdd(b *testing.B) {
	makeBenchKeys()
	for _, p := range pendings {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("pending=%s/impl=%s", p.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				q := impl.make(b)
				defer q.stop()
				report := fill(b, q, p.n)
				defer report()
				batch := p.n / 10
				i := 0
				cpu := startCPU()
				defer cpu.report(b)
				for b.Loop() {
					if i == batch {
						b.StopTimer()
						cpu.pause()
						for j := range batch {
							q.Cancel(benchKeys[p.n+j])
						}
						i = 0
						cpu.resume()
						b.StartTimer()
					}
					q.Schedule(benchKeys[p.n+i], benchValue{uid: uint64(i)}, benchTimes[p.n+i])
					i++
				}
			})
		}
	}
}

// BenchmarkReplace moves pending keys to new times in a queue holding n pending keys.
func BenchmarkReplace(b *testing.B) {
	makeBenchKeys()
	for _, p := range pendings {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("pending=%s/impl=%s", p.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				q := impl.make(b)
				defer q.stop()
				report := fill(b, q, p.n)
				defer report()
				i, round := 0, time.Duration(1)
				for b.Loop() {
					if i == p.n {
						i, round = 0, round+1
					}
					// Another key's time, nudged by the round: never the time the key has.
					at := benchTimes[(i+p.n/2)%p.n].Add(round)
					q.Schedule(benchKeys[i], benchValue{uid: uint64(i)}, at)
					i++
				}
			})
		}
	}
}

// BenchmarkCancel cancels pending keys of a queue holding n. Every n/10 cancels the timer
// stops and the cancelled keys are scheduled again, so the queue stays between 0.9n and n.
func BenchmarkCancel(b *testing.B) {
	makeBenchKeys()
	for _, p := range pendings {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("pending=%s/impl=%s", p.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				q := impl.make(b)
				defer q.stop()
				report := fill(b, q, p.n)
				defer report()
				batch := p.n / 10
				i, start := 0, 0
				cpu := startCPU()
				defer cpu.report(b)
				for b.Loop() {
					if i == batch {
						b.StopTimer()
						cpu.pause()
						for j := start; j < start+batch; j++ {
							q.Schedule(benchKeys[j], benchValue{uid: uint64(j)}, benchTimes[j])
						}
						i, start = 0, (start+batch)%p.n
						cpu.resume()
						b.StartTimer()
					}
					if !q.Cancel(benchKeys[start+i]) {
						b.Fatalf("Cancel(%s): got false, want true", benchKeys[start+i])
					}
					i++
				}
			})
		}
	}
}

// memSampler samples the memory the runtime uses for heap objects and stacks, and keeps the
// peak.
type memSampler struct {
	samples []metrics.Sample
	peak    atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
}

func (m *memSampler) read() uint64 {
	metrics.Read(m.samples)
	var sum uint64
	for _, s := range m.samples {
		sum += s.Value.Uint64()
	}
	return sum
}

func startMemSampler() *memSampler {
	m := &memSampler{
		samples: []metrics.Sample{
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"},
			{Name: "/memory/classes/heap/stacks:bytes"},
		},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	m.peak.Store(m.read())
	go func() {
		defer close(m.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				if v := m.read(); v > m.peak.Load() {
					m.peak.Store(v)
				}
			}
		}
	}()
	return m
}

func (m *memSampler) finish() uint64 {
	close(m.stop)
	<-m.done
	return max(m.peak.Load(), m.read())
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// BenchmarkBurst schedules 1M keys for one deadline, a few seconds ahead, and measures the
// time from the deadline until the last no-op work has run (reported as ns/op), the CPU
// time the process used from the first work to the last (cpu-ms, which the load of a shared
// machine sways less than the wall time), the most goroutines alive at once (counted from
// inside the work), and the peak memory in heap objects and stacks above what it was before
// the keys were scheduled. Run it with -benchtime 1x.
func BenchmarkBurst(b *testing.B) {
	makeBenchKeys()
	const n = 1_000_000
	for _, impl := range []string{"timedqueue", "afterfunc"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			var drain, cpu time.Duration
			var peakG atomic.Int64
			var peakMem, base uint64
			// once schedules the keys for a deadline lead ahead and measures the drain. It
			// reports false, having measured nothing, when scheduling overran the lead.
			once := func(lead time.Duration) bool {
				var count atomic.Int64
				var cpuStart time.Duration
				allDone := make(chan time.Time, 1)
				peakG.Store(0)
				work := func() {
					storeMax(&peakG, int64(runtime.NumGoroutine()))
					switch count.Add(1) {
					case 1:
						cpuStart = processCPU()
					case n:
						cpu = processCPU() - cpuStart
						allDone <- time.Now()
					}
				}
				runtime.GC()
				mem := startMemSampler()
				base = mem.read()
				deadline := time.Now().Add(lead)
				var stop func()
				switch impl {
				case "timedqueue":
					t := newTQBench(b)
					t.q.work = func(context.Context, string, benchValue) { work() }
					for i := range n {
						t.q.Schedule(benchKeys[i], benchValue{uid: uint64(i)}, deadline)
					}
					stop = t.stop
				case "afterfunc":
					q := newAfterFuncQueue(func(string, benchValue) { work() })
					for i := range n {
						q.Schedule(benchKeys[i], benchValue{uid: uint64(i)}, deadline)
					}
					stop = q.stopAll
				}
				defer stop()
				if late := time.Since(deadline); late > 0 {
					mem.finish()
					b.Logf("scheduling %d keys took %v longer than the %v lead", n, late, lead)
					return false
				}
				select {
				case end := <-allDone:
					drain = end.Sub(deadline)
				case <-time.After(5 * time.Minute):
					b.Fatalf("after 5 minutes, %d of %d had run", count.Load(), n)
				}
				peakMem = mem.finish()
				return true
			}
			for b.Loop() {
				// 4 s is longer than scheduling 1M keys takes, unless other processes hold
				// the cores: then the run is made again with twice the lead.
				lead := 4 * time.Second
				for !once(lead) {
					if lead *= 2; lead > time.Minute {
						b.Fatalf("scheduling %d keys took longer than a %v lead", n, lead/2)
					}
				}
			}
			b.ReportMetric(float64(drain.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms")
			b.ReportMetric(float64(peakG.Load()), "goroutines-peak")
			b.ReportMetric(float64(peakMem-base)/(1<<20), "MB-peak")
		})
	}
}

// BenchmarkFireLag schedules 10k keys spread over 2 s on the real clock and reports the
// median and 99th percentile of how late their work starts, for Queue, for afterFuncQueue
// and for bare time.AfterFunc, in one run. Run it with -benchtime 1x.
func BenchmarkFireLag(b *testing.B) {
	const n = 10_000
	const spread = 2 * time.Second
	for _, impl := range []string{"timedqueue", "afterfuncqueue", "afterfunc"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			var p50, p99 time.Duration
			for b.Loop() {
				r := rand.New(rand.NewPCG(3, 4))
				lags := make([]time.Duration, n)
				ats := make([]time.Time, n)
				var wg sync.WaitGroup
				wg.Add(n)
				record := func(i int) {
					lags[i] = time.Since(ats[i])
					wg.Done()
				}
				start := time.Now().Add(50 * time.Millisecond)
				for i := range ats {
					ats[i] = start.Add(time.Duration(r.Int64N(int64(spread))))
				}
				var stop func()
				switch impl {
				case "timedqueue":
					q, err := New(func(_ context.Context, _ int, i int) { record(i) }, Options{})
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					stopped := make(chan struct{})
					go func() { q.Run(ctx); close(stopped) }()
					stop = func() { cancel(); <-stopped }
					for i := range ats {
						q.Schedule(i, i, ats[i])
					}
				case "afterfuncqueue":
					q := newAfterFuncQueue(func(_ int, i int) { record(i) })
					for i := range ats {
						q.Schedule(i, i, ats[i])
					}
					stop = q.stopAll
				case "afterfunc":
					for i := range ats {
						time.AfterFunc(time.Until(ats[i]), func() { record(i) })
					}
					stop = func() {}
				}
				wg.Wait()
				stop()
				slices.Sort(lags)
				p50, p99 = lags[n/2], lags[n*99/100]
			}
			b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkShrink times the longest hold of the lock after a drain: the rebuild of the
// index and the heap's array once a queue that held a million keys holds an eighth of them
// (shrink), which the Schedule, Cancel or finished call that triggers it makes.
func BenchmarkShrink(b *testing.B) {
	makeBenchKeys()
	const n = 1_000_000 / 8
	q, err := New(func(context.Context, string, benchValue) {}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		q.Schedule(benchKeys[i], benchValue{}, benchTimes[i])
	}
	for b.Loop() {
		q.mu.Lock()
		q.peak = 8 * n
		q.shrink()
		q.mu.Unlock()
	}
	if q.peak != n || q.Len() != n {
		b.Fatalf("after the rebuild: peak %d, Len %d, want %d", q.peak, q.Len(), n)
	}
}
