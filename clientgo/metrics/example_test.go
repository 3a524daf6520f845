package metrics_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/eviction"
)

// The metrics of a controller of another kind built on the engine, which kube has no
// metrics for: taintevict's own, labelled with its name, on a registry that the node and
// the device side may share. Here the Observer is told of one eviction by hand; a
// controller gives it to its engine (Options.Observer) and its Deleter.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, clientgo.Instrumented{Controller: "clusters"})
	if err != nil {
		log.Fatal(err)
	}
	due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w := eviction.PodRef{Namespace: "shop", Name: "web", UID: "uid-web", Holder: "cluster-a"}
	m.Removed(w, clientgo.MethodEvict, false)
	m.Succeeded(w, eviction.Attempt{Call: 1, Due: due}, false)

	fams, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			if s.GetCounter().GetValue() == 0 {
				continue
			}
			fmt.Print(f.GetName())
			for _, l := range s.GetLabel() {
				fmt.Printf(" %s=%s", l.GetName(), l.GetValue())
			}
			fmt.Println(":", s.GetCounter().GetValue())
		}
	}
	// Output:
	// taintevict_evictions_total controller=clusters outcome=succeeded reason=evict: 1
}

// A Meter keeps the metrics of the controllers given it on one registry, which Handler
// serves. Here a clientgo.Controller, on a fake clientset that holds a node unreachable for
// a minute and a pod on it that does not tolerate that, evicts the pod; then /metrics holds
// kube's counter under kube's name, and ours labelled with the controller.
func ExampleNewMeter() {
	client := outage()
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{
		Metrics:  metrics.NewMeter(reg),
		WaitIdle: true, // for c.WaitIdle, below
	})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	if err := c.WaitIdle(ctx); err != nil { // the pod is evicted
		log.Fatal(err)
	}

	srv := httptest.NewServer(c.Handler(metrics.Handler(reg)))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "taint_eviction_controller_pod_deletions_total") ||
			strings.HasPrefix(line, "taintevict_evictions_total") {
			fmt.Print(line)
		}
	}
	cancel()
	<-stopped
	// Output:
	// taint_eviction_controller_pod_deletions_total 1
	// taintevict_evictions_total{controller="node",outcome="succeeded",reason="delete"} 1
}
