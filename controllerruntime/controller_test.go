package controllerruntime_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/controllerruntime"
	"github.com/taintevict/taintevict/eviction"
)

// TestEvicts runs a Controller in a manager without leader election: once the node is
// tainted, the pod that does not tolerate the taint is deleted, with kube's Event, the pod
// that tolerates it is not touched, the manager's metrics server serves kube's metric on
// controller-runtime's registry, and the manager's readiness check passes. It is the one
// test that instruments controller-runtime's global registry: a second Controller "node"
// on it would be refused.
func TestEvicts(t *testing.T) {
	s := newScene(t)
	node := s.node("n", time.Time{})
	s.pod("web", node, nil)
	s.pod("agent", node, ptr.To[int64](-1))
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	r := start(t, s.ns, user(t, s.ns), manager.Options{
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
	}, controllerruntime.Options{Metrics: metrics.NewMeter(crmetrics.Registry)})
	waitFor(t, r.c.Synced(), "the Controller handed the caches to its Manager")
	if code, body := get(t, "http://"+probeAddr+"/readyz/taint-eviction"); code != http.StatusOK {
		t.Errorf("/readyz/taint-eviction: got %d %q, want 200", code, body)
	}

	s.setTaint(node, time.Now().Truncate(time.Second))
	s.waitDeleted("web")
	s.waitEvent("web", "Marking for deletion")
	const deleted = "taint_eviction_controller_pod_deletions_total 1"
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		_, body := get(t, "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, "\n"+deleted+"\n"), nil
	})
	if err != nil {
		t.Errorf("the manager's /metrics: no line %q: %v", deleted, err)
	}
	r.stop(t)
	if r.err != nil {
		t.Errorf("the manager's Start: got %v, want nil once stopped", r.err)
	}
	auditTally(t, s.ns, []string{"web"}, []string{"agent"}, s.ns).check(t, "one taint")
}

// TestBrakeHoldsAcrossRestart: 6 of 10 nodes carry the outage taint, added 10 minutes
// before the Controller starts, longer ago than the pods tolerate it (60 s): every pod on
// them is due at once, and the brake (more than 45% of the nodes) holds them all. A
// Controller that starts in the middle of that outage deletes nothing, and neither does the
// one that replaces it (a restart): each counts every node before anything may go. Once
// two nodes are untainted (4 of 10), the brake lets the pods of the four still tainted go,
// and the pods of the two others stay.
func TestBrakeHoldsAcrossRestart(t *testing.T) {
	s := newScene(t)
	longAgo := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	var nodes, pods []string
	for i := range 10 {
		var tainted time.Time
		if i < 6 {
			tainted = longAgo
		}
		nodes = append(nodes, s.node(fmt.Sprint(i), tainted))
		pods = append(pods, fmt.Sprintf("web-%d", i))
		s.pod(pods[i], nodes[i], ptr.To[int64](60))
	}
	opts := eviction.Options{Brake: eviction.Brake{Fraction: 0.45}}
	var r *running
	users := []string{s.ns + "-a", s.ns + "-b"}
	for _, name := range users {
		held := newDelays(s.ns, eviction.ReasonPaused, pods[:6]...)
		r = start(t, name, user(t, name), manager.Options{}, controllerruntime.Options{Manager: opts, Observers: []eviction.Observer{held}})
		waitFor(t, held.all, name+": the brake holds every due pod")
		waitIdle(t, r)
		if got := s.deleting(); len(got) > 0 {
			t.Errorf("%s: pods being deleted while the brake holds: %v", name, got)
		}
		if n := held.started.Load(); n > 0 {
			t.Errorf("%s: %d Deleter calls while the brake holds, want none", name, n)
		}
		if name == users[0] {
			r.stop(t) // the restart
		}
	}

	s.setTaint(nodes[4], time.Time{})
	s.setTaint(nodes[5], time.Time{})
	for _, p := range pods[:4] {
		s.waitDeleted(p)
	}
	waitIdle(t, r)
	r.stop(t)
	auditTally(t, s.ns, pods[:4], pods[4:], users...).check(t, "the brake, a restart, the release")
}

// TestLeaderHandover: two managers elect a leader on a Lease. The leader evicts; it is then
// stopped (its context cancelled; it releases the Lease) or cut off from the API server (it
// loses the Lease when it cannot renew it, and its manager stops it), 8 s before a pod is
// due. The other manager takes over and deletes that pod at its deadline, counted from the
// taint's TimeAdded, not before. The audit log shows each due pod removed once, by the
// replica that led then, and the pod that tolerates the taint untouched.
func TestLeaderHandover(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(*running, *cutDialer)
		err  string // of the old leader's manager
	}{
		{"stopped", func(r *running, _ *cutDialer) { r.cancel() }, ""},
		{"cut off", func(_ *running, d *cutDialer) { d.Cut() }, "leader election lost"},
	} {
		t.Run(tc.name, func(t *testing.T) { handover(t, tc.lose, tc.err) })
	}
}

func handover(t *testing.T, lose func(*running, *cutDialer), wantErr string) {
	s := newScene(t)
	early, late := s.node("early", time.Time{}), s.node("late", time.Time{})
	s.pod("early-web", early, nil)
	s.pod("late-web", late, ptr.To[int64](8))
	s.pod("late-keep", late, ptr.To[int64](-1))
	le := manager.Options{
		LeaderElection: true, LeaderElectionID: "taint-eviction", LeaderElectionNamespace: s.ns,
		LeaseDuration: ptr.To(4 * time.Second), RenewDeadline: ptr.To(3 * time.Second), RetryPeriod: ptr.To(500 * time.Millisecond),
		LeaderElectionReleaseOnCancel: true,
	}
	nameA, nameB := s.ns+"-a", s.ns+"-b"
	cfgA, cut := user(t, nameA), &cutDialer{}
	cfgA.Dial = cut.DialContext
	scheduled := newScheduled(s.ns, "late-web")
	a := start(t, nameA, cfgA, le, controllerruntime.Options{Observers: []eviction.Observer{scheduled}})
	waitFor(t, a.c.Synced(), nameA+" leads")
	b := start(t, nameB, user(t, nameB), le, controllerruntime.Options{})
	waitReady(t, b)
	if b.c.Leading() {
		t.Fatalf("%s runs its Controller while %s leads", nameB, nameA)
	}

	s.setTaint(early, time.Now().Truncate(time.Second))
	s.waitDeleted("early-web")
	added := time.Now().Truncate(time.Second)
	s.setTaint(late, added)
	waitFor(t, scheduled.ch, nameA+" schedules late-web")
	lost := time.Now()
	lose(a, cut)
	waitFor(t, a.stopped, nameA+"'s manager returns")
	if a.c.Leading() {
		waitFor(t, a.c.Stopped(), nameA+"'s Controller returns")
	}
	aDone := time.Now()
	if got := errString(a.err); !strings.Contains(got, wantErr) || (wantErr == "") != (got == "") {
		t.Errorf("%s's manager: got error %q, want %q", nameA, got, wantErr)
	}
	waitFor(t, b.c.Synced(), nameB+" leads")
	seen := s.waitDeleted("late-web")
	deadline := added.Add(8 * time.Second)
	t.Logf("%s lost the lead %s after the taint; %s deleted late-web %s after its deadline",
		nameA, lost.Sub(added).Round(time.Millisecond), nameB, seen.Sub(deadline).Round(time.Millisecond))
	if d := seen.Sub(deadline); d < 0 || d > 3*time.Second {
		t.Errorf("late-web deleted %s after its deadline, want 0 to 3s", d)
	}
	waitIdle(t, b)
	b.stop(t)

	auditTally(t, s.ns, []string{"early-web", "late-web"}, []string{"late-keep"}, nameA, nameB).check(t, "a leader change")
	for _, r := range podWrites(t, s.ns, nameA) {
		if r.Received.After(aDone) || r.ObjectRef.Name == "late-web" && r.ok() {
			t.Errorf("%s, after it stopped leading: %s %s at %s", nameA, r.Verb, r.ObjectRef.Name, r.Received)
		}
	}
	for _, r := range podWrites(t, s.ns, nameB) {
		if r.Received.Before(lost) {
			t.Errorf("%s, before it led: %s %s at %s", nameB, r.Verb, r.ObjectRef.Name, r.Received)
		}
	}
}

// scheduled is an Observer whose ch is closed once the pod's eviction is scheduled.
type scheduled struct {
	eviction.NopObserver
	ns, name string
	ch       chan struct{}
	once     sync.Once
}

func newScheduled(ns, name string) *scheduled {
	return &scheduled{ns: ns, name: name, ch: make(chan struct{})}
}

func (s *scheduled) Scheduled(pod eviction.PodRef, _ time.Time) {
	if pod.Namespace == s.ns && pod.Name == s.name {
		s.once.Do(func() { close(s.ch) })
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// waitIdle waits until the Controller's Manager is idle.
func waitIdle(t *testing.T, r *running) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	if err := r.c.Manager().WaitIdle(ctx); err != nil {
		t.Fatalf("%s: waiting until the Manager is idle: %v", r.name, err)
	}
}

// waitReady polls the Controller's Ready until it passes.
func waitReady(t *testing.T, r *running) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, failAfter, true, func(context.Context) (bool, error) {
		return r.c.Ready() == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not ready: %v (%v)", r.name, err, r.c.Ready())
	}
}

// waitEvent polls the pod's Events until one with kube's reason has a message containing
// msg.
func (s *scene) waitEvent(pod, msg string) {
	s.t.Helper()
	sel := fields.Set{"involvedObject.name": pod, "reason": "TaintManagerEviction"}.String()
	err := wait.PollUntilContextTimeout(s.t.Context(), 50*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		list, err := admin.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		for _, e := range list.Items {
			if e.Type == v1.EventTypeNormal && strings.Contains(e.Message, msg) {
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		s.t.Fatalf("no TaintManagerEviction Event %q on pod %s/%s: %v", msg, s.ns, pod, err)
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get returns the status code and body of a GET of url (0 if it could not be made).
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
