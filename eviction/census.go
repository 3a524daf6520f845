package eviction

import (
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// ConfirmAnnotation is the annotation by which an operator confirms a taint that
// Options.Confirm holds because it would evict too many pods at once: on a node, for that
// node's taints; on a DeviceTaintRule or a ResourceSlice (clientgo/device), for its taint.
// Its value lists the taint keys it confirms, separated by commas, or is "*" for every key:
//
//	kubectl annotate node node-1 taintevict.io/confirm-eviction=example.com/maintenance
//
// A confirmation names the key so that it confirms nothing else: a taint of another key
// that comes later is held again.
const ConfirmAnnotation = "taintevict.io/confirm-eviction"

// Confirms reports whether value, that of a [ConfirmAnnotation], confirms the taint key:
// it lists the key, or "*". It allocates nothing.
func Confirms(value, key string) bool {
	for value != "" {
		var k string
		k, value, _ = strings.Cut(value, ",")
		if k = strings.TrimSpace(k); k == "*" || k == key && k != "" {
			return true
		}
	}
	return false
}

// nodeCensus is the Manager's [engine.Census] for Options.Confirm. Its scope is a taint key:
// what the NoExecute taints with that key would evict (the pods bound to the nodes that
// carry it, not leaving, that do not tolerate one of them forever), of all pods bound to a
// node and not leaving; confirmed on the nodes whose [ConfirmAnnotation] names the key.
//
// It counts the updates the Manager is given before the engine sees them, so that the
// counts are there when the evictions an update causes fall due. It keeps the pods by
// node, so that a node whose taints change is counted again with no lookup that could
// fail. It calls recount (the engine's Recounted) with each key whose verdict changed,
// with mu released: the engine calls Reach under its own locks.
type nodeCensus struct {
	rule    engine.Confirm
	tol     tolerations.Options
	recount func(key string)

	mu      sync.Mutex
	targets int                               // pods bound to a node and not leaving
	nodes   map[string]censusNode             // nodes with NoExecute taints or a confirmation
	pods    map[types.UID]*v1.Pod             // the pods told of, bound to a node
	byNode  map[string]map[types.UID]struct{} // their UIDs by node
	keys    map[string]*censusCount           // by taint key
}

// censusNode is what the census keeps of a node.
type censusNode struct {
	taints  []v1.Taint // its NoExecute taints
	confirm string     // its ConfirmAnnotation
}

// censusCount is what a key would evict, and whether that is over Confirm's rule as last
// told.
type censusCount struct {
	evicts int
	over   bool
}

var _ engine.Census = (*nodeCensus)(nil)

func newNodeCensus(rule engine.Confirm, tol tolerations.Options) *nodeCensus {
	return &nodeCensus{rule: rule, tol: tol, recount: func(string) {}, nodes: map[string]censusNode{},
		pods: map[types.UID]*v1.Pod{}, byNode: map[string]map[types.UID]struct{}{}, keys: map[string]*censusCount{}}
}

// Reach gives the count of the cause's key, confirmed when the cause's node confirms it.
func (c *nodeCensus) Reach(cause engine.Cause, into []engine.Reach) []engine.Reach {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := engine.Reach{Scope: cause.Key, Targets: c.targets, Counted: true,
		Confirmed: Confirms(c.nodes[cause.Holder].confirm, cause.Key)}
	if k := c.keys[cause.Key]; k != nil {
		r.Evicts = k.evicts
	}
	return append(into, r)
}

// podChanged counts a pod update (old nil: added; new nil: deleted).
func (c *nodeCensus) podChanged(old, new *v1.Pod) {
	c.mu.Lock()
	if old != nil {
		c.forget(old.UID)
	}
	if new != nil {
		c.forget(new.UID)
		if node := new.Spec.NodeName; node != "" {
			c.pods[new.UID] = new
			if c.byNode[node] == nil {
				c.byNode[node] = map[types.UID]struct{}{}
			}
			c.byNode[node][new.UID] = struct{}{}
			c.count(new, 1)
		}
	}
	c.unlock(nil)
}

// nodeChanged counts a node update (new nil: the node name was deleted): when its NoExecute
// taints changed, it counts its pods again; when its confirmation changed, the verdicts of
// its keys are told again.
func (c *nodeCensus) nodeChanged(name string, new *v1.Node) {
	var next censusNode
	if new != nil {
		next = censusNode{taints: tolerations.NoExecuteTaints(new.Spec.Taints), confirm: new.Annotations[ConfirmAnnotation]}
	}
	c.mu.Lock()
	prev := c.nodes[name]
	var flips []string
	if next.confirm != prev.confirm {
		for _, t := range append(slices.Clip(prev.taints), next.taints...) {
			if Confirms(prev.confirm, t.Key) != Confirms(next.confirm, t.Key) && !slices.Contains(flips, t.Key) {
				flips = append(flips, t.Key)
			}
		}
	}
	retainted := engine.TaintsChanged(prev.taints, next.taints)
	if retainted {
		c.countNode(name, -1)
	}
	if len(next.taints) == 0 && next.confirm == "" {
		delete(c.nodes, name)
	} else {
		c.nodes[name] = next
	}
	if retainted {
		c.countNode(name, 1)
	}
	c.unlock(flips)
}

// countNode adds sign to the counts of the pods of node; under mu.
func (c *nodeCensus) countNode(node string, sign int) {
	for uid := range c.byNode[node] {
		c.count(c.pods[uid], sign)
	}
}

// count adds sign to the counts of pod, when it is not leaving: to all pods, and to each
// key of its node's NoExecute taints, once, that it does not tolerate forever; under mu.
func (c *nodeCensus) count(pod *v1.Pod, sign int) {
	if LeavingReason(pod) != "" {
		return
	}
	c.targets += sign
	taints := c.nodes[pod.Spec.NodeName].taints
	for i := range taints {
		k := taints[i].Key
		if slices.ContainsFunc(taints[:i], func(t v1.Taint) bool { return t.Key == k }) {
			continue // counted at its first taint
		}
		for j := i; j < len(taints); j++ {
			// Whether a taint is tolerated forever does not depend on the time: any will do.
			if taints[j].Key == k && tolerations.Deadline(taints[j:j+1], pod.Spec.Tolerations, time.Time{}, time.Time{}, c.tol).Verdict != tolerations.Stay {
				if c.keys[k] == nil {
					c.keys[k] = &censusCount{}
				}
				c.keys[k].evicts += sign
				break
			}
		}
	}
}

// forget uncounts the pod uid and forgets it; under mu.
func (c *nodeCensus) forget(uid types.UID) {
	pod := c.pods[uid]
	if pod == nil {
		return
	}
	c.count(pod, -1)
	delete(c.pods, uid)
	if on := c.byNode[pod.Spec.NodeName]; on != nil {
		delete(on, uid)
		if len(on) == 0 {
			delete(c.byNode, pod.Spec.NodeName)
		}
	}
}

// unlock adds to flips the keys whose verdict changed (over Confirm's rule, or not),
// forgets those that evict nothing, O(keys counted), releases mu and recounts flips.
func (c *nodeCensus) unlock(flips []string) {
	for k, n := range c.keys {
		if over := c.rule.Exceeds(n.evicts, c.targets); over != n.over {
			n.over = over
			if !slices.Contains(flips, k) {
				flips = append(flips, k)
			}
		}
		if n.evicts == 0 && !n.over {
			delete(c.keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range flips {
		c.recount(k)
	}
}
