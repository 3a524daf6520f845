package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Bounds of the control plane's fault scenarios.
const (
	// recoverBound is how soon after the API server's return every eviction that fell due
	// meanwhile must be done.
	recoverBound = 5 * time.Second
)

// faultPods creates, on n nodes of the scene, perNode pods each, named p-NODE-POD; tol says
// each pod's toleration of the outage taint in seconds (nil: none). It returns the nodes and
// the pods by name with their toleration.
func (s *scene) faultPods(n, perNode int, tol func(i int) *int64) ([]string, map[string]*int64) {
	s.t.Helper()
	var nodes []string
	for i := range n {
		nodes = append(nodes, s.node(fmt.Sprint(i)))
	}
	pods := map[string]*int64{}
	var g errgroup.Group
	g.SetLimit(20)
	for i, node := range nodes {
		for j := range perNode {
			name := fmt.Sprintf("p-%d-%03d", i, j)
			seconds := tol(i*perNode + j)
			pods[name] = seconds
			var tols []v1.Toleration
			if seconds != nil {
				tols = append(tols, tolerate(seconds))
			}
			g.Go(func() error {
				_, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, newPod(s.ns, name, node, tols...), metav1.CreateOptions{})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		s.t.Fatalf("creating the pods: %v", err)
	}
	return nodes, pods
}

// keptPods creates n pods on node that tolerate the outage taint forever, and returns their
// names: no fault may get them evicted.
func (s *scene) keptPods(node string, n int) []string {
	s.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("forever-%d", i)
		s.pod(name, node, tolerate(nil))
		names = append(names, name)
	}
	return names
}

// taintAll taints nodes with one TimeAdded and returns it.
func (s *scene) taintAll(nodes []string) time.Time {
	added := time.Now().Truncate(time.Second)
	var g errgroup.Group
	g.SetLimit(10)
	for _, n := range nodes {
		g.Go(func() error { s.taintAt(n, added); return nil })
	}
	_ = g.Wait()
	return added
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// readyz returns the status of the process's /readyz, 0 if it does not answer.
func (p *process) readyz() int {
	resp, err := probeClient.Get(p.url("/readyz"))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReadyz polls the process's /readyz until ok says its status is the one wanted, and
// returns when it was seen; it fails the test after within.
func (p *process) waitReadyz(t *testing.T, what string, within time.Duration, ok func(int) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if code := p.readyz(); ok(code) {
			return time.Now()
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz still answers %d after %s", what, code, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Fault 1, the API server down mid-outage: 200 pods, half untolerating, half tolerating
// 10 s, and 10 tolerating forever; on 4 tainted nodes (the node side), or each using a device
// of its own that a DeviceTaintRule taints (the device side, -controllers=device).
// kube-apiserver is killed (SIGKILL) 2 s after the taints, and started again on the same
// etcd 20 s later. The controller, without leader election, does not exit; its /readyz
// fails while the server is gone and succeeds once it is back; every eviction due while the
// server was gone is done within 5 s of its return, the 10 s pods not before TimeAdded +
// 10 s; none is lost, wrong (the forever pods) or doubled (audit log).
func TestAPIServerDown(t *testing.T) {
	needSlow(t)
	tol := func(i int) *int64 {
		if i%2 == 0 {
			return nil
		}
		return ptr.To[int64](10)
	}
	t.Run("node", func(t *testing.T) {
		fp := startFaultPlane(t)
		fp.use(t)
		s := newScene(t)
		nodes, pods := s.faultPods(4, 50, tol)
		kept := s.keptPods(nodes[0], 10)
		c := startController(t, "controller")
		apiServerDown(t, fp, c, s.ns, pods, kept, func() time.Time { return s.taintAll(nodes) })
	})
	t.Run("device", func(t *testing.T) {
		fp := startFaultPlane(t)
		fp.use(t)
		s := newDeviceScene(t, "unused")
		pods := s.faultDevicePods(200, tol)
		kept := s.keptDevicePods(10)
		c := startController(t, "controller", deviceArgs...)
		apiServerDown(t, fp, c, s.ns, pods, kept, func() time.Time {
			return s.rule("outage", outageKey, resourcev1.DeviceTaintEffectNoExecute, nil)
		})
	})
}

// apiServerDown plays fault 1 on fp with the controller c running: taint taints what pods
// (each with its toleration in seconds, nil: none) and kept (tolerating forever) are on, in
// namespace ns, and returns its TimeAdded.
func apiServerDown(t *testing.T, fp *faultPlane, c *process, ns string, pods map[string]*int64, kept []string, taint func() time.Time) {
	start := time.Now()
	added := taint()
	sleepUntil(start.Add(2 * time.Second))
	killed := fp.killAPIServer()
	down := c.waitReadyz(t, "the server killed", 10*time.Second, func(code int) bool { return code != http.StatusOK })
	t.Logf("kube-apiserver killed %s after the taints; the controller's /readyz failed %s later",
		killed.Sub(start).Round(time.Millisecond), down.Sub(killed).Round(time.Millisecond))

	sleepUntil(killed.Add(20 * time.Second))
	assert.NotEqual(t, http.StatusOK, c.readyz(), "/readyz just before the server's return")
	back := fp.restartAPIServer()
	ready := c.waitReadyz(t, "the server back", 30*time.Second, func(code int) bool { return code == http.StatusOK })
	t.Logf("kube-apiserver ready again %s after the kill; the controller's /readyz 200 %s after that",
		back.Sub(killed).Round(time.Millisecond), ready.Sub(back).Round(time.Millisecond))

	due := sortedKeys(pods)
	tl := waitEvictions(t, c, ns, due, kept, 3*time.Second)
	tl.log(t, "API server down")
	tl.check(t)
	select {
	case <-c.done:
		t.Errorf("the controller exited (%v) during the outage", c.err)
	default:
	}

	var beforeKill, late int
	var worst time.Duration
	for _, name := range due {
		at, ok := tl.deleted[name]
		if !ok {
			continue
		}
		deadline := added
		if pods[name] != nil {
			deadline = added.Add(time.Duration(*pods[name]) * time.Second)
			assert.False(t, at.Before(deadline), "%s (tolerating %d s) deleted %s before its deadline", name, *pods[name], deadline.Sub(at))
		}
		if at.Before(killed) {
			beforeKill++
			continue
		}
		from := later(deadline, back)
		bound := from.Add(recoverBound)
		if d := at.Sub(from); d > worst {
			worst = d
		}
		if at.After(bound) {
			late++
		}
	}
	failed := 0
	for _, f := range c.failedAttempts(ns) {
		failed += len(f)
	}
	t.Logf("API server down: %d evicted before the kill; %d attempts failed during the outage; the last eviction %s after the server's return; each at most %s after the later of its deadline and the return (bound %s); %d late",
		beforeKill, failed, tl.last(due).Sub(back).Round(time.Millisecond), worst.Round(time.Millisecond), recoverBound, late)
	assert.Zero(t, late, "evictions more than %s after max(deadline, the server's return)", recoverBound)
}

// Fault 2, etcd stalls: 200 pods on 4 nodes tolerating 0 to 4 s (and 10 forever), so that
// deletes are under way when etcd is paused (SIGSTOP) 2 s after the taints, for 15 s. The controller gives up
// on a call after -delete-timeout=5s and retries it after its backoff; once etcd resumes,
// every pod is deleted, none lost, wrong or doubled (audit log).
func TestEtcdStall(t *testing.T) {
	needSlow(t)
	fp := startFaultPlane(t)
	fp.use(t)
	s := newScene(t)
	nodes, pods := s.faultPods(4, 50, func(i int) *int64 {
		if i%5 == 0 {
			return nil
		}
		return ptr.To(int64(i % 5))
	})
	const deleteTimeout = 5 * time.Second
	kept := s.keptPods(nodes[0], 10)
	c := startController(t, "controller", "-delete-timeout="+deleteTimeout.String())

	start := time.Now()
	s.taintAll(nodes)
	sleepUntil(start.Add(2 * time.Second))
	fp.pauseEtcd()
	paused := time.Now()
	sleepUntil(paused.Add(15 * time.Second))
	fp.resumeEtcd()
	resumed := time.Now()

	due := sortedKeys(pods)
	tl := waitEvictions(t, c, s.ns, due, kept, 3*time.Second)
	tl.log(t, "etcd stall")
	tl.check(t)
	var during, after int
	for _, at := range tl.deleted {
		switch {
		case at.Before(paused):
		case at.Before(resumed):
			during++
		default:
			after++
		}
	}
	failed := 0
	for _, f := range c.failedAttempts(s.ns) {
		failed += len(f)
	}
	last := tl.last(due)
	t.Logf("etcd stall: paused %s after the taints for 15 s; %d deletes failed (timed out) and were retried; %d pods deleted during the stall (as the server saw them), %d after; the last %s after etcd resumed",
		paused.Sub(start).Round(time.Millisecond), failed, during, after, last.Sub(resumed).Round(time.Millisecond))
	assert.Positive(t, failed, "no delete was caught by the stall: the scenario tested nothing")
	assert.LessOrEqual(t, last.Sub(resumed), deleteTimeout+recoverBound, "the last eviction after etcd resumed")
}

// Fault 3, watch history compacted: the controller is cut off from the API server (its
// connections closed, new ones refused); meanwhile two nodes are tainted (their pods fall
// due) and two others, whose pods the controller had scheduled for 40 s later, are
// untainted; etcd is compacted to its current revision; the controller is let back. The
// server keeps no watch cache, so the informers' watches from their last resource version get
// 410 Gone and relist (the audit log shows the LISTs after the reconnect); the due pods are
// then evicted and the untainted nodes' pods are not, past their old deadline.
func TestWatchCompacted(t *testing.T) {
	needSlow(t)
	fp := startFaultPlane(t, "watch-cache", "false")
	fp.use(t)
	s := newScene(t)
	dueNodes := []string{s.node("due-0"), s.node("due-1")}
	cancelNodes := []string{s.node("cancel-0"), s.node("cancel-1")}
	var due, kept []string
	for i, n := range dueNodes {
		for j := range 10 {
			name := fmt.Sprintf("due-%d-%d", i, j)
			s.pod(name, n)
			due = append(due, name)
		}
	}
	const cancelTol = 40
	for i, n := range cancelNodes {
		for j := range 10 {
			name := fmt.Sprintf("kept-%d-%d", i, j)
			s.pod(name, n, tolerate(ptr.To[int64](cancelTol)))
			kept = append(kept, name)
		}
	}
	user, rc := controllerUser(t, "controller")
	cut := newCutter(t, rc)
	c := startAs(t, "controller", identity{user: user}, cut.config(rc))

	added := s.taintAll(cancelNodes)
	for _, name := range kept {
		c.waitOutput(t, "scheduled  "+s.ns+"/"+name, failAfter)
	}

	cut.cut()
	cutAt := time.Now()
	s.taintAll(dueNodes)
	for _, n := range cancelNodes {
		s.untaint(n)
	}
	rev := fp.compact()
	sleepUntil(cutAt.Add(5 * time.Second))
	cut.heal()
	healed := time.Now()
	t.Logf("cut off for %s; etcd compacted to revision %d", healed.Sub(cutAt).Round(time.Millisecond), rev)

	// Past the old deadline of the untainted nodes' pods, and then some.
	settle := time.Until(added.Add(cancelTol*time.Second + 3*time.Second))
	tl := waitEvictions(t, c, s.ns, due, kept, max(settle, 3*time.Second))
	tl.log(t, "watch history compacted")
	tl.check(t)
	last := tl.last(due)
	t.Logf("watch history compacted: the last due pod evicted %s after the reconnect", last.Sub(healed).Round(time.Millisecond))

	// A watch is in the audit log once it has ended: stop the controller to end them.
	c.stop(t, 30*time.Second)
	// The informers relist either with a LIST or with a watch that sends the initial events
	// (client-go's streaming list); a watch that resumes from a resource version is neither.
	relists, err := auditEvents(c.id, func(e auditEvent) bool {
		return e.ObjectRef != nil && (e.ObjectRef.Resource == "pods" || e.ObjectRef.Resource == "nodes") &&
			e.Received.After(healed) && e.code() == http.StatusOK &&
			(e.Verb == "list" || e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true"))
	})
	require.NoError(t, err)
	byResource := map[string][]string{}
	for _, e := range relists {
		byResource[e.ObjectRef.Resource] = append(byResource[e.ObjectRef.Resource],
			fmt.Sprintf("%s %s after the reconnect", e.Verb, e.Received.Sub(healed).Round(time.Millisecond)))
	}
	t.Logf("the informers' relists after the reconnect: %v", byResource)
	after, err := auditEvents(c.id, func(e auditEvent) bool {
		return (e.Verb == "list" || e.Verb == "watch") && e.Received.After(healed)
	})
	require.NoError(t, err)
	for _, e := range after {
		t.Logf("  %s after the reconnect: %s %s: %d", e.Received.Sub(healed).Round(time.Millisecond), e.Verb, e.RequestURI, e.code())
	}
	assert.NotEmpty(t, byResource["pods"], "the pod informer did not relist after the reconnect")
	assert.NotEmpty(t, byResource["nodes"], "the node informer did not relist after the reconnect")
	// client-go's reflector retries a refused watch after 800 ms doubling to 30 s, with a
	// jitter of up to as much again: that, not the controller, bounds how soon it relists.
	assert.LessOrEqual(t, last.Sub(healed), time.Minute, "the last due eviction after the reconnect")
}
