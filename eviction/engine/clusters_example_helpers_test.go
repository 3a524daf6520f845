package engine_test

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
)

// The Example's Source, apart from it so that the example shows only its own steps.

// workload is a target that is not a pod: a workload placed on two clusters, which
// tolerates each cluster's taints with the tolerations of its placement there.
type workload struct {
	name      string
	uid       types.UID
	placement map[string][]v1.Toleration // cluster -> tolerations
}

// clusters is the Source: the clusters' taints and the workloads, as a multi-cluster
// controller's listers would hold them.
type clusters struct {
	mu        sync.Mutex
	taints    map[string][]v1.Taint
	workloads map[string]*workload
}

// setTaints sets a cluster's taints, as the clusters' informer would see them.
func (f *clusters) setTaints(cluster string, taints ...v1.Taint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taints[cluster] = taints
}

func (f *clusters) Target(key types.NamespacedName) (*workload, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.workloads[key.Name]
	return w, ok, nil
}

func (f *clusters) TargetsOn(cluster string) ([]*workload, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*workload
	for _, w := range f.workloads {
		if _, ok := w.placement[cluster]; ok {
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *clusters) Holder(cluster string) (engine.Holder, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	taints, ok := f.taints[cluster]
	return engine.Holder{Name: cluster, Taints: taints}, ok, nil
}

func (f *clusters) Locate(w *workload) (types.NamespacedName, string) {
	return types.NamespacedName{Name: w.name}, ""
}

func (f *clusters) Describe(w *workload, d *engine.Target) {
	d.Key, d.UID = types.NamespacedName{Name: w.name}, w.uid
	for _, cluster := range []string{"east", "west"} {
		if tols, ok := w.placement[cluster]; ok {
			d.Bindings = append(d.Bindings, engine.Binding{Holder: cluster, Tolerations: tols})
		}
	}
}
