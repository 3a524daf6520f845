package clientgo_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/eviction"
)

// The Controller with package metrics' Meter: these tests import clientgo/metrics, which
// imports clientgo, so they are not internal tests.

// TestControllerMetrics runs a Controller on a fake cluster and scrapes /metrics from its
// Handler: each series is checked. A delete that RBAC forbids once is retried and
// reported as a failure, not dropped.
func TestControllerMetrics(t *testing.T) {
	hour := int64(3600)
	finished := clientgo.PodOn("batch", "report-1", "node-1")
	finished.Status.Phase = v1.PodSucceeded
	client := fake.NewClientset(clientgo.TaintedNode("node-1", time.Now().Add(-time.Minute)),
		clientgo.PodOn("shop", "web-1", "node-1"), clientgo.Tolerating(clientgo.PodOn("shop", "cache-1", "node-1"), &hour),
		clientgo.Tolerating(clientgo.PodOn("logging", "agent-1", "node-1"), nil), finished)
	forbidden := 1
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if forbidden > 0 {
			forbidden--
			return true, nil, apierrors.NewForbidden(clientgo.PodsResource, "web-1", clientgo.ErrTest)
		}
		return false, nil, nil
	})
	reg := prometheus.NewPedanticRegistry()
	w := clientgo.NewWaiter()
	c, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{Metrics: metrics.NewMeter(reg), Observers: []eviction.Observer{w}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(metrics.Handler(reg)))
	defer srv.Close()
	clientgo.StartController(t, c)

	gone := func(ns, name string) func() bool {
		return func() bool {
			_, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}
	}
	w.Until(t, "web-1 deleted", gone("shop", "web-1"))
	w.Until(t, "cache-1 pending", func() bool { return len(c.Manager().Pending()) == 1 })
	w.Until(t, "web-1 counted", func() bool {
		return strings.Contains(clientgo.Scrape(t, srv.URL+"/metrics"), `taintevict_evictions_total{controller="node",outcome="succeeded",reason="delete"} 1`)
	})
	body := clientgo.Scrape(t, srv.URL+"/metrics")
	for _, series := range []string{
		"taint_eviction_controller_pod_deletions_total 1",
		"taint_eviction_controller_pod_deletion_duration_seconds_count 1",
		`taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="240"} 1`,
		`taintevict_evictions_total{controller="node",outcome="failed",reason="Forbidden"} 1`,
		`taintevict_evictions_total{controller="node",outcome="succeeded",reason="delete"} 1`,
		`taintevict_pending_evictions{controller="node"} 1`,
		`taintevict_delayed_evictions{controller="node",reason="Paused"} 0`,
		`taintevict_delayed_evictions{controller="node",reason="RateLimited"} 0`,
		`taintevict_eviction_lateness_seconds_count{controller="node"} 1`,
		`taintevict_delete_workers{controller="node"} 8`, // follows the budget; one delete at a time starts it nowhere
	} {
		if !strings.Contains(body, series+"\n") {
			t.Errorf("got %q, want it to contain %q", body, series+"\n")
		}
	}
	// report-1 had finished before the taint came: it never had an eviction, so no outcome
	// counts it (an eviction that is skipped is one that was open).
	if strings.Contains(body, `outcome="skipped"`) {
		t.Errorf("got %q, want no skipped outcome: report-1 had no open eviction", body)
	}
	// web-1 was due when the Manager saw it (it tolerates nothing), as kube's fireAt; its
	// deletion came after the Forbidden attempt and one backoff of about 100 ms, and is
	// observed in seconds.
	if !strings.Contains(body, `taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.025"} 0`) {
		t.Errorf("got %q, want it to contain %q", body, `taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="0.025"} 0`)
	}
	if !strings.Contains(body, `taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="10"} 1`) {
		t.Errorf("got %q, want it to contain %q", body, `taint_eviction_controller_pod_deletion_duration_seconds_bucket{le="10"} 1`)
	}

	// The node comes back: cache-1's eviction is cancelled.
	node, err := client.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = nil
	_, err = client.CoreV1().Nodes().Update(t.Context(), node, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Until(t, "cache-1 cancelled", func() bool { return len(c.Manager().Pending()) == 0 })
	body = clientgo.Scrape(t, srv.URL+"/metrics")
	if !strings.Contains(body, `taintevict_evictions_total{controller="node",outcome="cancelled",reason="NotTainted"} 1`+"\n") {
		t.Errorf("got %q, want it to contain %q", body, `taintevict_evictions_total{controller="node",outcome="cancelled",reason="NotTainted"} 1`+"\n")
	}
	if !strings.Contains(body, `taintevict_pending_evictions{controller="node"} 0`+"\n") {
		t.Errorf("got %q, want it to contain %q", body, `taintevict_pending_evictions{controller="node"} 0`+"\n")
	}
	_, err = client.CoreV1().Pods("logging").Get(t.Context(), "agent-1", metav1.GetOptions{})
	if err != nil {
		t.Errorf("the pod tolerating forever stays: %v", err)
	}
}

// TestControllerMetricsTwice: a second Controller whose Meter registers on the same
// registry fails, as two controllers named "node" would collide there.
func TestControllerMetricsTwice(t *testing.T) {
	client := fake.NewClientset()
	reg := prometheus.NewRegistry()
	_, err := clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{Metrics: metrics.NewMeter(reg)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = clientgo.NewController(t.Context(), client, clientgo.NewFactory(client), clientgo.Options{Metrics: metrics.NewMeter(reg)})
	if want := `clientgo: metrics: registering the "node" controller's metrics`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error that contains %q", err, want)
	}
}
