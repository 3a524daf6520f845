package clientgo

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns the HTTP handler of a controller's probes and metrics:
//
//   - /healthz: 200 "ok" unless [Controller.Healthy] fails (500, with the error);
//   - /readyz: 200 "ok" once [Controller.Ready], else 503 with the reason;
//   - /metrics: the metrics of g in Prometheus's text format, when g is not nil (the
//     registry given to [Options.Metrics]; never the global one unless you pass it).
//
// The handler is safe for concurrent use and never blocks on the API server.
func (c *Controller) Handler(g prometheus.Gatherer) http.Handler {
	return ProbeHandler(c.Healthy, c.Ready, g)
}

// ProbeHandler returns the handler [Controller.Handler] returns, for any controller:
// /healthz answers from healthy, /readyz from ready, and /metrics from g when g is not nil.
// healthy and ready must not block.
func ProbeHandler(healthy, ready func() error, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, healthy(), http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, ready(), http.StatusServiceUnavailable)
	})
	if g != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	return mux
}

func probe(w http.ResponseWriter, err error, code int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(code)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}
