package outage

import (
	"bufio"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// sampler keeps the peaks of the goroutine count and of the heap objects' bytes, read
// every 5 ms from runtime/metrics, which does not stop the world.
type sampler struct {
	stop chan struct{}
	done chan [2]uint64
}

func startSampler() *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan [2]uint64, 1)}
	samples := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	go func() {
		var peak [2]uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			for i := range peak {
				peak[i] = max(peak[i], samples[i].Value.Uint64())
			}
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops the sampler and returns the peak goroutines and heap object bytes.
func (s *sampler) finish() (goroutines int, heap uint64) {
	close(s.stop)
	peak := <-s.done
	return int(peak[0]), peak[1]
}

// liveHeap returns the heap in use after two full GCs: a sync.Pool keeps what it holds
// through one GC (as its victim cache), and after one GC the baseline held some 4 MB of
// pooled buffers in some runs and not in others.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, or 0 where
// /proc/self/status is not there.
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
