package apparatus

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Cluster is a cluster built in memory: nodes without taints, and pods bound to them, in the
// order of their nodes. Every second pod (the even ones) tolerates the node.kubernetes.io
// not-ready and unreachable NoExecute taints for TolerationSeconds, as the
// DefaultTolerationSeconds admission plugin gives every pod by default; the odd ones
// tolerate nothing, and are evicted at once from a node that becomes unreachable.
//
// A Cluster is safe to read from several goroutines. Only Taint changes it: it replaces a
// node, and must not run at the same time as other reads of Nodes.
type Cluster struct {
	Nodes []*v1.Node
	Pods  []*v1.Pod
	index map[types.NamespacedName]int
}

// TolerationSeconds is how long the tolerating pods tolerate an unreachable node.
const TolerationSeconds = 300

// NewCluster returns a cluster of pods pods, podsPerNode to a node (the last node may hold
// fewer), in 10 namespaces.
func NewCluster(pods, podsPerNode int) *Cluster {
	nodes := (pods + podsPerNode - 1) / podsPerNode
	c := &Cluster{
		Nodes: make([]*v1.Node, nodes),
		Pods:  make([]*v1.Pod, pods),
		index: make(map[types.NamespacedName]int, pods),
	}
	for i := range c.Nodes {
		c.Nodes[i] = newNode(i)
	}
	for i := range c.Pods {
		p := newPod(i, c.Nodes[i/podsPerNode].Name)
		c.Pods[i] = p
		c.index[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = i
	}
	return c
}

// Tolerates reports whether the pod with index i tolerates an unreachable node for a while.
func Tolerates(i int) bool { return i%2 == 0 }

// Untolerating returns the number of pods that do not tolerate an unreachable node.
func (c *Cluster) Untolerating() int { return len(c.Pods) / 2 }

// Index returns the index of the pod, and whether the cluster has it.
func (c *Cluster) Index(namespace, name string) (int, bool) {
	i, ok := c.index[types.NamespacedName{Namespace: namespace, Name: name}]
	return i, ok
}

// Fill adds the cluster's objects straight to the informers' stores, with the indexes they
// have, instead of through a watch: the fake clientset's watch cannot take a cluster of
// this size at once.
func (c *Cluster) Fill(pods, nodes cache.Indexer) error {
	for _, n := range c.Nodes {
		if err := nodes.Add(n); err != nil {
			return fmt.Errorf("apparatus: adding node %s: %w", n.Name, err)
		}
	}
	for _, p := range c.Pods {
		if err := pods.Add(p); err != nil {
			return fmt.Errorf("apparatus: adding pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// Unreachable returns a copy of node with the node.kubernetes.io/unreachable NoExecute
// taint added at the given time, as the node lifecycle controller adds it.
func Unreachable(node *v1.Node, at time.Time) *v1.Node {
	n := node.DeepCopy()
	added := metav1.NewTime(at)
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{
		Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &added,
	})
	n.ResourceVersion = "2"
	return n
}

// Taint gives node i the unreachable taint added at the given time (see Unreachable), as
// the API server stores the node lifecycle controller's update: from then on the Cluster
// holds the tainted node, and not the untainted one, which a process that watches nodes
// keeps no more than the API server does. It returns the node as it was and as it is now.
func (c *Cluster) Taint(i int, at time.Time) (old, tainted *v1.Node) {
	old = c.Nodes[i]
	tainted = Unreachable(old, at)
	c.Nodes[i] = tainted
	return old, tainted
}

func newNode(i int) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("node-%d", i),
			UID:             types.UID(fmt.Sprintf("node-uid-%d", i)),
			ResourceVersion: "1",
			Labels:          map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelHostname: fmt.Sprintf("node-%d", i)},
		},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
}

func newPod(i int, node string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%d", i%10),
			Name:            fmt.Sprintf("pod-%d", i),
			UID:             types.UID(fmt.Sprintf("pod-uid-%d", i)),
			ResourceVersion: "1",
			Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%100)},
		},
		Spec: v1.PodSpec{
			NodeName: node,
			Containers: []v1.Container{{
				Name:  "main",
				Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		},
	}
	if Tolerates(i) {
		secs := int64(TolerationSeconds)
		p.Spec.Tolerations = []v1.Toleration{
			{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
		}
	}
	return p
}
