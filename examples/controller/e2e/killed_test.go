package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The pods of the killed-mid-delete scenario, by what happens to their eviction when the
// controller is killed.
const (
	killHeld = 8 // marked; the DELETE held by the proxy, never forwarded
	killLost = 4 // marked; the DELETE done by the server, its answer held until the kill
	killLate = 2 // tolerate killLateSeconds: due after the restart
	// killLateSeconds is after the restart on a busy machine: the kill comes when the held
	// deletes are in flight, under a second after the taint, and a controller is ready a
	// second or two after it starts.
	killLateSeconds = 6
)

// Scenario: the controller is killed (SIGKILL) while its Deleter calls are in flight,
// between the status patch that sets DisruptionTarget and the DELETE. A proxy holds the
// DELETEs of killHeld pods (they never reach the server) and the answers of killLost more
// (the server deleted them, the controller never heard), and the kill comes once all are
// held. A new controller, as a user of its own, is started at once. It deletes every marked
// pod that was not deleted, once; it does not touch the pods the first
// one deleted (they are Terminating: no kubelet finishes them, and a terminating pod is
// leaving on its own); it evicts the pods that come due after it started at their deadline,
// and nothing else. The audit log shows every due pod deleted exactly once, and no request
// about the pods that stay.
func TestKilledMidDelete(t *testing.T) {
	s := newScene(t)
	node, other := s.node("n"), s.node("untainted")
	var held, lost, late, kept []string
	for i := range killHeld {
		held = append(held, fmt.Sprintf("held-%d", i))
		s.pod(held[i], node)
	}
	for i := range killLost {
		lost = append(lost, fmt.Sprintf("lost-%d", i))
		s.pod(lost[i], node)
	}
	for i := range killLate {
		late = append(late, fmt.Sprintf("late-%d", i))
		s.pod(late[i], node, tolerate(ptr.To[int64](killLateSeconds)))
	}
	kept = []string{"forever", "elsewhere"}
	s.pod("forever", node, tolerate(nil))
	s.pod("elsewhere", other)

	// The proxy's hooks wait on release, which the kill (or the test's end) closes.
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	heldIn := make(chan string, killHeld)  // a DELETE held
	lostOut := make(chan string, killLost) // a DELETE done, its answer held
	deleteOf := func(r *http.Request, prefix string) (string, bool) {
		what, name := podWrite(r, s.ns)
		return name, what == "delete pods" && strings.HasPrefix(name, prefix)
	}
	userA, rcA := controllerUser(t, "killed controller")
	px := newProxyHooks(t, rcA, proxyHooks{
		fault: func(r *http.Request) *fault {
			name, ok := deleteOf(r, "held-")
			if !ok {
				return nil
			}
			heldIn <- name
			<-release
			// The controller is dead by now: nobody reads this, and the server never sees
			// the DELETE.
			return &fault{code: http.StatusServiceUnavailable}
		},
		after: func(resp *http.Response) {
			if name, ok := deleteOf(resp.Request, "lost-"); ok {
				lostOut <- name
				<-release
			}
		},
	})
	t.Cleanup(releaseAll) // before the proxy's cleanup, which waits for its handlers
	// Workers for every due pod at once: all Deleter calls are in flight at the kill.
	a := startAs(t, "killed controller", identity{user: userA}, px.config(), fmt.Sprintf("-delete-workers=%d", killHeld+killLost+killLate))

	added := s.taint(node)
	timeout := time.After(failAfter)
	for range killHeld + killLost {
		select {
		case <-heldIn:
		case <-lostOut:
		case <-timeout:
			t.Fatalf("the Deleter calls are not all held %s after the taint; output:\n%s", failAfter, a.out)
		}
	}
	a.kill()
	killed := time.Now()
	releaseAll()
	t.Logf("controller killed %s after the taint, with %d DELETEs held and %d answers lost",
		killed.Sub(added).Round(time.Millisecond), killHeld, killLost)

	// What the kill left: the held pods marked and not deleted, and none of their DELETEs
	// at the server.
	for _, name := range held {
		pod := s.getPod(name)
		assert.NotNil(t, condition(pod, v1.DisruptionTarget), "held pod %s not marked at the kill", name)
		assert.Nil(t, pod.DeletionTimestamp, "held pod %s deleted at the kill", name)
	}
	for _, name := range lost {
		assert.NotNil(t, s.getPod(name).DeletionTimestamp, "pod %s not deleted at the kill", name)
	}
	deletedByA := waitAudit(t, identity{user: userA}, killLost, func(e auditEvent) bool { return inNamespace(s.ns)(e) && removes(e) })
	assert.Len(t, deletedByA, killLost, "DELETEs of the killed controller at the server")

	deletions := s.watchDeletions()
	userB, rcB := controllerUser(t, "restarted controller")
	b := startAs(t, "restarted controller", identity{user: userB}, rcB)
	ready := time.Since(killed)
	seen := deletions.waitFor(t, held)
	recovered := latest(seen, held).Sub(killed)
	seen = deletions.waitFor(t, late)
	for _, name := range late {
		assert.False(t, seen[name].Before(added.Add(killLateSeconds*time.Second)), "pod %s evicted before its deadline", name)
	}
	lateBy := latest(seen, late).Sub(added.Add(killLateSeconds * time.Second))
	// The restarted controller's count of its own evictions: the held and the late pods.
	evicted := b.closed(t, killHeld+killLate, [2]string{"succeeded", "delete"})[0]
	b.stop(t, 30*time.Second)
	t.Logf("restarted controller ready %s after the kill; every held pod deleted %s after the kill; the late pods %s after their deadline; it counts %d evictions",
		ready.Round(time.Millisecond), recovered.Round(time.Millisecond), lateBy.Round(time.Millisecond), evicted)
	assert.Equal(t, killHeld+killLate, evicted, "evictions the restarted controller counts")

	for _, name := range kept {
		s.assertNotEvicted(name)
	}
	// Each held pod: marked by the killed controller, deleted once by its successor, whose
	// status patch carries the same condition (the server changes nothing) and answers
	// that the pod is not being deleted yet.
	for _, name := range held {
		w, err := auditEvents(identity{user: userB}, writesPod(s.ns, name))
		assert.NoError(t, err)
		assert.Equal(t, []string{"patch pods/status 200", "delete pods 200"}, answered(w), "the restarted controller's writes to %s", name)
	}
	// The pods whose DELETE the server did: Terminating, so leaving on their own; the
	// successor neither writes to them nor reports them (no eviction of its own was open).
	for _, name := range lost {
		w, err := auditEvents(identity{user: userB}, writesPod(s.ns, name))
		assert.NoError(t, err)
		assert.Empty(t, answered(w), "the restarted controller's writes to %s, which was deleted before the kill", name)
		assert.NotContains(t, b.out.String(), s.ns+"/"+name+" ", "the restarted controller's output")
	}
	due := append(append(append([]string{}, held...), lost...), late...)
	tl := auditTally(t, s.ns, []identity{{user: userA}, {user: userB}}, due, kept)
	tl.log(t, fmt.Sprintf("%d due pods over the kill and restart", len(due)))
	tl.check(t)
	for _, name := range due {
		assert.Equal(t, 1, tl.deletes[name], "successful deletes of %s", name)
	}
}

// answered lists requests as "verb resource code", e.g. "delete pods 200".
func answered(events []auditEvent) []string {
	var s []string
	for _, e := range events {
		s = append(s, fmt.Sprintf("%s %d", e.what(), e.code()))
	}
	return s
}
