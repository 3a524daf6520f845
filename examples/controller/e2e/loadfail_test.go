package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sync/errgroup"
)

// The load-while-failing scenario: the scale scenario's 100 nodes × 20 pods, of which every
// tenth pod tolerates the taint forever (200 stay) and the rest none (1,800 are due at the
// taint), with loadFaultRate of the controller's pod writes answered by a fault.
const (
	loadFaultRate = 0.3
	loadSeed      = 20 // of the faults' generator: issue 20
	loadKeepEvery = 10
)

// loadFaults are the faults injected, one at random each time, and why these:
//   - 429 with Retry-After 1 is what API Priority and Fairness answers when a priority
//     level's queue is full, the commonest refusal of a busy API server. client-go waits the
//     Retry-After and sends the request again (up to 10 times) before the Deleter sees
//     anything, so these cost time and no failure of the controller's own.
//   - 500 InternalError without Retry-After is what the API server answers when its etcd
//     write fails (a leader change, a timeout). client-go gives it to the Deleter, and the
//     Manager retries the eviction after its backoff: each one is a failed attempt in the
//     controller's metrics, and must be exactly one.
var loadFaults = []fault{
	{code: http.StatusTooManyRequests, retryAfter: 1},
	{code: http.StatusInternalServerError},
}

// Scenario: load while failing. 2,000 pods on 100 nodes; every node is tainted in a burst
// while a proxy in front of the API server rejects 30% of the controller's pod writes
// (status patches and deletes), half with 429 and Retry-After, half with 500 (see
// loadFaults). The same test runs the scenario once with no faults, through the same proxy,
// and logs the drain times (from the first taint to the last due pod deleted) and their
// ratio. Both runs: every due pod deleted once, no other pod touched (audit log); the
// faulted run: each 500 is one failed attempt in the controller's metrics, each 429 was sent
// again by client-go, and no request the proxy rejected reached the server.
func TestLoadWhileFailing(t *testing.T) {
	needSlow(t)
	bin := plainController(t)
	var clean, faulty time.Duration
	t.Run("clean", func(t *testing.T) { clean = loadRun(t, bin, 0) })
	t.Run("faulty", func(t *testing.T) { faulty = loadRun(t, bin, loadFaultRate) })
	if clean > 0 && faulty > 0 {
		t.Logf("drain of %d due pods: clean %s, with %.0f%% of pod writes failing %s: %.2f times as long",
			scaleNodes*scalePodsPerNode*(loadKeepEvery-1)/loadKeepEvery, clean.Round(time.Millisecond),
			100*loadFaultRate, faulty.Round(time.Millisecond), float64(faulty)/float64(clean))
	}
}

// loadRun runs the scenario with rate of the controller's pod writes failing, checks it,
// and returns the drain time.
func loadRun(t *testing.T, bin string, rate float64) time.Duration {
	s := newScene(t)
	kept, due := s.scaleCluster(tolerate(nil), loadKeepEvery)
	fi := newFaultInjector(s.ns, rate, loadSeed, loadFaults...)
	user, rc := controllerUser(t, "controller")
	px := newProxyHooks(t, rc, proxyHooks{fault: fi.fault})
	c := startBinary(t, bin, "controller", "-kubeconfig", writeKubeconfig(t, px.config()),
		"-kube-api-qps=1000", "-kube-api-burst=2000", "-delete-workers=64")
	c.id = identity{user: user}
	deletions := s.watchDeletions()

	start := time.Now()
	added := start.Truncate(time.Second)
	var g errgroup.Group
	g.SetLimit(20)
	for _, node := range s.nodes {
		g.Go(func() error {
			s.taintAt(node, added)
			return nil
		})
	}
	_ = g.Wait()
	seen := deletions.waitFor(t, due)
	drain := latest(seen, due).Sub(start)

	// The controller's own count, read before it stops.
	metric := func(outcome, reason string) int { return int(c.metric(t, outcomes(outcome, reason))) }
	succeeded, gone := metric("succeeded", "delete"), metric("gone", "delete")
	failed := map[string]int{}
	for _, r := range []string{"InternalError", "TooManyRequests", "ServiceUnavailable", "Timeout", "Other"} {
		if n := metric("failed", r); n > 0 {
			failed[r] = n
		}
	}
	c.stop(t, 30*time.Second)
	writes, injected := fi.counts()

	deletions.mu.Lock()
	for _, name := range kept {
		if _, ok := deletions.seen[name]; ok {
			t.Errorf("pod %s, which tolerates the taint forever, deleted", name)
		}
	}
	deletions.mu.Unlock()
	tl := auditTally(t, s.ns, []identity{c.id}, due, kept)
	t.Logf("%d nodes, %d due pods, %d kept; %.0f%% of pod writes failing (seed %d, faults %v): drain %s after the first taint",
		len(s.nodes), len(due), len(kept), 100*rate, loadSeed, loadFaults, drain.Round(time.Millisecond))
	tl.log(t, fmt.Sprintf("%d due pods", len(due)))
	tl.check(t)

	// What reached the server is what the proxy saw less what it rejected, kind by kind.
	events, err := auditEvents(c.id, func(e auditEvent) bool { return inNamespace(s.ns)(e) && writesPod(s.ns, e.ObjectRef.Name)(e) })
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	audited := map[string]int{}
	for _, e := range events {
		audited[e.what()]++
	}
	forwarded := maps.Clone(writes)
	for k, n := range injected {
		what := k[:strings.LastIndexByte(k, ' ')]
		forwarded[what] -= n
	}
	assert.Equal(t, forwarded, audited, "pod writes at the server, by kind: those the proxy saw less those it rejected")
	t.Logf("pod writes seen by the proxy %v; rejected %v; at the server (audit log) %v", writes, injected, audited)
	t.Logf("the controller counts %d evictions, %d pods found gone, failed attempts %v", succeeded, gone, failed)

	assert.Equal(t, len(due), succeeded, "evictions the controller counts")
	assert.Zero(t, gone, "pods the controller found gone")
	// A 500 fails the Deleter call it hits, once; a 429 is sent again by client-go and fails
	// nothing (unless 10 in a row did: at 15% a request, never in a run).
	want := map[string]int{}
	if n := injectedWith(injected, http.StatusInternalServerError); n > 0 {
		want["InternalError"] = n
	}
	assert.Equal(t, want, failed, "failed attempts in the controller's metrics, by reason")
	// Every DELETE refused was sent again, and one per pod went through: the DELETEs the
	// proxy saw are the pods plus the refusals.
	refused := 0
	for _, f := range loadFaults {
		refused += injected["delete pods "+fmt.Sprint(f.code)]
	}
	assert.Equal(t, len(due)+refused, writes["delete pods"], "DELETEs the proxy saw: one per due pod plus one per refusal")
	if rate > 0 {
		// The faults were injected at about the rate asked.
		all, rejected := 0, 0
		for _, n := range writes {
			all += n
		}
		for _, n := range injected {
			rejected += n
		}
		got := float64(rejected) / float64(all)
		t.Logf("%d of %d pod writes rejected: %.1f%%", rejected, all, 100*got)
		assert.InDelta(t, rate, got, 0.03, "the share of pod writes rejected")
	}
	return drain
}
