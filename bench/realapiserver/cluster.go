package realapiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TaintKey is the key of the NoExecute taint every node gets, and that half of the pods
// tolerate for a while. Not one of kube's node.kubernetes.io taints: the API server's
// DefaultTolerationSeconds admission gives every pod a 300 s toleration of those.
const TaintKey = "example.com/down"

// Namespace holds the cluster's pods.
const Namespace = "outage"

// Shape is the cluster of a run.
type Shape struct {
	Nodes, PodsPerNode int
	// Toleration is how long the tolerating half tolerates the taint.
	Toleration time.Duration
}

// Cluster is the nodes and pods a run made: the pods of each node alternate, one
// tolerating the taint, the next tolerating nothing.
type Cluster struct {
	Nodes        []string
	Tolerating   map[string]bool // pod names, in Namespace
	Untolerating map[string]bool
}

// BuildCluster creates the namespace, the nodes and the pods of shape through admin, many at
// once.
func BuildCluster(ctx context.Context, admin kubernetes.Interface, shape Shape) (*Cluster, error) {
	c := &Cluster{Tolerating: map[string]bool{}, Untolerating: map[string]bool{}}
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("realapiserver: creating namespace %s: %w", Namespace, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	seconds := int64(shape.Toleration / time.Second)
	for i := range shape.Nodes {
		node := fmt.Sprintf("node-%04d", i)
		c.Nodes = append(c.Nodes, node)
		g.Go(func() error {
			_, err := admin.CoreV1().Nodes().Create(gctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
			return err
		})
		for j := range shape.PodsPerNode {
			name := fmt.Sprintf("p-%04d-%02d", i, j)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{"app": "outage"}},
				Spec: v1.PodSpec{
					NodeName:   node,
					Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			}
			if j%2 == 0 {
				pod.Spec.Tolerations = []v1.Toleration{{Key: TaintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds}}
				c.Tolerating[name] = true
			} else {
				c.Untolerating[name] = true
			}
			g.Go(func() error {
				_, err := admin.CoreV1().Pods(Namespace).Create(gctx, pod, metav1.CreateOptions{})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("realapiserver: building the cluster: %w", err)
	}
	return c, nil
}

// TaintAll puts the NoExecute taint on every node at once, one PATCH per node, all sent
// together, with the same TimeAdded (now, in whole seconds as the API keeps it).
func (c *Cluster) TaintAll(ctx context.Context, admin kubernetes.Interface) error {
	added := metav1.NewTime(time.Now().Truncate(time.Second))
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": []v1.Taint{
		{Key: TaintKey, Effect: v1.TaintEffectNoExecute, TimeAdded: &added}}}})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	start := make(chan struct{})
	for i, node := range c.Nodes {
		wg.Go(func() {
			<-start
			_, errs[i] = admin.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("realapiserver: tainting %s: %w", c.Nodes[i], err)
		}
	}
	return nil
}
