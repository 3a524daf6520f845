// Package metrics keeps the Prometheus metrics of taintevict's controllers: kube's own
// metric names for the controller each replaces (taint_eviction_controller_* for the node
// side, device_taint_eviction_controller_* for the device side), and taintevict's,
// labelled by controller, so that both sides share one registry and one /metrics:
//
//	reg := prometheus.NewRegistry()
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{Metrics: metrics.NewMeter(reg)})
//	...
//	http.Handle("/", c.Handler(metrics.Handler(reg)))
//
// A controller of another kind gets the same metrics from [New]. It is a package of its
// own so that a program that keeps no metrics does not link Prometheus; nothing here
// registers on the global registry.
//
// Errors are prefixed "metrics:".
package metrics
