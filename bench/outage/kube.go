package outage

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/tainteviction"
)

// NodeNameIndex is the name of the pod informer's index on spec.nodeName, which kube's
// controller reads (kube-controller-manager adds it elsewhere; without it, kube's
// controller evicts nothing).
const NodeNameIndex = "spec.nodeName"

func podNodeName(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("outage: the pod index got a %T", obj)
	}
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// newKube makes kube's controller, tainteviction.New from k8s.io/kubernetes, over the pod
// and node informers of factory, with the spec.nodeName index added to the pod informer.
func newKube(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	setQueueMetrics()
	kubeQueues.reset()
	pods := factory.Core().V1().Pods()
	if err := pods.Informer().AddIndexers(cache.Indexers{NodeNameIndex: podNodeName}); err != nil {
		return nil, fmt.Errorf("outage: adding the spec.nodeName index: %w", err)
	}
	tc, err := tainteviction.New(ctx, client, pods, factory.Core().V1().Nodes(), "taint-eviction-controller")
	if err != nil {
		return nil, fmt.Errorf("outage: kube's tainteviction.New: %w", err)
	}
	return &Side{
		Updates: tc,
		Run:     func(ctx context.Context) error { tc.Run(ctx); return nil },
		Idle:    func() bool { return kubeQueues.idle("noexec_taint_node", "noexec_taint_pod") },
	}, nil
}
