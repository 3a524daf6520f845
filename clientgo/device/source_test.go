package device

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// newSource returns a Source whose informers' stores hold objs (the informers do not run).
func newSource(t testing.TB, objs ...runtime.Object) *Source {
	t.Helper()
	inf, err := NewInformers(informers.NewSharedInformerFactory(fake.NewClientset(), 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *v1.Pod:
			err = inf.Pods.GetIndexer().Add(o)
		case *resourcev1.ResourceClaim:
			err = inf.Claims.GetIndexer().Add(o)
		case *resourcev1.ResourceSlice:
			err = inf.Slices.GetIndexer().Add(o)
		case *resourcev1.DeviceTaintRule:
			err = inf.Rules.GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return NewSource(inf)
}

func TestID(t *testing.T) {
	for _, tc := range []struct{ driver, pool, device string }{
		{"gpu.example.com", "node-1", "gpu-0"},
		{"gpu.example.com", "rack-1/node-1", "gpu-0"}, // a pool name may have slashes
		{"d", "", "x"},
	} {
		id := ID(tc.driver, tc.pool, tc.device)
		if d, p, dev := splitID(id); d != tc.driver || p != tc.pool || dev != tc.device {
			t.Errorf("splitID(%q): got %q %q %q, want %q %q %q", id, d, p, dev, tc.driver, tc.pool, tc.device)
		}
		if got, want := poolOf(id), tc.driver+"/"+tc.pool; got != want {
			t.Errorf("poolOf(%q): got %q, want %q", id, got, want)
		}
	}
}

// FuzzSplitID: splitID undoes ID for every driver and device without a slash, and never
// panics on any string.
func FuzzSplitID(f *testing.F) {
	f.Add("gpu.example.com", "rack/node-1", "gpu-0")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, driver, pool, device string) {
		_, _, _ = splitID(driver)
		_ = poolOf(driver)
		if strings.Contains(driver, "/") || strings.Contains(device, "/") {
			return
		}
		if d, p, dev := splitID(ID(driver, pool, device)); d != driver || p != pool || dev != device {
			t.Errorf("splitID(ID(%q, %q, %q)) = %q %q %q", driver, pool, device, d, p, dev)
		}
	})
}

func TestRuleMatches(t *testing.T) {
	id := ID(driver, "p1", "d0")
	for _, tc := range []struct {
		name string
		sel  *resourcev1.DeviceTaintSelector
		want bool
	}{
		{"no selector", nil, false},
		{"an empty selector", &resourcev1.DeviceTaintSelector{}, true},
		{"the driver", &resourcev1.DeviceTaintSelector{Driver: ptrTo(driver)}, true},
		{"another driver", &resourcev1.DeviceTaintSelector{Driver: ptrTo("nic.example.com")}, false},
		{"the pool", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, true},
		{"another pool", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p2")}, false},
		{"the device", device("p1", "d0"), true},
		{"another device", device("p1", "d1"), false},
	} {
		if got := ruleMatches(rule("r", tc.sel, noExecute("k", nil)), id); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHolderTaints: a device's taints are its slice's (of the pool's newest generation),
// then the rules', by name; a device in no slice and without taints is not found.
func TestHolderTaints(t *testing.T) {
	s := newSource(t,
		slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("old", nil)}}),
		newer(slice("p1", map[string][]resourcev1.DeviceTaint{"d0": {noExecute("slice", nil)}, "d1": nil})),
		rule("b", &resourcev1.DeviceTaintSelector{Pool: ptrTo("p1")}, noExecute("rule-b", nil)),
		rule("a", device("p1", "d0"), resourcev1.DeviceTaint{Key: "rule-a", Effect: resourcev1.DeviceTaintEffectNone}),
		rule("c", device("p2", "d0"), noExecute("rule-c", nil)))
	for _, tc := range []struct {
		id    string
		found bool
		keys  []string
	}{
		{ID(driver, "p1", "d0"), true, []string{"slice NoExecute", "rule-a None", "rule-b NoExecute"}},
		{ID(driver, "p1", "d1"), true, []string{"rule-b NoExecute"}},
		{ID(driver, "p2", "d0"), true, []string{"rule-c NoExecute"}},
		{ID(driver, "p3", "d0"), false, nil},
	} {
		h, found, err := s.Holder(tc.id)
		var keys []string
		for _, t := range h.Taints {
			keys = append(keys, t.Key+" "+string(t.Effect))
		}
		if err != nil || found != tc.found || !slices.Equal(keys, tc.keys) || h.Group != poolOf(tc.id) {
			t.Errorf("Holder(%s): got %v %v %v %q, want %v %v", tc.id, keys, found, err, h.Group, tc.keys, tc.found)
		}
	}
}

// TestDescribe: the bindings of a pod, one per allocated device of each claim it uses that
// is reserved for it, with the allocation result's tolerations.
func TestDescribe(t *testing.T) {
	s := newSource(t,
		claim("two", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("k", 60)}}, {id: "p1/d1"}}, "web"),
		claim("other", []dev{{id: "p2/d0"}}, "db"),
		claim("free", nil, "web"))
	var d engine.Target
	s.Describe(pod("web", "two", "other", "free", "missing"), &d)
	var got []string
	for _, b := range d.Bindings {
		got = append(got, b.Holder)
		if b.Holder == ID(driver, "p1", "d0") && (len(b.Tolerations) != 1 || *b.Tolerations[0].TolerationSeconds != 60) {
			t.Errorf("%s: got tolerations %v, want the result's", b.Holder, b.Tolerations)
		}
	}
	if want := []string{ID(driver, "p1", "d0"), ID(driver, "p1", "d1")}; !slices.Equal(got, want) || d.UID != "uid-web" || d.Leaving != "" {
		t.Errorf("got bindings %q (uid %s, leaving %q), want %q", got, d.UID, d.Leaving, want)
	}
	pods, err := s.TargetsOn(ID(driver, "p1", "d1"))
	if err != nil || len(pods) != 0 {
		t.Errorf("TargetsOn with no pod in the store: got %v, %v; want none", pods, err)
	}
}

// TestRuleStatusRemoved: a pod the Deleter removes counts for the NoExecute rules that select
// one of its devices and whose taint it does not tolerate forever there, as kube counts the
// rules among an eviction's reasons (the device it is evicted for, or another); a pod
// already gone from the cache counts for every rule that selects the device.
func TestRuleStatusRemoved(t *testing.T) {
	rules := []runtime.Object{
		rule("bad", device("p1", "d0"), noExecute("bad", at(0))),
		rule("maint", device("p1", "d0"), noExecute("maint", at(0))),
		rule("elsewhere", device("p1", "d1"), noExecute("bad", at(0))),
		rule("none", device("p1", "d0"), resourcev1.DeviceTaint{Key: "bad", Effect: resourcev1.DeviceTaintEffectNone}),
	}
	web := eviction.PodRef{Namespace: "ns", Name: "web", UID: "uid-web", Holder: ID(driver, "p1", "d0")}
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want map[string]int64
	}{
		{"in the cache, tolerating maint forever",
			[]runtime.Object{claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("maint", -1)}}}, "web"), pod("web", "c0")},
			map[string]int64{"bad": 1}},
		{"in the cache, on two devices",
			[]runtime.Object{claim("c0", []dev{{"p1/d0", []resourcev1.DeviceToleration{tolerate("maint", -1)}}, {id: "p1/d1"}}, "web"), pod("web", "c0")},
			map[string]int64{"bad": 1, "elsewhere": 1}},
		{"gone from the cache", nil, map[string]int64{"bad": 1, "maint": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, append(tc.objs, rules...)...)
			r, err := newRuleStatus(nil, src, clocktesting.NewFakeClock(time.Now()), DefaultStatusPeriod)
			if err != nil {
				t.Fatal(err)
			}
			removed := r.counting(eviction.DeleterFunc(func(context.Context, eviction.PodRef) error { return nil }))
			gone := r.counting(eviction.DeleterFunc(func(context.Context, eviction.PodRef) error { return eviction.ErrPodGone }))
			if err := removed.Delete(t.Context(), web); err != nil {
				t.Fatalf("got %v, want the inner Deleter's nil", err)
			}
			// Gone before the DELETE: not an eviction.
			if err := gone.Delete(t.Context(), web); !errors.Is(err, eviction.ErrPodGone) {
				t.Fatalf("got %v, want the inner Deleter's ErrPodGone", err)
			}
			got := map[string]int64{}
			for uid, n := range r.evicted {
				got[strings.TrimPrefix(string(uid), "rule-")] = n
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got evicted counts %v, want %v", got, tc.want)
			}
		})
	}
}
