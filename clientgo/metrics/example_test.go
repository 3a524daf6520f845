package metrics_test

import (
	"fmt"
	"log"
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
