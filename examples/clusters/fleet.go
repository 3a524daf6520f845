package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// workload is a target: a workload placed on one cluster. A move places a copy elsewhere,
// with the same UID.
type workload struct {
	key         types.NamespacedName
	uid         types.UID
	cluster     string
	tolerations []v1.Toleration
	owner       engine.Owner // the application, for Options.OwnerLimit
}

// cluster is a holder: its region is its group, for the brake.
type cluster struct {
	name, region string
	taints       []v1.Taint
}

// fleet is what a multi-cluster controller's informers would hold: the clusters and the
// workloads. It is the engine's Source; it is safe for concurrent use.
type fleet struct {
	mu        sync.Mutex
	clusters  []*cluster // in a fixed order, for choosing where to move
	workloads map[types.NamespacedName]*workload
}

var _ engine.Source[*workload] = (*fleet)(nil)

func (f *fleet) Target(key types.NamespacedName) (*workload, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.workloads[key]
	return w, ok, nil
}

func (f *fleet) TargetsOn(name string) ([]*workload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*workload
	for _, w := range f.workloads {
		if w.cluster == name {
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *fleet) Holder(name string) (engine.Holder, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cluster(name); c != nil {
		return engine.Holder{Name: c.name, Taints: c.taints, Group: c.region}, true, nil
	}
	return engine.Holder{}, false, nil
}

func (f *fleet) Locate(w *workload) (types.NamespacedName, string) { return w.key, w.cluster }

func (f *fleet) Describe(w *workload, d *engine.Target) {
	d.Key, d.UID, d.Owner = w.key, w.uid, w.owner
	d.Bindings = append(d.Bindings, engine.Binding{Holder: w.cluster, Tolerations: w.tolerations})
}

func (f *fleet) cluster(name string) *cluster {
	i := slices.IndexFunc(f.clusters, func(c *cluster) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	return f.clusters[i]
}

// setTaints gives a cluster its taints and returns it as the engine's holder.
func (f *fleet) setTaints(name string, taints []v1.Taint) engine.Holder {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.cluster(name)
	c.taints = taints
	return engine.Holder{Name: c.name, Taints: c.taints, Group: c.region}
}

// mover is the actuator: it moves a workload off the cluster that ref names to the first
// healthy cluster of the same region, or else of any region, and tells the engine, as the
// workload's informer would. It returns an error, which the engine retries with backoff,
// when no cluster is healthy.
type mover struct {
	f     *fleet
	e     *engine.Engine[*workload]
	moves func(w types.NamespacedName, from, to string)
}

func (m *mover) Act(_ context.Context, ref engine.Ref) error {
	m.f.mu.Lock()
	w := m.f.workloads[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}]
	if w == nil || w.uid != ref.UID || w.cluster != ref.Holder {
		m.f.mu.Unlock()
		return engine.ErrGone // gone, or moved already
	}
	from := m.f.cluster(ref.Holder)
	var to *cluster
	for _, c := range m.f.clusters {
		if len(c.taints) == 0 && (to == nil || c.region == from.region && to.region != from.region) {
			to = c
		}
	}
	if to == nil {
		m.f.mu.Unlock()
		return fmt.Errorf("no healthy cluster to move %s to", ref)
	}
	moved := *w
	moved.cluster = to.name
	m.f.workloads[w.key] = &moved
	m.f.mu.Unlock()
	m.moves(w.key, from.name, to.name)
	m.e.TargetUpdated(&moved)
	return nil
}
