package e2e

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

// sleepUntil waits for a point of a scenario's timeline: the scenario is about what happens
// at given times, so this waits on the clock, not for a condition.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// Scenario 7: the controller is stopped 2 s into a 10 s toleration and a new one starts 3 s
// later. The pod is evicted at TimeAdded + 10 s, where kube's own controller, which starts
// the countdown when it sees the taint, would evict at restart + 10 s.
func TestRestartKeepsDeadline(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.pod("web", node, tolerate(ptr.To[int64](10)))
	first := startController(t, "first controller")

	added := s.taint(node)
	first.waitOutput(t, "scheduled  "+s.ns+"/web", failAfter)
	sleepUntil(added.Add(2 * time.Second))
	first.stop(t, 10*time.Second)
	s.assertNotEvicted("web")

	sleepUntil(added.Add(5 * time.Second))
	startController(t, "second controller")
	_, seen := s.waitDeleted("web")
	assertAt(t, "the eviction after the restart", seen, added.Add(10*time.Second))
}
