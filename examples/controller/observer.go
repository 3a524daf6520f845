package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
)

// EventReason is the reason of the Events kube-controller-manager's taint eviction
// controller records; tools and people that filter on it see this controller's Events too.
const EventReason = "TaintManagerEviction"

// Observer is the [eviction.Observer] that makes the Manager's decisions visible: each one
// is a line on Out, and the two that kube-controller-manager reports as Kubernetes Events
// are recorded as the same Events, on the pod:
//
//   - "Marking for deletion Pod ns/name" when the Deleter is first called for the pod;
//   - "Cancelling deletion of Pod ns/name" when a pending eviction is cancelled.
//
// Its methods are called from the Manager's goroutines, several at once; the Recorder is
// safe for that, and writes to Out are serialised. Recording an Event only queues it: the
// event broadcaster writes it to the API server from its own goroutine, so a slow API
// server never holds up the Manager.
type Observer struct {
	// Out receives one line per decision. nil discards them.
	Out io.Writer
	// Recorder records the Events. nil records none (in dry-run mode, say).
	Recorder record.EventRecorder

	mu sync.Mutex
}

var _ eviction.Observer = (*Observer)(nil)

// Scheduled: the pod is due at the given time.
func (o *Observer) Scheduled(pod eviction.PodRef, at time.Time) {
	if wait := time.Until(at); wait > 0 {
		o.printf("scheduled  %s on %s: evict at %s (in %s)", pod, pod.Node, at.Format(time.TimeOnly), wait.Round(100*time.Millisecond))
	} else {
		o.printf("scheduled  %s on %s: evict now", pod, pod.Node)
	}
}

// Cancelled: the pod is no longer due. This is an Event, as in kube.
func (o *Observer) Cancelled(pod eviction.PodRef, reason eviction.Reason) {
	o.printf("cancelled  %s on %s: %s", pod, pod.Node, reason)
	o.event(pod, "Cancelling deletion of Pod %s", pod)
}

// Skipped: the pod was due, and not evicted after all.
func (o *Observer) Skipped(pod eviction.PodRef, reason eviction.Reason) {
	o.printf("skipped    %s on %s: %s", pod, pod.Node, reason)
}

// Started: the Deleter is called. The first attempt is an Event, as in kube; retries are
// not, so that a failing API server does not fill the pod's Events with copies.
func (o *Observer) Started(pod eviction.PodRef, attempt int) {
	o.printf("evicting   %s from %s (attempt %d)", pod, pod.Node, attempt)
	if attempt == 1 {
		o.event(pod, "Marking for deletion Pod %s", pod)
	}
}

// Succeeded: the pod was deleted, or was gone already, or (dry run) would have been.
func (o *Observer) Succeeded(pod eviction.PodRef, attempt int, dryRun bool) {
	if dryRun {
		o.printf("would evict %s from %s (dry run)", pod, pod.Node)
		return
	}
	o.printf("evicted    %s from %s", pod, pod.Node)
}

// Failed: an attempt failed; the Manager retries it with backoff.
func (o *Observer) Failed(pod eviction.PodRef, attempt int, err error) {
	o.printf("failed     %s on %s (attempt %d, will retry): %v", pod, pod.Node, attempt, err)
}

// Delayed: the pod is due and waits for a rate limit or the brake; the line is written
// only when the reason changes.
func (o *Observer) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	o.printf("delayed    %s on %s: %s", pod, pod.Node, reason)
}

// event records a Normal Event with [EventReason] on the pod. The reference carries the
// pod's UID, so that the Event belongs to this pod and not to one re-created under its name.
func (o *Observer) event(pod eviction.PodRef, format string, args ...any) {
	if o.Recorder == nil {
		return
	}
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	o.Recorder.Eventf(ref, v1.EventTypeNormal, EventReason, format, args...)
}

func (o *Observer) printf(format string, args ...any) {
	if o.Out == nil {
		return
	}
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...) + "\n"
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.Out, line)
}
