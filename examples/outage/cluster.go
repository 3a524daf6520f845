package main

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// unreachable is the taint the node lifecycle controller puts on a node that stopped
// reporting, with the NoExecute effect.
const unreachable = "node.kubernetes.io/unreachable"

// start is the simulated time of +00:00.
var start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	tick = 10 * time.Second // the clock moves this much at each step
	end  = 6 * time.Minute  // when the simulation stops
)

// nodes of the cluster, and their zones.
var nodes = []struct{ name, zone string }{
	{"node-a1", "zone-a"}, {"node-a2", "zone-a"}, {"node-a3", "zone-a"},
	{"node-b1", "zone-b"}, {"node-b2", "zone-b"},
}

// podSpec is a pod of the cluster and what it tolerates.
type podSpec struct {
	namespace, name, node string
	tolerations           []v1.Toleration
	finished              bool   // its containers have exited (phase Succeeded)
	about                 string // its tolerations, for the table at the start
}

// Tolerations of the unreachable taint: for some seconds, or forever (no
// tolerationSeconds, as DaemonSet pods have); and one of another key, which does not
// tolerate the unreachable taint at all.
func tolerateFor(seconds int64) []v1.Toleration {
	return []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}
}

var (
	tolerateForever = []v1.Toleration{{Key: unreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	tolerateGPU     = []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
)

var pods = []podSpec{
	{"shop", "web-1", "node-a1", nil, false, "no tolerations"},
	{"shop", "api-1", "node-a1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-a1", "node-a1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-1", "node-a2", tolerateFor(300), false, "unreachable for 300s"},
	{"batch", "train-1", "node-a2", tolerateGPU, false, "nvidia.com/gpu only"},
	{"batch", "report-1", "node-a2", nil, true, "no tolerations; finished"},
	{"logging", "agent-a2", "node-a2", tolerateForever, false, "unreachable forever"},

	{"shop", "web-2", "node-a3", nil, false, "no tolerations"},
	{"shop", "queue-1", "node-a3", tolerateFor(180), false, "unreachable for 180s"},
	{"shop", "cart-2", "node-a3", tolerateFor(300), false, "unreachable for 300s"},
	{"logging", "agent-a3", "node-a3", tolerateForever, false, "unreachable forever"},

	{"shop", "web-3", "node-b1", nil, false, "no tolerations"},
	{"shop", "api-2", "node-b1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-b1", "node-b1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-3", "node-b2", tolerateFor(300), false, "unreachable for 300s"},
	{"batch", "train-2", "node-b2", tolerateGPU, false, "nvidia.com/gpu only"},
	{"logging", "agent-b2", "node-b2", tolerateForever, false, "unreachable forever"},
}

// partitionPods are the pods of the second scenario: as most pods are, each tolerates the
// unreachable taint for a while, 300 s unless it says otherwise (the DefaultTolerationSeconds
// admission plugin gives every pod that). So nothing is due before the brake has seen the
// whole partition.
var partitionPods = []podSpec{
	{"shop", "web-1", "node-a1", tolerateFor(300), false, "unreachable for 300s (the default)"},
	{"shop", "api-1", "node-a1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-a1", "node-a1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-1", "node-a2", tolerateFor(300), false, "unreachable for 300s (the default)"},
	{"logging", "agent-a2", "node-a2", tolerateForever, false, "unreachable forever"},

	{"shop", "web-2", "node-a3", tolerateFor(300), false, "unreachable for 300s (the default)"},
	{"shop", "queue-1", "node-a3", tolerateFor(180), false, "unreachable for 180s"},
	{"logging", "agent-a3", "node-a3", tolerateForever, false, "unreachable forever"},

	{"shop", "web-3", "node-b1", tolerateFor(300), false, "unreachable for 300s (the default)"},
	{"shop", "api-2", "node-b1", tolerateFor(60), false, "unreachable for 60s"},
	{"logging", "agent-b1", "node-b1", tolerateForever, false, "unreachable forever"},

	{"shop", "cart-3", "node-b2", tolerateFor(300), false, "unreachable for 300s (the default)"},
	{"logging", "agent-b2", "node-b2", tolerateForever, false, "unreachable forever"},
}

// podIndex maps "namespace/name" to a pod's podSpec.about and to its place in the list.
type podIndex struct {
	about map[string]string
	order map[string]int
}

func indexPods(pods []podSpec) podIndex {
	x := podIndex{about: map[string]string{}, order: map[string]int{}}
	for i, p := range pods {
		x.about[p.namespace+"/"+p.name] = p.about
		x.order[p.namespace+"/"+p.name] = i
	}
	return x
}

// nodeObject returns the API object of a node of the cluster.
func nodeObject(name, zone string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{v1.LabelTopologyZone: zone},
	}}
}

// podObject returns the pod of p, created at created, controlled by owner ("Kind/name",
// "" for none).
func podObject(p podSpec, owner string, created time.Time) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, UID: types.UID("uid-" + p.name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{NodeName: p.node, Tolerations: p.tolerations},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	if kind, name, ok := strings.Cut(owner, "/"); ok {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes}}
	}
	if p.finished {
		pod.Status.Phase = v1.PodSucceeded
	}
	return pod
}
