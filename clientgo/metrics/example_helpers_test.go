package metrics_test

import (
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/clientgo/internal/fixtures"
)

// The examples' fixtures live here, apart from the examples, so that the documentation
// shows each example's body alone.

// outage returns a fake clientset holding node-1, unreachable since a minute ago (the taint
// node.kubernetes.io/unreachable:NoExecute), and the pod shop/web-1 on it, which does not
// tolerate that.
func outage() *fake.Clientset {
	return fake.NewClientset(fixtures.TaintedNode("node-1", time.Now().Add(-time.Minute)),
		fixtures.PodOn("shop", "web-1", "node-1"))
}
