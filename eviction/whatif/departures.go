package whatif

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// grace is how long after its eviction a pod is gone at the latest: its
// terminationGracePeriodSeconds, or the API server's default of 30 s.
func grace(p *v1.Pod) time.Duration {
	if p == nil || p.Spec.TerminationGracePeriodSeconds == nil {
		return 30 * time.Second
	}
	return time.Duration(max(0, *p.Spec.TerminationGracePeriodSeconds)) * time.Second
}

// goneSet is the keys of the targets a simulation took out of its Source.
type goneSet struct{ sync.Map }

func (g *goneSet) has(k types.NamespacedName) bool { _, ok := g.Load(k); return ok }

// add marks k gone, and reports whether it was there until now.
func (g *goneSet) add(k types.NamespacedName) bool { _, was := g.LoadOrStore(k, true); return !was }

// nodeSim is the simulation's Manager, whose evicted pods depart from its Cache.
type nodeSim struct {
	*eviction.Manager
	cache *nodeCache
}

var _ Departing = nodeSim{}

func (s nodeSim) Grace(ref engine.Ref) time.Duration {
	p, _ := s.cache.Pod(ref.Namespace, ref.Name)
	return grace(p)
}

func (s nodeSim) Gone(ref engine.Ref) {
	if p, _ := s.cache.Pod(ref.Namespace, ref.Name); p != nil && s.cache.gone.add(ref.Key()) {
		s.Manager.PodUpdated(p, nil)
	}
}

// holderSim is the simulation's Engine over holders, whose targets depart from its Source.
type holderSim[T any] struct {
	*engine.Engine[T]
	src goneSource[T]
}

func (s holderSim[T]) Grace(ref engine.Ref) time.Duration {
	t, _, _ := s.src.Target(ref.Key())
	p, _ := any(t).(*v1.Pod)
	return grace(p)
}

func (s holderSim[T]) Gone(ref engine.Ref) {
	if t, found, _ := s.src.Target(ref.Key()); found && s.src.gone.add(ref.Key()) {
		s.Engine.TargetDeleted(t)
	}
}

// goneSource is a Source without the targets gone (its lists, read only before the
// simulation starts, still hold them).
type goneSource[T any] struct {
	engine.Source[T]
	gone *goneSet
}

func (s goneSource[T]) Target(key types.NamespacedName) (T, bool, error) {
	if s.gone.has(key) {
		var zero T
		return zero, false, nil
	}
	return s.Source.Target(key)
}
