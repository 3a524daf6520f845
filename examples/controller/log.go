package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/taintevict/taintevict/eviction"

	"github.com/taintevict/taintevict/clientgo"
)

// lineObserver writes a line per decision to out: the command's own output. It is an
// eviction.Observer, and a clientgo.DeleteObserver to say how each pod went. Writes are
// serialised; it is safe for concurrent use.
type lineObserver struct {
	mu  sync.Mutex
	out io.Writer
}

var (
	_ eviction.Observer       = (*lineObserver)(nil)
	_ clientgo.DeleteObserver = (*lineObserver)(nil)
)

func (o *lineObserver) Scheduled(pod eviction.PodRef, at time.Time) {
	if wait := time.Until(at); wait > 0 {
		o.printf("scheduled  %s on %s: evict at %s (in %s)", pod, pod.Holder, at.Format(time.TimeOnly), wait.Round(100*time.Millisecond))
	} else {
		o.printf("scheduled  %s on %s: evict now", pod, pod.Holder)
	}
}

func (o *lineObserver) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	o.printf("cancelled  %s on %s: %s", pod, pod.Holder, reason)
}

func (o *lineObserver) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	o.printf("skipped    %s on %s: %s", pod, pod.Holder, reason)
}

func (o *lineObserver) Started(pod eviction.PodRef, a eviction.Attempt) {
	o.printf("evicting   %s from %s (attempt %d)", pod, pod.Holder, a.Call)
}

// Found writes nothing: "evicting" said the call started, and "removed" or "failed" will
// say how it ended.
func (o *lineObserver) Found(eviction.PodRef) {}

func (o *lineObserver) Removed(pod eviction.PodRef, how clientgo.Method, gone bool) {
	if gone {
		o.printf("gone       %s (found gone by %s)", pod, how)
		return
	}
	o.printf("removed    %s by %s", pod, how)
}

func (o *lineObserver) Succeeded(pod eviction.PodRef, _ eviction.Attempt, dryRun bool) {
	if dryRun {
		o.printf("would evict %s from %s (dry run)", pod, pod.Holder)
		return
	}
	o.printf("evicted    %s from %s", pod, pod.Holder)
}

func (o *lineObserver) Failed(pod eviction.PodRef, a eviction.Attempt, err error) {
	o.printf("failed     %s on %s (attempt %d, will retry): %v", pod, pod.Holder, a.Call, err)
}

func (o *lineObserver) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	if reason == eviction.ReasonUnconfirmed {
		o.printf("delayed    %s on %s: %s (the taint would evict too many pods at once: confirm it with the annotation %s=KEY on the node, the DeviceTaintRule or the ResourceSlice)",
			pod, pod.Holder, reason, eviction.ConfirmAnnotation)
		return
	}
	o.printf("delayed    %s on %s: %s", pod, pod.Holder, reason)
}

func (o *lineObserver) printf(format string, args ...any) {
	if o.out == nil {
		return
	}
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...) + "\n"
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.out, line)
}
