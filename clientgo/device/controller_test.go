package device

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// TestKubesOutwardBehaviour: an eviction is kube's DisruptionTarget condition with the
// device reason and message, then a DELETE with the pod's UID as a precondition: two
// requests; kube's Events mark and cancel; the Eviction API mode evicts in one request.
func TestKubesOutwardBehaviour(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0"),
			claim("c1", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "db"), pod("db", "c1")}
	}
	t.Run("delete", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, Options{}, objects()...)
			r.sleep(time.Second)
			if got, want := r.writes(), []string{"patch pods/status web", "delete pods web"}; !slices.Equal(got, want) {
				t.Fatalf("got requests %q, want %q", got, want)
			}
			var patch, del k8stesting.Action
			for _, a := range r.client.Actions() {
				switch a.GetVerb() {
				case "patch":
					patch = a
				case "delete":
					del = a
				}
			}
			var body struct {
				Metadata struct{ UID string }
				Status   struct{ Conditions []map[string]any }
			}
			if err := json.Unmarshal(patch.(k8stesting.PatchAction).GetPatch(), &body); err != nil {
				t.Fatal(err)
			}
			c := body.Status.Conditions
			if body.Metadata.UID != "uid-web" || len(c) != 1 || c[0]["type"] != "DisruptionTarget" || c[0]["status"] != "True" ||
				c[0]["reason"] != DisruptionReason || c[0]["message"] != DisruptionMessage {
				t.Errorf("got the status patch %s, want DisruptionTarget=True, %s, %q, bound to uid-web", patch.(k8stesting.PatchAction).GetPatch(), DisruptionReason, DisruptionMessage)
			}
			if pre := del.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != "uid-web" {
				t.Errorf("got the DELETE's preconditions %+v, want the UID uid-web", pre)
			}
			r.sleep(30 * time.Second)
			r.update(claim("c1", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}})) // db's claim is released
			if got, want := r.events(), []string{"db: Cancelling deletion", "web: Marking for deletion"}; !slices.Equal(got, want) {
				t.Errorf("got Events %q, want %q", got, want)
			}
		})
	})
	t.Run("events on a client of their own", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			events := fake.NewClientset()
			r := newRig(t, Options{EventClient: events}, objects()...)
			r.sleep(time.Second)
			if got := r.events(); len(got) != 0 {
				t.Errorf("the controller's client got Events %q, want none", got)
			}
			list, err := events.CoreV1().Events("ns").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(list.Items); got != 1 || list.Items[0].InvolvedObject.Name != "web" || list.Items[0].Message != "Marking for deletion" {
				t.Errorf("got Events %+v through EventClient, want web's Marking for deletion", list.Items)
			}
		})
	})
	t.Run("evict", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, Options{Mode: clientgo.ModeEvict}, objects()...)
			r.sleep(2 * time.Minute)
			if got, want := r.writes(), []string{"create pods/eviction web", "create pods/eviction db"}; !slices.Equal(got, want) {
				t.Errorf("got requests %q, want %q", got, want)
			}
			if got, ok := r.deleted("db"); !ok || got != time.Minute {
				t.Errorf("db: evicted %v at +%v, want at +1m", ok, got)
			}
		})
	})
	t.Run("dry run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			r := newRig(t, Options{Mode: clientgo.ModeDryRun, Observers: []engine.Observer{rec}},
				append(objects(), rule("r", &resourcev1.DeviceTaintSelector{}, noExecute("x", at(0))))...)
			r.sleep(2 * time.Minute)
			if got := r.writes(); len(got) != 0 {
				t.Errorf("got requests %q, want none", got)
			}
			if got := r.events(); len(got) != 0 {
				t.Errorf("got Events %q, want none", got)
			}
			// The rule's taint comes after the slice's: each is a change of d0's taints,
			// and in a dry run each decides again about pods that nothing removed.
			var done []string
			for _, s := range rec.got() {
				if strings.HasPrefix(s, "Succeeded ") && !slices.Contains(done, s) {
					done = append(done, s)
				}
			}
			slices.Sort(done)
			if want := []string{"Succeeded db dry run", "Succeeded web dry run"}; !slices.Equal(done, want) {
				t.Errorf("got reports %q, want only these successes: %q", rec.got(), want)
			}
		})
	})
}

// TestFirstEvictionAtOnce: a controller started on a cluster with a pod due at once
// evicts it at +0 of the bubble's clock, alone (Run) and under another controller's Lease
// (Lead, alongside a clientgo.Controller): it waits for its caches and handlers on their
// channels, not by client-go's WaitForCacheSync, which looks every 100 ms and evicted at
// +100ms.
func TestFirstEvictionAtOnce(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0")}
	}
	for _, alongside := range []bool{false, true} {
		t.Run(map[bool]string{false: "Run", true: "Lead alongside"}[alongside], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset(objects()...)
				start := time.Now()
				var deleted atomic.Int64
				deleted.Store(-1)
				client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					deleted.CompareAndSwap(-1, int64(time.Since(start)))
					return false, nil, nil
				})
				factory := clientgo.NewFactory(client)
				c, err := NewController(t.Context(), client, factory, Options{})
				if err != nil {
					t.Fatal(err)
				}
				run := c.Run
				if alongside {
					node, err := clientgo.NewController(t.Context(), client, factory, clientgo.Options{Alongside: []func(context.Context) error{c.Lead}})
					if err != nil {
						t.Fatal(err)
					}
					run = node.Run
				}
				runInBackground(t, run)
				<-c.Synced()
				if got := time.Since(start); got != 0 {
					t.Errorf("synced at +%v, want +0", got)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if got := time.Duration(deleted.Load()); got != 0 {
					t.Errorf("web deleted at +%v (-1ns: never), want +0", got)
				}
			})
		})
	}
}

// TestRestartKeepsDeadline: a controller that takes over from one that stopped mid-way
// evicts at the deadline counted from the taint's TimeAdded, not from its own start.
func TestRestartKeepsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{}, slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60)}}}, "web"), pod("web", "c0"))
		r.sleep(40 * time.Second)
		r.stop()
		r.sleep(10 * time.Second)
		r.run(Options{})
		r.sleep(time.Hour)
		if got, ok := r.deleted("web"); !ok || got != time.Minute {
			t.Errorf("web: deleted %v at +%v, want at +1m", ok, got)
		}
	})
}

// TestRuleStatus: the EvictionInProgress condition of each rule, as kube writes it: at
// once for a new rule, then at most every period while it evicts.
func TestRuleStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Options{},
			claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("bad", 60), tolerate("maint", -1)}}}, "web"), pod("web", "c0"),
			claim("c1", []dev{{id: "p1/d1"}}, "db"), pod("db", "c1"),
			slice("p1", map[string][]resourcev1.DeviceTaint{"d0": nil, "d1": nil, "d2": nil}))
		r.create(rule("evicts", device("p1", "d0"), noExecute("bad", at(0))))
		// web tolerates this one forever: its eviction is not this rule's doing.
		r.create(rule("tolerated", device("p1", "d0"), noExecute("maint", at(0))))
		r.create(rule("idle", device("p9", "d0"), noExecute("bad", at(0))))
		r.create(rule("dry", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, resourcev1.DeviceTaint{Key: "bad", Effect: resourcev1.DeviceTaintEffectNone}))
		r.create(rule("other", device("p1", "d0"), resourcev1.DeviceTaint{Key: "bad", Effect: resourcev1.DeviceTaintEffectNoSchedule}))
		want := map[string]metav1.Condition{
			"evicts":    {Status: "True", Reason: ReasonPodsPendingEviction, Message: "1 pod needs to be evicted in 1 namespace."},
			"idle":      {Status: "False", Reason: ReasonNotStarted},
			"tolerated": {Status: "False", Reason: ReasonNotStarted},
			"dry": {Status: "False", Reason: ReasonNoEffect, Message: "3 published devices selected. 2 allocated devices selected. " +
				"2 pods would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."},
			"other": {Status: "False", Reason: ReasonOtherEffect, Message: "Eviction only happens for the NoExecute effect."},
		}
		check := func(when string) {
			t.Helper()
			for name, w := range want {
				c := r.condition(name)
				if c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message || c.ObservedGeneration != 1 {
					t.Errorf("%s: rule %s: got %s %s %q (generation %d), want %s %s %q (1)", when, name, c.Status, c.Reason, c.Message, c.ObservedGeneration, w.Status, w.Reason, w.Message)
				}
			}
		}
		check("at once")
		r.sleep(30 * time.Second)
		check("while web's toleration runs")
		r.sleep(41 * time.Second) // web is evicted at +1m; the status follows within a period
		want["evicts"] = metav1.Condition{Status: "False", Reason: ReasonCompleted, Message: "1 pod evicted since starting the controller."}
		check("a period after the eviction")
		var applies int
		for _, a := range r.client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" && a.GetResource().Resource == "devicetaintrules" {
				applies++
				if pt := a.(k8stesting.PatchAction).GetPatchType(); pt != "application/apply-patch+yaml" {
					t.Errorf("got a status patch of type %s, want server-side apply", pt)
				}
			}
		}
		if applies != 6 {
			t.Errorf("got %d status writes, want 6: one per rule, and one when the eviction completed", applies)
		}
	})
}

// TestConfirm: a rule that selects every device would evict every pod that uses one: it
// is held (the engine's Pending and Delayed say Unconfirmed, an Event names the annotation,
// the rule's status says why and how to confirm) until an operator confirms it with the
// annotation, then every pod goes; or until it selects few enough, then what it still
// makes due goes, and the rest is cancelled. A pool whose devices the driver taints is held
// the same way; MinTargets above what a scope would evict lets it go.
func TestConfirm(t *testing.T) {
	pods := func() []runtime.Object {
		var objs []runtime.Object
		for i, d := range []string{"p1/d0", "p1/d1", "p1/d2", "p2/d0"} {
			name := []string{"a", "b", "c", "d"}[i]
			objs = append(objs, claim("c-"+name, []dev{{id: d}}, name), pod(name, "c-"+name))
		}
		return objs
	}
	confirm := func(c engine.Confirm) Options { return Options{Engine: engine.Options{Confirm: c}} }
	held := func(t *testing.T, r *rig, n int) {
		t.Helper()
		pending := r.c.Engine().Pending()
		for _, p := range pending {
			if p.Delayed != engine.ReasonUnconfirmed {
				t.Errorf("got %+v pending, want it held, Unconfirmed", p)
			}
		}
		if len(pending) != n {
			t.Errorf("got %d pending, want %d held", len(pending), n)
		}
	}
	t.Run("a rule that selects every device, confirmed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			opts := confirm(engine.Confirm{Fraction: 0.5})
			opts.Observers = []engine.Observer{rec}
			r := newRig(t, opts, pods()...)
			all := rule("all", &resourcev1.DeviceTaintSelector{}, noExecute("bad", at(0)))
			r.create(all)
			r.sleep(time.Minute)
			if got := r.writes(); len(got) != 1 || !strings.HasPrefix(got[0], "patch devicetaintrules/status") {
				t.Fatalf("got requests %q, want the rule's status only", got)
			}
			held(t, r, 4)
			if c := r.condition("all"); c.Reason != ReasonEvictionPaused || c.Status != "True" ||
				c.Message != "4 pods need to be evicted in 1 namespace. Eviction paused: it would evict 4 of the 4 pods that use devices, more than 50%. "+
					"Annotate the DeviceTaintRule with taintevict.io/confirm-eviction=bad to confirm it." {
				t.Errorf("got the rule's condition %s %s %q, want it paused, saying why and how to confirm", c.Status, c.Reason, c.Message)
			}
			if got := r.events(); len(got) != 4 || got[0] != "a: "+ConfirmMessage {
				t.Errorf("got Events %q, want %q on each pod", got, ConfirmMessage)
			}
			all.Annotations = map[string]string{eviction.ConfirmAnnotation: "other"} // another key: confirms nothing
			r.update(all)
			held(t, r, 4)
			all.Annotations[eviction.ConfirmAnnotation] = "bad"
			r.update(all)
			for _, name := range []string{"a", "b", "c", "d"} {
				if _, ok := r.deleted(name); !ok {
					t.Errorf("%s: not deleted once the rule was confirmed", name)
				}
			}
			if got := rec.count("Delayed"); got != 4 {
				t.Errorf("got %d Delayed reports, want 4", got)
			}
		})
	})
	t.Run("a rule that selects every device, narrowed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, confirm(engine.Confirm{Fraction: 0.5}), pods()...)
			all := rule("all", &resourcev1.DeviceTaintSelector{}, noExecute("bad", at(0)))
			r.create(all)
			r.sleep(time.Minute)
			held(t, r, 4)
			all.Spec.DeviceSelector = device("p1", "d0")
			all.Generation = 2
			r.update(all)
			for name, want := range map[string]bool{"a": true, "b": false, "c": false, "d": false} {
				if _, got := r.deleted(name); got != want {
					t.Errorf("%s: got deleted %v, want %v", name, got, want)
				}
			}
		})
	})
	t.Run("a pool the driver taints", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, confirm(engine.Confirm{Fraction: 0.5}), pods()...)
			bad := []resourcev1.DeviceTaint{noExecute("bad", at(0))}
			r.create(slice("p1", map[string][]resourcev1.DeviceTaint{"d0": bad, "d1": bad, "d2": bad}))
			r.sleep(time.Minute)
			if got := r.writes(); len(got) != 0 {
				t.Fatalf("got requests %q, want none", got)
			}
			held(t, r, 3)
			r.update(slice("p1", map[string][]resourcev1.DeviceTaint{"d0": bad, "d1": bad, "d2": nil}))
			if got := r.writes(); len(got) != 4 {
				t.Errorf("got requests %q, want a and b evicted", got)
			}
		})
	})
	t.Run("a pool confirmed on its slice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, confirm(engine.Confirm{Fraction: 0.5}), pods()...)
			bad := []resourcev1.DeviceTaint{noExecute("bad", at(0))}
			sl := slice("p1", map[string][]resourcev1.DeviceTaint{"d0": bad, "d1": bad, "d2": bad})
			r.create(sl)
			r.sleep(time.Minute)
			held(t, r, 3)
			sl.Annotations = map[string]string{eviction.ConfirmAnnotation: "*"}
			r.update(sl)
			if got := r.writes(); len(got) != 6 {
				t.Errorf("got requests %q, want a, b and c evicted", got)
			}
		})
	})
	t.Run("MinTargets", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, confirm(engine.Confirm{Fraction: 0.5, MinTargets: 5}), pods()...)
			r.create(rule("all", &resourcev1.DeviceTaintSelector{}, noExecute("bad", at(0))))
			r.sleep(time.Minute)
			for _, name := range []string{"a", "b", "c", "d"} {
				if _, ok := r.deleted(name); !ok {
					t.Errorf("%s: not deleted, want deleted: 4 pods are fewer than MinTargets", name)
				}
			}
		})
	})
}

func inNS(obj runtime.Object, ns string) runtime.Object {
	obj.(metav1.Object).SetNamespace(ns)
	return obj
}

// TestNewControllerRejects: options out of range are errors, and no Controller.
func TestNewControllerRejects(t *testing.T) {
	for name, opts := range map[string]Options{
		"engine dry run":      {Engine: engine.Options{DryRun: true}},
		"a census":            {Engine: engine.Options{Confirm: engine.Confirm{Fraction: 0.5, Census: (*census)(nil)}}},
		"a negative period":   {StatusPeriod: -time.Second},
		"a fraction above 1":  {Engine: engine.Options{Confirm: engine.Confirm{Fraction: 1.5}}},
		"negative MinTargets": {Engine: engine.Options{Confirm: engine.Confirm{Fraction: 0.5, MinTargets: -1}}},
		"an unknown mode":     {Mode: "drain"},
		"unknown PodGroups":   {PodGroups: "maybe"},
		"a negative timeout":  {Mode: clientgo.ModeEvict, PDBTimeout: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			client := newFakeClient()
			c, err := NewController(t.Context(), client, clientgo.NewFactory(client), opts)
			if err == nil || c != nil || !strings.HasPrefix(err.Error(), "device: ") {
				t.Errorf("got %v, %v; want no Controller and an error prefixed device:", c, err)
			}
		})
	}
}

// panicky is an engine.Observer that panics when an eviction starts.
type panicky struct{ engine.NopObserver }

func (panicky) Started(engine.Ref, engine.Attempt) { panic("observer bug") }

// TestControllerStopsWhenTheEngineFails: an Observer that panics stops the engine; the
// Controller then stops the Events and the rules' status too, and Run returns the
// engine's *engine.PanicError, rather than going on with no engine.
func TestControllerStopsWhenTheEngineFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("bad", at(0))}}),
			claim("c0", []dev{{id: "p1/d0"}}, "web"), pod("web", "c0"))
		c, err := NewController(t.Context(), client, clientgo.NewFactory(client), Options{Observers: []engine.Observer{panicky{}}})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Run(t.Context()) // in the bubble: it returns, or the test deadlocks and fails
		if pe := (*engine.PanicError)(nil); !errors.As(err, &pe) {
			t.Errorf("Run: got %v, want an *engine.PanicError", err)
		}
	})
}
