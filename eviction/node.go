package eviction

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/taintevict/taintevict/tolerations"
)

// handleNode stores a node's NoExecute taints and brings the schedule of its pods in line.
func (m *Manager) handleNode(ctx context.Context, name string, ev nodeEvent) {
	now := m.clock.Now()
	var hadTaints, hasTaints bool
	switch {
	case ev.resync:
		hadTaints = true // list again: pods are processed against the taints known now
	case ev.node == nil:
		hadTaints = m.taints.remove(name)
	default:
		taints := tolerations.NoExecuteTaints(ev.node.Spec.Taints)
		hadTaints, hasTaints = m.taints.set(name, taints, now), len(taints) > 0
	}
	if !hadTaints && !hasTaints {
		return // nothing could be pending for its pods, and nothing becomes due
	}
	pods, err := m.cache.PodsOnNode(name)
	if err != nil {
		logr.FromContextOrDiscard(ctx).V(2).Info("listing pods of node failed; will retry", "node", name, "err", err)
		m.retries.failed(nodeRetryKey(name), now, func() { m.shardFor(name).putNode(name, nodeEvent{resync: true}) })
		return
	}
	m.retries.succeeded(func() string { return nodeRetryKey(name) })
	untainted := ReasonNotTainted
	if ev.node == nil && !ev.resync {
		untainted = ReasonNodeDeleted
	}
	for _, pod := range pods {
		if pod == nil || pod.Spec.NodeName != name {
			continue
		}
		m.syncPod(podKey(pod), pod, now, untainted)
	}
}
