package clientgo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// eventTries are the tries of an Event the API server did not take, as many as kube's.
const eventTries = 12

// EventWriterOptions configures an [EventWriter]. The zero value is ready to use.
type EventWriterOptions struct {
	Component string      // the Events' source; "" means [Component]
	Clock     clock.Clock // stamps the Events and times the retries; nil: the real clock
	// Correlator configures kube's aggregation of similar Events and its spam filter, as
	// client-go's recorder applies them; the zero value is kube's. Its nil Clock is Clock.
	Correlator record.CorrelatorOptions
}

// EventCounts are what an [EventWriter] did with the Events it was given.
type EventCounts struct {
	Queued  int   // wait to be written (one in flight is not counted)
	Written int64 // created (or, for a repeat, patched) on the API server
	// Dropped were not written: refused by the server, failing all their tries, filtered
	// as spam, invalid, or left in the queue when Run returned.
	Dropped int64
}

// EventWriter is a [record.EventRecorder] that loses no Event for want of room: unlike
// client-go's broadcaster, which drops what comes while 1,000 Events wait, it queues every
// Event and writes them from [EventWriter.Run], one at a time, in order, through kube's
// correlator, as client-go's recorder would. A write that fails for the network, a 429 or
// a 5xx is tried again after a backoff (1 s, doubling up to 30 s, 12 tries in all), the
// Events behind it waiting; one the server refuses otherwise is dropped, logged and
// counted. Give it a client with a rate limiter of its own, so that an Event never takes
// a token an eviction needs.
//
// Recording never blocks and is safe for concurrent use, before, during and after Run; an
// Event recorded once Run has returned is dropped. The zero EventWriter is not usable:
// create one with [NewEventWriter].
type EventWriter struct {
	client     kubernetes.Interface
	clock      clock.Clock
	source     v1.EventSource
	correlator *record.EventCorrelator

	mu     sync.Mutex
	queue  []queuedEvent // oldest first
	closed bool
	wake   chan struct{} // holds a token when the queue may have grown

	started atomic.Bool
	written atomic.Int64
	dropped atomic.Int64
}

// queuedEvent is an Event as recorded, made into an Event only when it is written.
type queuedEvent struct {
	ref                    v1.ObjectReference
	eventType, reason, msg string
	annotations            map[string]string
	at                     time.Time
}

// NewEventWriter returns an EventWriter that writes through client.
func NewEventWriter(client kubernetes.Interface, opts EventWriterOptions) *EventWriter {
	w := &EventWriter{client: client, clock: opts.Clock, wake: make(chan struct{}, 1), source: v1.EventSource{Component: cmp.Or(opts.Component, Component)}}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	copts := opts.Correlator
	if copts.Clock == nil {
		copts.Clock = w.clock
	}
	w.correlator = record.NewEventCorrelatorWithOptions(copts)
	return w
}

// Event queues an Event about object: a [*v1.ObjectReference], or an object of the scheme.
func (w *EventWriter) Event(object runtime.Object, eventType, reason, message string) {
	w.record(object, nil, eventType, reason, message)
}

// Eventf is Event with the message formatted by fmt.Sprintf.
func (w *EventWriter) Eventf(object runtime.Object, eventType, reason, format string, args ...any) {
	w.record(object, nil, eventType, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf is Eventf with annotations on the Event.
func (w *EventWriter) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	w.record(object, annotations, eventType, reason, fmt.Sprintf(format, args...))
}

func (w *EventWriter) record(object runtime.Object, annotations map[string]string, eventType, reason, message string) {
	ref, ok := object.(*v1.ObjectReference)
	if !ok {
		ref, _ = reference.GetReference(scheme.Scheme, object) // nil, with an error, for an object it cannot refer to
	}
	w.mu.Lock()
	if ref == nil || !util.ValidateEventType(eventType) || w.closed {
		w.mu.Unlock()
		w.dropped.Add(1)
		return
	}
	w.queue = append(w.queue, queuedEvent{ref: *ref, eventType: eventType, reason: reason, msg: message, annotations: annotations, at: w.clock.Now()})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Counts returns what the writer did so far. It does not block.
func (w *EventWriter) Counts() EventCounts {
	w.mu.Lock()
	queued := len(w.queue)
	w.mu.Unlock()
	return EventCounts{Queued: queued, Written: w.written.Load(), Dropped: w.dropped.Load()}
}

// Run writes the queued Events, and those recorded later, until ctx is done. It returns
// nil then, once no write is in flight; the Events still queued are dropped and logged. A
// second Run returns an error.
func (w *EventWriter) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("clientgo: EventWriter.Run called more than once")
	}
	logger := klog.FromContext(ctx)
	for e, ok := w.next(ctx); ok; e, ok = w.next(ctx) {
		logger.V(3).Info("Event occurred", "object", klog.KRef(e.ref.Namespace, e.ref.Name), "kind", e.ref.Kind,
			"type", e.eventType, "reason", e.reason, "message", e.msg)
		w.write(ctx, logger, e)
	}
	w.mu.Lock()
	left := len(w.queue)
	w.queue, w.closed = nil, true
	w.mu.Unlock()
	if left > 0 {
		w.dropped.Add(int64(left))
		logger.Info("Events not written: the writer stopped", "count", left)
	}
	return nil
}

// next takes the oldest queued Event, waiting for one until ctx is done. The queue lets go
// of each Event once taken, and of its array once empty.
func (w *EventWriter) next(ctx context.Context) (queuedEvent, bool) {
	for ctx.Err() == nil {
		w.mu.Lock()
		if len(w.queue) > 0 {
			e := w.queue[0]
			w.queue[0] = queuedEvent{}
			if w.queue = w.queue[1:]; len(w.queue) == 0 {
				w.queue = nil
			}
			w.mu.Unlock()
			return e, true
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-w.wake:
		}
	}
	return queuedEvent{}, false
}

// write writes one Event, retrying as the type's doc says.
func (w *EventWriter) write(ctx context.Context, logger klog.Logger, q queuedEvent) {
	res, err := w.correlator.EventCorrelate(w.makeEvent(q))
	if err != nil {
		// The repeat's patch failed: write the Event still, as client-go's recorder does.
		logger.Error(err, "Event correlation failed", "object", klog.KRef(q.ref.Namespace, q.ref.Name))
	}
	if res.Skip {
		w.dropped.Add(1)
		logger.Info("Event dropped by the spam filter", "object", klog.KRef(q.ref.Namespace, q.ref.Name), "reason", q.reason, "message", q.msg)
		return
	}
	for try := 1; ; try++ {
		err := w.send(ctx, res.Event, res.Patch)
		switch {
		case err == nil:
			w.written.Add(1)
			return
		case ctx.Err() != nil:
		case !retriable(err) || try == eventTries:
			logger.Error(err, "Event not written", "object", klog.KRef(q.ref.Namespace, q.ref.Name), "reason", q.reason, "message", q.msg, "tries", try)
		default:
			logger.V(2).Info("Event not written yet; retrying", "object", klog.KRef(q.ref.Namespace, q.ref.Name), "err", err.Error(), "try", try)
			select {
			case <-ctx.Done():
			case <-w.clock.After(eventBackoff(try)):
				continue
			}
		}
		w.dropped.Add(1)
		return
	}
}

// send creates ev, or patches the Event it repeats, and tells the correlator the result.
func (w *EventWriter) send(ctx context.Context, ev *v1.Event, patch []byte) error {
	events := w.client.CoreV1().Events(ev.Namespace)
	var got *v1.Event
	var err error
	if ev.Count > 1 {
		got, err = events.Patch(ctx, ev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	if ev.Count <= 1 || apierrors.IsNotFound(err) {
		create := *ev
		create.ResourceVersion = ""
		got, err = events.Create(ctx, &create, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	w.correlator.UpdateState(got)
	return nil
}

// makeEvent is the Event client-go's recorder makes for q.
func (w *EventWriter) makeEvent(q queuedEvent) *v1.Event {
	t := metav1.NewTime(q.at)
	ns := q.ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        util.GenerateEventName(q.ref.Name, q.at.UnixNano()),
			Namespace:   ns,
			Annotations: q.annotations,
		},
		InvolvedObject:      q.ref,
		Reason:              q.reason,
		Message:             q.msg,
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		Type:                q.eventType,
		Source:              w.source,
		ReportingController: w.source.Component,
		ReportingInstance:   w.source.Host,
	}
}

// retriable reports whether a write that failed with err (no answer, a 429, a 5xx) may
// succeed later.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := int(status.Status().Code)
	return code == http.StatusTooManyRequests || code >= 500 || code == 0
}

// eventBackoff is the wait after the try-th failed write: 1 s, doubling, at most 30 s.
func eventBackoff(try int) time.Duration { return min(time.Second<<min(try-1, 5), 30*time.Second) }
