package clientgo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// eventLog records the Event writes a fake clientset receives, in order, as
// "verb pod message", and lets a test script the answer to each.
type eventLog struct {
	mu     sync.Mutex
	writes []string
	at     []time.Time
	clock  interface{ Now() time.Time }
	answer func(verb string, ev *v1.Event, try int) error // nil: every write succeeds
	tries  map[string]int                                 // by message
	// answered, when set, makes the log answer each create itself, with the Event it was
	// given, and keep the Events here: the fake's tracker costs milliseconds a create.
	answered map[string]*v1.Event // by message
}

// install puts the log in front of client's event tracker.
func (l *eventLog) install(client *fake.Clientset) {
	l.tries = map[string]int{}
	client.PrependReactor("*", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var ev *v1.Event
		switch a := a.(type) {
		case k8stesting.CreateAction:
			ev = a.GetObject().(*v1.Event)
		case k8stesting.PatchAction:
			obj, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "events"}, a.GetNamespace(), a.GetName())
			if err != nil {
				return false, nil, nil
			}
			ev = obj.(*v1.Event)
		default:
			return false, nil, nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.tries[ev.Message]++
		l.writes = append(l.writes, a.GetVerb()+" "+ev.InvolvedObject.Name+" "+ev.Message)
		if l.clock != nil {
			l.at = append(l.at, l.clock.Now())
		}
		if l.answer != nil {
			if err := l.answer(a.GetVerb(), ev, l.tries[ev.Message]); err != nil {
				return true, nil, err
			}
		}
		if l.answered != nil && a.GetVerb() == "create" {
			l.answered[ev.Message] = ev
			return true, ev, nil
		}
		return false, nil, nil // the tracker stores it
	})
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

func podEventRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name, UID: podUID("shop", name)}
}

// TestEventWriterKeepsEveryEvent records 3,000 Events on 1,000 pods at once, three times what
// client-go's broadcaster holds before it drops: every one is written, in the order
// recorded, so each pod's Events arrive in order; once written, the queue lets go of the
// room the burst took.
func TestEventWriterKeepsEveryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow)
		client := fake.NewClientset()
		log := eventLog{answered: map[string]*v1.Event{}}
		log.install(client)
		w := NewEventWriter(client, EventWriterOptions{Clock: clk})
		const n, pods = 3000, 1000
		var want []string
		for i := range n {
			pod := fmt.Sprintf("web-%d", i%pods)
			msg := fmt.Sprintf("message %d", i)
			w.Event(podEventRef(pod), v1.EventTypeNormal, EventReason, msg)
			want = append(want, "create "+pod+" "+msg)
			clk.Step(time.Microsecond) // Events are named by pod and time, as kube names them
		}
		if got, want := w.Counts(), (EventCounts{Queued: n}); got != want {
			t.Errorf("before Run: got %+v, want %+v", got, want)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		synctest.Wait() // all written: the writer waits for more
		if got := log.get(); !reflect.DeepEqual(got, want) {
			t.Errorf("writes: got %d (first %v), want %d in the order recorded", len(got), got[:min(3, len(got))], len(want))
		}
		if got, want := w.Counts(), (EventCounts{Written: n}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		w.mu.Lock()
		room := cap(w.queue)
		w.mu.Unlock()
		if room != 0 {
			t.Errorf("the empty queue keeps room for %d Events after the burst, want none", room)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}

		// The Event as client-go's recorder makes it.
		if got, want := len(log.answered), n; got != want {
			t.Fatalf("events created: got %d, want %d", got, want)
		}
		ev := *log.answered["message 0"]
		if got, want := ev.Name, fmt.Sprintf("web-0.%x", testNow.UnixNano()); got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		wantEv := v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: ev.Name, Namespace: "shop"},
			InvolvedObject: *podEventRef("web-0"), Reason: EventReason, Message: "message 0",
			Source:         v1.EventSource{Component: Component},
			FirstTimestamp: metav1.NewTime(testNow), LastTimestamp: metav1.NewTime(testNow),
			Count: 1, Type: v1.EventTypeNormal, ReportingController: Component,
		}
		if !reflect.DeepEqual(ev, wantEv) {
			t.Errorf("got %+v, want %+v", ev, wantEv)
		}
	})
}

// TestEventWriterRetries scripts the server's answers: a network error and a 429 are tried
// again after 1 s, then 2 s; a refusal (403) is dropped at once; a 500 that never ends is
// dropped after 12 tries. The Events behind a retried one wait for it.
func TestEventWriterRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow)
		client := fake.NewClientset()
		log := eventLog{clock: clk, answer: func(_ string, ev *v1.Event, try int) error {
			switch {
			case ev.Message == "network" && try <= 2:
				return errors.New("connection refused")
			case ev.Message == "throttled" && try == 1:
				return apierrors.NewTooManyRequests("slow down", 1)
			case ev.Message == "forbidden":
				return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errTest)
			case ev.Message == "failing":
				return apierrors.NewInternalError(errTest)
			}
			return nil
		}}
		log.install(client)
		w := NewEventWriter(client, EventWriterOptions{Clock: clk})
		for i, msg := range []string{"network", "throttled", "forbidden", "failing", "last"} {
			w.Event(podEventRef(fmt.Sprintf("web-%d", i)), v1.EventTypeNormal, EventReason, msg)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		for {
			synctest.Wait()
			if !clk.HasWaiters() {
				break
			}
			clk.Step(time.Second)
		}

		var want []string
		want = append(want, "create web-0 network", "create web-0 network", "create web-0 network",
			"create web-1 throttled", "create web-1 throttled", "create web-2 forbidden")
		for range eventTries {
			want = append(want, "create web-3 failing")
		}
		want = append(want, "create web-4 last")
		if got := log.get(); !reflect.DeepEqual(got, want) {
			t.Errorf("writes: got %v, want %v", got, want)
		}
		// The backoff: 1 s, 2 s for the network errors; 1 s for the 429; then 1 s, 2 s, 4 s,
		// 8 s, 16 s and 30 s six times for the 500s.
		var gaps []time.Duration
		log.mu.Lock()
		for i := 1; i < len(log.at); i++ {
			gaps = append(gaps, log.at[i].Sub(log.at[i-1]))
		}
		log.mu.Unlock()
		s := time.Second
		wantGaps := []time.Duration{s, 2 * s, 0, s, 0, 0, s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s, 30 * s, 30 * s, 30 * s, 0}
		if !reflect.DeepEqual(gaps, wantGaps) {
			t.Errorf("time between writes: got %v, want %v", gaps, wantGaps)
		}
		if got, want := w.Counts(), (EventCounts{Written: 3, Dropped: 2}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	})
}

// TestEventWriterRepeat: the same Event on the same pod again is a PATCH of its count, as
// client-go's recorder makes it; a repeat whose Event is gone is created again.
func TestEventWriterRepeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow)
		client := fake.NewClientset()
		var log eventLog
		log.install(client)
		w := NewEventWriter(client, EventWriterOptions{Clock: clk})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		rec := func() {
			w.Event(podEventRef("web-1"), v1.EventTypeNormal, EventReason, "Cancelling deletion of Pod shop/web-1")
			clk.Step(time.Second)
			synctest.Wait()
		}
		rec()
		rec()
		list, err := client.CoreV1().Events("shop").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("got %v (%v), want one Event", list, err)
		}
		if got, want := list.Items[0].Count, int32(2); got != want {
			t.Errorf("count: got %d, want %d", got, want)
		}
		if err := client.CoreV1().Events("shop").Delete(t.Context(), list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rec()
		want := []string{
			"create web-1 Cancelling deletion of Pod shop/web-1",
			"patch web-1 Cancelling deletion of Pod shop/web-1",
			"create web-1 Cancelling deletion of Pod shop/web-1",
		}
		if got := log.get(); !reflect.DeepEqual(got, want) {
			t.Errorf("writes: got %v, want %v", got, want)
		}
		if got, want := w.Counts(), (EventCounts{Written: 3}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		cancel()
		<-done
	})
}

// TestEventWriterStop: a write in flight when Run is stopped ends; the Events still queued
// are dropped and counted, as is an Event recorded once Run has returned. Bad input is
// counted as dropped, never written.
func TestEventWriterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		release := make(chan struct{})
		log := eventLog{answer: func(string, *v1.Event, int) error {
			<-release
			return nil
		}}
		log.install(client)
		w := NewEventWriter(client, EventWriterOptions{})
		w.Event(podEventRef("web-0"), "Odd", EventReason, "an unknown type")
		w.Event(nil, v1.EventTypeNormal, EventReason, "no object")
		pod := podOn("shop", "web-1", "node-1")
		w.Eventf(pod, v1.EventTypeWarning, EventReason, "pod %s", "web-1") // a reference is made
		w.Event(podEventRef("web-2"), v1.EventTypeNormal, EventReason, "queued")
		w.AnnotatedEventf(podEventRef("web-3"), map[string]string{"a": "b"}, v1.EventTypeNormal, EventReason, "queued %d", 3)
		if got, want := w.Counts(), (EventCounts{Queued: 3, Dropped: 2}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		synctest.Wait() // the first write waits for release
		cancel()
		close(release)
		if err := <-done; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
		if got, want := log.get(), []string{"create web-1 pod web-1"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes: got %v, want %v", got, want)
		}
		w.Event(podEventRef("web-4"), v1.EventTypeNormal, EventReason, "too late")
		if got, want := w.Counts(), (EventCounts{Written: 1, Dropped: 5}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if err := w.Run(t.Context()); err == nil || !strings.HasPrefix(err.Error(), "clientgo: ") {
			t.Errorf("second Run: got %v, want a clientgo error", err)
		}
	})
}
