package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"
)

// Short lease timings, so that a failover takes seconds.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// leaderArgs are the flags of a replica that elects a leader with a Lease in namespace ns.
func leaderArgs(ns string) []string {
	return []string{
		"-leader-elect=true",
		"-leader-elect-namespace=" + ns,
		"-leader-elect-lease-duration=" + leaseDuration.String(),
		"-leader-elect-renew-deadline=" + renewDeadline.String(),
		"-leader-elect-retry-period=" + retryPeriod.String(),
	}
}

// holdsLease says whether a request wrote a Lease of namespace ns successfully: only the
// leader does.
func holdsLease(ns string) func(auditEvent) bool {
	return func(e auditEvent) bool {
		return e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == ns &&
			(e.Verb == "create" || e.Verb == "update" || e.Verb == "patch") && e.code() < 300
	}
}

// Scenario 8: two replicas elect a leader with short lease timings. The leader is killed
// (SIGKILL: a crash, the lease is not released) 3 s into a 10 s toleration. The standby
// takes the lease and evicts at the original deadline, within ±1 s plus the lease
// duration; the audit log shows that every write to the pod came from the new leader.
func TestLeaderFailover(t *testing.T) {
	failover(t, startController, "")
}

// failover runs scenario 8 with replicas that start, and lease in leaseNS ("" for the
// scene's namespace).
func failover(t *testing.T, start starter, leaseNS string) {
	s := newScene(t)
	if leaseNS == "" {
		leaseNS = s.ns
	}
	node := s.node("n")
	s.pod("web", node, tolerate(ptr.To[int64](10)))

	leader := start(t, "replica a", leaderArgs(leaseNS)...)
	waitAudit(t, leader.id, 1, holdsLease(leaseNS))
	standby := start(t, "replica b", leaderArgs(leaseNS)...)

	added := s.taint(node)
	sleepUntil(added.Add(3 * time.Second))
	killedAt := time.Now()
	leader.kill()
	s.assertNotEvicted("web")

	_, seen := s.waitDeleted("web")
	late := seen.Sub(added.Add(10 * time.Second))
	t.Logf("leader killed %s after the taint; the standby evicted %s after the deadline", killedAt.Sub(added).Round(time.Millisecond), late.Round(time.Millisecond))
	assert.True(t, late >= 0 && late <= tolerance+leaseDuration,
		"evicted %s after the deadline, want 0 to %s", late, tolerance+leaseDuration)

	writes := waitAudit(t, standby.id, 1, writesPod(s.ns, "web"))
	for _, e := range writes {
		assert.Less(t, e.code(), 300, "the new leader's %s", e.what())
	}
	old, err := auditEvents(leader.id, writesPod(s.ns, "web"))
	assert.NoError(t, err)
	assert.Empty(t, old, "writes of the killed leader to the pod")
}
