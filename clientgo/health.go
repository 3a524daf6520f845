package clientgo

import (
	"fmt"
	"net/http"
)

// Handler returns the HTTP handler of a controller's probes: /healthz, 200 "ok" unless
// [Controller.Healthy] fails (500); /readyz, 200 "ok" once [Controller.Ready], else 503;
// /metrics, metrics when it is not nil. It never blocks on the API server.
func (c *Controller) Handler(metrics http.Handler) http.Handler {
	return ProbeHandler(c.Healthy, c.Ready, metrics)
}

// ProbeHandler returns the handler [Controller.Handler] returns, for any controller:
// /healthz answers from healthy, /readyz from ready, and GET /metrics from metrics when it
// is not nil. healthy and ready must not block.
func ProbeHandler(healthy, ready func() error, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, healthy(), http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, ready(), http.StatusServiceUnavailable)
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
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
