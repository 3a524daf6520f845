package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/tolerations"
)

// waits passes the eviction p of key, which the recheck c found due, through the gate:
// the brake, then the rate limits. When it must wait, the gate has put it back in the
// schedule; waits reports Delayed when the reason changed, and returns true.
func (m *Manager) waits(key types.NamespacedName, p pending, c checked) bool {
	now := m.clock.Now()
	var buf [4]string
	keys := buf[:0]
	zone := ""
	if m.gate.needsCauses() {
		taints := m.taints.start(c.node.Name, tolerations.NoExecuteTaints(c.node.Spec.Taints), now)
		since := now
		if p.since != 0 {
			since = time.Unix(0, p.since)
		}
		keys = causes(keys, taints, c.pod.Spec.Tolerations, m.opts.DeadlineSource, since, now, m.tolOpts)
		zone = zoneOf(c.node)
	}
	a := m.gate.admit(key, p, keys, zone, now)
	if a.report != "" {
		m.obs.Delayed(refOf(key, p), a.report)
	}
	return a.wait
}

// dropHold forgets that the eviction of key waits for a token or the brake, and gives back
// its token, before the eviction is cancelled, skipped or scheduled anew. It returns the
// eviction that was held, if one was.
func (m *Manager) dropHold(key types.NamespacedName) (pending, bool) {
	if m.gate != nil && m.gate.nheld.Load() > 0 {
		return m.gate.drop(key, m.clock.Now())
	}
	return pending{}, false
}
