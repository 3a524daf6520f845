// Package metrics keeps the Prometheus metrics of taintevict's controllers: kube's own
// metric names for the controller each replaces (taint_eviction_controller_* for the node
// side, device_taint_eviction_controller_* for the device side), and taintevict's
// (outcomes, delays, pending evictions, lateness, delete workers), labelled by controller,
// so that both sides share one registry and one /metrics.
//
// Give a [Meter] to the Options.Metrics of a [clientgo.Controller] and of a
// [github.com/taintevict/taintevict/clientgo/device.Controller]; serve the registry with
// [Handler]:
//
//	reg := prometheus.NewRegistry()
//	meter := metrics.NewMeter(reg)
//	c, err := clientgo.NewController(ctx, client, factory, clientgo.Options{Metrics: meter})
//	...
//	http.Handle("/", c.Handler(metrics.Handler(reg)))
//
// A controller of another kind, built on the engine, gets the same metrics from [New]
// with a [clientgo.Instrumented] of its own. It is a package of its own so that a program
// that keeps no metrics does not link Prometheus; nothing here registers on the global
// registry.
//
// Errors are prefixed "metrics:".
package metrics
