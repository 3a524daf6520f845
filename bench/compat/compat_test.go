package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// The tolerances of the real clock, generous because the test shares the machine: a pod
// deleted "now" is deleted within nowSlack of the step that made it due; one deleted at
// its deadline D, between D-early and D+late.
const (
	nowSlack = 1500 * time.Millisecond
	early    = 400 * time.Millisecond
	late     = 1500 * time.Millisecond
)

type kind int

const (
	never kind = iota
	soon       // deleted now: within nowSlack after the step at
	atD        // deleted at its deadline
)

// outcome is what happens to a pod. at is the time of the step that makes it due (soon),
// or its deadline (atD), both since the start.
type outcome struct {
	kind kind
	at   time.Duration
}

func deletedNow(after time.Duration) outcome { return outcome{soon, after} }
func deletedAt(d time.Duration) outcome      { return outcome{atD, d} }

var notDeleted = outcome{kind: never}

func (o outcome) String() string {
	switch o.kind {
	case soon:
		return fmt.Sprintf("deleted now (after the step at %v)", o.at)
	case atD:
		return fmt.Sprintf("deleted at its deadline, %v", o.at)
	}
	return "never deleted"
}

// check reports whether a pod deleted at d (ok false: not deleted) had outcome o.
func (o outcome) check(d time.Duration, ok bool) bool {
	switch o.kind {
	case soon:
		return ok && d >= o.at && d <= o.at+nowSlack
	case atD:
		return ok && d >= o.at-early && d <= o.at+late
	}
	return !ok
}

// end is how long the outcome takes to be known.
func (o outcome) end() time.Duration {
	switch o.kind {
	case soon:
		return o.at + nowSlack
	case atD:
		return o.at + late
	}
	return 0
}

// difference is an expected difference: where kube's behaviour is a known bug (or a
// documented difference), each side has an outcome of its own for the pod.
type difference struct {
	pod              string
	issue            string
	kube, taintevict outcome
}

type scenario struct {
	name string
	// objects exist before the controllers start; nodes get their taints' TimeAdded then.
	objects []runtime.Object
	steps   []step
	want    map[string]outcome
	diff    *difference
	// failDeletesUntil makes every pod DELETE fail until that long after the start.
	failDeletesUntil time.Duration
}

// expected returns what impl should do to every pod.
func (s scenario) expected(impl string) map[string]outcome {
	want := make(map[string]outcome, len(s.want)+1)
	for k, v := range s.want {
		want[k] = v
	}
	if s.diff != nil {
		want[s.diff.pod] = map[string]outcome{"kube": s.diff.kube, "taintevict": s.diff.taintevict}[impl]
	}
	return want
}

// window is how long the scenario runs: until every outcome is known, and at least until
// nowSlack after the last step and after DELETEs stop failing (a pod that must never be
// deleted has had the time to be).
func (s scenario) window(want map[string]outcome) time.Duration {
	end := max(nowSlack, s.failDeletesUntil+nowSlack)
	for _, st := range s.steps {
		end = max(end, st.at+nowSlack)
	}
	for _, o := range want {
		end = max(end, o.end())
	}
	return end
}

func TestSameOutcomes(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, impl := range []string{"kube", "taintevict"} {
				t.Run(impl, func(t *testing.T) {
					t.Parallel()
					play(t, s, impl)
				})
			}
		})
	}
}

// play runs scenario s against the controller impl and checks every pod's outcome.
func play(t *testing.T, s scenario, impl string) {
	want := s.expected(impl)
	start := time.Now()
	c := newCluster(initial(start, s.objects...), start, s.failDeletesUntil)
	stop := c.run(t, impl)
	defer func() { stop() }()
	t.Logf("%s synced after %v", impl, time.Since(start).Round(time.Millisecond))
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for _, st := range s.steps {
		timer.Reset(time.Until(start.Add(st.at)))
		<-timer.C
		if st.restart {
			stop()
			stop = c.run(t, impl)
			continue
		}
		if err := st.apply(c.client.Tracker(), time.Now()); err != nil {
			t.Fatalf("step at %v: %v", st.at, err)
		}
	}
	timer.Reset(time.Until(start.Add(s.window(want))))
	<-timer.C
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d, ok := c.deleted(name)
		if !want[name].check(d, ok) {
			got := "never deleted"
			if ok {
				got = fmt.Sprintf("deleted at %v", d.Round(time.Millisecond))
			}
			t.Errorf("%s: got %s, want %v", name, got, want[name])
		}
	}
}
