package outage

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Updates is how both controllers take node and pod updates, with kube's (old, new)
// convention: old nil for an add, new nil for a delete.
type Updates interface {
	NodeUpdated(old, new *v1.Node)
	PodUpdated(old, new *v1.Pod)
}

// Side is one controller, made and ready to run.
type Side struct {
	// Updates is the controller itself.
	Updates Updates
	// Run runs the controller until ctx is done, and returns when it has stopped.
	Run func(ctx context.Context) error
	// Idle reports whether the controller has processed every update it was given.
	Idle func() bool
}

// Impls are the names of the sides Run can measure: kube's controller, taintevict's, and
// the floor (see floor), which is no competitor but what the apparatus, the requests and
// the Events cost with no scheduling at all.
var Impls = []string{"kube", "taintevict", "floor"}

// newSide makes the controller named impl, with its informers registered in factory
// (which has not started yet) and its requests sent through client.
func newSide(ctx context.Context, impl string, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	switch impl {
	case "kube":
		return newKube(ctx, client, factory)
	case "taintevict":
		return newTaintevict(ctx, client, factory)
	case "floor":
		return newFloor(ctx, client, factory)
	}
	return nil, fmt.Errorf("outage: unknown implementation %q, want one of %v", impl, Impls)
}
